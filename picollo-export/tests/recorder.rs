//! The `metrics` recorder: histograms, counters and gauges land in the registry with their
//! labels, conversions are counted (never silently lost), handles are shared per key, and the
//! histograms print as summary tables and `.hlog` intervals.

use std::sync::Arc;

use picollo_alloc::hdr::{interop, LogReader, LogWriter};
use picollo_alloc::BuildError;
use picollo_core::Layout;
use picollo_core::ReadExt;
use picollo_export::recorder::{HistogramKind, RecorderBuilder};
use picollo_export::text::TextFormat;
use picollo_export::Registry;

fn sample(text: &str, series: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .unwrap_or_else(|| panic!("no {series} in\n{text}"))
        .parse()
        .unwrap()
}

#[test]
fn histograms_counters_and_gauges_arrive_with_labels() {
    for kind in [HistogramKind::ThreadLocal, HistogramKind::Atomic] {
        let registry = Arc::new(Registry::new());
        let recorder = RecorderBuilder::new()
            .kind(kind)
            .build(registry.clone())
            .unwrap();
        metrics::with_local_recorder(&recorder, || {
            let h = metrics::histogram!("rpc.latency", "method" => "GET", "le" => "x");
            let again = metrics::histogram!("rpc.latency", "method" => "GET", "le" => "x");
            std::thread::scope(|s| {
                for t in 0..4u64 {
                    let h = h.clone();
                    s.spawn(move || (0..10_000u64).for_each(|i| h.record((i * 4 + t) as f64)));
                }
            });
            again.record(-5.0); // counted as 0
            again.record(f64::INFINITY); // counted as u64::MAX
            again.record(f64::NAN); // not a value: counted as invalid
            metrics::describe_histogram!("rpc.latency", "RPC latency"); // after registration
            metrics::counter!("rpc.calls", "method" => "GET").increment(3);
            metrics::counter!("rpc.calls", "method" => "GET").absolute(10);
            let g = metrics::gauge!("9queue-depth");
            g.set(4.0);
            g.increment(1.5);
            g.decrement(0.5);
            // A histogram name already used by a counter: refused, counted once per key (the
            // key is remembered), never a panic.
            for _ in 0..3 {
                metrics::histogram!("rpc.calls").record(1.0);
            }
            std::thread::scope(|s| {
                s.spawn(|| metrics::histogram!("rpc.calls").record(1.0));
            });
        });
        let text = registry.encode_text(TextFormat::Prometheus);
        let series = "rpc_latency_count{method=\"GET\",le_=\"x\"}";
        assert_eq!(sample(&text, series), 40_002.0, "{kind:?}");
        assert!(text.contains("# HELP rpc_latency RPC latency\n"), "{text}");
        assert_eq!(
            sample(
                &text,
                "rpc_latency_bucket{method=\"GET\",le_=\"x\",le=\"0\"}"
            ),
            2.0
        ); // 0 and -5
        assert_eq!(sample(&text, "rpc_calls{method=\"GET\"}"), 10.0);
        assert_eq!(sample(&text, "_9queue_depth"), 5.0);
        assert_eq!(sample(&text, "picollo_recorder_invalid_values_total"), 1.0);
        assert_eq!(
            sample(&text, "picollo_recorder_refused_registrations_total"),
            1.0
        );
        let summaries = recorder.summaries();
        assert!(
            summaries.contains("rpc_latency{method=\"GET\",le_=\"x\"}"),
            "{summaries}"
        );
        assert!(summaries.contains("40,002"), "{summaries}");
    }
}

#[test]
fn scale_turns_durations_into_nanoseconds() {
    let registry = Arc::new(Registry::new());
    let recorder = RecorderBuilder::new()
        .scale(1e9)
        .build(registry.clone())
        .unwrap();
    metrics::with_local_recorder(&recorder, || {
        let h = metrics::histogram!("op");
        h.record(std::time::Duration::from_micros(1_500));
        h.record(0.000_002); // 2 µs as f64 seconds
    });
    let text = registry.encode_text(TextFormat::Prometheus);
    assert_eq!(sample(&text, "op_count"), 2.0);
    // 1.5 ms is at most 0.39% off in its bucket; 2,000 ns too.
    let sum = sample(&text, "op_sum");
    assert!((sum - 1_502_000.0).abs() < 1_502_000.0 * 0.004, "{sum}");
}

