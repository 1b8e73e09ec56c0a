//! HdrHistogram interop against the public test vectors (`tests/vectors/hdrhistogram/`),
//! plus property tests of the codec and the log parser.
//!
//! Expected values come from the vectors' README, which lists what HdrHistogram (Java, C and
//! Rust) assert on the same files.
//!
//! # CI's miri form
//!
//! Under miri each pass over a 3-digit counts array (thousands to tens of thousands of
//! entries) costs a second or more, so CI's miri run (`picollo_testkit::miri_size`'s `ci`) runs
//! every test, with every check, at a smaller size: the first line or two of a log instead of
//! all of them, accumulated at 2 significant digits rather than 3, a 2560-entry prefix of
//! `seq-nums.hist`, a few cut points, fewer and smaller proptest cases. Totals and percentiles
//! that only hold for a whole log are then checked against the `hdrhistogram` crate's decoding
//! of the same intervals, or against values derived by hand in a comment (never against
//! Picollo). Natively and in `.ci/miri-full` every test runs at its full size.

use picollo_alloc::hdr::{
    decode_any, decode_any_with_limits, DecodeLimits, HdrCounts, HdrError, HdrGeometry, LogEntry,
    LogReader, LogWriter, RangeMode, BEST_COMPRESSION,
};
use picollo_testkit::miri_size;
use proptest::prelude::*;

// The V2 format as HdrHistogram (Java) defines it, written here from its spec rather than
// taken from the crate: a plain V2 encoding's cookie, a V2+deflate one's, the header's bytes,
// and the longest zig-zag LEB128 word ("LEB128-64b9B").
const V2_COOKIE: u32 = 0x1C84_9313;
const V2_DEFLATE_COOKIE: u32 = 0x1C84_9314;
const V2_HEADER_LEN: usize = 40;
const MAX_ZIGZAG_LEN: usize = 9;

mod common;
use common::{hdr_answers, hdr_decode, open_log, read_vector, JHICCUP, TAGGED};

/// `new Histogram(3)` as HdrHistogram's log tests accumulate into: lowest 1, 3 digits (2 in
/// CI's miri run, see [`accumulator_digits`]). Its indexing does not depend on the highest
/// trackable value, so the full range is used.
fn accumulator() -> HdrCounts {
    HdrCounts::new(1, i64::MAX as u64, accumulator_digits()).unwrap()
}

/// The significant digits [`summarize`] accumulates at: 3, as HdrHistogram's log tests; in
/// CI's miri run 2 (`new Histogram(2)`), whose counts array for these logs' intervals ends near
/// entry 2,000 instead of 12,000 (each pass over it, to add, total or rank, costs a second
/// there). The add still re-buckets: the intervals' unit magnitude is 14, the accumulator's 0.
fn accumulator_digits() -> u8 {
    miri_size(3, 3, 2)
}

#[derive(Debug, PartialEq)]
struct Summary {
    intervals: usize,
    total: u64,
    p999: u64,
    max: u64,
}

fn accumulate(intervals: impl Iterator<Item = HdrCounts>) -> (HdrCounts, usize) {
    let mut acc = accumulator();
    let mut n = 0;
    for h in intervals {
        acc.add(&h).unwrap();
        n += 1;
    }
    (acc, n)
}

fn summarize(entries: impl Iterator<Item = LogEntry>) -> Summary {
    summarize_counts(entries.map(|e| {
        e.decode()
            .unwrap_or_else(|err| panic!("line {}: {err}", e.line))
    }))
}

fn summarize_counts(intervals: impl Iterator<Item = HdrCounts>) -> Summary {
    let (acc, intervals) = accumulate(intervals);
    Summary {
        intervals,
        total: acc.total_count(),
        p999: acc.value_at_percentile(99.9).unwrap(),
        max: acc.max(),
    }
}

/// How many intervals of a log the tests that decode, accumulate or rewrite them read: all,
/// or in CI's miri run the first `ci` (1 or 2: each decode and add costs a second or more
/// there). Those are the same code paths (base64, the deflate framing, the re-bucketing add,
/// the writer's columns); the whole-log answers are checked natively and in `.ci/miri-full`.
fn intervals_read(ci: usize) -> usize {
    miri_size(usize::MAX, usize::MAX, ci)
}

/// A property's config with `cases` cases; in CI's miri run drawn with proptest's XorShift
/// generator (ChaCha's rounds, for every value drawn, were most of a case's time there).
fn config(cases: u32) -> ProptestConfig {
    let mut config = ProptestConfig::with_cases(cases);
    if miri_size(false, false, true) {
        config.rng_algorithm = proptest::test_runner::RngAlgorithm::XorShift;
    }
    config
}

/// The blobs of log entries, for [`hdr_summary`].
fn payloads(entries: &[LogEntry]) -> Vec<&str> {
    entries.iter().map(|e| e.payload_base64.as_str()).collect()
}

/// What [`summarize`] must give for the intervals of `payloads`: the `hdrhistogram` crate's
/// sum of their blobs in `new Histogram(d)` ([`accumulator_digits`]; its `add` re-buckets as
/// Java's does).
fn hdr_summary(payloads: &[&str]) -> Summary {
    let (total, p999, max) = hdr_answers(accumulator_digits(), payloads.iter().copied());
    Summary {
        intervals: payloads.len(),
        total,
        p999,
        max,
    }
}

