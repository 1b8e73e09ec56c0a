//! The histogram of the code-size images: plain, `u32` counters, layout and window carried by
//! the type, in a `static` behind a `critical_section::Mutex`. It needs no read-modify-write
//! atomics, so these images build with no cfg and no feature on every target. All zeros: in
//! `.bss`.
#![no_std]

use core::cell::RefCell;
use critical_section::Mutex;
use picollo_core::{
    storage_len, ConstLayout, ConstWindow, EquivalentValue, FixedPercentile, Histogram, Layout,
    Rank, ReadExt, Window,
};
use picollo_firmware_rt::fail;

/// Block scale of every plain image: 128 buckets per block.
pub const K: u32 = 7;
/// Buckets of the window `[1, 10^6]` at block scale [`K`].
pub const LEN: usize = storage_len(ConstLayout::<K>::LAYOUT, 1, 1_000_000);

/// The histogram type.
pub type SizeHistogram = Histogram<[u32; LEN], ConstLayout<K>, ConstWindow<1, 1_000_000>>;

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

/// The ranks of the percentile images.
pub const RANKS: [Rank; 7] = [
    Rank::MIN,
    Rank::percent(50),
    Rank::percent(90),
    Rank::percent(99),
    Rank::parse("99.9").unwrap(),
    Rank::parse("99.99").unwrap(),
    Rank::MAX,
];

/// The integer percentiles of the `static` histogram, kept from the optimizer; whether they
/// could be computed.
pub fn percentiles() -> bool {
    let mut out = [FixedPercentile::default(); RANKS.len()];
    let ok = read(|h| h.fixed_percentiles(&RANKS, EquivalentValue::Midpoint, &mut out)).is_ok();
    core::hint::black_box(&out);
    ok
}

/// A plain histogram over `[1, 10^6]` whose layout and window are runtime values the
/// optimizer cannot see: the runtime-layout instruction counts.
pub fn runtime_histogram() -> Histogram<[u32; LEN]> {
    let layout = core::hint::black_box(Layout::from_block_scale(K).unwrap());
    let window = match Window::new(
        layout,
        core::hint::black_box(1),
        core::hint::black_box(1_000_000),
    ) {
        Ok(window) => window,
        Err(e) => fail(format_args!("{e}")),
    };
    match Histogram::with_storage(layout, [0u32; LEN], window) {
        Ok(h) => h,
        Err(e) => fail(format_args!("{e}")),
    }
}

/// Ends an instruction-count run: success when all 64 values were counted.
pub fn finish_count(total: u64) -> ! {
    if total != 64 {
        fail(format_args!("expected 64 values, got {total}"));
    }
    picollo_firmware_rt::semihosting::exit(true)
}
