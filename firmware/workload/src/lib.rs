//! The computation every firmware image runs and the host repeats.
//!
//! A fixed pseudo-random stream (counter-based, so any context can compute value `i` alone)
//! is recorded into one of each kind: an [`AtomicHistogram`] shared by thread mode and the
//! timer interrupt (the lock-free `&self` pattern), a plain [`Histogram`] with `u16` counters
//! behind a `critical_section::Mutex` (the locking pattern), an [`ApproxHistogram`] and a
//! [`ScalableCounter`]. Values below and above the window are part of the stream: with 64-bit
//! atomics emulated by a lock, those were the records that deadlocked under interrupts.
//!
//! Every count is a sum, so the result does not depend on how thread mode and the interrupt
//! interleave: the firmware's report must equal the host's, byte for byte.
#![no_std]

use core::cell::RefCell;
use core::fmt::{self, Write};
use critical_section::Mutex;
use picollo_core::approx::ApproxHistogram;
use picollo_core::scalable::{ScalableCell, ScalableConfig, ScalableCounter, XorShift};
use picollo_core::{
    storage_len, AtomicHistogram, AtomicU32, ConstLayout, ConstWindow, EquivalentValue,
    FixedPercentile, Histogram, HistogramRead, Layout, Rank, ReadExt, Record,
};

/// Block scale: 32 buckets per block, 1.6 % relative error; small enough for the micro:bit's
/// 16 KiB of RAM with three histograms.
pub const K: u32 = 5;
/// The smallest value kept in buckets; smaller ones are underflow.
pub const MIN: u64 = 16;
/// The largest value kept in buckets; larger ones are overflow.
pub const MAX: u64 = 1_000_000;
/// The layout.
pub const LAYOUT: Layout = ConstLayout::<K>::LAYOUT;
/// Buckets in the window.
pub const LEN: usize = storage_len(LAYOUT, MIN, MAX);

/// The lock-free histogram thread mode and the interrupt share: all zeros, so in `.bss`.
pub type SharedHistogram = AtomicHistogram<[AtomicU32; LEN], ConstLayout<K>, ConstWindow<MIN, MAX>>;
/// The plain histogram behind a critical section, with `u16` counters.
pub type PlainHistogram = Histogram<[u16; LEN], ConstLayout<K>, ConstWindow<MIN, MAX>>;
/// The approximate histogram (exact here: no bucket passes the scalable threshold).
pub type Approx = ApproxHistogram<[ScalableCell; LEN]>;

/// The scalable counter's configuration: exact below 2^20, so its count is deterministic.
pub const COUNTER_CONFIG: ScalableConfig = ScalableConfig::new().with_threshold(20);

/// Values thread mode records.
pub const THREAD_VALUES: u32 = 12_000;
/// Thread mode pauses for a timer tick before every this many values.
pub const PAUSE_EVERY: u32 = 400;
/// Values the timer interrupt records per tick.
pub const IRQ_BATCH: u32 = 8;
/// Batches the timer interrupt records in all.
pub const IRQ_BATCHES: u32 = 500;

/// Seeds of the two streams.
const THREAD_SEED: u32 = 0x5EED_0001;
const IRQ_SEED: u32 = 0x5EED_0002;

/// Everything both contexts record into.
pub struct Histograms {
    /// The lock-free shared histogram.
    pub shared: SharedHistogram,
    /// The plain histogram, behind a critical section.
    pub plain: Mutex<RefCell<PlainHistogram>>,
    /// The approximate histogram.
    pub approx: Approx,
    /// Events counted.
    pub counter: ScalableCounter,
}

impl Histograms {
    /// All empty; `const`, for a `static`.
    pub const fn new() -> Self {
        Histograms {
            shared: AtomicHistogram::empty(),
            plain: Mutex::new(RefCell::new(Histogram::empty())),
            approx: ApproxHistogram::new(LAYOUT, MIN, MAX),
            counter: ScalableCounter::with_config(COUNTER_CONFIG),
        }
    }

    /// Records one value into every kind, from any context.
    pub fn record(&self, value: u64, rng: &mut XorShift) {
        // Both record paths of the shared histogram: the 32-bit one and the u64 one (which
        // takes it too for values below 2^32, and its 64-bit path above).
        if value & 1 == 0 {
            self.shared.record(value);
        } else if let Ok(narrow) = u32::try_from(value) {
            self.shared.record_u32(narrow);
        } else {
            self.shared.record(value);
        }
        critical_section::with(|cs| self.plain.borrow_ref_mut(cs).record(value));
        self.approx.record(value, rng);
        self.counter.inc(rng);
    }

