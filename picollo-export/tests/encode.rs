//! The conversions and expositions: counts exact, nothing dropped, bad input refused with a
//! clear error, protobuf and OTLP round trips.

use picollo_testkit::StopFlag;
use std::sync::{Arc, Mutex};

use picollo_alloc::{HistogramBuilder, Snapshot};
use picollo_core::{HistogramRead, Layout, ReadExt, Record, Window};
use picollo_export::proto::otlp as otlp_pb;

#[path = "common/prometheus_pb.rs"]
mod pb;
use picollo_export::server::{negotiate, render, Exposition};
use picollo_export::text::TextFormat;
use picollo_export::{
    otlp, ClassicBuckets, ClassicHistogram, ExportError, ExportOptions, Labels, Mapping,
    NativeHistogram, Registry, Schema, Summed,
};
use proptest::prelude::*;
use prost::Message;

/// The buckets a Prometheus client would see: spans and deltas expanded to `(index, count)`.
fn expand(h: &pb::Histogram) -> Vec<(i32, u64)> {
    let mut out = Vec::new();
    let (mut index, mut count, mut d) = (0i32, 0i64, 0usize);
    for (k, span) in h.positive_span.iter().enumerate() {
        index = if k == 0 {
            span.offset
        } else {
            index + span.offset
        };
        for _ in 0..span.length {
            count += h.positive_delta[d];
            d += 1;
            if count != 0 {
                out.push((index, count as u64));
            }
            index += 1;
        }
    }
    assert_eq!(d, h.positive_delta.len(), "every delta belongs to a span");
    out
}

fn decode_families(mut bytes: &[u8]) -> Vec<pb::MetricFamily> {
    let mut out = Vec::new();
    while !bytes.is_empty() {
        out.push(pb::MetricFamily::decode_length_delimited(&mut bytes).expect("valid protobuf"));
    }
    out
}

fn layout(k: u32) -> Layout {
    Layout::from_block_scale(k).unwrap()
}

#[test]
fn empty_histograms_are_valid_and_native() {
    let h = HistogramBuilder::new()
        .layout(layout(7))
        .dense()
        .plain()
        .unwrap();
    let n = NativeHistogram::from_histogram(&h);
    assert_eq!((n.count(), n.zero_count(), n.sum()), (0, 0, 0.0));
    assert!(n.dense().is_none() && n.sum_is_exact());
    let registry = Registry::new();
    registry
        .register("empty", "nothing yet", &Labels::empty(), Arc::new(h))
        .unwrap();
    let mut bytes = Vec::new();
    registry.encode_protobuf(&mut bytes);
    let f = &decode_families(&bytes)[0];
    let ph = f.metric[0].histogram.as_ref().unwrap();
    assert_eq!(
        ph.positive_span,
        vec![pb::BucketSpan {
            offset: 0,
            length: 0
        }]
    );
    assert!(
        ph.zero_threshold > 0.0,
        "recognized as native by Prometheus 2.x"
    );
    let text = registry.encode_text(TextFormat::Prometheus);
    assert!(text.contains("empty_bucket{le=\"+Inf\"} 0\n"), "{text}");
    assert!(text.contains("empty_sum 0\n") && text.contains("empty_count 0\n"));
}

#[test]
fn values_at_the_ends_of_u64_are_counted_and_the_sum_stays_finite() {
    for k in [1, 7, 9, 20] {
        let mut h = HistogramBuilder::new()
            .layout(layout(k))
            .dense()
            .plain()
            .unwrap();
        for v in [0, 1, u64::MAX, u64::MAX, u64::MAX - 1] {
            h.record(v);
        }
        for n in [-4i8, 0, 3, 8] {
            let mapping = Mapping::new(layout(k), Schema::new(n).unwrap());
            let mut native = NativeHistogram::new(mapping.schema());
            native.fill_from(&h, mapping);
            assert_eq!((native.count(), native.zero_count()), (5, 1));
            // Three values in the last bucket, counted at its midpoint (at least 3·2^63).
            assert!(native.sum().is_finite() && native.sum() >= 3.0 * 2f64.powi(63));
            let last = native.buckets().last().unwrap();
            assert_eq!(last.0, Schema::new(n).unwrap().index_of(u64::MAX).unwrap());
        }
    }
}

