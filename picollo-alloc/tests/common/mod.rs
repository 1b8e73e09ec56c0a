//! Access to the HdrHistogram test vectors, for every test file that reads them.
#![allow(dead_code)] // each test crate uses its own subset

use picollo_alloc::hdr::LogReader;
use std::fs;
use std::io::BufReader;
use std::path::PathBuf;

/// jHiccup's V2 interval log (62 intervals, no tags).
pub const JHICCUP: &str = "jHiccup-2.0.7S.logV2.hlog";
/// The tagged V2 interval log (21 untagged + 21 `Tag=A` intervals).
pub const TAGGED: &str = "tagged-Log.logV2.hlog";

/// The vectors directory: `picollo-alloc/tests/vectors/hdrhistogram` (in the repository, with
/// their provenance in its README), so a missing directory fails the test instead of skipping it.
pub fn vectors_dir() -> PathBuf {
    let dir = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/vectors/hdrhistogram"
    ));
    assert!(
        dir.is_dir(),
        "HdrHistogram test vectors not found at {}: they are part of the repository",
        dir.display()
    );
    dir
}

/// The bytes of vector `name`.
pub fn read_vector(name: &str) -> Vec<u8> {
    let path = vectors_dir().join(name);
    fs::read(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// A streaming reader over log vector `name`.
pub fn open_log(name: &str) -> LogReader<BufReader<fs::File>> {
    let path = vectors_dir().join(name);
    let file =
        fs::File::open(&path).unwrap_or_else(|e| panic!("cannot open {}: {e}", path.display()));
    LogReader::new(BufReader::new(file))
}

/// The `hdrhistogram` crate's decoding of a log line's blob (its base64 column): an answer
/// that is not Picollo's.
pub fn hdr_decode(payload_base64: &str) -> hdrhistogram::Histogram<u64> {
    use base64::Engine as _;
    let blob = base64::engine::general_purpose::STANDARD
        .decode(payload_base64)
        .unwrap();
    hdrhistogram::serialization::Deserializer::new()
        .deserialize(&mut &blob[..])
        .unwrap()
}

/// The `hdrhistogram` crate's sum of the blobs `payloads` ([`hdr_decode`]) added into `into`
/// with its own `add` (index for index where the geometries match; otherwise each source
/// entry recorded at its lowest value, as Java's `add` does).
pub fn hdr_sum<'a>(
    mut into: hdrhistogram::Histogram<u64>,
    payloads: impl IntoIterator<Item = &'a str>,
) -> hdrhistogram::Histogram<u64> {
    for p in payloads {
        into.add(hdr_decode(p)).unwrap();
    }
    into
}

/// `(total, p99.9, max)` of the `hdrhistogram` crate's `new Histogram(digits)` after adding
/// the blobs `payloads` ([`hdr_sum`]): HdrHistogram's answers over a few intervals of a log,
/// for CI's miri run, where the tests read too few intervals for Java's.
pub fn hdr_answers<'a>(digits: u8, payloads: impl IntoIterator<Item = &'a str>) -> (u64, u64, u64) {
    let sum = hdr_sum(hdrhistogram::Histogram::new(digits).unwrap(), payloads);
    assert!(!sum.is_empty());
    (sum.len(), sum.value_at_quantile(0.999), sum.max())
}
