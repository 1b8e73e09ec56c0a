//! One snapshot per scrape: the registry keeps its families as a shared list, replaced
//! copy-on-write when a series is registered or removed, and labels shared (`Arc`) by the
//! list, its index and the recorder. So a protobuf scrape (what Prometheus asks for native
//! histograms) allocates the same few buffers whatever the number of series: this counts the
//! scraping thread's allocations at 100 and at 3,000 series of three labels each (a counting
//! global allocator, per thread).

use std::sync::Arc;

use picollo_alloc::HistogramBuilder;
use picollo_core::Layout;
use picollo_export::{Labels, Registry};

#[path = "common/counting_alloc.rs"]
mod counting_alloc;
use counting_alloc::allocations;

/// A registry with `series` histogram series and as many counters, each holding some values.
fn registry(series: usize) -> Registry {
    let registry = Registry::new();
    let layout = Layout::from_block_scale(7).unwrap();
    for i in 0..series {
        let labels = Labels::new([
            ("route", format!("/api/{i}")),
            ("method", "GET".to_owned()),
            ("code", "200".to_owned()),
        ])
        .unwrap();
        let h = Arc::new(HistogramBuilder::new().layout(layout).atomic().unwrap());
        (0..20u64).for_each(|v| h.record(1_000 + v * 7_919 * (i as u64 % 13 + 1)));
        registry
            .register("latency_ns", "request latency", &labels, h)
            .unwrap();
        let requests = registry
            .counter("requests_total", "requests", &labels)
            .unwrap();
        requests.add(i as u64);
    }
    registry
}

/// Allocations of one protobuf scrape into an output buffer that already has room, after a
/// first scrape (which takes the snapshot the next ones share).
fn protobuf_scrape_allocations(registry: &Registry) -> (u64, usize) {
    let mut out = Vec::new();
    registry.encode_protobuf(&mut out);
    let len = out.len();
    out.clear();
    let before = allocations();
    registry.encode_protobuf(&mut out);
    let made = allocations() - before;
    assert_eq!(out.len(), len);
    (made, len)
}

#[test]
fn a_scrape_allocates_the_same_whatever_the_number_of_series() {
    let (small, small_len) = protobuf_scrape_allocations(&registry(100));
    let (large, large_len) = protobuf_scrape_allocations(&registry(3_000));
    assert!(large_len > 20 * small_len, "{small_len} {large_len}");
    assert_eq!(
        small, large,
        "allocations per scrape: {small} at 100 series, {large} at 3,000"
    );
    // A handful: the scratch buffers of one scrape, nothing per series or family.
    assert!(small <= 16, "{small}");
}

/// A registration between two scrapes gives the next scrape a new snapshot with the series
/// (copy-on-write), and a removal one without it.
#[test]
fn the_snapshot_follows_registration_and_removal() {
    let registry = registry(10);
    let count = |r: &Registry| {
        let text = r.encode_text(picollo_export::text::TextFormat::Prometheus);
        text.lines()
            .filter(|l| l.starts_with("requests_total{"))
            .count()
    };
    assert_eq!(count(&registry), 10);
    let extra = Labels::new([("route", "/x"), ("method", "PUT"), ("code", "500")]).unwrap();
    registry
        .counter("requests_total", "requests", &extra)
        .unwrap();
    assert_eq!(count(&registry), 11);
    assert!(registry.remove("requests_total", &extra));
    assert_eq!(count(&registry), 10);
    registry.set_help("requests_total", "all requests");
    let text = registry.encode_text(picollo_export::text::TextFormat::Prometheus);
    assert!(
        text.contains("# HELP requests_total all requests"),
        "{text}"
    );
}