#[test]
fn underflow_and_overflow_are_never_dropped() {
    let l = layout(6);
    let mut h = HistogramBuilder::new()
        .layout(l)
        .window(Window::new(l, 1_000, 10_000).unwrap())
        .dense()
        .plain()
        .unwrap();
    h.record(5); // under
    h.record(2_000);
    h.record(1 << 40); // over
    h.record(1 << 41); // over
    let n = NativeHistogram::from_histogram(&h);
    assert_eq!((n.count(), h.underflow() + h.overflow()), (4, 3));
    let s = n.schema();
    let w = h.window();
    let buckets: Vec<_> = n.buckets().collect();
    assert_eq!(
        buckets.first(),
        Some(&(s.index_of(w.min_value(l)).unwrap(), 1))
    );
    assert_eq!(
        buckets.last(),
        Some(&(s.index_of(w.max_value(l)).unwrap(), 2))
    );
    assert!(!n.sum_is_exact());
    let c = ClassicHistogram::from_histogram(&h, &ClassicBuckets::PowersOfTwo);
    assert_eq!(c.count(), 4);
    // Overflow is only in +Inf; the underflow value is below every boundary that holds 2,000.
    assert_eq!(c.buckets().last().unwrap().1, 2);
}

#[test]
fn sums_are_exact_for_single_integer_buckets_and_with_summed() {
    let mut h = Summed::new(
        HistogramBuilder::new()
            .relative_error(0.01)
            .plain()
            .unwrap(),
    );
    for v in 0..128 {
        h.record(v);
    }
    let n = NativeHistogram::from_histogram(h.get_ref());
    assert!(n.sum_is_exact());
    assert_eq!(n.sum(), (0..128).sum::<u64>() as f64);
    h.record(1_000_003);
    let registry = Registry::new();
    let shared = Arc::new(Mutex::new(h));
    registry
        .register("s", "", &Labels::empty(), shared.clone())
        .unwrap();
    let text = registry.encode_text(TextFormat::Prometheus);
    assert!(text.contains("s_sum 1008131\n"), "{text}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Whatever was recorded, the count is exact, every native bucket holds what the mapping
    /// sends there, the protobuf spans and deltas encode exactly those buckets, and OTLP's
    /// dense buckets hold them at index − 1.
    #[test]
    fn every_count_arrives(values in proptest::collection::vec(any::<u64>().prop_map(|v| v >> (v % 64)), 0..300),
                           k in 1u32..=12, n in -4i8..=8) {
        let l = layout(k);
        let mut h = HistogramBuilder::new().layout(l).dense().plain().unwrap();
        values.iter().for_each(|&v| h.record(v));
        let schema = Schema::new(n).unwrap();
        let mapping = Mapping::new(l, schema);
        let mut native = NativeHistogram::new(schema);
        native.fill_from(&h, mapping);
        prop_assert_eq!(native.count(), values.len() as u64);
        let mut expected = std::collections::BTreeMap::new();
        for &v in &values {
            if let Some(i) = mapping.native_index(l.index_of(v)) {
                *expected.entry(i).or_insert(0u64) += 1;
            }
        }
        let got: std::collections::BTreeMap<i32, u64> = native.buckets().collect();
        prop_assert_eq!(&got, &expected);
        prop_assert_eq!(native.zero_count(), values.iter().filter(|&&v| v == 0).count() as u64);

        let registry = Registry::with_options(ExportOptions::new().schema(schema));
        registry.register("h", "", &Labels::empty(), Arc::new(h)).unwrap();
        let mut bytes = Vec::new();
        registry.encode_protobuf(&mut bytes);
        let families = decode_families(&bytes);
        let ph = families[0].metric[0].histogram.as_ref().unwrap();
        prop_assert_eq!(ph.schema, n as i32);
        prop_assert_eq!(ph.sample_count, values.len() as u64);
        let decoded: std::collections::BTreeMap<i32, u64> = expand(ph).into_iter().collect();
        prop_assert_eq!(&decoded, &expected);

        let point = otlp::exponential_point(&native, Vec::new(), 0, 0);
        let mut dense = std::collections::BTreeMap::new();
        if let Some(b) = &point.positive {
            for (i, &c) in b.bucket_counts.iter().enumerate() {
                if c != 0 {
                    dense.insert(b.offset + i as i32 + 1, c);
                }
            }
        }
        prop_assert_eq!(&dense, &expected);
    }
}

#[test]
fn bad_names_and_labels_get_clear_errors() {
    let registry = Registry::new();
    let h = Arc::new(
        HistogramBuilder::new()
            .layout(layout(4))
            .dense()
            .plain()
            .unwrap(),
    );
    let e = registry
        .register("9bad", "", &Labels::empty(), h.clone())
        .unwrap_err();
    assert!(matches!(e, ExportError::InvalidMetricName { .. }));
    assert!(e.to_string().contains("starts with a digit"), "{e}");
    assert!(registry
        .register("a-b", "", &Labels::empty(), h.clone())
        .is_err());
    assert!(registry
        .register("", "", &Labels::empty(), h.clone())
        .is_err());
    for bad in ["", "1x", "__x", "a.b", "ü"] {
        let e = Labels::new([(bad, "v")]).unwrap_err();
        assert!(matches!(e, ExportError::InvalidLabelName { .. }), "{bad}");
    }
    let e = Labels::new([("a", "1"), ("a", "2")]).unwrap_err();
    assert!(e.to_string().contains("twice"));
    let le = Labels::new([("le", "1")]).unwrap();
    assert!(registry.register("x", "", &le, h.clone()).is_err());

    // Kinds, help texts and sample names of different families must not clash.
    registry
        .register("lat", "help", &Labels::empty(), h.clone())
        .unwrap();
    let dup = registry.register("lat", "help", &Labels::empty(), h.clone());
    assert!(matches!(dup, Err(ExportError::DuplicateSeries { .. })));
    assert!(registry.counter("lat", "help", &Labels::empty()).is_err());
    assert!(registry.counter("lat_count", "", &Labels::empty()).is_err());
    let other = Labels::new([("zone", "b")]).unwrap();
    assert!(registry
        .register("lat", "other help", &other, h.clone())
        .is_err());
    registry.register("lat", "help", &other, h.clone()).unwrap();
    // Counters are get-or-create, label order does not make another series.
    let ab = Labels::new([("a", "1"), ("b", "2")]).unwrap();
    let ba = Labels::new([("b", "2"), ("a", "1")]).unwrap();
    let c1 = registry.counter("reqs_total", "", &ab).unwrap();
    let c2 = registry.counter("reqs_total", "", &ba).unwrap();
    c1.inc();
    assert_eq!(c2.get(), 1);
    assert!(registry.remove("lat", &other));
    assert!(!registry.remove("lat", &other));
}

#[test]
fn label_values_are_escaped_and_any_utf8_is_kept() {
    let registry = Registry::new();
    let labels = Labels::new([("path", "a\"b\\c\nd é")]).unwrap();
    registry
        .gauge("g", "line1\nline2 \\", &labels)
        .unwrap()
        .set(f64::NAN);
    let text = registry.encode_text(TextFormat::Prometheus);
    assert!(text.contains("# HELP g line1\\nline2 \\\\\n"), "{text}");
    assert!(
        text.contains("g{path=\"a\\\"b\\\\c\\nd é\"} NaN\n"),
        "{text}"
    );
    let om = registry.encode_text(TextFormat::OpenMetrics);
    assert!(om.ends_with("# EOF\n"));
    let mut bytes = Vec::new();
    registry.encode_protobuf(&mut bytes);
    let f = decode_families(&bytes);
    assert_eq!(f[0].metric[0].label[0].value, "a\"b\\c\nd é");
}

#[test]
fn openmetrics_counters_end_in_total() {
    let registry = Registry::new();
    registry
        .counter("jobs_total", "Jobs", &Labels::empty())
        .unwrap()
        .add(3);
    registry
        .counter("errors", "Errors", &Labels::empty())
        .unwrap()
        .add(1);
    let om = registry.encode_text(TextFormat::OpenMetrics);
    assert!(om.contains("# TYPE jobs counter\njobs_total 3\n"), "{om}");
    assert!(
        om.contains("# TYPE errors counter\nerrors_total 1\n"),
        "{om}"
    );
    let text = registry.encode_text(TextFormat::Prometheus);
    assert!(
        text.contains("# TYPE jobs_total counter\njobs_total 3\n"),
        "{text}"
    );
}

#[test]
fn classic_buckets_explicit_and_derived() {
    let l = layout(7);
    let mut h = HistogramBuilder::new()
        .layout(l)
        .window(Window::new(l, 0, 1 << 20).unwrap())
        .dense()
        .plain()
        .unwrap();
    for v in [1, 5, 5, 300, 4_096, 70_000] {
        h.record(v);
    }
    let derived = ClassicHistogram::from_histogram(&h, &ClassicBuckets::PowersOfTwo);
    assert!(derived.is_exact());
    for (le, n) in derived.buckets() {
        let truth = [1u64, 5, 5, 300, 4_096, 70_000]
            .iter()
            .filter(|&&v| v <= le)
            .count() as u64;
        assert_eq!(n, truth, "le={le}");
    }
    assert_eq!(derived.buckets().last().unwrap().0, (1 << 21) - 1);
    // 1,000 is not a bucket edge at k = 7 (buckets are 8 wide there): the rule counts the
    // bucket holding it at the next boundary.
    let explicit = ClassicBuckets::explicit(vec![10, 1_000, 100_000]).unwrap();
    let c = ClassicHistogram::from_histogram(&h, &explicit);
    assert!(!c.is_exact());
    assert_eq!(
        c.buckets().collect::<Vec<_>>(),
        [(10, 3), (1_000, 4), (100_000, 6)]
    );
}

#[test]
fn every_kind_serves_the_same_counts() {
    let l = layout(8);
    let w = Window::new(l, 0, 1 << 30).unwrap();
    let values: Vec<u64> = (0..5_000u64).map(|i| i * i * 37 % (1 << 31)).collect();
    let tl = Arc::new(
        HistogramBuilder::new()
            .layout(l)
            .window(w)
            .thread_local()
            .unwrap(),
    );
    let atomic = Arc::new(
        HistogramBuilder::new()
            .layout(l)
            .window(w)
            .dense()
            .atomic()
            .unwrap(),
    );
    let approx = Arc::new(
        HistogramBuilder::new()
            .layout(l)
            .max_trackable(1 << 30)
            .approximate()
            .unwrap(),
    );
    let mut plain = HistogramBuilder::new()
        .layout(l)
        .window(w)
        .dense()
        .plain()
        .unwrap();
    let mut rng = picollo_core::scalable::XorShift::new(7);
    std::thread::scope(|s| {
        s.spawn(|| values.iter().for_each(|&v| tl.record(v)));
    });
    for &v in &values {
        atomic.record(v);
        approx.record(v, &mut rng);
        plain.record(v);
    }
    let snapshot = Arc::new(Snapshot::new(&plain));
    let locked = Arc::new(Mutex::new(plain));
    let registry = Registry::new();
    let kind = |k: &str| Labels::new([("kind", k)]).unwrap();
    registry.register("h", "", &kind("tl"), tl).unwrap();
    registry.register("h", "", &kind("atomic"), atomic).unwrap();
    registry.register("h", "", &kind("approx"), approx).unwrap();
    registry
        .register("h", "", &kind("plain"), locked.clone())
        .unwrap();
    registry
        .register("h", "", &kind("snapshot"), snapshot)
        .unwrap();
    let mut bytes = Vec::new();
    registry.encode_protobuf(&mut bytes);
    let f = decode_families(&bytes);
    let reference = expand(f[0].metric[3].histogram.as_ref().unwrap());
    for m in &f[0].metric {
        let h = m.histogram.as_ref().unwrap();
        assert_eq!(h.sample_count, 5_000, "{:?}", m.label);
        assert_eq!(expand(h), reference, "{:?}", m.label); // approx is exact below 2^13
    }
    assert_eq!(locked.lock().unwrap().total(), 5_000);
}

#[test]
fn negotiation_follows_weights_and_order() {
    use picollo_export::server::PROTOBUF_CONTENT_TYPE;
    assert_eq!(
        negotiate(Some("text/plain;version=0.0.4;q=0.9,application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.8")),
        Exposition::Text(TextFormat::Prometheus)
    );
    // Unsupported protobuf encodings and versions are skipped, q=0 is refused.
    assert_eq!(
        negotiate(Some("application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=text,text/plain;version=9.9,application/openmetrics-text;q=0")),
        Exposition::Text(TextFormat::Prometheus)
    );
    assert_eq!(
        negotiate(Some("garbage;;;q=abc,,")),
        Exposition::Text(TextFormat::Prometheus)
    );
    assert_eq!(Exposition::Protobuf.content_type(), PROTOBUF_CONTENT_TYPE);
    let registry = Registry::new();
    assert!(render(&registry, Exposition::Protobuf).is_empty());
    assert_eq!(
        render(&registry, Exposition::Text(TextFormat::OpenMetrics)),
        b"# EOF\n"
    );
}

#[test]
fn otlp_requests_round_trip_and_json_is_valid() {
    let registry = Arc::new(Registry::new());
    let l = layout(9);
    let h = Arc::new(HistogramBuilder::new().layout(l).thread_local().unwrap());
    let labels = Labels::new([("route", "/x \"q\"")]).unwrap();
    registry
        .register("lat_ns", "Latency", &labels, h.clone())
        .unwrap();
    let c = registry.counter("reqs_total", "Requests", &labels).unwrap();
    let g = registry.gauge("temp", "Temp", &labels).unwrap();
    for v in [0, 7, 1_000, 1_000_000, u64::MAX] {
        h.record(v);
    }
    c.add(5);
    g.set(-1.5);
    let exporter = otlp::OtlpExporter::new(registry.clone(), otlp::Temporality::Cumulative)
        .resource_attribute("service.name", "test");
    let request = exporter.collect();
    let bytes = request.encode_to_vec();
    let back = otlp_pb::ExportMetricsServiceRequest::decode(&bytes[..]).unwrap();
    assert_eq!(back, request);
    let metrics = &back.resource_metrics[0].scope_metrics[0].metrics;
    let Some(otlp_pb::metric::Data::ExponentialHistogram(e)) = &metrics[0].data else {
        panic!("histogram first");
    };
    let p = &e.data_points[0];
    assert_eq!((p.count, p.zero_count, p.scale), (5, 1, 8));
    let native = NativeHistogram::from_histogram(&*h);
    let b = p.positive.as_ref().unwrap();
    let (offset, dense) = native.dense().unwrap();
    assert_eq!(b.offset, offset - 1);
    assert_eq!(b.bucket_counts, dense);
    assert!(p.start_time_unix_nano <= p.time_unix_nano && p.start_time_unix_nano > 0);

    let json: serde_json::Value = serde_json::from_str(&otlp::to_json(&request)).unwrap();
    let m = &json["resourceMetrics"][0]["scopeMetrics"][0]["metrics"];
    assert_eq!(m[0]["exponentialHistogram"]["dataPoints"][0]["count"], "5");
    assert_eq!(m[0]["exponentialHistogram"]["aggregationTemporality"], 2);
    assert_eq!(m[1]["sum"]["dataPoints"][0]["asInt"], "5");
    assert_eq!(m[1]["sum"]["isMonotonic"], true);
    assert_eq!(m[2]["gauge"]["dataPoints"][0]["asDouble"], -1.5);
    assert_eq!(
        m[0]["exponentialHistogram"]["dataPoints"][0]["attributes"][0]["value"]["stringValue"],
        "/x \"q\""
    );
    assert_eq!(
        json["resourceMetrics"][0]["resource"]["attributes"][0]["key"],
        "service.name"
    );
}

#[test]
fn otlp_deltas_cover_each_interval_once() {
    let registry = Arc::new(Registry::new());
    let l = layout(5);
    let h = Arc::new(HistogramBuilder::new().layout(l).dense().atomic().unwrap());
    registry
        .register("d", "", &Labels::empty(), h.clone())
        .unwrap();
    let c = registry.counter("n_total", "", &Labels::empty()).unwrap();
    let exporter = otlp::OtlpExporter::new(registry, otlp::Temporality::Delta);
    let counts = |r: &otlp_pb::ExportMetricsServiceRequest| {
        let m = &r.resource_metrics[0].scope_metrics[0].metrics;
        let hist = match &m[0].data {
            Some(otlp_pb::metric::Data::ExponentialHistogram(e)) => e.data_points[0].count,
            _ => panic!(),
        };
        let ctr = match &m[1].data {
            Some(otlp_pb::metric::Data::Sum(s)) => s.data_points[0].value,
            _ => panic!(),
        };
        (hist, ctr)
    };
    use otlp_pb::number_data_point::Value::AsInt;
    (0..10).for_each(|v| h.record(v));
    c.add(10);
    let a = exporter.collect();
    assert_eq!(counts(&a), (10, Some(AsInt(10))));
    let b = exporter.collect();
    assert_eq!(counts(&b), (0, Some(AsInt(0))));
    (0..3).for_each(|v| h.record(v * 1000));
    c.add(3);
    let third = exporter.collect();
    assert_eq!(counts(&third), (3, Some(AsInt(3))));
    // Consecutive intervals: each starts where the previous ended.
    let times = |r: &otlp_pb::ExportMetricsServiceRequest| match &r.resource_metrics[0]
        .scope_metrics[0]
        .metrics[0]
        .data
    {
        Some(otlp_pb::metric::Data::ExponentialHistogram(e)) => (
            e.data_points[0].start_time_unix_nano,
            e.data_points[0].time_unix_nano,
        ),
        _ => panic!(),
    };
    assert_eq!(times(&b).0, times(&a).1);
    assert_eq!(times(&third).0, times(&b).1);
}

#[test]
fn straddling_and_exactness_are_reported() {
    // k = 3 at schema 3: 20 and 21 share a Picollo bucket but not a native one.
    let l = layout(3);
    let mut h = HistogramBuilder::new().layout(l).dense().plain().unwrap();
    h.record(18);
    let n = NativeHistogram::from_histogram(&h);
    assert_eq!(n.straddling_count(), 0);
    h.record(20);
    let n = NativeHistogram::from_histogram(&h);
    assert_eq!(n.straddling_count(), 1);
    assert_eq!(h.total(), n.count());
    let _ = h.layout();
}

/// A scrape reads every thread's counts without waiting for the recording threads: a thread
/// that recorded and then blocks (neither exits nor records again) is seen at once, and
/// recorders keep going while scrapes run (hdrhistogram's `SyncHistogram::refresh` would wait
/// for the blocked recorder).
#[test]
fn scrapes_never_wait_for_recorders() {
    let l = layout(7);
    let h = Arc::new(HistogramBuilder::new().layout(l).thread_local().unwrap());
    let registry = Registry::new();
    registry
        .register("live", "", &Labels::empty(), h.clone())
        .unwrap();
    let recorded = picollo_testkit::Barrier::new(2);
    // Both raised however the closure below ends, so no thread outlives a failed assertion.
    let (release, stop) = (StopFlag::new(), StopFlag::new());
    let busy_started = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        let (_release, _stop) = (release.raise_on_drop(), stop.raise_on_drop());
        let _recorded = recorded.break_on_panic();
        s.spawn(|| {
            let _recorded = recorded.break_on_panic();
            (0..1_000).for_each(|v| h.record(v));
            recorded.wait();
            // Blocked (neither exiting nor recording) until the scrapes below are done.
            release.wait_until(|| false);
        });
        let busy = s.spawn(|| {
            let _stop = stop.raise_on_drop();
            let mut n = 0u64;
            while !stop.is_raised() {
                h.record(5_000);
                n += 1;
                busy_started.store(true, std::sync::atomic::Ordering::Relaxed);
            }
            n
        });
        recorded.wait();
        // Scrape while the busy thread records (a scrape takes microseconds: wait for it).
        assert!(stop.wait_until(|| busy_started.load(std::sync::atomic::Ordering::Relaxed)));
        for _ in 0..20 {
            let mut bytes = Vec::new();
            registry.encode_protobuf(&mut bytes);
            let families = decode_families(&bytes);
            let count = families[0].metric[0]
                .histogram
                .as_ref()
                .unwrap()
                .sample_count;
            assert!(
                count >= 1_000,
                "the blocked thread's counts are served: {count}"
            );
        }
        release.raise();
        stop.raise();
        let busy = busy.join().unwrap();
        assert!(busy > 0);
        assert_eq!(h.total(), 1_000 + busy, "nothing lost while scraping");
    });
}

