//! The fast way to record through the `metrics` facade into Picollo's recorder: resolve each
//! histogram once and keep its handle, instead of calling `histogram!(…)` for every value.
//!
//! `histogram!(…)` asks the recorder for the histogram on every call (the facade's current
//! recorder lookup, a key lookup, an `Arc` clone and drop); a kept handle only records.
//! Handles are `Clone + Send + Sync`: keep them in the struct that records (below), in a
//! `LazyLock` static, or clone one into each worker.
//!
//! Run: `cargo run -p picollo-export --features metrics --example metrics_handle`.

use std::sync::Arc;
use std::time::Instant;

use picollo_export::recorder::RecorderBuilder;
use picollo_export::text::TextFormat;
use picollo_export::Registry;

/// A request handler that keeps its histogram handles: resolved once, when it is made.
struct Handler {
    latency: metrics::Histogram,
    size: metrics::Histogram,
}

impl Handler {
    fn new(route: &'static str) -> Self {
        Handler {
            latency: metrics::histogram!("http.latency", "route" => route),
            size: metrics::histogram!("http.response.size", "route" => route),
        }
    }

    fn handle(&self, request: u64) -> u64 {
        let start = Instant::now();
        let size = request % 4096 + 100;
        // Only the records: no lookup of the recorder or of the key.
        self.size.record(size as f64);
        self.latency.record(start.elapsed());
        size
    }
}

fn main() {
    let registry = Arc::new(Registry::new());
    // Latencies as `Duration`s are seconds: the scale turns them into nanoseconds.
    let recorder = RecorderBuilder::new()
        .scale(1e9)
        .build(registry.clone())
        .expect("a configuration the builder accepts");
    metrics::set_global_recorder(recorder).expect("no other global recorder");

    std::thread::scope(|s| {
        for worker in 0..2 {
            s.spawn(move || {
                let handler = Handler::new(if worker == 0 { "/api" } else { "/static" });
                let total: u64 = (0..100_000).map(|r| handler.handle(r)).sum();
                assert!(total > 0);
            });
        }
    });

    let text = registry.encode_text(TextFormat::Prometheus);
    assert!(text.contains("http_latency_count{route=\"/api\"} 100000"));
    assert!(text.contains("http_response_size_count{route=\"/static\"} 100000"));
    for line in text.lines().filter(|l| l.contains("_count")) {
        println!("{line}");
    }
}
