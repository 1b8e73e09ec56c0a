//! Code size with recording, integer percentiles and integer statistics (total, outside
//! counts, min, max, mean).
#![no_std]
#![no_main]

use picollo_core::ReadExt;
use picollo_firmware_plain as size;
use picollo_firmware_rt::semihosting;

/// The entry point the runtime calls after reset.
#[no_mangle]
pub fn firmware_main() -> ! {
    size::record_stream();
    let ok = size::percentiles();
    core::hint::black_box(size::read(|h| h.int_stats()));
    semihosting::exit(ok)
}
