//! Fleet export, wall clock, against the Rust Prometheus clients in the same run:
//!
//! 1. **Record** into a histogram the exporter serves: Picollo thread-local and atomic against
//!    `prometheus-client` 0.25's native histogram `observe` and `metrics-exporter-prometheus`'s
//!    histogram handle (pre-resolved handles on every side: their fastest API), on Picollo for .NET's
//!    data, 1 and 2 threads, ns per record per thread.
//! 2. **Encode a scrape** of 1,000 full-range histograms (every histogram covers all of `u64`,
//!    1,000 values spread over 2^0..2^64 each) as Prometheus protobuf with native buckets at
//!    schema 8: Picollo's registry against `prometheus-client`'s `encode_to_vec`, the same
//!    values in both: ms per scrape and bytes; Picollo's sparse storage (the builder's and the
//!    `metrics` recorder's default) and its dense kinds. Where dense Picollo's time goes, in the same run:
//!    reading the cells alone (a full-range histogram at 0.1% is 28,672 cells, 229 KB: the
//!    memory floor of any scrape of dense buckets), and reading plus mapping to native buckets
//!    without encoding. One more Picollo row keeps the same values at the resolution the scrape
//!    exports (`B = 256` for schema 8: half the cells), to show how the cells read set the gap.
//!
//! Run: `cargo bench -p picollo-benches --bench export`.

use std::hint::black_box;
use std::time::{Duration, Instant};

use metrics::{Key, Metadata, Recorder};
use picollo_alloc::HistogramBuilder;
use picollo_benches::*;
use picollo_core::{ReadExt, Window};
use picollo_export::{Exported, NativeHistogram, Registry};
use prometheus_client::metrics::histogram::{Histogram as PcHistogram, NativeHistogramConfig};

/// Rounds, the best kept (2 in a smoke run, `picollo_benches::smoke`).
fn rounds() -> usize {
    sized(15, 2)
}

fn record_bench() {
    let values = seed_values(SEED_COUNT);
    let n = values.len();
    let window = Window::new(LAYOUT, 0, SEED_MAX).expect("0 <= max");
    let local = HistogramBuilder::new()
        .layout(LAYOUT)
        .window(window)
        .thread_local()
        .unwrap();
    let atomic = HistogramBuilder::new()
        .layout(LAYOUT)
        .window(window)
        .dense()
        .atomic()
        .unwrap();
    let pc = PcHistogram::new_native(NativeHistogramConfig::with_schema(8));
    let mep = metrics_exporter_prometheus::PrometheusBuilder::new().build_recorder();
    let mep_handle = mep.register_histogram(
        &Key::from_name("latency"),
        &Metadata::new(module_path!(), metrics::Level::INFO, None),
    );
    let mep_drain = mep.handle();

    let thread_local = |_: usize| values.iter().for_each(|&v| local.record(black_box(v)));
    let atomic_run = |_: usize| values.iter().for_each(|&v| atomic.record(black_box(v)));
    let pc_run = |_: usize| values.iter().for_each(|&v| pc.observe(black_box(v) as f64));
    let mep_run = |_: usize| {
        values
            .iter()
            .for_each(|&v| mep_handle.record(black_box(v) as f64))
    };

    type Case<'a> = (&'a str, usize, &'a (dyn Fn(usize) + Sync));
    let cases: [Case; 8] = [
        ("Picollo thread-local (served), 1 thread", 1, &thread_local),
        ("Picollo atomic (served), 1 thread", 1, &atomic_run),
        ("prometheus-client native observe, 1 thread", 1, &pc_run),
        ("metrics-exporter-prometheus handle, 1 thread", 1, &mep_run),
        ("Picollo thread-local (served), 2 threads", 2, &thread_local),
        ("Picollo atomic (served), 2 threads", 2, &atomic_run),
        ("prometheus-client native observe, 2 threads", 2, &pc_run),
        ("metrics-exporter-prometheus handle, 2 threads", 2, &mep_run),
    ];
    let mut best = [Duration::MAX; 8];
    let rounds = rounds();
    for _ in 0..rounds {
        for (b, &(_, threads, f)) in best.iter_mut().zip(&cases) {
            *b = (*b).min(run_threads(threads, f));
            // metrics-exporter-prometheus keeps every sample until rendered: drain between
            // runs (untimed) so its memory stays bounded here.
            black_box(mep_drain.render().len());
        }
    }
    let ns = |d: Duration| d.as_nanos() as f64 / n as f64;
    let _b = report::Block::begin("export-record");
    println!(
        "seed data: {n} values r^3 * {SEED_MAX}; best of {rounds} interleaved rounds; ns per \
         record per thread (wall); Picollo 0.001 relative error (schema 8), prometheus-client \
         schema 8"
    );
    println!("| case | ns/op | Picollo thread-local faster by |");
    println!("| :--- | ---: | ---: |");
    for (i, ((name, threads, _), b)) in cases.iter().zip(best).enumerate() {
        let ours = ns(best[if *threads == 1 { 0 } else { 4 }]);
        let _ = i;
        println!("| {name:<46} | {:>7.3} | {:>6.1}x |", ns(b), ns(b) / ours);
    }
    println!(
        "memory: Picollo's histograms are fixed arrays ({} cells; one shard per recording \
         thread for thread-local); prometheus-client grows a sparse bucket vector up to the \
         buckets seen; metrics-exporter-prometheus stores 16 bytes per sample until the next \
         scrape renders them.",
        window.len()
    );
    let runs = (rounds * 3) as u64;
    assert_eq!(local.total(), runs * n as u64, "thread-local lost counts");
}

