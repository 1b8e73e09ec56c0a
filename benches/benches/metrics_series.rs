//! The service workload of issue 30: a service records request latencies with
//! `metrics::histogram!("rpc_latency_seconds", "route" => …)`, one series per label set,
//! through the recorder it installed, and is scraped. Measured for Picollo's recorder (one
//! subject per histogram kind and storage) and `metrics-exporter-prometheus`, in the same
//! run, each recorder in a process of its own (this binary started again per case, so no
//! allocator state carries over):
//!
//! - `S` label sets (series), `T` recording threads, `V` values per series per thread: every
//!   thread calls the macro once per label set and records a first value (the *create and
//!   first record* phase, timed from a common start to the slowest thread), keeps the
//!   handles, then records its other `V − 1` values into every series, one pass over the
//!   series per value (as requests for all routes interleave);
//! - latencies in seconds over 1 µs … 1 s: **log-uniform** (the main case: every decade as
//!   likely, the hardest for a storage that keeps only the buckets recorded) or **log-normal**
//!   (median 2 ms, σ = 1: a realistic RPC profile), `picollo_benches::latency`;
//! - resident memory (`VmRSS`) after installing the recorder (the base), after the records
//!   (the recording threads still alive, as a service's workers are) and after one scrape of
//!   every series (Picollo: the registry's protobuf exposition with native histograms;
//!   `metrics-exporter-prometheus`: `PrometheusHandle::render`, which also drains the samples
//!   it keeps until then); per series = (after − base) ÷ `S`;
//! - both recorders installed as their documentation installs them: Picollo's as the README
//!   shows (`RecorderBuilder::new().scale(1e9).install(registry)`), the peer with
//!   `PrometheusBuilder::new().install_recorder()` (no HTTP listener, no upkeep task: nothing
//!   drains its samples before the scrape).
//!
//! The targets (issue 44's, and issue 38's for the scrape; same-run ratios under the release
//! defaults, `--profile bench-default`): resident memory per series at most the peer's in
//! every case (the thread-local kind within 1.5×); creating and first-recording a series at
//! most the peer's cost (the thread-local kind 1.5×), in the median round; a scrape at most a
//! tenth of the peer's `render`.
//! The block ends with a ✔/✘ row per target and Picollo subject under the release defaults;
//! under fat LTO it gives the same ratios without a mark.
//!
//! **Adding a Picollo configuration** is one line in [`SUBJECTS`]: its name and the
//! `RecorderBuilder` that makes it (the recorder's default, atomic over sparse storage, first).
//!
//! Cases (`PICOLLO_SERIES` = `default`, `full` or `smoke`; `smoke` when the variable is unset
//! in a smoke run, `picollo_benches::smoke`, as CI's): `default` has the rows of the issue's
//! table and the targets' rows, `full` every combination of 1,000 and 10,000 series, 1, 2
//! and 4 threads and 20, 200 and 2,000 values per series (log-uniform) — with dense storage
//! its largest cases hold gigabytes — and `smoke` one small case. Each case runs in rounds
//! (`PICOLLO_SERIES_ROUNDS`: 9, or 1 for `smoke`), every subject once per round, and each
//! figure is the lowest of its rounds: on a shared machine a child that was preempted would
//! otherwise decide a ratio. The create time is also given for the median round ([`rounds`]
//! says why both).
//!
//! A second table, **records while exporting** ([`exporting`], issue 38), times every
//! `histogram!(…).record(…)` call of two threads over 10,000 series, quiet and then while an
//! exporter scrapes (and, for Picollo, writes an `.hlog` interval) every 100 ms; it runs for
//! `default` and `full`, and alone with `PICOLLO_SERIES=exporting`.
//!
//! Run: `cargo bench -p picollo-benches --bench metrics_series` (with `--profile
//! bench-default` for the targets).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Instant;

use picollo_benches::child::{self, resident_bytes};
use picollo_benches::latency;
use picollo_benches::report::{header, profile, Block};
use picollo_export::recorder::{HistogramKind, RecorderBuilder};
use picollo_export::Registry;

#[path = "metrics_series/exporting.rs"]
mod exporting;

/// What a subject installs.
#[derive(Clone, Copy)]
enum Recorder {
    /// Picollo's recorder from this builder (the scale is set by the bench: seconds to
    /// nanoseconds, as the README's example).
    Picollo(fn() -> RecorderBuilder),
    /// `metrics-exporter-prometheus`, the peer.
    Prometheus,
}

