//! Shared counters on 2 threads (Scalable Approximate Counting): `fetch_add` on one word, per-thread padded shards,
//! and `picollo_core::scalable::ScalableCounter`. Wall clock, best of 11 runs, no criterion.
//!
//! Run: `cargo bench -p picollo-benches --bench counters`.
//!
//! Each thread does `OPS` = 10^7 increments, in `ROUNDS` rounds of `ROUND` increments. The
//! threads start every round together (spin barrier, not timed), so each round is a stretch
//! where both threads increment at once. A round's time is the slower thread's. For each round
//! index the best time over 11 runs is kept, and the figure is the sum of those bests
//! divided by `OPS`: what one increment costs a thread while the other thread increments too.
//! Every run starts from zero, so the scalable counter's exact phase (below 2^13) and its ramp
//! are included, exactly as in a run of 2 × 10^7 increments.
//!
//! The machine this was written on is a shared 2-core VM, where other processes often take a
//! core. A round only counts when neither thread was preempted during it (Linux
//! `/proc/thread-self/status`, read outside the timed part): a preempted round measures
//! time-slicing, not contention, and can look cheaper than it is. The `clean` column is the
//! share of rounds that counted; a `*` marks a figure where some round index had no clean
//! sample in any run and its best unclean time was used.
//!
//! The error columns are the relative error of each run's final estimate against
//! `threads × OPS`: the mean and the largest over the runs, and their root mean square (an
//! estimate of σ from few runs). The `ScalableCounter` tests assert the accuracy
//! figures over 50 trials.

use picollo_core::scalable::{RandomSource, ScalableConfig, ScalableCounter, WyRand, XorShift};
use std::hint::black_box;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use picollo_benches::report::{header, Block};

/// Increments per thread and round.
const ROUND: u64 = 100_000;
/// Rounds per run.
const ROUNDS: usize = 100;
/// Increments per thread and run.
const OPS: u64 = ROUND * ROUNDS as u64;
/// Measured runs per case (after one warm-up run; 2 in a smoke run, `picollo_benches::smoke`).
fn runs() -> usize {
    picollo_benches::sized(11, 2)
}

/// A value on its own pair of cache lines (adjacent-line prefetch).
#[repr(align(128))]
struct Padded<T>(T);

/// A counter implementation under test.
trait Case: Sync {
    /// Per-thread state (a random source, a shard index).
    type Local;
    /// Zeroes the counter before a run.
    fn reset(&self);
    /// The state of thread `thread` in run `run`.
    fn local(&self, thread: usize, run: usize) -> Self::Local;
    /// `ops` increments.
    fn work(&self, local: &mut Self::Local, ops: u64);
    /// The final count (or estimate).
    fn total(&self) -> u64;
}

/// `fetch_add(1)` on one shared word.
struct Shared(AtomicU64);