/// Java's `seq-nums` histogram: values 0..`values` recorded once each (`values` 100 000 in
/// Java's files).
fn seq_nums_histogram(values: u64) -> HdrCounts {
    let mut h = HdrCounts::new(1, i64::MAX as u64, 3).unwrap();
    let g = h.geometry().unwrap();
    if miri_size(true, true, false) {
        h.counts = vec![0; g.counts_len()];
        for v in 0..values {
            h.counts[g.index_of(v).unwrap()] += 1;
        }
    } else {
        // CI's miri form: the same counts, a bucket at a time, from HdrHistogram's 3-digit
        // layout (2048 sub-buckets, unit magnitude 0): entries 0..2048 are 1 value wide, then
        // each bucket k >= 1 has 1024 entries 2^k values wide, the last one cut at `values`.
        // Instead of one index_of call a value into a 55,296-entry array (70 s there for
        // 100,000 values); the byte-for-byte comparison with Java's file checks the result
        // either way.
        let (mut v, mut k) = (0u64, 0);
        while v < values {
            let (entries, width) = if k == 0 { (2048, 1) } else { (1024, 1u64 << k) };
            let whole = ((values - v) / width).min(entries);
            h.counts.extend(std::iter::repeat_n(width, whole as usize));
            v += whole * width;
            if whole < entries && v < values {
                h.counts.push(values - v);
                v = values;
            }
            k += 1;
        }
    }
    h
}

#[test]
fn seq_nums_hist_reencodes_byte_identically() {
    let whole = read_vector("seq-nums.hist");
    assert_eq!(&whole[..4], &[0x1c, 0x84, 0x93, 0x13]);
    // In CI's miri run the blob of the first 2560 entries (values 0..3072): Java's header with
    // payload length 2560 and the first 2560 bytes of its payload, one byte a word (counts 1
    // and 2: entries 1 and 2 values wide, across a bucket boundary). Every pass over the 7,300
    // entries of the whole file costs seconds there (34 s for this test); the whole file is
    // decoded in CI by the `.histz` test. The prefix's answers, by hand: max 3071 (the last
    // entry, 3070..=3071); p50 is the 1536th value, 1535, in entry 1535..=1535; p99 the 3042nd,
    // 3041, in 3040..=3041; p99.9 the 3069th, 3068, in 3068..=3069.
    let (file, values, [max, p50, p99, p999]) = match miri_size(None, None, Some(2560)) {
        None => (whole, 100_000, [100_031, 50_015, 99_007, 99_903]),
        Some(n) => {
            let mut prefix = whole[..V2_HEADER_LEN + n].to_vec();
            prefix[4..8].copy_from_slice(&(n as i32).to_be_bytes());
            (prefix, 3072, [3071, 1535, 3041, 3069])
        }
    };
    let decoded = HdrCounts::decode(&file).unwrap();
    let expected = seq_nums_histogram(values);
    assert!(decoded.same_content(&expected));

    assert_eq!(decoded.total_count(), values);
    assert_eq!(decoded.min(), 0);
    assert_eq!(decoded.max(), max);
    assert_eq!(decoded.value_at_percentile(50.0), Some(p50));
    assert_eq!(decoded.value_at_percentile(99.0), Some(p99));
    assert_eq!(decoded.value_at_percentile(99.9), Some(p999));
    assert_eq!(decoded.geometry().unwrap().counts_len(), 55_296);

    let encoded = expected.encode_v2().unwrap();
    assert_eq!(encoded.len(), miri_size(8285, 8285, V2_HEADER_LEN + 2560));
    assert!(
        encoded == file,
        "re-encoding differs from Java's seq-nums.hist"
    );
    assert!(decoded.encode_v2().unwrap() == file);
}

#[test]
fn seq_nums_histz_decodes_to_the_same_counts() {
    let file = read_vector("seq-nums.histz");
    assert_eq!(&file[..4], &[0x1c, 0x84, 0x93, 0x14]);
    let decoded = HdrCounts::decode(&file).unwrap();
    assert!(decoded.same_content(&seq_nums_histogram(100_000)));
    // Our own deflate output decodes to the same content too. In CI's miri run for the
    // counts of values 0..256 (the first 256 entries: one deflate stream and frame, as for
    // the whole array; compressing all 7,300 entries costs seconds there).
    let mut part = decoded.clone();
    part.counts.truncate(miri_size(usize::MAX, usize::MAX, 256));
    let ours = part.encode_v2_deflate(BEST_COMPRESSION).unwrap();
    assert!(HdrCounts::decode(&ours).unwrap().same_content(&part));
}

#[test]
fn jhiccup_log_accumulates_like_hdrhistogram() {
    // In CI's miri run the header and the first 2 of the 62 lines (each line parsed costs time
    // there): the same parser, the last line read starting at 1.134 s.
    let (lines, last_start) = miri_size((62, 61.131), (62, 61.131), (2, 1.134));
    let mut reader = open_log(JHICCUP);
    let mut entries = Vec::new();
    for e in reader.by_ref().take(lines) {
        entries.push(e.unwrap());
    }
    assert_eq!(reader.start_time_sec(), Some(1_441_812_279.474));
    // Relative timestamps: base time is the start time.
    assert_eq!(reader.base_time_sec(), Some(1_441_812_279.474));
    assert_eq!(entries.len(), lines);
    assert_eq!(entries[0].start_timestamp, 0.127);
    assert_eq!(entries[lines - 1].start_timestamp, last_start);
    assert!((entries[0].offset_start_sec - 0.127).abs() < 1e-6);

    // Decoded once, for these checks and the accumulation below.
    let most = intervals_read(2);
    let decoded: Vec<HdrCounts> = entries
        .iter()
        .take(most)
        .map(|e| {
            e.decode()
                .unwrap_or_else(|err| panic!("line {}: {err}", e.line))
        })
        .collect();
    let first = &decoded[0];
    assert_eq!(first.total_count(), 741);
    assert_eq!(
        (
            first.lowest_discernible,
            first.highest_trackable,
            first.significant_digits
        ),
        (20_000, 3_600_000_000_000, 2)
    );
    assert_eq!(first.max(), 2_768_895);

    // Java's answers over the whole log; in CI's miri run, HdrHistogram's (the crate's) over
    // the first 2 intervals (see `intervals_read`): the same decode and re-bucketing add, into
    // an empty and a non-empty accumulator.
    let expected = if most == usize::MAX {
        Summary {
            intervals: 62,
            total: 48_761,
            p999: 1_745_879_039,
            max: 1_796_210_687,
        }
    } else {
        hdr_summary(&payloads(&entries[..most]))
    };
    assert_eq!(summarize_counts(decoded.into_iter()), expected);
}

