//! Resets and reads from a timer interrupt that lands inside thread mode's resets and reads of
//! the same `static` histogram, on the atomic and the approximate kinds (issue 26). Each
//! scenario runs for [`TICKS_PER_SCENARIO`] timer ticks and checks its documented result:
//!
//! 1. **read during reset**: thread mode records pairs (a low value, then a high one) and
//!    resets in a loop; the interrupt's `try_` reads report `ResetInProgress` exactly when a
//!    reset is in progress, and otherwise a consistent histogram (as many low values as high
//!    ones, or one more: never a half-cleared one).
//! 2. **reset during reset**: the same thread-mode loop; the interrupt resets. Every reset
//!    ends and is counted, and the histogram is empty after thread mode's last one.
//! 3. **read during `fixed_percentiles`**: thread mode computes a seven-rank batch in a loop
//!    over a fixed data set; the interrupt's `try_read` of it succeeds with the same
//!    answer, and so does every thread-mode batch.
//! 4. **reset during a thread-mode read** (the direction that worked before): the interrupt
//!    resets and records a pair; thread mode's blocking reads redo the passes a reset
//!    overlapped and always see a consistent histogram.
//!
//! Any miss ends the run with `FAIL`; a wait that never ends is caught by `run.sh`'s time
//! limit. Each scenario also fails unless the interrupt did land inside thread mode's resets
//! or reads (scenario 4: unless a reset landed during a thread-mode read). Prints one line
//! per scenario and kind, ending in `: ok`; how many ticks landed where varies from run to
//! run.
#![no_std]
#![no_main]

use core::cell::RefCell;
use core::fmt::Write;
use core::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use critical_section::Mutex;
use picollo_core::read::{consistent, ResetInProgress};
use picollo_core::scalable::XorShift;
use picollo_core::{
    AtomicHistogram, EquivalentValue, FixedPercentile, HistogramRead, PercentileError, Rank,
    ReadExt,
};
use picollo_firmware_rt::{fail, semihosting, start_timer, stop_timer, Console};
use picollo_firmware_workload::{value_at, Approx, SharedHistogram, LAYOUT, MAX, MIN, RANKS};

/// The lock-free histogram of the README's pattern (`AtomicU32` cells, all zero, `.bss`).
static ATOMIC: SharedHistogram = AtomicHistogram::empty();
/// The approximate histogram.
static APPROX: Approx = Approx::new(LAYOUT, MIN, MAX);

/// Timer ticks each scenario runs for.
const TICKS_PER_SCENARIO: u32 = 100;
/// Timer period: long enough for the interrupt's full-window reads to leave thread mode
/// time to run (SysTick cycles: 25 MHz on mps2-an386, 16 MHz on the micro:bit; `mtime`
/// ticks at 10 MHz on `virt`).
#[cfg(target_arch = "arm")]
const PERIOD: u32 = 20_000;
#[cfg(target_arch = "riscv32")]
const PERIOD: u32 = 5_000;

/// The two values thread mode records in pairs: the first bucket a reset clears comes
/// first, so a read that mixed cleared and uncleared cells would see more high values than
/// low ones.
const LOW: u32 = 20;
const HIGH: u32 = 900_000;

/// What the interrupt does: `kind * 8 + what` (0: nothing).
static SCENARIO: AtomicU32 = AtomicU32::new(0);
const READ_DURING_RESET: u32 = 1;
const RESET_DURING_RESET: u32 = 2;
const READ_DURING_READ: u32 = 3;
const RESET_DURING_READ: u32 = 4;

/// Every tick (written by the interrupt only).
static TICKS: AtomicU32 = AtomicU32::new(0);
/// Ticks that found thread mode inside the operation the scenario targets.
static INSIDE: AtomicU32 = AtomicU32::new(0);
/// Ticks that acted (read or reset) in the scenario.
static ACTED: AtomicU32 = AtomicU32::new(0);
/// Whether thread mode is inside a percentile batch.
static THREAD_READING: AtomicBool = AtomicBool::new(false);
/// The percentile batch of scenario 3's data set, computed before the timer starts.
static EXPECTED: Mutex<RefCell<[FixedPercentile; RANKS.len()]>> =
    Mutex::new(RefCell::new([NO_PERCENTILE; RANKS.len()]));

/// An empty batch entry, for `const` initializers.
const NO_PERCENTILE: FixedPercentile = FixedPercentile {
    rank: Rank::MIN,
    value: 0,
    logical_index: 0,
    storage_index: 0,
    lo: 0,
    highest: 0,
    count: 0,
    rank_count: 0,
};

/// One relaxed increment by the interrupt, the only writer (no read-modify-write needed).
fn bump(counter: &AtomicU32) {
    counter.store(counter.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
}

/// What the scenarios need of a shared kind.
trait Shared: HistogramRead + Sync + 'static {
    const NAME: &'static str;
    fn put(&self, value: u32);
    fn clear(&self);
    fn resetting(&self) -> bool;
}

impl Shared for SharedHistogram {
    const NAME: &'static str = "atomic";
    fn put(&self, value: u32) {
        self.record_u32(value);
    }
    fn clear(&self) {
        self.reset();
    }
    fn resetting(&self) -> bool {
        self.reset_in_progress()
    }
}

