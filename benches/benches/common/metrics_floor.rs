//! The `metrics` facade's own floor for `histogram!(…).record(v)` per call, shared by the
//! `metrics_recorder` (wall clock) and `export_iai` (instructions) benches: a recorder that
//! keeps one handle (no key lookup at all) whose `record` does nothing. What remains is what
//! the facade's API costs any recorder that records: the local-recorder lookup, the macro's
//! key, the `Arc` clone and drop of the returned `Histogram`, and the dynamic `record` call.

use std::hint::black_box;
use std::sync::Arc;

/// The floor recorder: every histogram key gets the same kept handle.
pub struct FloorRecorder(Arc<FloorHandle>);

impl FloorRecorder {
    /// A recorder with its one handle.
    pub fn new() -> Self {
        FloorRecorder(Arc::new(FloorHandle))
    }
}

/// The handle: records nothing (the value is only kept from being optimised away).
pub struct FloorHandle;

impl metrics::HistogramFn for FloorHandle {
    fn record(&self, value: f64) {
        black_box(value);
    }
}

impl metrics::Recorder for FloorRecorder {
    fn describe_counter(
        &self,
        _: metrics::KeyName,
        _: Option<metrics::Unit>,
        _: metrics::SharedString,
    ) {
    }
    fn describe_gauge(
        &self,
        _: metrics::KeyName,
        _: Option<metrics::Unit>,
        _: metrics::SharedString,
    ) {
    }
    fn describe_histogram(
        &self,
        _: metrics::KeyName,
        _: Option<metrics::Unit>,
        _: metrics::SharedString,
    ) {
    }
    fn register_counter(&self, _: &metrics::Key, _: &metrics::Metadata<'_>) -> metrics::Counter {
        metrics::Counter::noop()
    }
    fn register_gauge(&self, _: &metrics::Key, _: &metrics::Metadata<'_>) -> metrics::Gauge {
        metrics::Gauge::noop()
    }
    fn register_histogram(
        &self,
        _: &metrics::Key,
        _: &metrics::Metadata<'_>,
    ) -> metrics::Histogram {
        metrics::Histogram::from_arc(self.0.clone())
    }
}
