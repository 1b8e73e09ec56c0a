//! Instruction counts of an in-window record into a plain histogram with a runtime layout and
//! window (fields of the histogram, opaque to the optimizer): `record_u32`, then `record` of a
//! `u64` value, the general entry point, which on 32-bit cores takes the 32-bit path for
//! values below 2^32.
#![no_std]
#![no_main]

use picollo_core::ReadExt;
use picollo_firmware_plain::{finish_count, runtime_histogram};
use picollo_firmware_rt::{count_records, count_values};

/// The entry point the runtime calls after reset.
#[no_mangle]
pub fn firmware_main() -> ! {
    let values = count_values(1, 1_000_000);
    // One histogram for both (the micro:bit's 16 KiB of RAM holds one on the stack).
    let mut h = runtime_histogram();
    count_records(&values, |v| h.record_u32(v));
    let narrow = h.total();
    h.reset();
    // Opaque `u64` values (as from a 64-bit cycle counter): the 32-bit test runs each time.
    count_records(&values.map(u64::from), |v| h.record(v));
    finish_count(if narrow == 64 { h.total() } else { narrow })
}
