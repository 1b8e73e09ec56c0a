//! The README's `picollo-core` example, compiled and run: keep it in sync with README.md.

use picollo_core::{
    storage_len, AtomicHistogram, AtomicU32, ConstLayout, ConstWindow, EquivalentValue, Rank,
    ReadExt,
};

/// Latencies in µs, 1 µs ..= 1 s, 512 buckets per block (0.098 % relative error).
type Latency = AtomicHistogram<
    [AtomicU32; storage_len(ConstLayout::<9>::LAYOUT, 1, 1_000_000)],
    ConstLayout<9>,
    ConstWindow<1, 1_000_000>,
>;
static LATENCY: Latency = AtomicHistogram::empty();

fn on_done(micros: u32) {
    LATENCY.record_u32(micros); // from thread mode or any interrupt handler
}

fn p999() -> Option<u64> {
    let rank = Rank::parse("99.9")?;
    let p999 = LATENCY.try_read(|r| r.fixed_percentile(rank, EquivalentValue::Midpoint));
    Some(p999.ok()?.ok()?.value)
}
const L1: picollo_core::Layout = picollo_core::Layout::from_block_scale(7).unwrap();
static L2: picollo_core::Layout = picollo_core::Layout::from_relative_error(0.01).unwrap();
#[test]
fn readme_firmware() {
    // Under miri 20 values: each call there retags the whole static, visiting each of its
    // 5,600 atomic cells (about 0.2 s a record).
    let n = if cfg!(miri) { 20 } else { 1000 };
    for v in 1..=n {
        on_done(v)
    }
    // The 99.9th percentile of 1..=n is the ceil(0.999 n)-th value (999 of 1000).
    assert_eq!(p999(), Some((999 * u64::from(n)).div_ceil(1000)));
    assert_eq!((L1.block_size(), L2.block_size()), (128, 64));
}