impl Case for Shared {
    type Local = ();
    fn reset(&self) {
        self.0.store(0, Ordering::Relaxed);
    }
    fn local(&self, _thread: usize, _run: usize) {}
    fn work(&self, _local: &mut (), ops: u64) {
        let c = black_box(&self.0);
        for _ in 0..ops {
            c.fetch_add(1, Ordering::Relaxed);
        }
    }
    fn total(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// One padded shard per thread, written only by its owner: a relaxed load and store, no locked
/// instruction. Reading the total means summing the shards.
struct Shards([Padded<AtomicU64>; 2]);

impl Case for Shards {
    type Local = usize;
    fn reset(&self) {
        for s in &self.0 {
            s.0.store(0, Ordering::Relaxed);
        }
    }
    fn local(&self, thread: usize, _run: usize) -> usize {
        thread
    }
    fn work(&self, thread: &mut usize, ops: u64) {
        let c = black_box(&self.0[*thread].0);
        for _ in 0..ops {
            c.store(c.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
        }
    }
    fn total(&self) -> u64 {
        self.0.iter().map(|s| s.0.load(Ordering::Relaxed)).sum()
    }
}

/// `ScalableCounter::inc` with a per-thread random source (`WyRand` or `XorShift`), seeded per
/// run and thread by `from_seed_and_thread`.
struct Scalable<R>(ScalableCounter, fn(u64, u64) -> R);

impl<R: RandomSource + Sync> Case for Scalable<R> {
    type Local = R;
    fn reset(&self) {
        self.0.reset();
    }
    fn local(&self, thread: usize, run: usize) -> R {
        (self.1)(0x5eed_0003 ^ run as u64, thread as u64)
    }
    fn work(&self, rng: &mut R, ops: u64) {
        let c = black_box(&self.0);
        for _ in 0..ops {
            c.inc(rng);
        }
    }
    fn total(&self) -> u64 {
        self.0.get()
    }
}

/// How many times the calling thread has been preempted (Linux `/proc/thread-self/status`,
/// `nonvoluntary_ctxt_switches`); `None` elsewhere, where every round counts as clean.
fn preemptions() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/thread-self/status").ok()?;
    let line = text
        .lines()
        .find(|l| l.starts_with("nonvoluntary_ctxt_switches:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Waits until `arrived` reaches `target`, after adding this thread's arrival.
fn spin_barrier(arrived: &AtomicUsize, target: usize) {
    arrived.fetch_add(1, Ordering::AcqRel);
    let mut spins = 0u32;
    while arrived.load(Ordering::Acquire) < target {
        if spins < 10_000 {
            std::hint::spin_loop();
            spins += 1;
        } else {
            std::thread::yield_now();
        }
    }
}

/// One run: per round, the slower thread's time and whether no thread was preempted.
fn run_once<C: Case>(case: &C, threads: usize, run: usize) -> Vec<(Duration, bool)> {
    case.reset();
    let arrived = Padded(AtomicUsize::new(0));
    let per_thread: Vec<Vec<(Duration, bool)>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let arrived = &arrived.0;
                s.spawn(move || {
                    let mut local = case.local(t, run);
                    let mut rounds = Vec::with_capacity(ROUNDS);
                    for r in 0..ROUNDS {
                        let before = preemptions();
                        spin_barrier(arrived, (r + 1) * threads);
                        let start = Instant::now();
                        case.work(&mut local, ROUND);
                        let time = start.elapsed();
                        rounds.push((time, before == preemptions()));
                    }
                    rounds
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("benchmark thread panicked"))
            .collect()
    });
    (0..ROUNDS)
        .map(|r| {
            per_thread
                .iter()
                .fold((Duration::ZERO, true), |(t, c), rounds| {
                    (t.max(rounds[r].0), c && rounds[r].1)
                })
        })
        .collect()
}

/// One measured case: ns per increment per thread (`*`: some round index had no clean
/// sample), the final counts' relative errors in percent, and the share of clean rounds.
struct Row {
    name: &'static str,
    threads: usize,
    ns: f64,
    all_clean: bool,
    err_mean: f64,
    err_worst: f64,
    err_rms: f64,
    clean: usize,
}

fn bench<C: Case>(name: &'static str, case: &C, threads: usize) -> Row {
    let expected = (threads as u64 * OPS) as f64;
    run_once(case, threads, usize::MAX); // warm-up
    let mut best_clean = [Duration::MAX; ROUNDS];
    let mut best_any = [Duration::MAX; ROUNDS];
    let mut clean_rounds = 0;
    let runs = runs();
    let mut errors = Vec::with_capacity(runs);
    for run in 0..runs {
        for (r, (time, clean)) in run_once(case, threads, run).into_iter().enumerate() {
            best_any[r] = best_any[r].min(time);
            if clean {
                best_clean[r] = best_clean[r].min(time);
                clean_rounds += 1;
            }
        }
        errors.push((case.total() as f64 - expected) / expected);
    }
    let mut all_clean = true;
    let total: Duration = (0..ROUNDS)
        .map(|r| {
            if best_clean[r] == Duration::MAX {
                all_clean = false;
                best_any[r]
            } else {
                best_clean[r]
            }
        })
        .sum();
    Row {
        name,
        threads,
        ns: total.as_secs_f64() * 1e9 / OPS as f64,
        all_clean,
        err_mean: errors.iter().sum::<f64>() / runs as f64 * 100.0,
        err_worst: errors
            .iter()
            .fold(0.0f64, |w, &e| if e.abs() > w.abs() { e } else { w })
            * 100.0,
        err_rms: (errors.iter().map(|e| e * e).sum::<f64>() / runs as f64).sqrt() * 100.0,
        clean: clean_rounds * 100 / (runs * ROUNDS),
    }
}

fn main() {
    let default = ScalableConfig::new();
    let seed_scheme = ScalableConfig::new()
        .with_max_shift(ScalableConfig::MAX_MAX_SHIFT)
        .with_exact_while_uncontended(false);
    let shared = Shared(AtomicU64::new(0));
    let shards = Shards([Padded(AtomicU64::new(0)), Padded(AtomicU64::new(0))]);
    let wy = WyRand::from_seed_and_thread;
    let scalable = Scalable(ScalableCounter::with_config(default), wy);
    let scalable_xorshift = Scalable(
        ScalableCounter::with_config(default),
        XorShift::from_seed_and_thread,
    );
    let scalable_nocas = Scalable(
        ScalableCounter::with_config(default.with_exact_while_uncontended(false)),
        wy,
    );
    let scalable_seed = Scalable(ScalableCounter::with_config(seed_scheme), wy);

    let mut rows = Vec::new();
    for threads in [2, 1] {
        rows.push(bench(
            "`fetch_add` on one shared `AtomicU64`",
            &shared,
            threads,
        ));
        rows.push(bench(
            "per-thread padded shards (load + store)",
            &shards,
            threads,
        ));
        rows.push(bench(
            "`ScalableCounter` default (threshold 13, cap 10, CAS), `WyRand`",
            &scalable,
            threads,
        ));
        rows.push(bench(
            "`ScalableCounter` default, `XorShift` (xorshift64*)",
            &scalable_xorshift,
            threads,
        ));
        rows.push(bench(
            "`ScalableCounter` threshold 13, cap 10, no CAS, `WyRand`",
            &scalable_nocas,
            threads,
        ));
        rows.push(bench(
            "`ScalableCounter` as published (threshold 13, uncapped, no CAS), `WyRand`",
            &scalable_seed,
            threads,
        ));
    }

    let _block = Block::begin("counters");
    println!(
        "{OPS} increments per thread in {ROUNDS} synchronised rounds; ns per increment per \
         thread, sum over round indices of the best clean round of {} runs (`*`: a round \
         index without a clean sample); errors of the final count against threads × {OPS}.",
        runs()
    );
    println!();
    header(&[
        "case",
        "threads",
        "ns/op",
        "error mean",
        "error worst",
        "error rms",
        "clean rounds",
    ]);
    for r in &rows {
        let mark = if r.all_clean { "" } else { "*" };
        println!(
            "| {} | {} | {:.2}{mark} | {:+.3}% | {:+.3}% | {:.3}% | {}% |",
            r.name, r.threads, r.ns, r.err_mean, r.err_worst, r.err_rms, r.clean
        );
    }
    let two = |i: usize| rows[i].ns;
    println!();
    println!(
        "On 2 threads `ScalableCounter` (default, `WyRand`) is {:.2}× cheaper than shared \
         `fetch_add` (target: at least 3×); with `XorShift` {:.2}×; Scalable Approximate Counting's scheme {:.2}×.",
        two(0) / two(2),
        two(0) / two(3),
        two(0) / two(5)
    );
}