#[test]
fn hlog_intervals_hold_what_each_interval_recorded() {
    let registry = Arc::new(Registry::new());
    let recorder = RecorderBuilder::new().build(registry).unwrap();
    let mut log = LogWriter::new(Vec::new());
    log.write_log_format_version().unwrap();
    metrics::with_local_recorder(&recorder, || {
        let h = metrics::histogram!("disk_io", "dev" => "sda 1");
        (1..=100u64).for_each(|v| h.record(v as f64 * 1000.0));
        assert_eq!(recorder.write_hlog_interval(&mut log, 0.0, 1.0).unwrap(), 0);
        (1..=10u64).for_each(|v| h.record(v as f64));
        assert_eq!(recorder.write_hlog_interval(&mut log, 1.0, 2.0).unwrap(), 0);
    });
    let text = log.into_inner();
    let entries: Vec<_> = LogReader::new(&text[..]).map(Result::unwrap).collect();
    assert_eq!(entries.len(), 2);
    assert_eq!(entries[0].tag.as_deref(), Some("disk_io{dev=\"sda_1\"}"));
    let totals: Vec<u64> = entries
        .iter()
        .map(|e| interop::to_picollo(&e.decode().unwrap()).unwrap().total())
        .collect();
    assert_eq!(totals, [100, 10]);
    // Block scale 7 has an HdrHistogram twin (2 digits): the values come back exactly.
    let first = interop::to_picollo(&entries[0].decode().unwrap()).unwrap();
    assert_eq!(first.max(), Some(100_351)); // 100,000's bucket [99,840, 100,351]
}

/// A writer that refuses every write while its flag is up (a full disk, a closed pipe).
struct Flaky {
    out: Vec<u8>,
    failing: Arc<std::sync::atomic::AtomicBool>,
}

impl std::io::Write for Flaky {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.failing.load(std::sync::atomic::Ordering::Relaxed) {
            return Err(std::io::Error::other("disk full"));
        }
        self.out.write(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// An interval whose write fails keeps its counts: the next interval that is written holds
/// them, for every series (the one whose write failed and those never tried), and no count
/// is written twice.
#[test]
fn a_failed_hlog_write_loses_no_count() {
    let registry = Arc::new(Registry::new());
    let recorder = RecorderBuilder::new().build(registry).unwrap();
    let failing = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut log = LogWriter::new(Flaky {
        out: Vec::new(),
        failing: failing.clone(),
    });
    let totals = |bytes: &[u8]| -> Vec<(String, u64)> {
        LogReader::new(bytes)
            .map(Result::unwrap)
            .map(|e| {
                let total = interop::to_picollo(&e.decode().unwrap()).unwrap().total();
                (e.tag.unwrap_or_default(), total)
            })
            .collect()
    };
    metrics::with_local_recorder(&recorder, || {
        let a = metrics::histogram!("a");
        let b = metrics::histogram!("b");
        (1..=10u64).for_each(|v| a.record(v as f64));
        (1..=20u64).for_each(|v| b.record(v as f64));
        assert_eq!(recorder.write_hlog_interval(&mut log, 0.0, 1.0).unwrap(), 0);
        a.record(5.0);
        b.record(6.0);
        failing.store(true, std::sync::atomic::Ordering::Relaxed);
        assert!(recorder.write_hlog_interval(&mut log, 1.0, 2.0).is_err());
        a.record(7.0);
        failing.store(false, std::sync::atomic::Ordering::Relaxed);
        assert_eq!(recorder.write_hlog_interval(&mut log, 2.0, 3.0).unwrap(), 0);
    });
    let written = totals(&log.into_inner().out);
    let want = [("a", 10), ("b", 20), ("a", 2), ("b", 1)];
    let want: Vec<(String, u64)> = want.iter().map(|&(t, n)| (t.to_owned(), n)).collect();
    assert_eq!(written, want);
}

/// `histogram!` registers on every call, and each thread caches the handles it got (16
/// slots by key hash). The cache never mixes recorders (two recorders, same keys, same
/// thread, alternating) or keys (more keys than slots, so slots are shared and reused),
/// and every record lands in its own recorder's series.
#[test]
fn cached_handles_never_mix_recorders_or_keys() {
    let registries = [Arc::new(Registry::new()), Arc::new(Registry::new())];
    let recorders = registries.clone().map(|r| {
        RecorderBuilder::new()
            .kind(HistogramKind::Atomic)
            .build(r)
            .unwrap()
    });
    const KEYS: usize = 40;
    for round in 0..3 {
        for k in 0..KEYS {
            for (r, recorder) in recorders.iter().enumerate() {
                metrics::with_local_recorder(recorder, || {
                    // Recorder r, key k: record the value 100·r + k (below 1,024: an exact bucket), (k + 1) times.
                    let h = metrics::histogram!("op", "key" => k.to_string());
                    (0..=k).for_each(|_| h.record((100 * r + k) as f64));
                });
            }
        }
        for (r, registry) in registries.iter().enumerate() {
            let text = registry.encode_text(TextFormat::Prometheus);
            for k in 0..KEYS {
                let count = sample(&text, &format!("op_count{{key=\"{k}\"}}"));
                assert_eq!(
                    count,
                    ((k + 1) * (round + 1)) as f64,
                    "recorder {r} key {k}"
                );
                let sum = sample(&text, &format!("op_sum{{key=\"{k}\"}}"));
                assert_eq!(sum, count * (100 * r + k) as f64, "recorder {r} key {k}");
            }
        }
    }
}

/// A layout with a lowest discernible value is recorded with its unit by the atomic kinds
/// (sparse and dense) and appears in the exposition; the thread-local kind, which records
/// no unit, is refused when the recorder is built. Never stripped, never dropped.
#[test]
fn a_unit_layout_records_or_is_refused_at_build() {
    let layout = Layout::from_block_scale(7)
        .unwrap()
        .with_lowest_discernible(1000)
        .unwrap();
    for dense in [false, true] {
        let registry = Arc::new(Registry::new());
        let builder = RecorderBuilder::new().layout(layout);
        let builder = if dense { builder.dense() } else { builder };
        assert!(builder.series_footprint().unwrap() > 0);
        let recorder = builder.build(registry.clone()).unwrap();
        metrics::with_local_recorder(&recorder, || {
            for v in 0..100u32 {
                metrics::histogram!("io.size", "dev" => "sda").record(f64::from(v) * 1000.0);
            }
        });
        let text = registry.encode_text(TextFormat::Prometheus);
        assert_eq!(sample(&text, "io_size_count{dev=\"sda\"}"), 100.0, "{text}");
        // Values in units of 512 (the largest power of two not above 1,000): 99,000 is
        // counted in a bucket of width at most 512 around it.
        let sum = sample(&text, "io_size_sum{dev=\"sda\"}");
        assert!((sum - 4_950_000.0).abs() <= 100.0 * 512.0, "{sum}");
        let (bytes, series) = recorder.histogram_footprint();
        assert!(bytes > 0 && series == 1, "{bytes} {series}");
        assert!(recorder.summaries().contains("io_size{dev=\"sda\"}"));
    }
    let thread_local = RecorderBuilder::new()
        .layout(layout)
        .kind(HistogramKind::ThreadLocal);
    let refused = |e: BuildError| matches!(e, BuildError::NeedsUnitLayout { .. });
    assert!(thread_local.series_footprint().err().is_some_and(refused));
    let built = thread_local.build(Arc::new(Registry::new()));
    assert!(built.err().is_some_and(refused));
}

/// A key the registry refuses is remembered: it is counted once however often and from how
/// many threads it is asked for, and two refused keys count two.
#[test]
fn refused_keys_are_counted_once_per_key() {
    let registry = Arc::new(Registry::new());
    let recorder = RecorderBuilder::new().build(registry.clone()).unwrap();
    metrics::with_local_recorder(&recorder, || {
        metrics::counter!("jobs").increment(1);
        metrics::gauge!("depth").set(1.0);
    });
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                metrics::with_local_recorder(&recorder, || {
                    for _ in 0..100 {
                        metrics::histogram!("jobs").record(1.0);
                        metrics::histogram!("depth").record(1.0);
                        metrics::counter!("depth").increment(1);
                    }
                })
            });
        }
    });
    let text = registry.encode_text(TextFormat::Prometheus);
    let refused = sample(&text, "picollo_recorder_refused_registrations_total");
    assert_eq!(refused, 3.0, "{text}");
    assert_eq!(sample(&text, "jobs"), 1.0);
    // The two refused histograms left the recorder's exports when the registry refused them.
    assert_eq!(recorder.histogram_footprint().1, 0);
    assert_eq!(recorder.summaries(), "");
}