/// HdrHistogram's `add` across geometries records each source bucket at its *lowest* equivalent
/// value. Mapping by the highest equivalent value instead gives different results, so the
/// vectors pin the rule down.
#[test]
fn jhiccup_rebucketing_rule_is_lowest_equivalent_value() {
    let mut by_highest = accumulator();
    let target = by_highest.geometry().unwrap();
    // In CI's miri run the 2nd and 3rd intervals into the 2-digit accumulator (see
    // `intervals_read`, `accumulator_digits`), with HdrHistogram's (the crate's) accumulation
    // of them at their own 2-digit geometry as the answer. Not the 1st: its max, 2.77 ms, is
    // above 2^21 ns, where the source's 2-digit entries and the accumulator's coincide and the
    // two rules agree; below 2^21 the accumulator's entries are finer.
    let (skip, most) = miri_size((0, usize::MAX), (0, usize::MAX), (1, 2));
    let mut source: Option<hdrhistogram::Histogram<u64>> = None;
    for e in open_log(JHICCUP).skip(skip).take(most) {
        let e = e.unwrap();
        if most != usize::MAX {
            let hdr = hdr_decode(&e.payload_base64);
            match &mut source {
                None => source = Some(hdr),
                Some(s) => s.add(hdr).unwrap(),
            }
        }
        let h = e.decode().unwrap();
        for b in h.iter_recorded() {
            let i = target.index_of(b.highest).unwrap();
            if by_highest.counts.len() <= i {
                by_highest.counts.resize(i + 1, 0);
            }
            by_highest.counts[i] += b.count;
        }
    }
    let Some(source) = source else {
        assert_eq!(by_highest.total_count(), 48_761);
        // These are the source (2-digit) buckets' own highest equivalent values, not what
        // HdrHistogram reports (1_745_879_039 and 1_796_210_687).
        assert_eq!(by_highest.value_at_percentile(99.9), Some(1_753_219_071));
        assert_eq!(by_highest.max(), 1_803_550_719);
        return;
    };
    // Every source bucket's highest value is also the highest of an accumulator entry (both
    // split powers of two, the accumulator no coarser), so the mapping by highest values gives
    // the source buckets' own answers; HdrHistogram's `add` into `new Histogram(2)` gives
    // another max, the entry of the top source entry's lowest value.
    assert_eq!(by_highest.total_count(), source.len());
    assert_eq!(
        by_highest.value_at_percentile(99.9),
        Some(source.value_at_quantile(0.999))
    );
    assert_eq!(by_highest.max(), source.max());
    let mut java = hdrhistogram::Histogram::<u64>::new(accumulator_digits()).unwrap();
    java.add(&source).unwrap();
    assert!(java.max() < by_highest.max());
}

#[test]
fn jhiccup_time_ranges_match_next_interval_histogram() {
    let entries = |r: (f64, f64)| {
        open_log(JHICCUP)
            .range(r.0, r.1, RangeMode::Relative)
            .map(Result::unwrap)
    };

    // Java's answers for 5 to 20 s and 40 to 60 s; in CI's miri run windows of one interval
    // each (1 to 2 s and 3 to 4 s: the intervals start at 1.134, 2.133, 3.134 and 4.135 s),
    // the same start and end rules, with HdrHistogram's (the crate's) decoding of those
    // intervals as the answer. (Each line read costs time there.)
    let ([early, late], expected) = if miri_size(true, true, false) {
        let s = |intervals, total, p999, max| Summary {
            intervals,
            total,
            p999,
            max,
        };
        (
            [(5.0, 20.0), (40.0, 60.0)],
            [
                s(15, 11_664, 1_536_163_839, 1_544_552_447),
                s(20, 15_830, 1_779_433_471, 1_796_210_687),
            ],
        )
    } else {
        // The blobs of the 2nd and 4th intervals, from the file's text.
        let text = String::from_utf8(read_vector(JHICCUP)).unwrap();
        let blobs: Vec<&str> = text
            .lines()
            .filter(|l| !l.starts_with('#') && !l.starts_with('"'))
            .take(4)
            .map(|l| l.rsplit_once(',').unwrap().1)
            .collect();
        (
            [(1.0, 2.0), (3.0, 4.0)],
            [hdr_summary(&blobs[1..2]), hdr_summary(&blobs[3..4])],
        )
    };
    let [early_expected, late_expected] = expected;
    let early_len = early_expected.intervals;
    assert_eq!(summarize(entries(early)), early_expected);
    assert_eq!(summarize(entries(late)), late_expected);

    // The same window in absolute time.
    let start = 1_441_812_279.474;
    let abs: Vec<_> = open_log(JHICCUP)
        .range(start + early.0, start + early.1, RangeMode::Absolute)
        .map(Result::unwrap)
        .collect();
    assert_eq!(abs.len(), early_len);
}

#[test]
fn tagged_log_totals() {
    // In CI's miri run the first 2 lines, an untagged and a tagged one (each line parsed costs
    // time there); the totals below read the first interval of each.
    let (lines, each) = miri_size((42, 21), (42, 21), (2, 1));
    let entries: Vec<_> = open_log(TAGGED).take(lines).map(Result::unwrap).collect();
    assert_eq!(entries.len(), lines);
    let (tagged, untagged): (Vec<_>, Vec<_>) = entries.into_iter().partition(|e| e.tag.is_some());
    assert_eq!((tagged.len(), untagged.len()), (each, each));
    assert!(tagged.iter().all(|e| e.tag.as_deref() == Some("A")));
    for (a, b) in tagged.iter().zip(&untagged) {
        assert_eq!(
            (a.start_timestamp, a.interval_length, a.max_column),
            (b.start_timestamp, b.interval_length, b.max_column)
        );
    }

    // In CI's miri run the first interval of each (see `intervals_read`), against
    // HdrHistogram's (the crate's) decoding of the untagged one.
    let most = intervals_read(1);
    let reference = (most != usize::MAX).then(|| hdr_summary(&payloads(&untagged[..most])));
    let a = summarize(tagged.into_iter().take(most));
    let u = summarize(untagged.into_iter().take(most));
    if let Some(reference) = reference {
        assert_eq!(u, reference);
    } else {
        assert_eq!(a.total, 16_145);
        assert_eq!(u.total, 16_145);
        assert_eq!(a.total + u.total, 32_290);
        assert_eq!((u.p999, u.max), (1_536_163_839, 1_544_552_447));
    }
    assert_eq!((a.total, a.p999, a.max), (u.total, u.p999, u.max));
}

