//! Instruction counts (callgrind, via iai-callgrind) of one record into a histogram a
//! Prometheus exporter serves: Picollo's thread-local histogram and its `metrics` recorder
//! handle against `prometheus-client`'s native histogram `observe` and
//! `metrics-exporter-prometheus`'s handle, in the same run.
//!
//! Each benchmark walks the same 1,000,000 seed values; `baseline_read` walks them doing
//! nothing but `black_box`, so `(bench - baseline) / 1e6` is the cost of one record.
//!
//! Group `export_record` converts each `u64` seed value to `f64` in the loop for the
//! `metrics` handles (5 instructions on x86-64, part of both sides' figure); group
//! `metrics_f64` records the same values already as `f64` (what `metrics_recorder` times),
//! through the thread-local and atomic Picollo handles and `metrics-exporter-prometheus`'s
//! handle, against `baseline_read_f64`; and `histogram!(…).record(v)` per call through each
//! recorder and through the facade's floor (a recorder that hands out one kept handle whose
//! `record` does nothing: the least the `metrics` API lets a recorder cost per call).

#![allow(missing_docs)] // iai-callgrind's macros generate undocumented modules.

use std::hint::black_box;
use std::sync::Arc;

use iai_callgrind::{library_benchmark, library_benchmark_group, main};
use metrics::{Key, Metadata, Recorder};
use picollo_alloc::{HistogramBuilder, ThreadLocalHistogram};
use picollo_benches::*;
use picollo_core::Window;
use picollo_export::recorder::{HistogramKind, RecorderBuilder};
use picollo_export::Registry;
use prometheus_client::metrics::histogram::{Histogram as PcHistogram, NativeHistogramConfig};

fn values() -> Vec<u64> {
    seed_values(SEED_COUNT)
}

fn metadata() -> Metadata<'static> {
    Metadata::new(module_path!(), metrics::Level::INFO, None)
}

#[library_benchmark]
#[bench::seed(setup = values)]
fn baseline_read(values: Vec<u64>) -> u64 {
    let mut acc = 0u64;
    for &v in values.iter() {
        acc = acc.wrapping_add(black_box(v));
    }
    acc
}

fn thread_local() -> (Vec<u64>, ThreadLocalHistogram<u64>) {
    let h = HistogramBuilder::new()
        .layout(LAYOUT)
        .window(Window::new(LAYOUT, 0, SEED_MAX).expect("valid"))
        .thread_local()
        .unwrap();
    h.record(1); // claim the shard outside the measured loop
    (values(), h)
}

#[library_benchmark]
#[bench::seed(setup = thread_local)]
fn picollo_thread_local_record(
    (values, h): (Vec<u64>, ThreadLocalHistogram<u64>),
) -> ThreadLocalHistogram<u64> {
    for &v in values.iter() {
        h.record(black_box(v));
    }
    h
}

fn picollo_handle() -> (Vec<u64>, metrics::Histogram) {
    let recorder = RecorderBuilder::new()
        .layout(LAYOUT)
        .build(Arc::new(Registry::new()))
        .expect("a configuration the builder accepts");
    let h = recorder.register_histogram(&Key::from_name("latency"), &metadata());
    h.record(1.0);
    (values(), h)
}

#[library_benchmark]
#[bench::seed(setup = picollo_handle)]
fn picollo_recorder_handle_record(
    (values, h): (Vec<u64>, metrics::Histogram),
) -> metrics::Histogram {
    for &v in values.iter() {
        h.record(black_box(v) as f64);
    }
    h
}

fn prometheus_client() -> (Vec<u64>, PcHistogram) {
    let h = PcHistogram::new_native(NativeHistogramConfig::with_schema(8));
    (values(), h)
}

#[library_benchmark]
#[bench::seed(setup = prometheus_client)]
fn prometheus_client_native_observe((values, h): (Vec<u64>, PcHistogram)) -> PcHistogram {
    for &v in values.iter() {
        h.observe(black_box(v) as f64);
    }
    h
}

fn mep_handle() -> (Vec<u64>, metrics::Histogram) {
    let recorder = metrics_exporter_prometheus::PrometheusBuilder::new().build_recorder();
    let h = recorder.register_histogram(&Key::from_name("latency"), &metadata());
    // The recorder must outlive the measured loop with the handle: leak it (bench setup).
    std::mem::forget(recorder);
    (values(), h)
}

#[library_benchmark]
#[bench::seed(setup = mep_handle)]
fn metrics_exporter_prometheus_handle_record(
    (values, h): (Vec<u64>, metrics::Histogram),
) -> metrics::Histogram {
    for &v in values.iter() {
        h.record(black_box(v) as f64);
    }
    h
}

