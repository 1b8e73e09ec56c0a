//! Instruction count of an in-window `record_u32` into a plain `static` histogram behind a
//! `critical_section::Mutex` (interrupts off around the record): the locking pattern, which
//! needs no read-modify-write atomics.
#![no_std]
#![no_main]

use core::cell::RefCell;
use critical_section::Mutex;
use picollo_core::{storage_len, ConstLayout, ConstWindow, Histogram, ReadExt};
use picollo_firmware_rt::{count_records, count_values, fail, semihosting};

type H = Histogram<
    [u32; storage_len(ConstLayout::<7>::LAYOUT, 1, 1_000_000)],
    ConstLayout<7>,
    ConstWindow<1, 1_000_000>,
>;
static LOCKED: Mutex<RefCell<H>> = Mutex::new(RefCell::new(Histogram::empty()));

/// The entry point the runtime calls after reset.
#[no_mangle]
pub fn firmware_main() -> ! {
    let values = count_values(1, 1_000_000);
    count_records(&values, |v| {
        critical_section::with(|cs| LOCKED.borrow_ref_mut(cs).record_u32(v))
    });
    let total = critical_section::with(|cs| LOCKED.borrow_ref(cs).total());
    if total != 64 {
        fail(format_args!("expected 64 values, got {total}"));
    }
    semihosting::exit(true)
}