/// Every Java-written interval re-encodes (plain V2) byte-identically to the blob inside its
/// zlib stream. In CI's miri run the first (see `intervals_read`).
#[test]
fn java_interval_blobs_reencode_byte_identically() {
    use base64::Engine as _;
    for e in open_log(JHICCUP).take(intervals_read(1)) {
        let e = e.unwrap();
        let outer = base64::engine::general_purpose::STANDARD
            .decode(&e.payload_base64)
            .unwrap();
        let inner = miniz_oxide::inflate::decompress_to_vec_zlib(&outer[8..]).unwrap();
        let h = HdrCounts::decode(&outer).unwrap();
        assert!(h.encode_v2().unwrap() == inner, "line {}", e.line);
        assert!(HdrCounts::decode(&inner).unwrap().same_content(&h));
    }
}

/// The writer reproduces the text columns of Java's writer (start, length, max with 3
/// decimals, tags) for every line of both logs. In CI's miri run one line of each (see
/// `intervals_read`): the jHiccup log's first, untagged, and the tagged log's second, its
/// first tagged line (its first line is the jHiccup log's first again).
#[test]
fn writer_matches_java_layout() {
    let most = intervals_read(1);
    for (name, skip) in [(JHICCUP, 0), (TAGGED, miri_size(0, 0, 1))] {
        let text = String::from_utf8(read_vector(name)).unwrap();
        let java_lines: Vec<&str> = text
            .lines()
            .filter(|l| !l.starts_with('#') && !l.starts_with('"'))
            .skip(skip)
            .take(most)
            .collect();
        let mut w = LogWriter::new(Vec::new());
        for e in open_log(name).skip(skip).take(most) {
            let e = e.unwrap();
            let h = e.decode().unwrap();
            w.write_interval(
                e.tag.as_deref(),
                e.start_timestamp,
                e.start_timestamp + e.interval_length,
                &h,
            )
            .unwrap();
        }
        let ours = String::from_utf8(w.into_inner()).unwrap();
        let ours: Vec<&str> = ours.lines().collect();
        assert_eq!(ours.len(), java_lines.len());
        for (o, j) in ours.iter().zip(&java_lines) {
            let (o_cols, _) = o.rsplit_once(',').unwrap();
            let (j_cols, _) = j.rsplit_once(',').unwrap();
            assert_eq!(o_cols, j_cols);
        }
    }
}

#[test]
fn writer_reader_round_trip() {
    // In CI's miri run 2 intervals: one untagged and one tagged line, as 10 have.
    let source: Vec<(LogEntry, HdrCounts)> = open_log(JHICCUP)
        .take(miri_size(10, 10, 2))
        .map(|e| {
            let e = e.unwrap();
            let h = e.decode().unwrap();
            (e, h)
        })
        .collect();

    let mut w = LogWriter::new(Vec::new());
    w.write_comment("[Logged with picollo]").unwrap();
    w.write_log_format_version().unwrap();
    w.write_start_time(1_441_812_279_474).unwrap();
    w.write_base_time(1_441_812_279_474).unwrap();
    w.write_legend().unwrap();
    for (i, (e, h)) in source.iter().enumerate() {
        let tag = if i % 2 == 0 { None } else { Some("odd") };
        let start = e.start_timestamp;
        w.write_interval(tag, start, start + e.interval_length, h)
            .unwrap();
    }
    let bytes = w.into_inner();
    let text = String::from_utf8(bytes.clone()).unwrap();
    assert!(text.starts_with(
        "#[Logged with picollo]\n#[Histogram log format version 1.3]\n\
         #[StartTime: 1441812279.474 (seconds since epoch), Wed Sep 09 15:24:39 UTC 2015]\n\
         #[BaseTime: 1441812279.474 (seconds since epoch)]\n\
         \"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"\n"
    ));

    let mut reader = LogReader::new(&bytes[..]);
    let back: Vec<LogEntry> = reader.by_ref().map(Result::unwrap).collect();
    assert_eq!(reader.start_time_sec(), Some(1_441_812_279.474));
    assert_eq!(back.len(), source.len());
    for (i, (b, (e, h))) in back.iter().zip(&source).enumerate() {
        assert_eq!(
            b.tag.as_deref(),
            if i % 2 == 0 { None } else { Some("odd") }
        );
        assert_eq!(b.start_timestamp, e.start_timestamp);
        assert!((b.interval_length - e.interval_length).abs() < 1e-9);
        assert_eq!(b.max_column, e.max_column);
        assert!((b.offset_start_sec - e.offset_start_sec).abs() < 1e-6);
        assert!(b.decode().unwrap().same_content(h));
    }
}

#[test]
fn writer_msec_form_subtracts_base_time() {
    // In CI's miri run the value 5 000, whose counts array ends at entry 3 298 rather than
    // 13 508 (each entry costs time in the encoder and deflate there). By HdrHistogram's 3-digit
    // layout 5 000 000 lies in 4 997 120..=5 001 215 (entries 4096 wide from 2^22): max column
    // 5001.215; 5 000 in 5 000..=5 003 (entries 4 wide from 4096): 5.003.
    let (value, max_column) = miri_size(
        (5_000_000, "5001.215"),
        (5_000_000, "5001.215"),
        (5_000, "5.003"),
    );
    let mut h = HdrCounts::new(1, 1 << 40, 3).unwrap();
    h.record(value, 1).unwrap();
    let mut w = LogWriter::new(Vec::new());
    w.set_base_time_msec(1_000_000);
    w.set_max_value_unit_ratio(1000.0);
    w.write_interval_msec(None, 1_002_500, 1_003_500, &h)
        .unwrap();
    let line = String::from_utf8(w.into_inner()).unwrap();
    let start = format!("2.500,1.000,{max_column},HISTF");
    assert!(line.starts_with(&start), "{line}");
    assert!(w_rejects_bad_tags());
}

