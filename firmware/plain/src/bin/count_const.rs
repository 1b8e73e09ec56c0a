//! Instruction count of an in-window `record_u32` into a plain histogram whose layout and
//! window are carried by its type (the all-zero `.bss` form).
#![no_std]
#![no_main]

use picollo_core::{storage_len, ConstLayout, ConstWindow, Histogram, ReadExt};
use picollo_firmware_rt::{count_records, count_values, fail, semihosting};

type H = Histogram<
    [u32; storage_len(ConstLayout::<7>::LAYOUT, 1, 1_000_000)],
    ConstLayout<7>,
    ConstWindow<1, 1_000_000>,
>;

/// The entry point the runtime calls after reset.
#[no_mangle]
pub fn firmware_main() -> ! {
    let values = count_values(1, 1_000_000);
    let mut h = H::empty();
    count_records(&values, |v| h.record_u32(v));
    if h.total() != 64 {
        fail(format_args!("expected 64 values, got {}", h.total()));
    }
    semihosting::exit(true)
}
