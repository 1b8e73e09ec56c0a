//! Instruction count of an in-window `record_u32` into the lock-free `static` atomic histogram
//! that thread mode and interrupts share (the firmware pattern of the README).
#![no_std]
#![no_main]

use picollo_core::{storage_len, AtomicHistogram, AtomicU32, ConstLayout, ConstWindow, ReadExt};
use picollo_firmware_rt::{count_records, count_values, fail, semihosting};

static SHARED: AtomicHistogram<
    [AtomicU32; storage_len(ConstLayout::<7>::LAYOUT, 1, 1_000_000)],
    ConstLayout<7>,
    ConstWindow<1, 1_000_000>,
> = AtomicHistogram::empty();

/// The entry point the runtime calls after reset.
#[no_mangle]
pub fn firmware_main() -> ! {
    count_records(&count_values(1, 1_000_000), |v| SHARED.record_u32(v));
    if SHARED.total() != 64 {
        fail(format_args!("expected 64 values, got {}", SHARED.total()));
    }
    semihosting::exit(true)
}