impl Shared for Approx {
    const NAME: &'static str = "approx";
    fn put(&self, value: u32) {
        // Exact below the scalable threshold: the draw never matters here.
        self.record(value as u64, &mut XorShift::new(value as u64));
    }
    fn clear(&self) {
        self.reset();
    }
    fn resetting(&self) -> bool {
        self.reset_in_progress()
    }
}

/// Storage indices of the low and high buckets.
fn pair_cells<H: Shared>(h: &H) -> (usize, usize) {
    let (layout, window) = (h.layout(), h.window());
    let index = |v: u32| window.storage_index(layout.index_of(v as u64));
    match (index(LOW), index(HIGH)) {
        (Some(lo), Some(hi)) => (lo, hi),
        _ => fail(format_args!("{LOW} or {HIGH} outside the window")),
    }
}

/// A histogram thread mode fills with pairs is consistent when it holds as many low values
/// as high ones, or one more (a tick between the two records of a pair).
fn check_pairs(what: &str, low: u64, high: u64, total: u64) {
    if !(low == high || low == high + 1) || total != low + high {
        fail(format_args!(
            "{what}: torn read: {low} low, {high} high, total {total}"
        ));
    }
}

fn tick() {
    bump(&TICKS);
    let scenario = SCENARIO.load(Ordering::Relaxed);
    match scenario / 8 {
        0 if scenario != 0 => on_tick(&ATOMIC, scenario % 8),
        1 => on_tick(&APPROX, scenario % 8),
        _ => {}
    }
}

/// The interrupt's side of each scenario.
fn on_tick<H: Shared>(h: &H, what: u32) {
    match what {
        READ_DURING_RESET => {
            // Thread mode cannot run while this handler does: one state for all reads.
            let resetting = h.resetting();
            let (lo, hi) = pair_cells(h);
            let pair = h.try_read(|r| (r.count_at(lo), r.count_at(hi)));
            let total = h.try_read(|r| r.total());
            let stats = h.try_read(|r| r.int_stats());
            let mut batch = [NO_PERCENTILE; RANKS.len()];
            let percentiles =
                h.try_read(|r| r.fixed_percentiles(&RANKS, EquivalentValue::Midpoint, &mut batch));
            if resetting {
                bump(&INSIDE);
                let refused = pair == Err(ResetInProgress)
                    && total == Err(ResetInProgress)
                    && stats == Err(ResetInProgress)
                    && percentiles == Err(ResetInProgress);
                if !refused {
                    fail(format_args!(
                        "{}: a read inside a reset did not report ResetInProgress: {pair:?} {total:?}",
                        H::NAME
                    ));
                }
            } else {
                let (Ok((low, high)), Ok(total), Ok(stats)) = (pair, total, stats) else {
                    fail(format_args!(
                        "{}: a read outside a reset failed: {pair:?} {total:?}",
                        H::NAME
                    ))
                };
                check_pairs(H::NAME, low, high, total);
                let fits = match percentiles {
                    Ok(Ok(())) => total > 0 && batch[0].value < HIGH as u64,
                    Ok(Err(e)) => total == 0 && e == PercentileError::Empty,
                    Err(ResetInProgress) => false,
                };
                if stats.total != total || !fits {
                    fail(format_args!(
                        "{}: reads of one state disagree: total {total}, {stats:?}, {percentiles:?}",
                        H::NAME
                    ));
                }
            }
            bump(&ACTED);
        }
        RESET_DURING_RESET => {
            if h.resetting() {
                bump(&INSIDE);
            }
            h.clear();
            bump(&ACTED);
        }
        READ_DURING_READ => {
            if THREAD_READING.load(Ordering::Relaxed) {
                bump(&INSIDE);
            }
            let mut batch = [NO_PERCENTILE; RANKS.len()];
            let got =
                h.try_read(|r| r.fixed_percentiles(&RANKS, EquivalentValue::Midpoint, &mut batch));
            let expected = critical_section::with(|cs| *EXPECTED.borrow_ref(cs));
            if got != Ok(Ok(())) || batch != expected {
                fail(format_args!(
                    "{}: the interrupt's batch differs: {got:?} {:?} != {:?}",
                    H::NAME,
                    batch[1],
                    expected[1]
                ));
            }
            bump(&ACTED);
        }
        RESET_DURING_READ => {
            h.clear();
            h.put(LOW);
            h.put(HIGH);
            bump(&ACTED);
        }
        _ => {}
    }
}

/// Runs `thread` in a loop while the interrupt plays `what` for [`TICKS_PER_SCENARIO`] ticks;
/// returns (ticks inside, ticks that acted).
fn scenario<H: Shared>(kind: u32, what: u32, mut thread: impl FnMut()) -> (u32, u32) {
    SCENARIO.store(0, Ordering::Relaxed);
    INSIDE.store(0, Ordering::Relaxed);
    ACTED.store(0, Ordering::Relaxed);
    SCENARIO.store(kind * 8 + what, Ordering::Release);
    let end = TICKS.load(Ordering::Relaxed) + TICKS_PER_SCENARIO;
    while TICKS.load(Ordering::Relaxed) < end {
        thread();
    }
    SCENARIO.store(0, Ordering::Release);
    (
        INSIDE.load(Ordering::Relaxed),
        ACTED.load(Ordering::Relaxed),
    )
}

