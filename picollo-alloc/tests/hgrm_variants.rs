//! `.hgrm` files as HdrHistogram Java, .NET and the Rust tools write them, read by Picollo:
//! the golden Java files in `tests/data/hgrm/` (written by HdrHistogram Java 2.1.11's
//! `HistogramLogProcessor` from the shared vectors; provenance in `tests/data/hgrm/README.md`),
//! checked row by row against Picollo's own reading of the same `.hlog`, and the variants of
//! the other writers (CRLF, a byte-order mark, the crate's `cli quantiles` columns).

mod common;

use common::{open_log, JHICCUP, TAGGED};
use picollo_alloc::hdr::HdrCounts;
use picollo_alloc::hgrm::{looks_like_hgrm, parse_hgrm, HgrmFile};
use picollo_testkit::miri_size as size;
use std::path::PathBuf;

fn golden(name: &str) -> String {
    let path = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/hgrm")).join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// Golden file `name`; in CI's miri run with every tenth percentile row and the last, the
/// header and footer kept (parsing a file of 70 rows takes 4 s there, and every row checked
/// walks the rebuilt counts); every row natively and in `.ci/miri-full`. The rows kept are
/// still the file's own, in order, and the last still matches the footer.
fn golden_rows(name: &str) -> String {
    let text = golden(name);
    let every = size(1, 1, 10);
    let is_row = |line: &str| line.trim_start().starts_with(|c: char| c.is_ascii_digit());
    let rows = text.lines().filter(|line| is_row(line)).count();
    let mut row = 0;
    let mut kept = String::new();
    for line in text.split_inclusive('\n') {
        if is_row(line) {
            row += 1;
            if (row - 1) % every != 0 && row != rows {
                continue;
            }
        }
        kept.push_str(line);
    }
    kept
}

/// The log's intervals with `tag`, between `start` and `end` seconds (relative), added up as
/// HdrHistogram Java's `HistogramLogProcessor` does: into a copy of the first interval.
fn accumulate(log: &str, tag: Option<&str>, start: f64, end: f64) -> HdrCounts {
    let mut sum: Option<HdrCounts> = None;
    for e in open_log(log) {
        let e = e.unwrap();
        // In CI's miri run the reading stops past `end` (the intervals are in order, and reading
        // a line takes 50 ms there); natively and in .ci/miri-full every line is read.
        if size(false, false, true) && e.start_timestamp > end {
            break;
        }
        if e.tag.as_deref() != tag || e.start_timestamp < start || e.start_timestamp > end {
            continue;
        }
        let h = e.decode().unwrap();
        match &mut sum {
            None => sum = Some(h),
            Some(s) => s.add(&h).unwrap(),
        }
    }
    sum.expect("no interval selected")
}

/// Every step of a file printed with ratio 1 against the histogram it was printed from: the
/// value is the top of a recorded bucket, the count is the running count at that bucket, and
/// the bucket is the first whose running count reaches the step's percentile.
fn check_rows(file: &HgrmFile, h: &HdrCounts) -> usize {
    assert_eq!(file.decimals, 0, "raw values expected");
    let total = h.total_count();
    assert_eq!(file.total_count(), total);
    if let Some(t) = file.total {
        assert_eq!(t, total);
    }
    let mut running = 0u64;
    let tops: Vec<(u64, u64)> = h
        .iter_recorded()
        .map(|b| {
            running += b.count;
            (b.highest, running)
        })
        .collect();
    for (i, s) in file.steps.iter().enumerate() {
        let at = tops
            .iter()
            .position(|&(top, _)| top == s.scaled)
            .unwrap_or_else(|| panic!("step {i}: {} is no recorded bucket's top", s.scaled));
        assert_eq!(tops[at].1, s.total_count, "step {i}: running count");
        // Java prints the level with 12 decimals.
        let level = |c: u64| c as f64 / total as f64;
        assert!(
            level(tops[at].1) >= s.percentile - 1e-12,
            "step {i}: level not reached"
        );
        if at > 0 && s.percentile < 1.0 {
            assert!(
                level(tops[at - 1].1) < s.percentile + 1e-12,
                "step {i}: not the first"
            );
        }
    }
    assert_eq!(file.steps.last().unwrap().scaled, h.max());
    if let Some(max) = file.max {
        assert_eq!(max, h.max() as f64);
    }
    file.steps.len()
}

#[test]
fn java_log_processor_files_are_read() {
    for name in [
        "java-jhiccup-raw.hgrm",
        "java-jhiccup-ms.hgrm",
        "java-jhiccup-5-20-csv.hgrm",
        "java-tagged-A-us.hgrm",
    ] {
        // In CI's miri run every tenth row and the last (see `golden_rows`).
        let text = golden_rows(name);
        assert!(
            text.starts_with("#[Overall percentile distribution"),
            "{name}"
        );
        assert!(looks_like_hgrm(&text), "{name}");
        let f = parse_hgrm(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(f.steps.len() > size(40, 40, 5), "{name}");
        let c = f.to_counts().unwrap();
        assert_eq!(c.total_count(), f.total_count(), "{name}");
        // Rebuilt from the steps: never below a step at its level (p0 is the lowest value). In
        // CI's miri run every sixth of the rows kept (each check walks the rebuilt counts, 22,000
        // entries for the 3-digit CSV file: 4.6 s there).
        for s in f
            .steps
            .iter()
            .filter(|s| s.percentile > 0.0)
            .step_by(size(1, 1, 6))
        {
            assert_eq!(
                c.value_at_percentile(s.percentile * 100.0)
                    .map(|v| v >= s.scaled),
                Some(true),
                "{name}: at {}",
                s.percentile
            );
        }
    }
    let ms = parse_hgrm(&golden_rows("java-jhiccup-ms.hgrm")).unwrap();
    // Java prints as many decimals as the histogram has significant digits.
    assert_eq!(
        (ms.decimals, ms.total, ms.sub_buckets),
        (2, Some(48_761), Some(256))
    );
    assert_eq!(ms.significant_digits(), 2);
    assert_eq!(ms.max, Some(1803.55));
    assert_eq!(ms.steps.last().unwrap().scaled, 180_355);
}

#[test]
fn java_rows_match_picollo_reading_the_same_log() {
    // In CI's miri run only the CSV file, whose 15 intervals are the fewest any of Java's
    // files was printed from (each interval's decode takes about a second there); the files
    // of the whole logs (62 and 21 intervals) natively and in .ci/miri-full.
    let whole_logs = size(true, true, false);
    let mut rows = 0;
    if whole_logs {
        let whole = accumulate(JHICCUP, None, 0.0, f64::INFINITY);
        assert_eq!(whole.total_count(), 48_761);
        let raw = parse_hgrm(&golden("java-jhiccup-raw.hgrm")).unwrap();
        rows += check_rows(&raw, &whole);
    }
    // The CSV file: -start 5 -end 20 (Java keeps intervals that start within the range).
    let csv = parse_hgrm(&golden("java-jhiccup-5-20-csv.hgrm")).unwrap();
    assert_eq!(csv.total, None, "the CSV form has no footer");
    let rows = rows + check_rows(&csv, &accumulate(JHICCUP, None, 5.0, 20.0));
    assert_eq!(rows, if whole_logs { 69 + 55 } else { 55 });
    if whole_logs {
        // Tag A, printed in thousands with 2 decimals (Java rounds half up): every step is a
        // recorded bucket's top within half a printed unit, with its running count.
        let tagged = parse_hgrm(&golden("java-tagged-A-us.hgrm")).unwrap();
        let a = accumulate(TAGGED, Some("A"), 0.0, f64::INFINITY);
        assert_eq!(tagged.total, Some(a.total_count()));
        assert_eq!(a.total_count(), 16_145);
        for s in &tagged.steps {
            let mut running = 0;
            let top = a
                .iter_recorded()
                .find(|b| {
                    running += b.count;
                    running == s.total_count
                })
                .unwrap();
            let printed = top.highest as f64 / 1000.0;
            assert!(
                (printed - s.value).abs() <= 0.005 + 1e-9,
                "{s:?}: {printed}"
            );
        }
    }
}

#[test]
fn dotnet_crlf_and_byte_order_mark() {
    // HdrHistogram.NET writes the Java layout; on Windows with CRLF ends, often behind a BOM.
    // In CI's miri run every tenth row and the last (see `golden_rows`).
    let text = golden_rows("java-jhiccup-raw.hgrm");
    let windows = format!("\u{feff}{}", text.replace('\n', "\r\n"));
    assert!(looks_like_hgrm(&windows));
    assert_eq!(parse_hgrm(&windows).unwrap(), parse_hgrm(&text).unwrap());
    // An overflow comment (`# Histogram counts indicate OVERFLOW values`), blank lines and a
    // `----` rule after the footer (wrk2) change nothing.
    let noisy = text
        .replacen(
            "\n\n",
            "\n\n\n# Histogram counts indicate OVERFLOW values\n\n",
            1,
        )
        .replace("#[Mean", "\n#[Mean")
        + "----------------------------------------------------------\n";
    assert_eq!(parse_hgrm(&noisy).unwrap(), parse_hgrm(&text).unwrap());
}

/// The layout of the `hdrhistogram` crate's `cli quantiles` example: five columns (value, the
/// value's quantile, the quantile iterated to, count, `1/(1-q)`), `∞` on the last row, and its
/// counts length as `SubBuckets`.
#[test]
fn rust_crate_cli_quantiles() {
    // In CI's miri run values to 2^8 tracked to 2^12, not to 2^20 tracked to 2^40 (the
    // crate's reads walk its counts up to the value read: 5 s for `count_between` over 16,000
    // entries there, 23 s for the mean and deviation): the same 3 digits, 2,048 sub-buckets.
    let (highest, shift) = size((1 << 40, 44), (1 << 40, 44), (1 << 12, 56));
    let mut h = hdrhistogram::Histogram::<u64>::new_with_bounds(1, highest, 3).unwrap();
    let mut state = 7u64;
    // Under miri 1,000 values, not 10,000; in CI's miri run 200.
    let n = size(10_000, 1000, 200);
    for _ in 0..n {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        h.record(1 + (state >> shift)).unwrap();
    }
    let mut text = format!(
        "{:>12} {:>14} {:>14} {:>10} {:>14}\n\n",
        "Value", "QuantileValue", "QuantileIteration", "TotalCount", "1/(1-Quantile)"
    );
    let mut sum = 0;
    for v in h.iter_quantiles(5) {
        sum += v.count_since_last_iteration();
        let q = v.quantile_iterated_to();
        let inverse = if q < 1.0 {
            format!("{:14.2}", 1.0 / (1.0 - q))
        } else {
            format!("{:>14}", "∞")
        };
        text += &format!(
            "{:12} {:1.12} {:1.12} {:10} {inverse}\n",
            v.value_iterated_to(),
            v.quantile(),
            q,
            sum
        );
    }
    text += &format!(
        "#[{:10} = {:12.2}, {:14} = {:12.2}]\n",
        "Mean",
        h.mean(),
        "StdDeviation",
        h.stdev()
    );
    text += &format!(
        "#[{:10} = {:12}, {:14} = {:12}]\n",
        "Max",
        h.max(),
        "Total count",
        h.len()
    );
    text += &format!(
        "#[{:10} = {:12}, {:14} = {:12}]\n",
        "Buckets",
        h.buckets(),
        "SubBuckets",
        h.distinct_values()
    );
    assert!(looks_like_hgrm(&text));
    let f = parse_hgrm(&text).unwrap();
    assert_eq!(f.total, Some(n));
    // The counts length, read back as the sub-bucket count: 3 digits.
    assert_eq!(f.sub_buckets, Some(2048));
    assert_eq!(f.significant_digits(), 3);
    assert_eq!(f.steps.last().unwrap().scaled, h.max());
    let rebuilt = f.to_counts().unwrap();
    // In CI's miri run every sixth step (each check walks both histograms' counts there).
    for s in f.steps.iter().step_by(size(1, 1, 6)) {
        assert_eq!(h.count_between(0, s.scaled), s.total_count);
        let q = s.percentile;
        assert_eq!(
            rebuilt
                .value_at_percentile(q * 100.0)
                .map(|v| v <= s.scaled),
            Some(true)
        );
    }
}

#[test]
fn hlog_text_is_not_hgrm() {
    let text = String::from_utf8(common::read_vector(JHICCUP)).unwrap();
    assert!(!looks_like_hgrm(&text));
    let e = parse_hgrm(&text).unwrap_err().to_string();
    assert!(e.contains("not an .hgrm"), "{e}");
}