/// A recorder under test.
struct Subject {
    name: &'static str,
    recorder: Recorder,
}

/// The recorders, in table order. Picollo's subjects are its kinds and storages: a new
/// storage is one more line here (name, builder).
const SUBJECTS: &[Subject] = &[
    Subject {
        name: "Picollo atomic, sparse (default)",
        recorder: Recorder::Picollo(RecorderBuilder::new),
    },
    Subject {
        name: "Picollo thread-local, sparse",
        recorder: Recorder::Picollo(|| RecorderBuilder::new().kind(HistogramKind::ThreadLocal)),
    },
    Subject {
        name: "Picollo atomic, dense",
        recorder: Recorder::Picollo(|| RecorderBuilder::new().dense()),
    },
    Subject {
        name: "Picollo thread-local, dense",
        recorder: Recorder::Picollo(|| {
            RecorderBuilder::new()
                .kind(HistogramKind::ThreadLocal)
                .dense()
        }),
    },
    Subject {
        name: "metrics-exporter-prometheus",
        recorder: Recorder::Prometheus,
    },
];

/// The latency spread of a case.
#[derive(Clone, Copy, PartialEq)]
enum Spread {
    LogUniform,
    LogNormal,
    Uniform,
}

impl Spread {
    fn name(self) -> &'static str {
        match self {
            Spread::LogUniform => "log-uniform",
            Spread::LogNormal => "log-normal",
            Spread::Uniform => "uniform",
        }
    }

    fn parse(s: &str) -> Option<Spread> {
        [Spread::LogUniform, Spread::LogNormal, Spread::Uniform]
            .into_iter()
            .find(|d| d.name() == s)
    }

    /// A thread's table of latencies (cycled through by its records).
    fn table(self, seed: u64) -> Vec<f64> {
        match self {
            Spread::LogUniform => latency::log_uniform(TABLE, seed),
            Spread::LogNormal => latency::log_normal(TABLE, seed),
            Spread::Uniform => latency::uniform_spread(TABLE, seed),
        }
    }
}

/// Latencies per thread, cycled (a power of two).
const TABLE: usize = 4096;

/// One case: `series` label sets, `threads` recording threads, `values` per series per thread.
#[derive(Clone, Copy)]
struct Case {
    series: usize,
    threads: usize,
    values: usize,
    spread: Spread,
}

impl Case {
    const fn new(series: usize, threads: usize, values: usize, spread: Spread) -> Case {
        Case {
            series,
            threads,
            values,
            spread,
        }
    }

    fn label(&self) -> String {
        format!(
            "{} × {} × {} ({})",
            thousands(self.series),
            self.threads,
            thousands(self.values),
            self.spread.name()
        )
    }
}

/// The `default` cases: issue 38's table (log-uniform) with 2 threads at 20 values added,
/// log-normal beside its 1,000-series rows with 2 threads, and the uniform rows of issue 44's
/// table. (10,000 series with 200 or more values per series are in `full`: each adds minutes
/// per round, the peer holding every sample, 16 bytes each, until its scrape.)
const DEFAULT: &[Case] = &[
    Case::new(1_000, 1, 20, Spread::LogUniform),
    Case::new(1_000, 2, 20, Spread::LogUniform),
    Case::new(1_000, 4, 20, Spread::LogUniform),
    Case::new(1_000, 2, 200, Spread::LogUniform),
    Case::new(1_000, 2, 2_000, Spread::LogUniform),
    Case::new(10_000, 2, 20, Spread::LogUniform),
    Case::new(1_000, 2, 20, Spread::LogNormal),
    Case::new(1_000, 2, 200, Spread::LogNormal),
    Case::new(1_000, 2, 2_000, Spread::LogNormal),
    Case::new(10_000, 2, 20, Spread::Uniform),
    Case::new(1_000, 2, 200, Spread::Uniform),
    Case::new(1_000, 2, 2_000, Spread::Uniform),
];

/// The `smoke` case (a smoke run, as CI's).
const SMOKE: &[Case] = &[Case::new(1_000, 2, 20, Spread::LogUniform)];

/// The case set asked for: `PICOLLO_SERIES`, else `smoke` in a smoke run
/// (`picollo_benches::smoke`) and `default` elsewhere.
fn choice() -> String {
    std::env::var("PICOLLO_SERIES").unwrap_or_else(|_| {
        if picollo_benches::smoke() {
            "smoke".into()
        } else {
            "default".into()
        }
    })
}

