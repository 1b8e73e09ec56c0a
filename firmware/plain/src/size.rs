//! The histogram of the code-size images: plain, `u32` counters, layout and window carried by
//! the type, in a `static` behind a `critical_section::Mutex`. It needs no read-modify-write
//! atomics, so these images build with no cfg and no feature on every target. All zeros: in
//! `.bss`.
#![no_std]

use core::cell::RefCell;
use critical_section::Mutex;
use picollo_core::{storage_len, ConstLayout, ConstWindow, Histogram};

/// The histogram type.
pub type SizeHistogram = Histogram<
    [u32; storage_len(ConstLayout::<7>::LAYOUT, 1, 1_000_000)],
    ConstLayout<7>,
    ConstWindow<1, 1_000_000>,
>;

/// The `static` the size images record into; `run.sh` checks that it is in `.bss`.
#[no_mangle]
pub static PICOLLO_SIZE_HISTOGRAM: Mutex<RefCell<SizeHistogram>> =
    Mutex::new(RefCell::new(Histogram::empty()));

/// Records the value stream with `record_u32`.
pub fn record_stream() {
    for v in picollo_firmware_rt::count_values(1, 2_000_000) {
        let v = core::hint::black_box(v);
        critical_section::with(|cs| PICOLLO_SIZE_HISTOGRAM.borrow_ref_mut(cs).record_u32(v));
    }
}

/// Runs `read` on the histogram inside a critical section.
pub fn read<R>(read: impl FnOnce(&SizeHistogram) -> R) -> R {
    critical_section::with(|cs| read(&PICOLLO_SIZE_HISTOGRAM.borrow_ref(cs)))
}