    /// Thread mode's share: [`THREAD_VALUES`] values, then one coordinated-omission-corrected
    /// record. `pause` runs before every [`PAUSE_EVERY`] values: the firmware waits there for
    /// a timer tick, so that interrupts record in the middle of thread mode's stream however
    /// fast the emulator runs (the host passes a no-op; the counts do not depend on it).
    pub fn record_thread_values(&self, mut pause: impl FnMut()) {
        let mut rng = XorShift::new(THREAD_SEED as u64);
        for i in 0..THREAD_VALUES {
            if i % PAUSE_EVERY == 0 {
                pause();
            }
            self.record(value_at(THREAD_SEED, i), &mut rng);
        }
        // A 50 ms stall while sampling every 10 ms: 50, 40, 30, 20 and 10 ms.
        (&self.shared).record_corrected(50_000, 10_000);
    }

    /// The interrupt's share for tick `batch` (`0..IRQ_BATCHES`): [`IRQ_BATCH`] values.
    pub fn record_irq_batch(&self, batch: u32, rng: &mut XorShift) {
        for j in 0..IRQ_BATCH {
            self.record(value_at(IRQ_SEED, batch * IRQ_BATCH + j), rng);
        }
    }

    /// The report: totals, outside counts, extremes, mean and percentiles of every kind, in
    /// integer arithmetic only, then a reset check.
    pub fn report(&self, out: &mut impl Write) -> fmt::Result {
        report_one(out, "shared", &self.shared)?;
        critical_section::with(|cs| report_one(out, "plain", &*self.plain.borrow_ref(cs)))?;
        report_one(out, "approx", &self.approx)?;
        writeln!(out, "counter: {}", self.counter.get())?;
        self.shared.reset();
        writeln!(
            out,
            "after reset: total={} outside={} resets={}",
            self.shared.total(),
            self.shared.underflow() + self.shared.overflow(),
            self.shared.reset_count()
        )
    }
}

impl Default for Histograms {
    fn default() -> Self {
        Self::new()
    }
}

/// The ranks every report prints.
pub const RANKS: [Rank; 7] = [
    Rank::MIN,
    Rank::percent(50),
    Rank::percent(90),
    Rank::percent(99),
    Rank::parse("99.9").unwrap(),
    Rank::parse("99.99").unwrap(),
    Rank::MAX,
];

fn report_one<H: HistogramRead>(out: &mut impl Write, name: &str, h: &H) -> fmt::Result {
    let s = h.int_stats();
    writeln!(
        out,
        "{name}: total={} underflow={} overflow={} min={:?} max={:?} mean={:?}",
        s.total, s.underflow, s.overflow, s.min, s.max, s.mean
    )?;
    let mut p = [FixedPercentile::default(); RANKS.len()];
    match h.fixed_percentiles(&RANKS, EquivalentValue::Midpoint, &mut p) {
        Ok(()) => p.iter().try_for_each(|p| writeln!(out, "{name}: {p}")),
        Err(e) => writeln!(out, "{name}: {e}"),
    }
}

/// Value `i` of the stream `seed`: a counter-based generator (a 32-bit integer hash of the
/// index), so any context computes any value alone. About 1 value in 16 is below the window
/// (under 16), 1 in 16 above it below 2^32, 1 in 16 above 2^32 (the 64-bit path), and the
/// rest spread over the window with more small values than large ones.
pub fn value_at(seed: u32, i: u32) -> u64 {
    let x = hash(seed ^ hash(i));
    let r = x >> 4;
    match x & 15 {
        0 => (r & 15) as u64,
        1 => MAX + 1 + r as u64,
        2 => (1 << 32) + ((r as u64) << 8),
        _ => MIN + ((r >> (r % 20)) as u64) % (MAX - MIN),
    }
}

/// A 32-bit integer hash (lowbias32: two multiply-xorshift rounds).
fn hash(mut x: u32) -> u32 {
    x ^= x >> 16;
    x = x.wrapping_mul(0x7FEB_352D);
    x ^= x >> 15;
    x = x.wrapping_mul(0x846C_A68B);
    x ^ (x >> 16)
}
