//! Instruction count of an in-window `record_u32` into a plain histogram with a runtime
//! layout and window (fields of the histogram, opaque to the optimizer).
#![no_std]
#![no_main]

use core::hint::black_box;
use picollo_core::{storage_len, Histogram, Layout, ReadExt};
use picollo_firmware_rt::{count_records, count_values, fail, semihosting};

const LEN: usize = storage_len(Layout::from_block_scale(7).unwrap(), 1, 1_000_000);

/// The entry point the runtime calls after reset.
#[no_mangle]
pub fn firmware_main() -> ! {
    let values = count_values(1, 1_000_000);
    let layout = black_box(Layout::from_block_scale(7).unwrap());
    let Ok(mut h) = Histogram::<[u32; LEN]>::try_new(layout, black_box(1), black_box(1_000_000))
    else {
        fail(format_args!("window"))
    };
    count_records(&values, |v| h.record_u32(v));
    if h.total() != 64 {
        fail(format_args!("expected 64 values, got {}", h.total()));
    }
    semihosting::exit(true)
}
