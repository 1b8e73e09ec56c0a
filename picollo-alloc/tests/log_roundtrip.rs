//! A log is the run: a histogram kept in the buckets of an HdrHistogram geometry, written to
//! an interval log and read back the way `picollo report` reads logs (decoded, added into an
//! HdrHistogram of at least 3 significant digits, converted exactly to a Picollo histogram),
//! gives the same percentiles at every rank (value, bucket, count), the same min, max, total,
//! mean, standard deviation and precision, and the same printed tables in every unit.

use picollo_alloc::hdr::interop::{export, layout_for, to_picollo, window_for, ExportOptions};
use picollo_alloc::hdr::{HdrCounts, HdrGeometry, LogReader, LogWriter};
use picollo_alloc::prelude::*;
use picollo_alloc::{HistogramBuilder, Scaled};
use picollo_testkit::miri_size as size;
use proptest::prelude::*;

/// Writes `h` as one tagged interval of a log, reads it back as `report` does.
fn through_a_log(h: &HeapHistogram<u64>, digits: u8) -> HeapHistogram<u64> {
    let counts = export(h, &ExportOptions::new().significant_digits(digits))
        .expect("export")
        .counts;
    let mut w = LogWriter::new(Vec::new());
    w.write_log_format_version().unwrap();
    w.write_start_time(1_700_000_000_000).unwrap();
    w.write_legend().unwrap();
    w.write_interval(Some("run"), 0.0, 1.0, &counts).unwrap();
    let bytes = w.into_inner();
    let entries: Vec<_> = LogReader::new(bytes.as_slice())
        .collect::<Result<_, _>>()
        .expect("the log parses");
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0].tag.as_deref(), Some("run"));
    let decoded = entries[0].decode().expect("the interval decodes");
    let mut sum = HdrCounts::new(1, i64::MAX as u64, decoded.significant_digits.max(3)).unwrap();
    sum.add(&decoded).unwrap();
    to_picollo(&sum).expect("exact conversion")
}

/// The most significant digits a run has. Under miri 3: a full-range 4-digit histogram has
/// 835,000 cells (each pass over them takes minutes there), a 3-digit one 55,000.
fn max_digits() -> u8 {
    size(4, 3, 3)
}

/// Powers of ten a unit divides nanoseconds by: ns, µs, ms, s (and the ones between).
fn divisor() -> impl Strategy<Value = u64> {
    (0u32..=9).prop_map(|k| 10u64.pow(k))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(size(48, 4, 2)))]

    #[test]
    fn a_log_reads_back_as_the_run(
        digits in 3u8..=max_digits(),
        // In CI's miri step up to 30 values and 4 ranks (and 2 cases, not 4).
        values in proptest::collection::vec((0u64..(1 << 42), 1u64..4), 1..size(120, 120, 30)),
        ranks in proptest::collection::vec(0.0f64..=100.0, 1..size(12, 12, 4)),
        div in divisor(),
    ) {
        let g = HdrGeometry::new(1, i64::MAX as u64, digits).unwrap();
        let mut run = HistogramBuilder::new().layout(layout_for(&g)).window(window_for(&g)).dense().plain().unwrap();
        for &(v, n) in &values {
            run.record_n(v, n);
        }
        let back = through_a_log(&run, digits);

        prop_assert_eq!(back.total(), run.total());
        prop_assert_eq!(back.min(), run.min());
        prop_assert_eq!(back.max(), run.max());
        prop_assert_eq!(back.layout(), run.layout());
        for &r in ranks.iter().chain(Summary::RANKS.iter()) {
            let (a, b) = (run.percentile(r, EquivalentValue::Midpoint).unwrap(), back.percentile(r, EquivalentValue::Midpoint).unwrap());
            prop_assert_eq!(
                (a.value, a.lo, a.highest, a.rank_count),
                (b.value, b.lo, b.highest, b.rank_count),
                "rank {}", r
            );
        }
        let (sa, sb) = (run.summary().in_unit(div), back.summary().in_unit(div));
        prop_assert_eq!(sa.precision(), sb.precision());
        prop_assert_eq!(sa.mean(), sb.mean());
        prop_assert_eq!(sa.stdev(), sb.stdev());
        // The printed forms, in the unit, are the same text.
        prop_assert_eq!(sa.table("t").to_string(), sb.table("t").to_string());
        prop_assert_eq!(sa.one_line("t").to_string(), sb.one_line("t").to_string());
    }

    /// Values printed in a unit are exact: the plain text times the divisor is the value.
    #[test]
    fn scaled_values_are_exact(v in any::<u64>(), div in divisor()) {
        let text = Scaled::new(v, div).plain();
        let (whole, frac) = text.split_once('.').unwrap_or((&text, ""));
        prop_assert_eq!(frac.len(), Scaled::decimals_of(div));
        let frac_value: u128 = if frac.is_empty() { 0 } else { frac.parse().unwrap() };
        let back = whole.parse::<u128>().unwrap() * u128::from(div) + frac_value;
        prop_assert_eq!(back, u128::from(v));
        // Grouped form: the same digits with separators.
        prop_assert_eq!(Scaled::new(v, div).to_string().replace(',', ""), text);
    }
}
