//! The repository's HdrHistogram interop vectors (`picollo-alloc/tests/vectors/hdrhistogram/`,
//! written by Java's HdrHistogram and the Rust crate) through the facade and the real crate
//! (issue 45): both decode each to the same histogram, and each side's V2 and V2 + deflate
//! encodings decode on the other side to equal histograms.

use base64::Engine as _;
use hdrhistogram_upstream as upstream;
use picollo_hdrhistogram as facade;
use picollo_hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
use picollo_hdrhistogram::serialization::{
    Deserializer, Serializer, V2DeflateSerializer, V2Serializer,
};
use std::path::PathBuf;

fn vector(name: &str) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../picollo-alloc/tests/vectors/hdrhistogram")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Everything a reader sees of a histogram, as numbers.
fn facade_view(h: &facade::Histogram<u64>) -> Vec<u64> {
    let mut v = vec![
        h.len(),
        h.min(),
        h.max(),
        h.low(),
        h.high(),
        h.sigfig().into(),
    ];
    v.extend([0.0, 0.5, 0.9, 0.99, 0.999, 1.0].map(|q| h.value_at_quantile(q)));
    v.extend(
        h.iter_recorded()
            .flat_map(|i| [i.value_iterated_to(), i.count_at_value()]),
    );
    v
}

fn upstream_view(h: &upstream::Histogram<u64>) -> Vec<u64> {
    let mut v = vec![
        h.len(),
        h.min(),
        h.max(),
        h.low(),
        h.high(),
        h.sigfig().into(),
    ];
    v.extend([0.0, 0.5, 0.9, 0.99, 0.999, 1.0].map(|q| h.value_at_quantile(q)));
    v.extend(
        h.iter_recorded()
            .flat_map(|i| [i.value_iterated_to(), i.count_at_value()]),
    );
    v
}

/// Decodes `bytes` on both sides, checks they agree, then crosses the encodings over.
fn both_ways(bytes: &[u8], what: &str) -> facade::Histogram<u64> {
    let ours: facade::Histogram<u64> = Deserializer::new().deserialize(&mut &bytes[..]).unwrap();
    let theirs: upstream::Histogram<u64> = upstream::serialization::Deserializer::new()
        .deserialize(&mut &bytes[..])
        .unwrap();
    assert_eq!(
        facade_view(&ours),
        upstream_view(&theirs),
        "{what}: decoded"
    );

    // Ours encoded, theirs decoding; and the reverse; plain and deflate.
    for deflate in [false, true] {
        let mut encoded = Vec::new();
        if deflate {
            V2DeflateSerializer::new()
                .serialize(&ours, &mut encoded)
                .unwrap();
        } else {
            V2Serializer::new().serialize(&ours, &mut encoded).unwrap();
        }
        let back: upstream::Histogram<u64> = upstream::serialization::Deserializer::new()
            .deserialize(&mut &encoded[..])
            .unwrap();
        assert_eq!(
            upstream_view(&back),
            upstream_view(&theirs),
            "{what}: ours → theirs"
        );

        let mut encoded = Vec::new();
        if deflate {
            upstream::serialization::Serializer::serialize(
                &mut upstream::serialization::V2DeflateSerializer::new(),
                &theirs,
                &mut encoded,
            )
            .unwrap();
        } else {
            upstream::serialization::Serializer::serialize(
                &mut upstream::serialization::V2Serializer::new(),
                &theirs,
                &mut encoded,
            )
            .unwrap();
        }
        let back: facade::Histogram<u64> =
            Deserializer::new().deserialize(&mut &encoded[..]).unwrap();
        assert_eq!(back, ours, "{what}: theirs → ours");
    }
    ours
}

#[test]
fn single_histograms_decode_alike_both_ways() {
    for name in ["seq-nums.hist", "seq-nums.histz"] {
        let h = both_ways(&vector(name), name);
        assert!(!h.is_empty(), "{name} is not empty");
    }
}

#[test]
fn interval_logs_decode_alike_both_ways() {
    for (name, intervals) in [
        ("jHiccup-2.0.7S.logV2.hlog", 62),
        ("tagged-Log.logV2.hlog", 42),
    ] {
        let log = vector(name);
        let mut sum = facade::Histogram::<u64>::new(3).unwrap();
        let mut seen = 0;
        for entry in IntervalLogIterator::new(&log) {
            if let LogEntry::Interval(ilh) = entry.unwrap() {
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(ilh.encoded_histogram())
                    .unwrap();
                let h = both_ways(&bytes, name);
                if name.starts_with("jHiccup") {
                    sum.add(&h).unwrap();
                }
                seen += 1;
            }
        }
        assert_eq!(seen, intervals, "{name}: intervals");
        if name.starts_with("jHiccup") {
            // The figures Java's and C's HdrHistogram tests assert for this log (see the
            // vectors' README).
            assert_eq!(sum.len(), 48_761);
            assert_eq!(sum.value_at_percentile(99.9), 1_745_879_039);
            assert_eq!(sum.max(), 1_796_210_687);
        }
    }
}