fn w_rejects_bad_tags() -> bool {
    let h = HdrCounts::new(1, 1 << 40, 3).unwrap();
    let mut w = LogWriter::new(Vec::new());
    ["", "a b", "a,b", "a\nb"]
        .iter()
        .all(|t| w.write_interval(Some(t), 0.0, 1.0, &h).is_err())
        && w.write_comment("two\nlines").is_err()
        && w.get_ref().is_empty()
}

/// Where [`bad_input_gets_errors_not_panics`] cuts a blob of `len` bytes: everywhere; under
/// miri (where each decode of a prefix reads all of it) every 61st byte and the last 32; in
/// CI's miri run at 8 evenly spaced points from 0 and the last 4 bytes (the empty input, cuts
/// in the payload or the deflate stream, and one byte short of complete).
fn cuts(len: usize) -> impl Iterator<Item = usize> {
    let (step, tail) = miri_size((1, 0), (61, 32), (len.div_ceil(8), 4));
    (0..len).filter(move |&cut| cut % step == 0 || cut + tail >= len)
}

#[test]
fn bad_input_gets_errors_not_panics() {
    let hist = read_vector("seq-nums.hist");
    let histz = read_vector("seq-nums.histz");
    for cut in cuts(hist.len()) {
        assert!(decode_any(&hist[..cut]).is_err());
    }
    for cut in cuts(histz.len()) {
        assert!(decode_any(&histz[..cut]).is_err());
    }
    // A header claiming the largest geometry with a tiny limit is refused before allocating.
    let tight = DecodeLimits::default().with_max_counts_len(1 << 10);
    let err = decode_any_with_limits(&hist, &tight).unwrap_err();
    assert!(err.to_string().contains("decode limit"), "{err}");
    // Nonsense.
    for junk in [
        &b"HISTFAAAAEV42pNpmSzMwMCgyAAB"[..],
        &[0u8; 64][..],
        &[0xffu8; 64][..],
    ] {
        let err = decode_any(junk).unwrap_err();
        assert!(!err.to_string().is_empty());
    }
    // A log with broken lines yields errors and keeps going.
    let log = "#[StartTime: 10.0]\n1.0,1.0\nTag=x,1.0,1.0,0.0,@@@@\n2.0,1.0,0.0,AAAA\n";
    let results: Vec<_> = LogReader::new(log.as_bytes()).collect();
    assert_eq!(results.len(), 3);
    assert!(results[0].is_err());
    assert!(results[1].as_ref().unwrap().decode().is_err());
    assert_eq!(results[2].as_ref().unwrap().offset_start_sec, 2.0 - 10.0);
}

fn small_limits() -> DecodeLimits {
    DecodeLimits::default()
        .with_max_counts_len(1 << 16)
        .with_max_payload_len(1 << 20)
}

/// Random geometry plus sparse counts inside its counts array (at most 2^16 entries long; in
/// CI's miri run 2^10, which still spans several buckets of every geometry drawn, and where
/// each entry of the array costs time in the encoder, decoder and deflate).
fn arb_counts() -> impl Strategy<Value = HdrCounts> {
    (0u8..=5, 0u32..40, 1u64..1_000, any::<bool>()).prop_flat_map(|(d, unit, lo_extra, wide)| {
        let lowest = (1u64 << unit) + (lo_extra % (1u64 << unit));
        let highest = if wide {
            i64::MAX as u64
        } else {
            lowest.saturating_mul(1 << 12)
        };
        let geometry = HdrGeometry::new(lowest, highest, d)
            .or_else(|_| HdrGeometry::new(lowest, highest, 0))
            .or_else(|_| HdrGeometry::new(1, highest.max(2), d))
            .unwrap();
        // In CI's miri run at most 16 non-zero entries (each drawn value costs time there).
        let (most, most_entries) = miri_size((1 << 16, 64), (1 << 16, 64), (1 << 10, 16));
        let len = geometry.counts_len().min(most);
        let entries = proptest::collection::vec(
            (
                0..len,
                prop_oneof![Just(1u64), 0u64..1000, 0..=i64::MAX as u64],
            ),
            0..most_entries,
        );
        (
            Just(geometry),
            entries,
            any::<i32>(),
            prop_oneof![Just(1.0f64), any::<f64>()],
        )
            .prop_map(|(g, entries, offset, ratio)| {
                let mut h = HdrCounts::new(
                    g.lowest_discernible(),
                    g.highest_trackable(),
                    g.significant_digits(),
                )
                .unwrap();
                h.normalizing_offset = offset;
                h.int_to_double_ratio = ratio;
                for (i, c) in entries {
                    if h.counts.len() <= i {
                        h.counts.resize(i + 1, 0);
                    }
                    h.counts[i] = c;
                }
                h
            })
    })
}

