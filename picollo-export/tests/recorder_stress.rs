//! Threads that create, record, drop and scrape series at once, and every count exact at the
//! end: the recorder's sharded index and insert-if-absent registration (two threads racing
//! on a new key get one series, no record lost), the registry's copy-on-write snapshot
//! (series registered and removed while scrapes read it), and exports that read with no lock
//! held (`.hlog` intervals whose sum is every record).

use picollo_testkit::{Barrier, StopFlag};
use std::collections::HashMap;
use std::sync::Arc;

use picollo_alloc::hdr::{interop, LogReader, LogWriter};
use picollo_alloc::HistogramBuilder;
use picollo_core::ReadExt;
use picollo_export::recorder::{HistogramKind, RecorderBuilder};
use picollo_export::text::TextFormat;
use picollo_export::{Labels, Registry};

const WRITERS: usize = 4;
const ROUNDS: usize = 12;
/// More keys than a thread's handle cache holds (16), so most calls go to the index.
const KEYS: usize = 96;
/// Keys each round adds.
const LATE: usize = 8;

fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .map(|v| v.parse().unwrap())
}

/// One writer: every key of the shared set once per round (each thread in its own order, so
/// first registrations race), and one key of its own round that appears while scrapes run.
fn write(t: usize, start: &Barrier) {
    // A writer that panics breaks the barrier: the others fail at it instead of waiting.
    let _broken = start.break_on_panic();
    for round in 0..ROUNDS {
        for i in 0..KEYS {
            let k = (i * 7 + t * 13) % KEYS;
            metrics::histogram!("stress", "k" => k.to_string()).record((1_000 * (k + 1)) as f64);
            metrics::counter!("stress_calls", "k" => k.to_string()).increment(1);
        }
        // Keys every writer creates in this round, all at once: races to create them, while
        // scraped.
        start.wait();
        for j in 0..LATE {
            let key = format!("{round}.{}", (j + t) % LATE);
            metrics::histogram!("late", "key" => key).record(5.0);
        }
    }
}

/// Registers, records into, checks and removes series of its own while the others run:
/// each one's count is exact in the scrape between its registration and its removal, and
/// gone after.
fn churn(registry: &Registry, stop: &StopFlag) -> usize {
    let mut done = 0;
    while !stop.is_raised() || done < 20 {
        let labels = Labels::new([("n", done.to_string())]).unwrap();
        let h = Arc::new(HistogramBuilder::new().atomic().unwrap());
        registry.register("churn", "", &labels, h.clone()).unwrap();
        (0..=done as u64 % 50).for_each(|v| h.record(v));
        let series = format!("churn_count{{n=\"{done}\"}}");
        let text = registry.encode_text(TextFormat::Prometheus);
        assert_eq!(sample(&text, &series), Some((done % 50 + 1) as f64));
        assert!(registry.remove("churn", &labels));
        let text = registry.encode_text(TextFormat::Prometheus);
        assert_eq!(sample(&text, &series), None);
        done += 1;
    }
    done
}

/// Totals per tag of every `.hlog` interval in `log`.
fn hlog_totals(log: &[u8]) -> HashMap<String, u64> {
    let mut totals = HashMap::new();
    for entry in LogReader::new(log) {
        let entry = entry.unwrap();
        let total = interop::to_picollo(&entry.decode().unwrap())
            .unwrap()
            .total();
        *totals.entry(entry.tag.unwrap_or_default()).or_default() += total;
    }
    totals
}

fn stress(kind: HistogramKind) {
    let registry = Arc::new(Registry::new());
    let recorder = RecorderBuilder::new()
        .kind(kind)
        .build(registry.clone())
        .unwrap();
    let stop = StopFlag::new();
    let start = Barrier::new(WRITERS);
    let mut log = LogWriter::new(Vec::new());
    log.write_log_format_version().unwrap();
    let scrapes = std::thread::scope(|s| {
        // The churner and the scraper stop however this closure ends (a writer that panicked
        // makes its `join` below panic).
        let _stop = stop.raise_on_drop();
        let writers: Vec<_> = (0..WRITERS)
            .map(|t| {
                let (recorder, start) = (&recorder, &start);
                s.spawn(move || metrics::with_local_recorder(recorder, || write(t, start)))
            })
            .collect();
        let churner = s.spawn(|| churn(&registry, &stop));
        let scraper = s.spawn(|| {
            let mut scrapes = 0usize;
            let mut at = 0.0;
            // At least a few, however soon the writers finish.
            while !stop.is_raised() || scrapes < 10 {
                let mut out = Vec::new();
                registry.encode_protobuf(&mut out);
                let _ = recorder.summaries();
                recorder
                    .write_hlog_interval(&mut log, at, at + 1.0)
                    .unwrap();
                at += 1.0;
                scrapes += 1;
            }
            scrapes
        });
        writers.into_iter().for_each(|w| w.join().unwrap());
        stop.raise();
        assert!(churner.join().unwrap() >= 20);
        scraper.join().unwrap()
    });
    assert!(scrapes > 0);
    // The last interval: what was recorded after the scraper's last one.
    recorder
        .write_hlog_interval(&mut log, 1e6, 1e6 + 1.0)
        .unwrap();
    let text = registry.encode_text(TextFormat::Prometheus);
    let per_key = (WRITERS * ROUNDS) as f64;
    let totals = hlog_totals(&log.into_inner());
    for k in 0..KEYS {
        let count = sample(&text, &format!("stress_count{{k=\"{k}\"}}"));
        assert_eq!(count, Some(per_key), "{kind:?} key {k}");
        let sum = sample(&text, &format!("stress_sum{{k=\"{k}\"}}")).unwrap();
        assert!((sum / per_key / (1_000 * (k + 1)) as f64 - 1.0).abs() < 0.004);
        let calls = sample(&text, &format!("stress_calls{{k=\"{k}\"}}"));
        assert_eq!(calls, Some(per_key), "{kind:?} key {k}");
        let tag = format!("stress{{k=\"{k}\"}}");
        assert_eq!(totals.get(&tag).copied(), Some(per_key as u64), "{tag}");
    }
    for round in 0..ROUNDS {
        for j in 0..LATE {
            let count = sample(&text, &format!("late_count{{key=\"{round}.{j}\"}}"));
            assert_eq!(count, Some(WRITERS as f64), "{kind:?} key {round}.{j}");
        }
    }
    assert!(!text.contains("churn_count{"), "{text}");
    let refused = sample(&text, "picollo_recorder_refused_registrations_total");
    assert_eq!(refused, Some(0.0));
    let (_, series) = recorder.histogram_footprint();
    assert_eq!(series, KEYS + ROUNDS * LATE);
}

#[test]
fn create_record_drop_and_scrape_at_once_atomic() {
    stress(HistogramKind::Atomic);
}

#[test]
fn create_record_drop_and_scrape_at_once_thread_local() {
    stress(HistogramKind::ThreadLocal);
}
