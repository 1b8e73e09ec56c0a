//! The `metrics` facade's `histogram!().record()` through Picollo's recorder against
//! `metrics-exporter-prometheus`'s recorder, wall clock, same run, the benchmark data of Picollo for .NET (as `f64`):
//!
//! - pre-resolved handles (`let h = histogram!("x"); h.record(v)` in the loop): the fastest
//!   API on both sides;
//! - the macro in the loop (`histogram!("x").record(v)`): a key lookup in the recorder per call;
//! - the facade's floor for the macro in the loop: a recorder that keeps one handle (no key
//!   lookup) whose `record` does nothing. What it costs is what the `metrics` API costs any
//!   recorder that records (the local-recorder lookup, the macro's key, the `Arc` clone and
//!   drop of the returned `Histogram`, the dynamic `record` call); no recorder can be faster
//!   per call, so the table states how close Picollo is to it.
//!
//! Run: `cargo bench -p picollo-benches --bench metrics_recorder`.

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use picollo_benches::*;
use picollo_export::recorder::{HistogramKind, RecorderBuilder};
use picollo_export::Registry;

const ROUNDS: usize = 10;

#[path = "common/metrics_floor.rs"]
mod metrics_floor;
use metrics_floor::FloorRecorder;

fn main() {
    let values: Vec<f64> = seed_values(SEED_COUNT)
        .into_iter()
        .map(|v| v as f64)
        .collect();
    let n = values.len();
    let ours_tl = RecorderBuilder::new()
        .layout(LAYOUT)
        .build(Arc::new(Registry::new()))
        .expect("a configuration the builder accepts");
    let ours_atomic = RecorderBuilder::new()
        .layout(LAYOUT)
        .kind(HistogramKind::Atomic)
        .build(Arc::new(Registry::new()))
        .expect("a configuration the builder accepts");
    let theirs = metrics_exporter_prometheus::PrometheusBuilder::new().build_recorder();
    let drain = theirs.handle();
    let floor = FloorRecorder::new();

    let handle = |r: &dyn metrics::Recorder| {
        let values = &values;
        metrics::with_local_recorder(r, || {
            let h = metrics::histogram!("latency", "route" => "/api");
            for &v in values {
                h.record(black_box(v));
            }
        })
    };
    let macro_per_call = |r: &dyn metrics::Recorder| {
        let values = &values;
        metrics::with_local_recorder(r, || {
            for &v in values {
                metrics::histogram!("latency", "route" => "/api").record(black_box(v));
            }
        })
    };
    type Case<'a> = (&'a str, &'a dyn metrics::Recorder, bool);
    let cases: [Case; 7] = [
        ("Picollo recorder (thread-local), handle", &ours_tl, false),
        ("Picollo recorder (atomic), handle", &ours_atomic, false),
        ("metrics-exporter-prometheus, handle", &theirs, false),
        (
            "Picollo recorder (thread-local), macro per call",
            &ours_tl,
            true,
        ),
        (
            "Picollo recorder (atomic), macro per call",
            &ours_atomic,
            true,
        ),
        ("metrics-exporter-prometheus, macro per call", &theirs, true),
        ("`metrics` facade floor, macro per call", &floor, true),
    ];
    let mut best = [Duration::MAX; 7];
    for _ in 0..ROUNDS {
        for (b, &(_, r, per_call)) in best.iter_mut().zip(&cases) {
            let t = Instant::now();
            if per_call {
                macro_per_call(r)
            } else {
                handle(r)
            }
            *b = (*b).min(t.elapsed());
            // Its samples wait in memory until rendered: drain them (untimed).
            black_box(drain.render().len());
        }
    }
    let ns = |d: Duration| d.as_nanos() as f64 / n as f64;
    let _b = report::Block::begin("metrics-recorder");
    println!(
        "seed data: {n} values as f64; best of {ROUNDS} interleaved rounds; 1 thread; ns per \
         record (wall); Picollo at 0.001 relative error"
    );
    println!("| case | ns/op | vs metrics-exporter-prometheus, same API |");
    println!("| :--- | ---: | ---: |");
    for ((name, _, per_call), b) in cases.iter().zip(best) {
        let peer = ns(best[if *per_call { 5 } else { 2 }]);
        println!(
            "| {name:<48} | {:>7.3} | {:>6.1}x faster |",
            ns(b),
            peer / ns(b)
        );
    }
    let floor_ns = ns(best[6]);
    println!(
        "facade floor (a kept handle whose `record` does nothing; no recorder can cost less per \
         `histogram!(…).record(v)`): {floor_ns:.3} ns; Picollo (thread-local) macro per call is \
         {:.3} ns above it ({:.2}× the floor), Picollo's handle {:.2}× cheaper than the floor.",
        ns(best[3]) - floor_ns,
        ns(best[3]) / floor_ns,
        floor_ns / ns(best[0])
    );
    println!(
        "memory: Picollo's histograms are fixed arrays whatever the rate; \
         metrics-exporter-prometheus holds 16 bytes per sample until a scrape renders them."
    );
}
