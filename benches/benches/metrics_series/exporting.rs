//! The row "records while exporting" (issue 38): 10,000 series exist; two threads call
//! `metrics::histogram!("rpc_latency_seconds", "route" => …).record(…)` over 1,000 label sets
//! each, first with nothing else running (quiet), then while an exporter scrapes every 100 ms
//! (Picollo: an `.hlog` interval of every series, then the protobuf exposition; the peer:
//! `PrometheusHandle::render`). Each call is timed (`Instant` around the macro and the
//! record) into a histogram per thread.
//!
//! What the issue asks: the longest call while exporting under 10 ms, the records made while
//! exporting at least the peer's share of its quiet rate, the p99 of one call at most 2× its
//! quiet p99, and an `.hlog` interval of 10,000 series in well under a second. The longest
//! call and the rate come first: a thread blocked by an export records nothing meanwhile, so
//! its wait reaches no percentile.

use picollo_testkit::StopFlag;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Barrier;
use std::time::{Duration, Instant};

use picollo_alloc::hdr::LogWriter;
use picollo_alloc::HistogramBuilder;
use picollo_core::{EquivalentValue, ReadExt};

/// Series that exist before the phases start.
pub const SERIES: usize = 10_000;
/// Recording threads, each over label sets of its own.
const THREADS: usize = 2;
/// Label sets each thread records into.
const KEYS: usize = 1_000;
/// The exporter's period.
const PERIOD: Duration = Duration::from_millis(100);