proptest! {
    // In CI's miri run 2 cases (each case of the codec properties costs a second there).
    #![proptest_config(config(miri_size(256, 8, 2)))]

    #[test]
    fn encode_decode_round_trip(h in arb_counts()) {
        let plain = h.encode_v2().unwrap();
        let back = HdrCounts::decode(&plain).unwrap();
        prop_assert!(back.same_content(&h));
        prop_assert_eq!(back.encode_v2().unwrap(), plain);
        prop_assert_eq!(back.total_count(), h.total_count());
        prop_assert_eq!(back.max(), h.max());
        let z = h.encode_v2_deflate(BEST_COMPRESSION).unwrap();
        let back = HdrCounts::decode(&z).unwrap();
        prop_assert!(back.same_content(&h));
    }

    #[test]
    fn decoder_never_panics_on_arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
        let _ = decode_any_with_limits(&bytes, &small_limits());
        let _ = decode_any(&bytes);
    }

    #[test]
    fn decoder_never_panics_on_arbitrary_v2_headers(
        cookie in prop_oneof![Just(0x1C84_9313u32), Just(0x1C84_9314u32)],
        rest in proptest::collection::vec(any::<u8>(), 0..128),
    ) {
        let mut bytes = cookie.to_be_bytes().to_vec();
        bytes.extend_from_slice(&rest);
        let _ = decode_any_with_limits(&bytes, &small_limits());
    }

    #[test]
    fn decoder_never_panics_on_mutated_blobs(
        h in arb_counts(),
        compressed in any::<bool>(),
        edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0u8..4), 1..8),
    ) {
        let mut bytes = if compressed {
            h.encode_v2_deflate(BEST_COMPRESSION).unwrap()
        } else {
            h.encode_v2().unwrap()
        };
        for (at, byte, op) in edits {
            if bytes.is_empty() {
                break;
            }
            let i = at.index(bytes.len());
            match op {
                0 => bytes[i] = byte,
                1 => bytes[i] ^= 1 << (byte % 8),
                2 => bytes.truncate(i),
                _ => bytes.insert(i, byte),
            }
        }
        if let Ok(d) = decode_any_with_limits(&bytes, &small_limits()) {
            // Whatever decodes is internally consistent.
            let g = d.geometry().unwrap();
            prop_assert!(d.counts.len() <= g.counts_len());
        }
    }

    #[test]
    fn log_reader_never_panics_and_terminates(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let mut n = 0usize;
        for r in LogReader::new(&bytes[..]).with_max_line_len(64) {
            if let Ok(e) = r {
                let _ = e.decode_with_limits(&small_limits());
            }
            n += 1;
            prop_assert!(n <= bytes.len() + 1);
        }
    }
}

proptest! {
    // In CI's miri run 1 case (each writes, deflates, reads and inflates a histogram, 2 s
    // there): the writer's and reader's columns, at a random tag and times.
    #![proptest_config(config(miri_size(256, 8, 1)))]

    #[test]
    fn log_lines_round_trip(
        tag in proptest::option::of("[A-Za-z0-9_.:=-]{1,12}"),
        start in 0u32..10_000_000,
        len in 0u32..100_000,
    ) {
        let mut h = HdrCounts::new(1, 1 << 40, 2).unwrap();
        h.record(u64::from(start) * 1000, 3).unwrap();
        let mut w = LogWriter::new(Vec::new());
        let start_sec = f64::from(start) / 1000.0;
        let end_sec = start_sec + f64::from(len) / 1000.0;
        w.write_interval(tag.as_deref(), start_sec, end_sec, &h).unwrap();
        let bytes = w.into_inner();
        let e = LogReader::new(&bytes[..]).next().unwrap().unwrap();
        prop_assert_eq!(&e.tag, &tag);
        prop_assert_eq!(e.start_timestamp, start_sec);
        prop_assert!((e.interval_length - f64::from(len) / 1000.0).abs() < 1e-9);
        prop_assert!(e.decode().unwrap().same_content(&h));
    }
}

/// The fields of a V2 header, and the one-byte payload that follows it in [`HeaderCase::bytes`]
/// (the word `2`: one count at counts index 0).
#[derive(Debug, Clone, Copy)]
struct HeaderCase {
    cookie: u32,
    payload_len: i32,
    normalizing_offset: i32,
    significant_digits: i32,
    lowest: i64,
    highest: i64,
    ratio_bits: u64,
}

impl HeaderCase {
    /// A valid header: `new Histogram(1, 3_600_000_000, 3)`, payload length 1.
    fn valid() -> Self {
        Self {
            cookie: V2_COOKIE,
            payload_len: 1,
            normalizing_offset: 0,
            significant_digits: 3,
            lowest: 1,
            highest: 3_600_000_000,
            ratio_bits: 1.0f64.to_bits(),
        }
    }

    fn bytes(&self) -> Vec<u8> {
        let mut bytes = Vec::with_capacity(V2_HEADER_LEN + 1);
        bytes.extend_from_slice(&self.cookie.to_be_bytes());
        bytes.extend_from_slice(&self.payload_len.to_be_bytes());
        bytes.extend_from_slice(&self.normalizing_offset.to_be_bytes());
        bytes.extend_from_slice(&self.significant_digits.to_be_bytes());
        bytes.extend_from_slice(&self.lowest.to_be_bytes());
        bytes.extend_from_slice(&self.highest.to_be_bytes());
        bytes.extend_from_slice(&self.ratio_bits.to_be_bytes());
        bytes.push(2);
        bytes
    }
}

/// Messages of [`HdrError::InvalidGeometry`], one per rule of HdrHistogram's constructor.
const BAD_DIGITS: &str = "significant digits must be between 0 and 5";
const LOWEST_BELOW_1: &str = "lowest discernible value must be >= 1";
const LOWEST_ABOVE_HALF: &str = "lowest discernible value must be <= i64::MAX / 2";
const HIGHEST_BELOW_2_LOWEST: &str =
    "highest trackable value must be >= 2 * lowest discernible value";
const MAGNITUDE_ABOVE_62: &str = "significant digits cannot be represented beyond the lowest discernible value (log2(sub_bucket_count) + unit_magnitude > 62)";

