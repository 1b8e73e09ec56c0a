//! Code-size baseline: the runtime, reading a value stream, and exit.
#![no_std]
#![no_main]

use picollo_firmware_rt::{count_values, semihosting};

/// The entry point the runtime calls after reset.
#[no_mangle]
pub fn firmware_main() -> ! {
    for v in count_values(1, 1_000_000) {
        core::hint::black_box(v);
    }
    semihosting::exit(true)
}