fn values_f64() -> Vec<f64> {
    values().into_iter().map(|v| v as f64).collect()
}

#[library_benchmark]
#[bench::seed(setup = values_f64)]
fn baseline_read_f64(values: Vec<f64>) -> f64 {
    let mut acc = 0.0;
    for &v in values.iter() {
        acc += black_box(v);
    }
    acc
}

fn picollo_handle_f64(kind: HistogramKind) -> (Vec<f64>, metrics::Histogram) {
    let recorder = RecorderBuilder::new()
        .layout(LAYOUT)
        .kind(kind)
        .build(Arc::new(Registry::new()))
        .expect("a configuration the builder accepts");
    let h = recorder.register_histogram(&Key::from_name("latency"), &metadata());
    h.record(1.0);
    (values_f64(), h)
}

/// The thread-local kind over dense shards (`RecorderBuilder::dense`): its handle records at
/// the position of the value's bits, as the sparse kind's does.
fn picollo_dense_handle_f64() -> (Vec<f64>, metrics::Histogram) {
    let recorder = RecorderBuilder::new()
        .layout(LAYOUT)
        .kind(HistogramKind::ThreadLocal)
        .dense()
        .build(Arc::new(Registry::new()))
        .expect("a configuration the builder accepts");
    let h = recorder.register_histogram(&Key::from_name("latency"), &metadata());
    h.record(1.0);
    (values_f64(), h)
}

fn mep_handle_f64() -> (Vec<f64>, metrics::Histogram) {
    let (_, h) = mep_handle();
    (values_f64(), h)
}

#[library_benchmark]
#[bench::picollo_thread_local(setup = picollo_handle_f64, args = (HistogramKind::ThreadLocal))]
#[bench::picollo_thread_local_dense(setup = picollo_dense_handle_f64)]
#[bench::picollo_atomic(setup = picollo_handle_f64, args = (HistogramKind::Atomic))]
#[bench::metrics_exporter_prometheus(setup = mep_handle_f64)]
fn handle_record_f64((values, h): (Vec<f64>, metrics::Histogram)) -> metrics::Histogram {
    for &v in values.iter() {
        h.record(black_box(v));
    }
    h
}

#[path = "common/metrics_floor.rs"]
mod metrics_floor;
use metrics_floor::FloorRecorder;

type BoxedRecorder = Box<dyn Recorder + Send + Sync>;

fn picollo_recorder(kind: HistogramKind) -> (Vec<f64>, BoxedRecorder) {
    let recorder = RecorderBuilder::new()
        .layout(LAYOUT)
        .kind(kind)
        .build(Arc::new(Registry::new()))
        .expect("a configuration the builder accepts");
    (values_f64(), Box::new(recorder))
}

fn floor_recorder() -> (Vec<f64>, BoxedRecorder) {
    (values_f64(), Box::new(FloorRecorder::new()))
}

fn mep_recorder() -> (Vec<f64>, BoxedRecorder) {
    let recorder = metrics_exporter_prometheus::PrometheusBuilder::new().build_recorder();
    (values_f64(), Box::new(recorder))
}

// `histogram!(…).record(v)` in the loop, as `metrics_recorder`'s "macro per call" rows: the
// recorder registers (looks up) the key on every call. The first call (registration) is
// part of the count: one in 10^6.
#[library_benchmark]
#[bench::picollo_thread_local(setup = picollo_recorder, args = (HistogramKind::ThreadLocal))]
#[bench::picollo_atomic(setup = picollo_recorder, args = (HistogramKind::Atomic))]
#[bench::facade_floor(setup = floor_recorder)]
#[bench::metrics_exporter_prometheus(setup = mep_recorder)]
fn macro_record_f64((values, recorder): (Vec<f64>, BoxedRecorder)) -> BoxedRecorder {
    metrics::with_local_recorder(&*recorder, || {
        for &v in values.iter() {
            metrics::histogram!("latency", "route" => "/api").record(black_box(v));
        }
    });
    recorder
}

library_benchmark_group!(
    name = metrics_f64;
    benchmarks = baseline_read_f64, handle_record_f64, macro_record_f64
);

library_benchmark_group!(
    name = export_record;
    benchmarks = baseline_read, picollo_thread_local_record, picollo_recorder_handle_record,
        prometheus_client_native_observe, metrics_exporter_prometheus_handle_record
);

main!(library_benchmark_groups = export_record, metrics_f64);