/// A new series is registered by the registry's next read, not by `histogram!`: a scrape
/// serves it, a counter registered after it with its name is the one refused, and a recorder
/// dropped before any read registers what it held back (the registry, kept by its owner,
/// still serves the series).
#[test]
fn held_back_series_reach_the_registry_in_order() {
    let registry = Arc::new(Registry::new());
    let recorder = RecorderBuilder::new().build(registry.clone()).unwrap();
    metrics::with_local_recorder(&recorder, || {
        metrics::histogram!("first", "k" => "v").record(5.0);
        // Registered after the histogram: the registry refuses the counter, as it would
        // with the histogram registered at once.
        metrics::counter!("first").increment(1);
    });
    assert_eq!(recorder.histogram_footprint().1, 1);
    // Nothing reads the registry before this recorder goes.
    let dropped = RecorderBuilder::new().build(registry.clone()).unwrap();
    metrics::with_local_recorder(&dropped, || metrics::histogram!("second").record(7.0));
    drop(dropped);
    let text = registry.encode_text(TextFormat::Prometheus);
    assert_eq!(sample(&text, "first_count{k=\"v\"}"), 1.0, "{text}");
    assert_eq!(sample(&text, "second_count"), 1.0, "{text}");
    assert_eq!(
        sample(&text, "picollo_recorder_refused_registrations_total"),
        1.0,
        "{text}"
    );
}
