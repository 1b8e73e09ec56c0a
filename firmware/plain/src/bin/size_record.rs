//! Code size with recording only (`record_u32` into a `.bss` static behind a critical section).
#![no_std]
#![no_main]

use picollo_firmware_plain as size;
use picollo_firmware_rt::semihosting;

/// The entry point the runtime calls after reset.
#[no_mangle]
pub fn firmware_main() -> ! {
    size::record_stream();
    semihosting::exit(true)
}
