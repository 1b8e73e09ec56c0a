//! The scrape workload shared by the `export` (wall clock) and `scrape_iai` (instructions)
//! benches: full-range histograms (every one covers all of `u64`) holding 1,000 values spread
//! over 2^0..2^64, different per histogram, served by Picollo registries of each kind and by
//! a `prometheus-client` registry with native histograms at schema 8, the same values in all.

#![allow(dead_code)] // Each bench uses part of it.

use std::sync::{Arc, Mutex};

use picollo_alloc::Dense;
use picollo_alloc::{
    HeapAtomicHistogram, HeapHistogram, HistogramBuilder, SparseAtomicHistogram, SparseHistogram,
    ThreadLocalHistogram,
};
use picollo_benches::LAYOUT;
use picollo_core::{Layout, Window};
use picollo_export::{Labels, Registry};
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{Histogram as PcHistogram, NativeHistogramConfig};

/// 1,000 values spread over every power of two of u64, different per histogram.
pub fn full_range_values(seed: u64) -> Vec<u64> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..1_000)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s >> (s % 64)
        })
        .collect()
}

/// The label set of one `prometheus-client` series.
#[derive(Clone, Debug, Hash, PartialEq, Eq, prometheus_client::encoding::EncodeLabelSet)]
pub struct Id {
    id: String,
}

/// `series` full-range histograms of each kind, registered for a scrape.
pub struct Fleet {
    /// Plain histograms over sparse storage (the builder's default) behind a lock.
    pub sparse: Registry,
    /// Atomic histograms over sparse storage (the `metrics` recorder's default).
    pub sparse_atomic: Registry,
    /// Thread-local histograms over sparse storage (recorded from the building thread).
    pub sparse_thread_local: Registry,
    /// Plain histograms (dense storage) behind a lock.
    pub plain: Registry,
    /// Thread-local histograms with dense shards (recorded from the building thread).
    pub thread_local: Registry,
    /// Atomic histograms.
    pub atomic: Registry,
    /// `prometheus-client` native histograms at schema 8.
    pub pc: prometheus_client::registry::Registry,
    /// The plain histograms, for reads outside the registry.
    pub plains: Vec<Arc<Mutex<HeapHistogram>>>,
    /// The thread-local histograms.
    pub locals: Vec<Arc<ThreadLocalHistogram<u64, Dense>>>,
    /// The atomic histograms.
    pub atomics: Vec<Arc<HeapAtomicHistogram>>,
}

impl Fleet {
    /// Builds `series` histograms of each kind, histogram `i` holding
    /// `full_range_values(i + 1)`.
    pub fn new(series: usize) -> Self {
        Self::with_layout(series, LAYOUT)
    }

    /// As [`Fleet::new`], Picollo's histograms in `layout`.
    pub fn with_layout(series: usize, layout: Layout) -> Self {
        let full = Window::full(layout);
        let mut fleet = Fleet {
            sparse: Registry::new(),
            sparse_atomic: Registry::new(),
            sparse_thread_local: Registry::new(),
            plain: Registry::new(),
            thread_local: Registry::new(),
            atomic: Registry::new(),
            pc: prometheus_client::registry::Registry::default(),
            plains: Vec::new(),
            locals: Vec::new(),
            atomics: Vec::new(),
        };
        let family = Family::<Id, PcHistogram>::new_with_constructor(|| {
            PcHistogram::new_native(NativeHistogramConfig::with_schema(8))
        });
        fleet
            .pc
            .register("latency", "full-range latency", family.clone());
        for i in 0..series {
            let values = full_range_values(i as u64 + 1);
            let mut h: HeapHistogram = HistogramBuilder::new()
                .layout(layout)
                .window(full)
                .dense()
                .plain()
                .unwrap();
            let builder = HistogramBuilder::new().layout(layout);
            let mut sparse: SparseHistogram = builder.plain().expect("valid");
            let sparse_atomic: SparseAtomicHistogram = builder.atomic().expect("valid");
            let tl = Arc::new(
                HistogramBuilder::new()
                    .layout(layout)
                    .window(full)
                    .dense()
                    .thread_local()
                    .unwrap(),
            );
            let sparse_tl = Arc::new(
                HistogramBuilder::new()
                    .layout(layout)
                    .window(full)
                    .thread_local()
                    .unwrap(),
            );
            let atomic = Arc::new(
                HistogramBuilder::new()
                    .layout(layout)
                    .window(full)
                    .dense()
                    .atomic()
                    .unwrap(),
            );
            let pc = family.get_or_create(&Id { id: i.to_string() });
            for &v in &values {
                h.record(v);
                sparse.record(v);
                sparse_atomic.record(v);
                sparse_tl.record(v);
                tl.record(v);
                atomic.record(v);
                pc.observe(v as f64);
            }
            let labels = Labels::new([("id", i.to_string())]).expect("valid");
            let h = Arc::new(Mutex::new(h));
            let register = |r: &Registry, h: Arc<dyn picollo_export::Exported>| {
                r.register_dyn("latency", "full-range latency", &labels, h)
                    .expect("registers")
            };
            register(&fleet.sparse, Arc::new(Mutex::new(sparse)));
            register(&fleet.sparse_atomic, Arc::new(sparse_atomic));
            register(&fleet.sparse_thread_local, sparse_tl);
            register(&fleet.plain, h.clone());
            register(&fleet.thread_local, tl.clone());
            register(&fleet.atomic, atomic.clone());
            fleet.plains.push(h);
            fleet.locals.push(tl);
            fleet.atomics.push(atomic);
        }
        fleet
    }
}