/// The geometry rules of HdrHistogram's `AbstractHistogram` constructor, written here from its
/// source and apart from the decoder: the counts-array length of a valid geometry, or every
/// rule the fields break (the decoder names one of them, which one depends on its order).
fn hdr_geometry_rules(d: i32, lowest: i64, highest: i64) -> Result<usize, Vec<&'static str>> {
    let mut broken = Vec::new();
    if !(0..=5).contains(&d) {
        broken.push(BAD_DIGITS);
    }
    if lowest < 1 {
        broken.push(LOWEST_BELOW_1);
    }
    if lowest > i64::MAX / 2 {
        broken.push(LOWEST_ABOVE_HALF);
    }
    if i128::from(highest) < 2 * i128::from(lowest) {
        broken.push(HIGHEST_BELOW_2_LOWEST);
    }
    if !broken.is_empty() {
        return Err(broken);
    }
    // largestValueWithSingleUnitResolution = 2 * 10^d; its magnitude is ceil(log2(...)).
    let largest_single_unit = 2 * 10u64.pow(d as u32);
    let sub_bucket_count_magnitude = (0..64).find(|&m| 1u64 << m >= largest_single_unit).unwrap();
    let unit_magnitude = (0..63).rev().find(|&m| 1i64 << m <= lowest).unwrap();
    if sub_bucket_count_magnitude + unit_magnitude > 62 {
        return Err(vec![MAGNITUDE_ABOVE_62]);
    }
    let sub_bucket_half_count_magnitude = sub_bucket_count_magnitude.max(1) - 1;
    let sub_bucket_count = 1u128 << (sub_bucket_half_count_magnitude + 1);
    // getBucketsNeededToCoverValue, then getLengthForNumberOfBuckets.
    let mut smallest_untrackable = sub_bucket_count << unit_magnitude;
    let mut buckets = 1u128;
    while smallest_untrackable <= highest as u128 {
        if smallest_untrackable > (i64::MAX / 2) as u128 {
            buckets += 1;
            break;
        }
        smallest_untrackable <<= 1;
        buckets += 1;
    }
    Ok(((buckets + 1) * (sub_bucket_count / 2)) as usize)
}

/// What decoding [`HeaderCase::bytes`] under [`small_limits`] must give, field by field.
fn check_header_case(case: &HeaderCase) -> Result<(), TestCaseError> {
    let limits = small_limits();
    let got = decode_any_with_limits(&case.bytes(), &limits);
    // The cookie: the word-size nibble (bits 4 to 7) is ignored; V0/V1 cookies are known but
    // refused; anything else is not HdrHistogram. (A deflate cookie is another decoder.)
    match case.cookie & !0xf0 {
        0x1C84_9303 => {}
        0x1C84_9304 => {
            prop_assert!(got.is_err(), "a V2 header read as deflate: {got:?}");
            return Ok(());
        }
        0x1C84_9301 | 0x1C84_9302 | 0x1C84_9308 | 0x1C84_9309 => {
            prop_assert_eq!(got, Err(HdrError::UnsupportedEncoding(case.cookie)));
            return Ok(());
        }
        _ => {
            prop_assert_eq!(got, Err(HdrError::UnknownCookie(case.cookie)));
            return Ok(());
        }
    }
    // The geometry fields.
    let counts_len = match hdr_geometry_rules(case.significant_digits, case.lowest, case.highest) {
        Ok(len) => len,
        Err(broken) => {
            let Err(HdrError::InvalidGeometry(why)) = got else {
                return Err(TestCaseError::fail(format!(
                    "{case:?} breaks {broken:?}, decoded to {got:?}"
                )));
            };
            prop_assert!(broken.contains(&why), "{case:?}: {why} not in {broken:?}");
            return Ok(());
        }
    };
    if counts_len > limits.max_counts_len {
        prop_assert_eq!(
            got,
            Err(HdrError::CountsTooLong {
                len: counts_len,
                limit: limits.max_counts_len
            })
        );
        return Ok(());
    }
    // The payload length, against the geometry (9 bytes a word), the limit and the input.
    let max_payload = (counts_len * MAX_ZIGZAG_LEN).min(limits.max_payload_len);
    let declared = case.payload_len;
    if declared < 0 || declared as usize > max_payload {
        prop_assert_eq!(
            got,
            Err(HdrError::BadPayloadLength {
                declared: i64::from(declared),
                max: max_payload
            })
        );
    } else if declared > 1 {
        prop_assert_eq!(
            got,
            Err(HdrError::Truncated {
                what: "payload",
                needed: declared as usize,
                available: 1
            })
        );
    } else if declared == 0 {
        prop_assert_eq!(got, Err(HdrError::TrailingBytes(1)));
    } else {
        // Valid: every field carried over as written, one count at index 0.
        let h = got.map_err(|e| TestCaseError::fail(format!("{case:?}: {e}")))?;
        prop_assert_eq!(h.significant_digits as i32, case.significant_digits);
        prop_assert_eq!(h.lowest_discernible as i64, case.lowest);
        prop_assert_eq!(h.highest_trackable as i64, case.highest);
        prop_assert_eq!(h.normalizing_offset, case.normalizing_offset);
        prop_assert_eq!(h.int_to_double_ratio.to_bits(), case.ratio_bits);
        prop_assert_eq!(&h.counts, &vec![1]);
        prop_assert_eq!(h.geometry().unwrap().counts_len(), counts_len);
        // And it encodes back to the same bytes, with the cookie's nibble normalised.
        let mut again = case.bytes();
        again[..4].copy_from_slice(&V2_COOKIE.to_be_bytes());
        prop_assert_eq!(h.encode_v2().unwrap(), again);
    }
    Ok(())
}