#[path = "common/scrape.rs"]
mod scrape;

fn encode_bench() {
    const SERIES: usize = 1_000;
    // Picollo: plain histograms behind a lock (recorded, then served), and thread-local ones;
    // prometheus-client's native histograms with the same values.
    let fleet = scrape::Fleet::new(SERIES);
    let (plain, thread_local, pc_registry) = (&fleet.plain, &fleet.thread_local, &fleet.pc);
    // The same values in histograms at the resolution the scrape exports (B = 256: schema 8),
    // half the cells of the default layout.
    let exported_layout = picollo_core::Layout::from_block_scale(8).expect("a valid scale");
    let coarse = scrape::Fleet::with_layout(SERIES, exported_layout);
    let (plains, locals) = (&fleet.plains, &fleet.locals);
    let buckets: usize = plains
        .iter()
        .map(|h| {
            let h = h.lock().expect("not poisoned");
            NativeHistogram::from_histogram(&*h).buckets().count()
        })
        .sum();

    let mut out = Vec::new();
    let mut ours = |r: &Registry| {
        out.clear();
        r.encode_protobuf(&mut out);
        out.len()
    };
    let mut best = [Duration::MAX; 9];
    let mut bytes = [0usize; 9];
    let mut native = NativeHistogram::default();
    for _ in 0..5 {
        let t = Instant::now();
        bytes[0] = black_box(ours(plain));
        best[0] = best[0].min(t.elapsed());
        let t = Instant::now();
        bytes[1] = black_box(ours(thread_local));
        best[1] = best[1].min(t.elapsed());
        let t = Instant::now();
        let encoded = prometheus_client::encoding::prometheus_protobuf::encode_to_vec(pc_registry)
            .expect("encodes");
        bytes[2] = black_box(encoded.len());
        best[2] = best[2].min(t.elapsed());
        let t = Instant::now();
        bytes[6] = black_box(ours(&coarse.plain));
        best[6] = best[6].min(t.elapsed());
        let t = Instant::now();
        bytes[7] = black_box(ours(&fleet.sparse));
        best[7] = best[7].min(t.elapsed());
        let t = Instant::now();
        bytes[8] = black_box(ours(&fleet.sparse_atomic));
        best[8] = best[8].min(t.elapsed());
        // Where the time goes: the cells alone (one OR per run of 8, as the scan does),
        // then the native buckets without encoding.
        let t = Instant::now();
        let mut runs = 0usize;
        for h in plains {
            let h = h.lock().expect("not poisoned");
            for run in h.storage().cells().chunks_exact(8) {
                runs += usize::from(run.iter().fold(0, |a, &c| a | c) != 0);
            }
        }
        bytes[3] = black_box(runs);
        best[3] = best[3].min(t.elapsed());
        let t = Instant::now();
        for h in plains {
            h.fill_native(&mut native, None);
            bytes[4] += native.buckets().count();
        }
        best[4] = best[4].min(t.elapsed());
        let t = Instant::now();
        for h in locals {
            h.fill_native(&mut native, None);
            bytes[5] += native.buckets().count();
        }
        best[5] = best[5].min(t.elapsed());
    }
    let _b = report::Block::begin("export-encode");
    println!(
        "{SERIES} full-range histograms (all of u64, 1,000 values each over 2^0..2^64, {} \
         non-empty native buckets per histogram on average), Prometheus protobuf with native \
         buckets at schema 8; best of 5 scrapes",
        buckets / SERIES
    );
    println!("| encoder | ms per scrape | bytes | vs prometheus-client (time) |");
    println!("| :--- | ---: | ---: | ---: |");
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    for (i, name) in [
        (7, "Picollo registry, sparse plain behind a lock (default)"),
        (8, "Picollo registry, sparse atomic (recorder default)"),
        (0, "Picollo registry, dense plain behind a lock"),
        (
            1,
            "Picollo registry, thread-local histograms (dense shards)",
        ),
        (6, "Picollo plain at the exported resolution (B = 256)"),
        (2, "prometheus-client encode_to_vec"),
    ] {
        println!(
            "| {name:<56} | {:>8.2} | {:>10} | {:>5.2}x |",
            ms(best[i]),
            bytes[i],
            ms(best[i]) / ms(best[2])
        );
    }
    println!("\nWhere Picollo's time goes (same run, ms per scrape of the 1,000 histograms):\n");
    println!("| part | ms | of the plain scrape |");
    println!("| :--- | ---: | ---: |");
    for (i, name) in [
        (3, "reading every cell (229 MB, one OR per run of 8 cells)"),
        (4, "plain: read + map to native buckets (no encoding)"),
        (
            5,
            "thread-local: read + map to native buckets (no encoding)",
        ),
    ] {
        println!(
            "| {name:<56} | {:>6.2} | {:>4.0}% |",
            ms(best[i]),
            100.0 * ms(best[i]) / ms(best[0])
        );
    }
    drop((fleet, coarse));
}

fn main() {
    record_bench();
    encode_bench();
}