fn require(what: &str, ok: bool, detail: core::fmt::Arguments<'_>) {
    if !ok {
        fail(format_args!("{what}: {detail}"));
    }
}

/// The four scenarios on one kind.
fn run<H: Shared>(h: &'static H, kind: u32, out: &mut Console) {
    let name = H::NAME;
    let fill_pairs = || {
        for _ in 0..16 {
            h.put(LOW);
            h.put(HIGH);
        }
    };

    // 1. Read during reset.
    let (inside, acted) = scenario::<H>(kind, READ_DURING_RESET, || {
        fill_pairs();
        h.clear();
    });
    require(
        name,
        inside > 0,
        format_args!("read during reset: none of {acted} ticks landed inside a reset"),
    );
    let _ = writeln!(
        out,
        "{name}: an interrupt reads during a thread-mode reset: {inside} of {acted} ticks inside a reset got ResetInProgress, the others a consistent histogram: ok"
    );

    // 2. Reset during reset.
    let before = h.reset_count();
    let mut thread_resets = 0u64;
    let (inside, acted) = scenario::<H>(kind, RESET_DURING_RESET, || {
        fill_pairs();
        h.clear();
        thread_resets += 1;
    });
    h.clear();
    thread_resets += 1;
    let counted = h.reset_count() - before;
    require(
        name,
        inside > 0 && counted == thread_resets + acted as u64,
        format_args!(
            "reset during reset: {inside} nested of {acted}; {counted} resets counted, {thread_resets} + {acted} made"
        ),
    );
    require(
        name,
        !h.resetting() && h.try_read(|r| r.total_with_outside()) == Ok(0) && h.total() == 0,
        format_args!("reset during reset: not empty after the last reset"),
    );
    let _ = writeln!(
        out,
        "{name}: an interrupt resets during a thread-mode reset: {inside} of {acted} interrupt resets inside one; {counted} resets counted ({thread_resets} thread mode + {acted} interrupt), empty after the last: ok"
    );

    // 3. Read during a thread-mode `fixed_percentiles`: a fixed data set, no reset.
    for i in 0..600 {
        let v = value_at(0x5EED_0026, i);
        if (MIN..=MAX).contains(&v) {
            h.put(v as u32);
        }
    }
    let mut expected = [NO_PERCENTILE; RANKS.len()];
    if let Err(e) = h.fixed_percentiles(&RANKS, EquivalentValue::Midpoint, &mut expected) {
        fail(format_args!("{name}: {e}"));
    }
    critical_section::with(|cs| *EXPECTED.borrow_ref_mut(cs) = expected);
    let mut batches = 0u32;
    let (inside, acted) = scenario::<H>(kind, READ_DURING_READ, || {
        let mut batch = [NO_PERCENTILE; RANKS.len()];
        THREAD_READING.store(true, Ordering::Relaxed);
        let r = h.fixed_percentiles(&RANKS, EquivalentValue::Midpoint, &mut batch);
        THREAD_READING.store(false, Ordering::Relaxed);
        if r.is_err() || batch != expected {
            fail(format_args!("{name}: a thread-mode batch differs: {r:?}"));
        }
        batches += 1;
    });
    require(
        name,
        inside > 0,
        format_args!("read during read: no tick landed inside one of {batches} batches"),
    );
    let _ = writeln!(
        out,
        "{name}: an interrupt reads during a thread-mode fixed_percentiles: {inside} of {acted} ticks inside one of {batches} batches; all equal: ok"
    );

    // 4. Reset during a thread-mode read (blocking reads redo what a reset overlapped).
    h.clear();
    let (lo, hi) = pair_cells(h);
    let (mut reads, mut redone) = (0u32, 0u32);
    let (_, acted) = scenario::<H>(kind, RESET_DURING_READ, || {
        let resets = h.reset_count();
        let (low, high, total) = consistent(h, |h| {
            let total = h.total_with_outside();
            (h.count_at(lo), h.count_at(hi), total)
        });
        check_pairs(name, low, high, total);
        reads += 1;
        if h.reset_count() != resets {
            redone += 1;
        }
    });
    require(
        name,
        redone > 0,
        format_args!("reset during read: no interrupt reset overlapped one of {reads} reads"),
    );
    let _ = writeln!(
        out,
        "{name}: an interrupt resets during a thread-mode read: {acted} interrupt resets, {redone} of {reads} thread-mode reads with one during them, all consistent: ok"
    );
    h.clear();
}

/// The entry point the runtime calls after reset.
#[no_mangle]
pub fn firmware_main() -> ! {
    let mut out = Console::new();
    start_timer(PERIOD, tick);
    run(&ATOMIC, 0, &mut out);
    run(&APPROX, 1, &mut out);
    stop_timer();
    out.flush();
    semihosting::exit(true)
}