/// How long each phase lasts (`PICOLLO_EXPORTING_SECS`, default 3).
fn phase() -> Duration {
    let secs = std::env::var("PICOLLO_EXPORTING_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3.0f64);
    Duration::from_secs_f64(secs)
}

/// What a phase's recording threads did: calls, the longest, the 99th percentile (ns).
struct Calls {
    made: u64,
    longest_ns: u64,
    p99_ns: u64,
}

/// Runs the recording threads for one phase, with `export` called every [`PERIOD`] on a
/// thread of its own when given (the phase ends on time, whatever an export takes); returns
/// the calls and the exports' times (ms: the longest export, the mean of its first part,
/// the `.hlog` interval, wall and the exporter thread's CPU time, and the mean of the whole).
fn run_phase(
    routes: &[&'static str],
    export: Option<&mut (dyn FnMut() -> [Duration; 2] + Send)>,
) -> (Calls, [f64; 4]) {
    let stop = StopFlag::new();
    let start = Barrier::new(THREADS + 1);
    let (made, longest) = (AtomicU64::new(0), AtomicU64::new(0));
    let mut merged = HistogramBuilder::new().sigfig(2).plain().expect("a layout");
    let exports = std::thread::scope(|s| {
        // The recording threads and the exporter stop however this closure ends.
        let _stop = stop.raise_on_drop();
        let threads: Vec<_> = (0..THREADS)
            .map(|t| {
                let (stop, start, made, longest) = (&stop, &start, &made, &longest);
                let keys = &routes[t * KEYS..(t + 1) * KEYS];
                s.spawn(move || record(keys, t, stop, start, (made, longest)))
            })
            .collect();
        let exporter = export.map(|export| {
            let stop = &stop;
            s.spawn(move || {
                let mut exports: Vec<(f64, f64, f64)> = Vec::new();
                while !stop.is_raised() {
                    let tick = Instant::now();
                    let [first, cpu] = export();
                    let ms = |d: Duration| d.as_secs_f64() * 1e3;
                    exports.push((ms(tick.elapsed()), ms(first), ms(cpu)));
                    std::thread::sleep(PERIOD.saturating_sub(tick.elapsed()));
                }
                exports
            })
        });
        start.wait();
        std::thread::sleep(phase());
        stop.raise();
        for t in threads {
            merged.add(&t.join().expect("a recording thread"));
        }
        exporter.map_or_else(Vec::new, |e| e.join().expect("the exporter"))
    });
    let p99 = merged
        .percentile(99.0, EquivalentValue::Upper)
        .map_or(0, |p| p.value);
    let n = exports.len().max(1) as f64;
    let times = [
        exports.iter().map(|e| e.0).fold(0.0, f64::max),
        exports.iter().map(|e| e.1).sum::<f64>() / n,
        exports.iter().map(|e| e.2).sum::<f64>() / n,
        exports.iter().map(|e| e.0).sum::<f64>() / n,
    ];
    let calls = Calls {
        made: made.load(Ordering::Relaxed),
        longest_ns: longest.load(Ordering::Relaxed),
        p99_ns: p99,
    };
    (calls, times)
}

/// One recording thread: `histogram!(…).record(…)` over `keys` until `stop`, each call
/// timed; adds its calls to `made` and raises `longest`, returns the calls' times (ns).
fn record(
    keys: &[&'static str],
    t: usize,
    stop: &StopFlag,
    start: &Barrier,
    (made, longest): (&AtomicU64, &AtomicU64),
) -> picollo_alloc::SparseHistogram {
    let mut times = HistogramBuilder::new().sigfig(2).plain().expect("a layout");
    let table = picollo_benches::latency::log_uniform(4096, 7 + t as u64);
    let mut n = 0usize;
    start.wait();
    while !stop.is_raised() {
        for &route in keys {
            let v = table[n & 4095];
            n += 1;
            let began = Instant::now();
            metrics::histogram!("rpc_latency_seconds", "route" => route).record(v);
            times.record(began.elapsed().as_nanos() as u64);
        }
    }
    made.fetch_add(n as u64, Ordering::Relaxed);
    longest.fetch_max(times.max().unwrap_or(0), Ordering::Relaxed);
    times
}

/// A child's work for this row: the recorder is installed (`picollo`: its recorder and
/// registry; `None`: the peer's handle to render); prints the figures.
pub fn measure(
    picollo: Option<(
        picollo_export::recorder::PicolloRecorder,
        std::sync::Arc<picollo_export::Registry>,
    )>,
    peer: Option<metrics_exporter_prometheus::PrometheusHandle>,
) {
    let routes: Vec<&'static str> = (0..SERIES)
        .map(|i| &*Box::leak(format!("/api/v1/route/{i:05}").into_boxed_str()))
        .collect();
    for &route in &routes {
        metrics::histogram!("rpc_latency_seconds", "route" => route).record(0.001);
    }
    let (quiet, _) = run_phase(&routes, None);
    let mut log = LogWriter::new(std::io::sink());
    let mut at = 0.0;
    let mut export = move || -> [Duration; 2] {
        let began = Instant::now();
        let cpu = picollo_linux::thread_cpu_time_ns().unwrap_or(0);
        match (&picollo, &peer) {
            (Some((recorder, registry)), _) => {
                recorder
                    .write_hlog_interval(&mut log, at, at + 0.1)
                    .expect("a sink");
                at += 0.1;
                let hlog = began.elapsed();
                let now = picollo_linux::thread_cpu_time_ns().unwrap_or(0);
                let hlog_cpu = Duration::from_nanos(now.saturating_sub(cpu));
                let mut out = Vec::new();
                registry.encode_protobuf(&mut out);
                std::hint::black_box(out.len());
                [hlog, hlog_cpu]
            }
            (None, Some(handle)) => {
                std::hint::black_box(handle.render().len());
                [began.elapsed(), Duration::ZERO]
            }
            (None, None) => [Duration::ZERO; 2],
        }
    };
    let (busy, [export_max, first_mean, first_cpu, export_mean]) =
        run_phase(&routes, Some(&mut export));
    println!("quiet_made {}", quiet.made);
    println!("quiet_longest_ns {}", quiet.longest_ns);
    println!("quiet_p99_ns {}", quiet.p99_ns);
    println!("busy_made {}", busy.made);
    println!("busy_longest_ns {}", busy.longest_ns);
    println!("busy_p99_ns {}", busy.p99_ns);
    println!("export_max_us {}", (export_max * 1e3) as u64);
    println!("export_mean_us {}", (export_mean * 1e3) as u64);
    println!("hlog_mean_us {}", (first_mean * 1e3) as u64);
    println!("hlog_cpu_us {}", (first_cpu * 1e3) as u64);
}

/// The figures of one child for this row.
pub struct Figures {
    pub quiet_made: f64,
    pub busy_made: f64,
    pub quiet_longest_ms: f64,
    pub busy_longest_ms: f64,
    pub quiet_p99_ns: f64,
    pub busy_p99_ns: f64,
    pub export_max_ms: f64,
    pub export_mean_ms: f64,
    pub hlog_mean_ms: f64,
    pub hlog_cpu_ms: f64,
}

impl Figures {
    pub fn read(out: &str) -> Figures {
        let f = |key: &str| picollo_benches::child::field::<u64>(out, key) as f64;
        Figures {
            quiet_made: f("quiet_made"),
            busy_made: f("busy_made"),
            quiet_longest_ms: f("quiet_longest_ns") / 1e6,
            busy_longest_ms: f("busy_longest_ns") / 1e6,
            quiet_p99_ns: f("quiet_p99_ns"),
            busy_p99_ns: f("busy_p99_ns"),
            export_max_ms: f("export_max_us") / 1e3,
            export_mean_ms: f("export_mean_us") / 1e3,
            hlog_mean_ms: f("hlog_mean_us") / 1e3,
            hlog_cpu_ms: f("hlog_cpu_us") / 1e3,
        }
    }

    /// Records made while exporting ÷ records made quiet.
    pub fn share(&self) -> f64 {
        self.busy_made / self.quiet_made.max(1.0)
    }
}

/// Prints the row's table and its targets, `peer` the peer's figures.
pub fn report(names: &[&str], figures: &[Figures], peer: usize) {
    println!(
        "Records while exporting: {} series; {THREADS} threads call `histogram!(…).record(…)` \
         over {KEYS} label sets each for {:.0} s quiet, then {:.0} s while an exporter runs \
         every {} ms (Picollo: an `.hlog` interval of every series, then the protobuf \
         exposition; the peer: `render`). Calls: records made, the longest call and the p99 \
         of one call (ns), quiet → while exporting; share: records while exporting ÷ quiet. \
         Export: the longest and the mean of one export; hlog: the mean `.hlog` interval, \
         wall (the exporter thread's CPU time).",
        super::thousands(SERIES),
        phase().as_secs_f64(),
        phase().as_secs_f64(),
        PERIOD.as_millis()
    );
    println!();
    picollo_benches::report::header(&[
        "recorder",
        "records quiet → exporting",
        "share",
        "longest call ms, quiet → exporting",
        "p99 ns, quiet → exporting",
        "p99 ÷ quiet",
        "export ms, longest (mean)",
        "hlog ms, wall (CPU)",
    ]);
    for (name, f) in names.iter().zip(figures) {
        println!(
            "| {name} | {} → {} | {:.2} | {:.3} → {:.3} | {:.0} → {:.0} | {:.2}× | {:.1} ({:.1}) | {} |",
            f.quiet_made,
            f.busy_made,
            f.share(),
            f.quiet_longest_ms,
            f.busy_longest_ms,
            f.quiet_p99_ns,
            f.busy_p99_ns,
            f.busy_p99_ns / f.quiet_p99_ns.max(1.0),
            f.export_max_ms,
            f.export_mean_ms,
            if f.hlog_mean_ms > 0.0 {
                format!("{:.1} ({:.1})", f.hlog_mean_ms, f.hlog_cpu_ms)
            } else {
                "—".into()
            },
        );
    }
    println!();
    let p = &figures[peer];
    picollo_benches::report::header(&["recorder", "target", "value", "verdict"]);
    let mark = |ok: bool| if ok { "✔" } else { "✘" };
    for (i, (name, f)) in names.iter().zip(figures).enumerate() {
        if i == peer {
            continue;
        }
        let rows = [
            (
                "longest call while exporting < 10 ms",
                format!("{:.3} ms", f.busy_longest_ms),
                f.busy_longest_ms < 10.0,
            ),
            (
                "share ≥ the peer's",
                format!("{:.2} vs {:.2}", f.share(), p.share()),
                f.share() >= p.share(),
            ),
            (
                "p99 while exporting ≤ 2× quiet",
                format!("{:.2}×", f.busy_p99_ns / f.quiet_p99_ns.max(1.0)),
                f.busy_p99_ns <= 2.0 * f.quiet_p99_ns,
            ),
            (
                "`.hlog` interval of 10,000 series well under 1 s (< 250 ms, wall)",
                format!("{:.1} ms ({:.1} ms CPU)", f.hlog_mean_ms, f.hlog_cpu_ms),
                f.hlog_mean_ms < 250.0,
            ),
        ];
        for (what, value, ok) in rows {
            println!("| {name} | {what} | {value} | {} |", mark(ok));
        }
    }
    println!();
}
