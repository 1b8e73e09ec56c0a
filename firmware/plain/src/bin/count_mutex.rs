//! Instruction count of an in-window `record_u32` into the plain `static` histogram behind a
//! `critical_section::Mutex` (interrupts off around the record): the locking pattern, which
//! needs no read-modify-write atomics.
#![no_std]
#![no_main]

use picollo_core::ReadExt;
use picollo_firmware_plain::{finish_count, read, PICOLLO_SIZE_HISTOGRAM};
use picollo_firmware_rt::{count_records, count_values};

/// The entry point the runtime calls after reset.
#[no_mangle]
pub fn firmware_main() -> ! {
    let values = count_values(1, 1_000_000);
    count_records(&values, |v| {
        critical_section::with(|cs| PICOLLO_SIZE_HISTOGRAM.borrow_ref_mut(cs).record_u32(v))
    });
    finish_count(read(|h| h.total()))
}
