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
    let mut sum = HdrCounts::new(1, highest(), decoded.significant_digits.max(3)).unwrap();
    sum.add(&decoded).unwrap();
    to_picollo(&sum).expect("exact conversion")
}

/// The most significant digits a run has. Under miri 3: a full-range 4-digit histogram has
/// 835,000 cells (each pass over them takes minutes there), a 3-digit one 55,000.
fn max_digits() -> u8 {
    size(4, 3, 3)
}

/// The highest trackable value of a run and of the sum `report` adds it into: the full range,
/// as `report` sums. Under miri 2^12 (values below it; two HdrHistogram buckets at 3 digits):
/// a dense read walks the cells with `count_at`, and each call retags the whole storage, so
/// each pass costs about the square of the cells (a 3-digit full range's 55,000: over 10
/// minutes for the property's first case; 128 s for both at 2^16). The same code runs
/// (export, the log, the sum, the exact conversion), over fewer cells. Tree Borrows was 3
/// times slower here.
fn highest() -> u64 {
    size(i64::MAX as u64, i64::MAX as u64, 1 << 12)
}

/// Powers of ten a unit divides nanoseconds by: ns, µs, ms, s (and the ones between).
fn divisor() -> impl Strategy<Value = u64> {
    (0u32..=9).prop_map(|k| 10u64.pow(k))
}

proptest! {
    // In CI's miri step 1 case (about 30 s there; 4 in a full-size run).
    #![proptest_config(ProptestConfig::with_cases(size(48, 4, 1)))]

    #[test]
    fn a_log_reads_back_as_the_run(
        digits in 3u8..=max_digits(),
        // In CI's miri step up to 30 values and 4 ranks.
        values in proptest::collection::vec(
            (0u64..size(1 << 42, 1 << 42, 1 << 12), 1u64..4),
            1..size(120, 120, 30),
        ),
        ranks in proptest::collection::vec(0.0f64..=100.0, 1..size(12, 12, 4)),
        div in divisor(),
    ) {
        let g = HdrGeometry::new(1, highest(), digits).unwrap();
        let mut run = HistogramBuilder::new().layout(layout_for(&g)).window(window_for(&g)).dense().plain().unwrap();
        for &(v, n) in &values {
            run.record_n(v, n);
        }
        let back = through_a_log(&run, digits);

        prop_assert_eq!(back.total(), run.total());
        prop_assert_eq!(back.min(), run.min());
        prop_assert_eq!(back.max(), run.max());
        prop_assert_eq!(back.layout(), run.layout());
        // Under miri the drawn ranks and every fifth of the summary's (0, 50, 97.5 and 100), not
        // all 16: each percentile walks the cells (0.5 s a call there); the summaries' tables
        // below still compare the printed value at every rank.
        for &r in ranks.iter().chain(Summary::RANKS.iter().step_by(size(1, 1, 5))) {
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