/// One mutation of a valid header per field and rule, with the outcome HdrHistogram's rules
/// give (the property test below mixes them at random).
#[test]
fn header_fields_by_rule() {
    let ok = HeaderCase::valid();
    let with = |f: &dyn Fn(&mut HeaderCase)| {
        let mut c = ok;
        f(&mut c);
        decode_any_with_limits(&c.bytes(), &small_limits())
    };
    let geometry = |why| Err(HdrError::InvalidGeometry(why));

    // Valid, as written (the counts-array length HdrHistogram gives this geometry is 23 552).
    let h = with(&|_| {}).unwrap();
    assert_eq!(h.geometry().unwrap().counts_len(), 23_552);
    assert_eq!((h.total_count(), h.max()), (1, 0));
    let h = with(&|c| {
        c.cookie = 0x1C84_9323; // another word size: same encoding
        c.normalizing_offset = -7;
        c.ratio_bits = 2.5f64.to_bits();
    })
    .unwrap();
    assert_eq!((h.normalizing_offset, h.int_to_double_ratio), (-7, 2.5));

    // The cookie.
    assert_eq!(
        with(&|c| c.cookie = 0x1C84_9301),
        Err(HdrError::UnsupportedEncoding(0x1C84_9301))
    );
    assert_eq!(
        with(&|c| c.cookie = 0x1C84_9308),
        Err(HdrError::UnsupportedEncoding(0x1C84_9308))
    );
    assert_eq!(
        with(&|c| c.cookie = 0xDEAD_BEEF),
        Err(HdrError::UnknownCookie(0xDEAD_BEEF))
    );
    assert!(with(&|c| c.cookie = V2_DEFLATE_COOKIE).is_err());

    // Significant digits: 0 to 5.
    for d in [-1, 6, 256, i32::MIN, i32::MAX] {
        assert_eq!(
            with(&|c| c.significant_digits = d),
            geometry(BAD_DIGITS),
            "d = {d}"
        );
    }
    for d in 0..=3 {
        assert!(with(&|c| c.significant_digits = d).is_ok(), "d = {d}");
    }
    // Lowest discernible value: 1 to i64::MAX / 2.
    for lowest in [0, -1, i64::MIN] {
        assert_eq!(with(&|c| c.lowest = lowest), geometry(LOWEST_BELOW_1));
    }
    assert_eq!(
        with(&|c| {
            c.lowest = i64::MAX / 2 + 1;
            c.highest = i64::MAX;
        }),
        geometry(LOWEST_ABOVE_HALF)
    );
    // Highest trackable value: at least twice the lowest.
    for highest in [-1, 0, 1, i64::MIN] {
        assert_eq!(
            with(&|c| c.highest = highest),
            geometry(HIGHEST_BELOW_2_LOWEST)
        );
    }
    assert_eq!(
        with(&|c| {
            c.lowest = 1000;
            c.highest = 1999;
        }),
        geometry(HIGHEST_BELOW_2_LOWEST)
    );
    assert!(with(&|c| {
        c.lowest = 1000;
        c.highest = 2000;
    })
    .is_ok());
    // Digits and the unit magnitude together: log2(sub_bucket_count) + unit_magnitude <= 62
    // (d = 2: 256 sub-buckets, magnitude 8).
    let big_unit = |unit: u32| {
        with(&|c| {
            c.significant_digits = 2;
            c.lowest = 1 << unit;
            c.highest = i64::MAX;
        })
    };
    assert!(big_unit(54).is_ok());
    assert_eq!(big_unit(55), geometry(MAGNITUDE_ABOVE_62));
    // The counts-array length the geometry implies, against the limit.
    assert_eq!(
        with(&|c| {
            c.significant_digits = 5;
            c.highest = i64::MAX;
        }),
        Err(HdrError::CountsTooLong {
            len: 6_160_384,
            limit: 1 << 16
        })
    );
    // The payload length: 0 to 9 bytes per counts entry, and exactly what follows the header.
    for declared in [-1, i32::MIN, 23_552 * 9 + 1, i32::MAX] {
        assert_eq!(
            with(&|c| c.payload_len = declared),
            Err(HdrError::BadPayloadLength {
                declared: i64::from(declared),
                max: 23_552 * 9
            })
        );
    }
    assert_eq!(
        with(&|c| c.payload_len = 2),
        Err(HdrError::Truncated {
            what: "payload",
            needed: 2,
            available: 1
        })
    );
    assert_eq!(
        with(&|c| c.payload_len = 0),
        Err(HdrError::TrailingBytes(1))
    );
}

/// A cookie: mostly V2 (any word-size nibble), sometimes V0/V1, V2+deflate or anything.
fn arb_cookie() -> impl Strategy<Value = u32> {
    prop_oneof![
        6 => (0u32..16).prop_map(|n| 0x1C84_9303 | n << 4),
        1 => prop::sample::select(vec![
            0x1C84_9301u32, 0x1C84_9302, 0x1C84_9308, 0x1C84_9309, V2_DEFLATE_COOKIE,
        ]),
        1 => any::<u32>(),
    ]
}

/// Header fields near every boundary of the rules, and sometimes anything.
fn arb_header_case() -> impl Strategy<Value = HeaderCase> {
    let digits = prop_oneof![4 => 0i32..=5, 1 => -2i32..=8, 1 => any::<i32>()];
    let lowest = prop_oneof![
        3 => 1i64..=4096,
        3 => (0u32..63, -1i64..=1).prop_map(|(k, e)| (1i64 << k).saturating_add(e)),
        1 => prop::sample::select(vec![i64::MAX / 2, i64::MAX / 2 + 1, i64::MAX, 0, -1]),
        1 => any::<i64>(),
    ];
    let lowest_and_highest = lowest.prop_flat_map(|lo| {
        let twice = lo.saturating_mul(2);
        (
            Just(lo),
            prop_oneof![
                2 => Just(twice),
                2 => Just(twice.saturating_sub(1)),
                3 => (2i64..1 << 24).prop_map(move |m| lo.saturating_mul(m)),
                2 => Just(i64::MAX),
                1 => any::<i64>(),
            ],
        )
    });
    let payload_len = prop_oneof![6 => Just(1i32), 2 => -1i32..=3, 1 => any::<i32>()];
    (
        arb_cookie(),
        payload_len,
        any::<i32>(),
        digits,
        lowest_and_highest,
        any::<u64>(),
    )
        .prop_map(
            |(
                cookie,
                payload_len,
                normalizing_offset,
                significant_digits,
                (lowest, highest),
                ratio_bits,
            )| {
                HeaderCase {
                    cookie,
                    payload_len,
                    normalizing_offset,
                    significant_digits,
                    lowest,
                    highest,
                    ratio_bits,
                }
            },
        )
}

proptest! {
    // In CI's miri run 4 cases (the by-rule test above checks each rule once).
    #![proptest_config(config(miri_size(2048, 16, 4)))]

    /// Each header field, mutated at random around the rules' boundaries, decodes to the error
    /// HdrHistogram's rules give for it, or (when every field is valid) to the histogram the
    /// header describes.
    #[test]
    fn header_fields_are_validated(case in arb_header_case()) {
        check_header_case(&case)?;
    }
}
