//! Instruction count of an in-window `record_u32` into a plain histogram whose layout and
//! window are carried by its type (the all-zero `.bss` form), on the stack.
#![no_std]
#![no_main]

use picollo_core::ReadExt;
use picollo_firmware_plain::{finish_count, SizeHistogram};
use picollo_firmware_rt::{count_records, count_values};

/// The entry point the runtime calls after reset.
#[no_mangle]
pub fn firmware_main() -> ! {
    let values = count_values(1, 1_000_000);
    let mut h = SizeHistogram::empty();
    count_records(&values, |v| h.record_u32(v));
    finish_count(h.total())
}