/// Rounds per case (`PICOLLO_SERIES_ROUNDS`; 9, or 1 for `smoke`): each round runs every
/// subject's child once, and each figure is the lowest of its rounds, so that a child that
/// other processes preempted (this VM's 2 cores are shared) does not decide a ratio. Nine,
/// because the create time of two threads is two bands on every recorder (the threads meet
/// on the same new keys, or one runs ahead of the other and makes them all): in 3 or 5
/// rounds one side sometimes drew only its upper band and the other its lower, and the
/// lowest round then compared the two bands, not the recorders. The create target is judged
/// on the median round.
fn rounds() -> usize {
    rounds_or(if choice() == "smoke" { 1 } else { 9 })
}

/// Rounds of the "records while exporting" children (`PICOLLO_SERIES_ROUNDS`, else 3): each
/// takes seconds, and its figure is the round with the most records.
fn exporting_rounds() -> usize {
    rounds_or(3)
}

/// `PICOLLO_SERIES_ROUNDS` (at least 1), else `default`.
fn rounds_or(default: usize) -> usize {
    std::env::var("PICOLLO_SERIES_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .map_or(default, |r: usize| r.max(1))
}

fn cases() -> Vec<Case> {
    match choice().as_str() {
        "full" => {
            let mut all = Vec::new();
            for series in [1_000, 10_000] {
                for threads in [1, 2, 4] {
                    for values in [20, 200, 2_000] {
                        all.push(Case::new(series, threads, values, Spread::LogUniform));
                    }
                }
            }
            all
        }
        "smoke" => SMOKE.to_vec(),
        "exporting" => Vec::new(),
        _ => DEFAULT.to_vec(),
    }
}

fn thousands(n: usize) -> String {
    if n >= 1_000 {
        format!("{},{:03}", n / 1_000, n % 1_000)
    } else {
        n.to_string()
    }
}

/// A child's work: installs `subject`'s recorder, runs `case`, prints its figures.
fn measure(subject: &Subject, case: Case) {
    let labels: Vec<&'static str> = (0..case.series)
        .map(|i| &*Box::leak(format!("/api/v1/route/{i:05}").into_boxed_str()))
        .collect();
    let tables: Vec<Vec<f64>> = (0..case.threads)
        .map(|t| case.spread.table(0x9E37_79B9 + t as u64))
        .collect();
    let scrape: Box<dyn Fn() -> usize + Sync> = match subject.recorder {
        Recorder::Picollo(builder) => {
            let registry = Arc::new(Registry::new());
            builder()
                .scale(1e9)
                .install(registry.clone())
                .expect("the only recorder of this process");
            Box::new(move || {
                let mut out = Vec::new();
                registry.encode_protobuf(&mut out);
                out.len()
            })
        }
        Recorder::Prometheus => {
            let handle = metrics_exporter_prometheus::PrometheusBuilder::new()
                .install_recorder()
                .expect("the only recorder of this process");
            Box::new(move || handle.render().len())
        }
    };
    let base = resident_bytes();
    let phases: [Barrier; 4] = std::array::from_fn(|_| Barrier::new(case.threads + 1));
    // The slowest thread's time per phase, in ns, wall and CPU: each thread times its own
    // phase (from the barrier that starts it), so a late wake-up of the main thread cannot
    // shorten it; the thread's CPU time leaves out the time it was descheduled.
    let [create, record, create_cpu, record_cpu] = [0; 4].map(AtomicU64::new);
    std::thread::scope(|s| {
        for table in &tables {
            let (labels, phases) = (&labels, &phases);
            let (create, record) = ((&create, &create_cpu), (&record, &record_cpu));
            s.spawn(move || {
                let mut k = 0usize;
                let mut next = || {
                    k += 1;
                    table[k & (TABLE - 1)]
                };
                phases[0].wait();
                let started = Clocks::now();
                let handles: Vec<metrics::Histogram> = labels
                    .iter()
                    .map(|&route| {
                        let h = metrics::histogram!("rpc_latency_seconds", "route" => route);
                        h.record(next());
                        h
                    })
                    .collect();
                started.store_max(create);
                phases[1].wait();
                let started = Clocks::now();
                for _ in 1..case.values {
                    for h in &handles {
                        h.record(next());
                    }
                }
                started.store_max(record);
                phases[2].wait();
                // Alive, as a service's workers, until the scrape is measured.
                phases[3].wait();
            });
        }
        phases[0].wait();
        phases[1].wait();
        phases[2].wait();
        let recorded = resident_bytes();
        let started = Instant::now();
        let bytes = scrape();
        let scrape_time = started.elapsed();
        let scraped = resident_bytes();
        phases[3].wait();
        println!("base {base}");
        println!("recorded {recorded}");
        println!("scraped {scraped}");
        println!("create_ns {}", create.load(Ordering::Relaxed));
        println!("record_ns {}", record.load(Ordering::Relaxed));
        println!("create_cpu_ns {}", create_cpu.load(Ordering::Relaxed));
        println!("record_cpu_ns {}", record_cpu.load(Ordering::Relaxed));
        println!("scrape_ns {}", scrape_time.as_nanos());
        println!("scrape_bytes {bytes}");
    });
}

/// A phase's start on the calling thread: wall clock and the thread's CPU time.
struct Clocks {
    wall: Instant,
    cpu: u64,
}

impl Clocks {
    fn now() -> Clocks {
        Clocks {
            cpu: picollo_linux::thread_cpu_time_ns().unwrap_or(0),
            wall: Instant::now(),
        }
    }

    /// Raises `(wall, cpu)` to the nanoseconds since `self`, where they are higher.
    fn store_max(&self, (wall, cpu): (&AtomicU64, &AtomicU64)) {
        wall.fetch_max(self.wall.elapsed().as_nanos() as u64, Ordering::Relaxed);
        let now = picollo_linux::thread_cpu_time_ns().unwrap_or(0);
        cpu.fetch_max(now.saturating_sub(self.cpu), Ordering::Relaxed);
    }
}

/// The figures of one child.
struct Figures {
    /// Resident bytes per series after the records and after the scrape.
    recorded: f64,
    scraped: f64,
    /// Create and first record, µs per series: the slowest thread's wall time and CPU time.
    create_us: f64,
    create_cpu_us: f64,
    /// The median round's create time, µs per series (wall): [`Figures::of_rounds`].
    create_median_us: f64,
    /// ns per record after the first (wall, CPU).
    record_ns: f64,
    record_cpu_ns: f64,
    scrape_ms: f64,
    scrape_bytes: usize,
}

impl Figures {
    /// Each figure the lowest of its rounds', except `create_median_us`: the median round's
    /// create time (of an even count of rounds, the slower of the two middle ones).
    fn of_rounds(rounds: Vec<Figures>) -> Figures {
        let mut creates: Vec<f64> = rounds.iter().map(|f| f.create_us).collect();
        creates.sort_by(f64::total_cmp);
        let median = creates[creates.len() / 2];
        let lowest = rounds
            .into_iter()
            .reduce(|a, b| a.lowest(&b))
            .expect("at least one round");
        Figures {
            create_median_us: median,
            ..lowest
        }
    }

    /// Each figure the lower of `self`'s and `other`'s.
    fn lowest(self, other: &Figures) -> Figures {
        Figures {
            // Replaced by `of_rounds`, which has every round's.
            create_median_us: self.create_median_us.min(other.create_median_us),
            recorded: self.recorded.min(other.recorded),
            scraped: self.scraped.min(other.scraped),
            create_us: self.create_us.min(other.create_us),
            create_cpu_us: self.create_cpu_us.min(other.create_cpu_us),
            record_ns: self.record_ns.min(other.record_ns),
            record_cpu_ns: self.record_cpu_ns.min(other.record_cpu_ns),
            scrape_ms: self.scrape_ms.min(other.scrape_ms),
            scrape_bytes: self.scrape_bytes.min(other.scrape_bytes),
        }
    }

    fn read(out: &str, case: &Case) -> Figures {
        let bytes = |key: &str| child::field::<u64>(out, key) as f64;
        let per_series = |key: &str| (bytes(key) - bytes("base")) / case.series as f64;
        let later = (case.series * case.threads * (case.values - 1)).max(1) as f64;
        Figures {
            recorded: per_series("recorded"),
            scraped: per_series("scraped"),
            create_us: bytes("create_ns") / 1e3 / case.series as f64,
            create_cpu_us: bytes("create_cpu_ns") / 1e3 / case.series as f64,
            create_median_us: bytes("create_ns") / 1e3 / case.series as f64,
            record_ns: bytes("record_ns") / later,
            record_cpu_ns: bytes("record_cpu_ns") / later,
            scrape_ms: bytes("scrape_ns") / 1e6,
            scrape_bytes: child::field(out, "scrape_bytes"),
        }
    }
}

fn main() {
    if let Some(spec) = child::case() {
        let words: Vec<&str> = spec.split_whitespace().collect();
        let num = |i: usize| words.get(i).and_then(|w| w.parse::<usize>().ok());
        if let (Some(&"series"), Some(subject), Some(series), Some(threads), Some(values)) =
            (words.first(), num(1), num(2), num(3), num(4))
        {
            let spread = words
                .get(5)
                .and_then(|s| Spread::parse(s))
                .expect("a spread");
            let case = Case::new(series, threads, values, spread);
            measure(&SUBJECTS[subject], case);
        }
        if let (Some(&"exporting"), Some(subject)) = (words.first(), num(1)) {
            measure_exporting(&SUBJECTS[subject]);
        }
        return;
    }
    // Begun before the cases run, so that its load averages frame them.
    let block = Block::begin("metrics-series");
    let started = Instant::now();
    let cases = cases();
    let peer = SUBJECTS
        .iter()
        .position(|s| matches!(s.recorder, Recorder::Prometheus))
        .expect("the peer is a subject");
    let rounds = rounds();
    // results[case][subject], the lowest of the rounds (interleaved: every subject once per
    // round, so that a busy spell of the machine meets each of them), with the median round's
    // create time.
    let results: Vec<Vec<Figures>> = cases
        .iter()
        .map(|case| {
            let mut all: Vec<Vec<Figures>> = SUBJECTS.iter().map(|_| Vec::new()).collect();
            for _ in 0..rounds {
                for (i, all) in all.iter_mut().enumerate() {
                    let spec = format!(
                        "series {i} {} {} {} {}",
                        case.series,
                        case.threads,
                        case.values,
                        case.spread.name()
                    );
                    all.push(Figures::read(&child::run(&spec, &[]), case));
                }
            }
            all.into_iter().map(Figures::of_rounds).collect()
        })
        .collect();

    let kb = |b: f64| b / 1024.0;
    println!(
        "`metrics::histogram!(\"rpc_latency_seconds\", \"route\" => …)` per label set; series × \
         threads × values per series per thread (spread of the latencies, 1 µs … 1 s); every \
         recorder in a process of its own; each figure the lowest of {rounds} rounds, but the \
         median round's create time. Memory: \
         resident KB per series after the records (threads alive) and after one scrape of \
         every series; ÷ = this recorder's figure ÷ \
         metrics-exporter-prometheus's in the same case. Create: the macro and the first \
         record of every series on every thread, µs per series: the slowest thread's wall time \
         and in parentheses its CPU time (`CLOCK_THREAD_CPUTIME_ID`, user and system: the time \
         it ran, leaving out waits for locks and preemptions by other processes); ÷ on the \
         wall times; then the median round's wall time (two threads that create the same \
         series either meet or one runs ahead, on every recorder: the lowest round compares \
         the runs-ahead cases where both sides have one, the median the cases that happen \
         most). Record: ns per later record, the slowest thread's wall (CPU) time ÷ its \
         records. Scrape: one exposition of every series (Picollo: protobuf with native histograms; \
         the peer: `render`, text)."
    );
    println!();
    header(&[
        "series × threads × values (spread)",
        "recorder",
        "KB per series",
        "÷",
        "KB per series after a scrape",
        "÷",
        "create µs per series, wall (CPU)",
        "÷",
        "create, median round",
        "÷",
        "record ns, wall (CPU)",
        "scrape ms",
        "scrape ÷",
        "scrape bytes",
    ]);
    for (case, figures) in cases.iter().zip(&results) {
        let p = &figures[peer];
        for (subject, f) in SUBJECTS.iter().zip(figures) {
            println!(
                "| {} | {} | {:.1} | {:.2}× | {:.1} | {:.2}× | {:.2} ({:.2}) | {:.2}× | {:.2} | \
                 {:.2}× | {:.1} ({:.1}) | {:.1} | {:.2}× | {} |",
                case.label(),
                subject.name,
                kb(f.recorded),
                f.recorded / p.recorded,
                kb(f.scraped),
                f.scraped / p.scraped,
                f.create_us,
                f.create_cpu_us,
                f.create_us / p.create_us,
                f.create_median_us,
                f.create_median_us / p.create_median_us,
                f.record_ns,
                f.record_cpu_ns,
                f.scrape_ms,
                f.scrape_ms / p.scrape_ms,
                f.scrape_bytes,
            );
        }
    }
    println!();

    // The targets, per Picollo subject: the worst ratio over the cases each one covers.
    let judged = profile() == "bench-default";
    println!(
        "Targets (issues 38 and 44; same-run ratios under the release defaults{}):",
        if judged {
            ""
        } else {
            ": this build is not judged, see the `bench-default` rows"
        }
    );
    println!();
    header(&["recorder", "target", "cases", "worst ratio", "verdict"]);
    // (what, cases it applies to, figure, limit for the atomic kinds, for the thread-local).
    type Target = (
        &'static str,
        fn(&Case) -> bool,
        fn(&Figures) -> f64,
        f64,
        f64,
    );
    let targets: [Target; 3] = [
        (
            "resident memory per series ≤ the peer's in every case (thread-local ≤ 1.5×)",
            |_| true,
            |f| f.recorded,
            1.0,
            1.5,
        ),
        (
            "create and first record of a series ≤ the peer's (thread-local ≤ 1.5×; wall, \
             median round)",
            |_| true,
            // The median round, not the lowest: the lowest compares whichever band each side
            // drew at least once ([`rounds`]), and it hid the thread-local kind's 2.7× at
            // 10,000 series (1.41× in its lowest round) until the median was printed.
            |f| f.create_median_us,
            1.0,
            1.5,
        ),
        (
            "scrape ≤ 0.1× the peer's render",
            |_| true,
            |f| f.scrape_ms,
            0.1,
            0.1,
        ),
    ];
    for (i, subject) in SUBJECTS.iter().enumerate() {
        if i == peer {
            continue;
        }
        let thread_local = subject.name.contains("thread-local");
        for (what, applies, figure, atomic_limit, local_limit) in &targets {
            let limit = if thread_local {
                local_limit
            } else {
                atomic_limit
            };
            let ratios: Vec<f64> = cases
                .iter()
                .zip(&results)
                .filter(|(c, _)| applies(c))
                .map(|(_, r)| figure(&r[i]) / figure(&r[peer]))
                .collect();
            if ratios.is_empty() {
                continue;
            }
            let worst = ratios.iter().copied().fold(f64::MIN, f64::max);
            let verdict = match (judged, worst <= *limit) {
                (false, _) => "— (release defaults only)",
                (true, true) => "✔",
                (true, false) => "✘",
            };
            println!(
                "| {} | {what} | {} | {worst:.2}× | {verdict} |",
                subject.name,
                ratios.len()
            );
        }
    }
    println!();
    if matches!(choice().as_str(), "default" | "full" | "exporting") {
        exporting_row(peer, exporting_rounds());
    }
    println!(
        "{} cases × {} recorders × {rounds} rounds, {:.0} s.",
        cases.len(),
        SUBJECTS.len(),
        started.elapsed().as_secs_f64()
    );
    drop(block);
}

/// The subjects of "records while exporting": the sparse ones and the peer.
const EXPORTING_SUBJECTS: [usize; 3] = [0, 1, 4];

/// A child of "records while exporting": installs `subject`'s recorder and runs the row.
fn measure_exporting(subject: &Subject) {
    match subject.recorder {
        Recorder::Picollo(builder) => {
            let registry = Arc::new(Registry::new());
            let recorder = builder()
                .scale(1e9)
                .install(registry.clone())
                .expect("the only recorder of this process");
            exporting::measure(Some((recorder, registry)), None);
        }
        Recorder::Prometheus => {
            let handle = metrics_exporter_prometheus::PrometheusBuilder::new()
                .install_recorder()
                .expect("the only recorder of this process");
            exporting::measure(None, Some(handle));
        }
    }
}

/// Runs "records while exporting" for [`EXPORTING_SUBJECTS`], each child `rounds` times
/// (the round with the most records while exporting kept), and prints its tables.
fn exporting_row(peer: usize, rounds: usize) {
    let figures: Vec<exporting::Figures> = EXPORTING_SUBJECTS
        .iter()
        .map(|&i| {
            (0..rounds)
                .map(|_| exporting::Figures::read(&child::run(&format!("exporting {i}"), &[])))
                .max_by(|a, b| a.busy_made.total_cmp(&b.busy_made))
                .expect("at least one round")
        })
        .collect();
    let names: Vec<&str> = EXPORTING_SUBJECTS
        .iter()
        .map(|&i| SUBJECTS[i].name)
        .collect();
    let peer_at = EXPORTING_SUBJECTS
        .iter()
        .position(|&i| i == peer)
        .expect("the peer is a subject");
    exporting::report(&names, &figures, peer_at);
}