/// The exposition is written field by field, without prost's message structs: it must be
/// exactly what prost writes for the same messages (decode it, re-encode it, same bytes),
/// for every kind of series, empty or full, with classic buckets or without, big enough that
/// every length needs a multi-byte varint.
#[test]
fn protobuf_bytes_are_prosts_own() {
    for classic in [false, true] {
        let options = ExportOptions::new()
            .classic(ClassicBuckets::explicit(vec![0, 10, 1_000, 1 << 40]).unwrap())
            .classic_in_protobuf(classic);
        let registry = Registry::with_options(options);
        let c = registry
            .counter(
                "requests_total",
                "",
                &Labels::new([("code", "200")]).unwrap(),
            )
            .unwrap();
        c.add(12_345_678_901);
        registry
            .counter("zero_total", "never counted", &Labels::empty())
            .unwrap();
        let g = registry
            .gauge(
                "temperature",
                "in °C",
                &Labels::new([("room", ""), ("b", "x")]).unwrap(),
            )
            .unwrap();
        g.set(-273.15);
        registry
            .gauge("zero_gauge", "", &Labels::empty())
            .unwrap()
            .set(-0.0);
        let full = Window::full(layout(9));
        let empty = Arc::new(
            HistogramBuilder::new()
                .layout(layout(9))
                .window(full)
                .thread_local()
                .unwrap(),
        );
        registry
            .register("empty_seconds", "", &Labels::empty(), empty)
            .unwrap();
        for i in 0..40u64 {
            let h = Arc::new(
                HistogramBuilder::new()
                    .layout(layout(9))
                    .window(full)
                    .thread_local()
                    .unwrap(),
            );
            let mut s = i.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
            for _ in 0..1_000 {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                h.record(s >> (s % 64));
            }
            h.record_n(0, i);
            registry
                .register(
                    "latency_nanoseconds",
                    "full-range latency",
                    &Labels::new([("id", i.to_string())]).unwrap(),
                    h,
                )
                .unwrap();
        }
        let mut plain = HistogramBuilder::new()
            .layout(layout(3))
            .window(Window::new(layout(3), 100, 10_000).unwrap())
            .dense()
            .plain()
            .unwrap();
        plain.record_n(5, u64::MAX / 4); // underflow, huge counts
        plain.record_n(500, 3);
        registry
            .register("small", "", &Labels::empty(), Arc::new(Mutex::new(plain)))
            .unwrap();

        let mut ours = Vec::new();
        registry.encode_protobuf(&mut ours);
        let families = decode_families(&ours);
        assert_eq!(families.len(), 7);
        let mut prosts = Vec::new();
        for f in &families {
            f.encode_length_delimited(&mut prosts).unwrap();
        }
        assert_eq!(ours.len(), prosts.len());
        assert!(ours == prosts, "bytes differ from prost's encoding");
        let latency = families
            .iter()
            .find(|f| f.name == "latency_nanoseconds")
            .unwrap();
        assert_eq!(latency.metric.len(), 40);
        assert!(latency.metric.iter().all(|m| {
            let h = m.histogram.as_ref().unwrap();
            h.positive_delta.len() > 500 && (h.bucket.len() == 4) == classic
        }));
    }
}
