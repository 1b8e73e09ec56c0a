//! Golden outputs: the printed forms of [`Summary`] compared as whole strings against the sample
//! outputs of the article introducing Picollo for .NET, from histograms built bucket by bucket to
//! reproduce the article's numbers exactly (counts, percentiles, mean, deviation).
//!
//! The article's pages collapse runs of spaces; the expected tables here are the article's rows
//! padded to the column widths its alignment rows show.

use picollo_alloc::{HistogramBuilder, Summary, SummaryExt};
use picollo_core::{HistogramRead, Record};

/// The .NET article's first `GettingStarted` distribution, bucket by bucket: the counts its
/// `GettingStartedPercentiles` output prints (`P9.1914=20,096 [64 / 590]: [19,968, 20,224) 183,827`, …).
const BEFORE: &[(u64, u64)] = &[
    (19968, 183827),
    (20224, 105814),
    (20480, 86138),
    (20736, 65161),
    (20992, 55441),
    (21248, 50065),
    (21504, 45744),
    (21760, 41997),
    (22016, 39486),
    (22272, 37157),
    (22528, 35077),
    (22784, 33297),
    (23040, 32125),
    (23296, 31025),
    (23552, 29639),
    (23808, 28840),
    (24064, 28038),
    (24320, 27153),
    (24576, 21200),
    (24832, 14190),
    (25088, 7413),
    (25344, 1173),
];
/// 2,000,000 values of the .NET article's second distribution (`19_000 + (0.5 - r)·500 +
/// r2³·10_000`), adjusted so that the percentiles, mean and deviation print as in the article's
/// diff.
const AFTER: &[(u64, u64)] = &[
    (18944, 480774),
    (19200, 225544),
    (19456, 119160),
    (19712, 90681),
    (19968, 75805),
    (20224, 66006),
    (20480, 59178),
    (20736, 50850),
    (20992, 48362),
    (21248, 44826),
    (21504, 41288),
    (21760, 39249),
    (22016, 38041),
    (22272, 32937),
    (22528, 33765),
    (22784, 31897),
    (23040, 30614),
    (23296, 29395),
    (23552, 28891),
    (23808, 27139),
    (24064, 25761),
    (24320, 25728),
    (24576, 25516),
    (24832, 23297),
    (25088, 22591),
    (25344, 22709),
    (25600, 23345),
    (25856, 22588),
    (26112, 21074),
    (26368, 19672),
    (26624, 20371),
    (26880, 19816),
    (27136, 19595),
    (27392, 19939),
    (27648, 17751),
    (27904, 17207),
    (28160, 17926),
    (28416, 18583),
    (28672, 15193),
    (28928, 6590),
    (29184, 346),
];
/// Counts that reproduce the .NET article's `Aggregate` table (u64 counters; 2,627,864 overflow).
const AGGREGATE: &[(u64, u64)] = &[
    (19968, 17954046),
    (20224, 6276602),
    (20480, 11368593),
    (20736, 10784),
    (20992, 1099132),
    (21248, 3003860),
    (21504, 5100573),
    (21760, 12585968),
    (22016, 2293241),
    (22272, 1074121),
    (22528, 802517),
    (22784, 7),
    (23040, 170),
    (23552, 2853886),
    (23808, 98),
    (24064, 15564171),
    (24320, 232),
    (24576, 1006643),
    (24832, 572091),
    (25088, 179671),
    (25344, 492),
    (25856, 1962646),
    (26368, 862970),
    (26624, 6999076),
    (27136, 2460895),
    (27392, 2939),
    (27648, 10098),
    (27904, 2398998),
    (28160, 6256),
    (28416, 2),
    (28672, 1884),
    (28928, 1553169),
    (29184, 97),
    (29440, 813474),
    (29952, 177900),
];
/// Counts that reproduce the .NET article's `Hardware:BranchMisses` table (default layout, full
/// range).
const BRANCH_MISSES: &[(u64, u64)] = &[
    (8, 1170),
    (9, 1485),
    (10, 3160),
    (11, 1),
    (12, 105),
    (13, 99),
    (14, 1950),
    (15, 1),
    (18, 175),
    (19, 401),
    (21, 155),
    (22, 8),
    (23, 1),
    (25, 114),
    (26, 1),
    (27, 2),
    (29, 1),
    (31, 88),
    (32, 2),
    (39, 2),
    (41, 2),
    (42, 1),
    (46, 72),
    (47, 1),
    (52, 1),
    (109, 1),
];
/// Counts that reproduce the first line of the .NET article's monitoring output.
const MONITORING_1: &[(u64, u64)] = &[
    (19968, 1171319),
    (20224, 3722212),
    (20480, 107712),
    (20736, 25394),
    (20992, 1946364),
    (21248, 76853),
    (21504, 59834),
    (21760, 11048),
    (22272, 38809),
    (22528, 150),
    (22784, 1),
    (23040, 9806),
    (23296, 2516665),
    (23808, 407839),
    (24320, 91764),
    (24832, 10195),
    (25088, 1),
];
/// Counts that reproduce the seventh line of the .NET article's monitoring output (115,673
/// overflow).
const MONITORING_7: &[(u64, u64)] = &[
    (19968, 1335444),
    (20224, 1041816),
    (20480, 1925364),
    (20736, 262297),
    (20992, 129471),
    (21504, 297492),
    (22016, 34700),
    (22272, 81972),
    (22528, 1841465),
    (22784, 83),
    (23296, 10082),
    (23552, 1039),
    (24320, 1403),
    (24576, 2608),
    (24832, 30),
    (25088, 2),
    (25344, 107019),
    (25600, 8875),
    (25856, 1000),
    (26112, 35),
    (26368, 30555),
    (26624, 9980),
    (26880, 18397),
    (27136, 156145),
    (27392, 960),
    (27648, 19685),
    (27904, 24219),
    (28160, 2364120),
    (28928, 408684),
    (29696, 91952),
    (29952, 10220),
];

/// Records `(value, count)` pairs, then `overflow` values above `max`, into a 1% histogram
/// tracking `10_000..=30_000`.
fn getting_started(buckets: &[(u64, u64)], overflow: u64) -> Summary {
    let mut h = HistogramBuilder::new()
        .dense() // the exact window of Picollo for .NET's examples
        .relative_error(0.01)
        .u32_storage()
        .min_trackable(10_000)
        .max_trackable(30_000)
        .plain()
        .unwrap();
    fill(&mut h, buckets);
    h.record_n(40_000, overflow);
    h.summary().with_range(10_000, 30_000)
}

fn fill(h: &mut impl Record, buckets: &[(u64, u64)]) {
    for &(value, count) in buckets {
        h.record_n(value, count);
    }
}

#[test]
fn histogram_before_table() {
    let summary = getting_started(BEFORE, 1);
    // The .NET article's table, except one count: it printed 999,001 for p99.9 of 1,000,000 values,
    // the `f64` product `99.9 / 100 · 10^6 = 999000.0000000001` rounded up. HdrHistogram
    // (Java's getValueAtPercentile, the crate's value_at_quantile(0.999)) asks for the
    // 999,000th, as Picollo's exact rank rule does (`picollo_core::read::rank_count`); the
    // value, 25,472, is the same.
    let expected = r"##### Histogram Before
| Percentile |     Value | ±      |     Count |
| :--------- | --------: | :----- | --------: |
| 0          |    20,096 | ±128   |         1 |
| 1          |    20,096 | ±128   |    10,000 |
| 5          |    20,096 | ±128   |    50,000 |
| 10         |    20,096 | ±128   |   100,000 |
| 25         |    20,352 | ±128   |   250,000 |
| 50         |    21,376 | ±128   |   500,000 |
| 75         |    22,912 | ±128   |   750,000 |
| 90         |    23,936 | ±128   |   900,000 |
| 92.5       |    24,192 | ±128   |   925,000 |
| 95         |    24,448 | ±128   |   950,000 |
| 97.5       |    24,704 | ±128   |   975,000 |
| 99         |    24,960 | ±128   |   990,000 |
| 99.9       |    25,472 | ±128   |   999,000 |
| 99.99      |    25,472 | ±128   |   999,900 |
| 99.999     |    25,472 | ±128   |   999,990 |
| 100        |    25,472 | ±128   | 1,000,000 |
| Overflow   |           |        |         1 |
|            |           |        |           |
| Mean:      | 21,696.54 | StDev: |  1,482.39 |
| Precision: |   0.7813% | Total: | 1,000,000 |
| Range Min: |    10,000 | Max:   |    30,000 |
";
    assert_eq!(summary.table("Histogram Before").to_string(), expected);
}

#[test]
fn p99_display() {
    let summary = getting_started(BEFORE, 1);
    assert_eq!(
        format!("P99: {}", summary.p99()),
        "P99: P99=24,960 [83 / 609]: [24,832, 25,088) 14,190"
    );
}

#[test]
fn getting_started_diff() {
    let before = getting_started(BEFORE, 1);
    let after = getting_started(AFTER, 0);
    let expected = r"##### Getting Started Diff
| Percentile |    Before |     After |      Δ% |
| :--------- | --------: | --------: | ------: |
| 0          |    20,096 |    19,072 |   -5.1% |
| 1          |    20,096 |    19,072 |   -5.1% |
| 5          |    20,096 |    19,072 |   -5.1% |
| 10         |    20,096 |    19,072 |   -5.1% |
| 25         |    20,352 |    19,328 |   -5.0% |
| 50         |    21,376 |    20,352 |   -4.8% |
| 75         |    22,912 |    23,168 |   +1.1% |
| 90         |    23,936 |    26,240 |   +9.6% |
| 92.5       |    24,192 |    27,008 |  +11.6% |
| 95         |    24,448 |    27,520 |  +12.6% |
| 97.5       |    24,704 |    28,288 |  +14.5% |
| 99         |    24,960 |    28,800 |  +15.4% |
| 99.9       |    25,472 |    29,056 |  +14.1% |
| 99.99      |    25,472 |    29,312 |  +15.1% |
| 99.999     |    25,472 |    29,312 |  +15.1% |
| 100        |    25,472 |    29,312 |  +15.1% |
|            |           |           |         |
| Mean:      | 21,696.54 | 21,518.53 |   -0.8% |
| StDev:     |  1,482.39 |  2,822.16 |  +90.4% |
| Precision: |   0.7813% |   0.7813% |    0.0% |
| Total:     | 1,000,000 | 2,000,000 | +100.0% |
| D-value:   |           |           |   -0.07 |
";
    assert_eq!(
        before
            .diff(&after, "Getting Started Diff", "Before", "After")
            .to_string(),
        expected
    );
}

#[test]
fn aggregate_table() {
    let mut h = HistogramBuilder::new()
        .dense() // the exact window of Picollo for .NET's examples
        .relative_error(0.01)
        .u64_storage()
        .min_trackable(10_000)
        .max_trackable(30_000)
        .plain()
        .unwrap();
    fill(&mut h, AGGREGATE);
    h.record_n(40_000, 2_627_864);
    let summary = h.summary().with_range(10_000, 30_000);
    let expected = r"##### Aggregate
| Percentile |     Value | ±      |      Count |
| :--------- | --------: | :----- | ---------: |
| 0          |    20,096 | ±128   |          1 |
| 1          |    20,096 | ±128   |    989,974 |
| 5          |    20,096 | ±128   |  4,949,866 |
| 10         |    20,096 | ±128   |  9,899,731 |
| 25         |    20,608 | ±128   | 24,749,326 |
| 50         |    21,888 | ±128   | 49,498,651 |
| 75         |    24,192 | ±128   | 74,247,977 |
| 90         |    26,752 | ±128   | 89,097,572 |
| 92.5       |    27,264 | ±128   | 91,572,505 |
| 95         |    28,032 | ±128   | 94,047,437 |
| 97.5       |    29,056 | ±128   | 96,522,370 |
| 99         |    29,568 | ±128   | 98,007,329 |
| 99.9       |    30,080 | ±128   | 98,898,305 |
| 99.99      |    30,080 | ±128   | 98,987,403 |
| 99.999     |    30,080 | ±128   | 98,996,313 |
| 100        |    30,080 | ±128   | 98,997,302 |
| Overflow   |           |        |  2,627,864 |
|            |           |        |            |
| Mean:      | 22,704.70 | StDev: |   2,570.16 |
| Precision: |   0.7813% | Total: | 98,997,302 |
| Range Min: |    10,000 | Max:   |     30,000 |
";
    assert_eq!(summary.table("Aggregate").to_string(), expected);
}

#[test]
fn branch_misses_table() {
    // The .NET article's PerfEvent histograms: the default layout over the full range, so no value
    // can fall outside the window and there is no Overflow or Range row. The builder's default,
    // sparse storage, whose reads cost what was recorded: a dense full-range window (28,672
    // cells) walked by a summary took 40 s of this file's miri run.
    let mut h = picollo_alloc::HistogramBuilder::new().plain().unwrap();
    fill(&mut h, BRANCH_MISSES);
    let expected = r"##### Hardware:BranchMisses
| Percentile |   Value | ±      | Count |
| :--------- | ------: | :----- | ----: |
| 0          |       8 | ±0     |     1 |
| 1          |       8 | ±0     |    90 |
| 5          |       8 | ±0     |   450 |
| 10         |       8 | ±0     |   900 |
| 25         |       9 | ±0     | 2,250 |
| 50         |      10 | ±0     | 4,500 |
| 75         |      14 | ±0     | 6,750 |
| 90         |      18 | ±0     | 8,100 |
| 92.5       |      19 | ±0     | 8,325 |
| 95         |      21 | ±0     | 8,550 |
| 97.5       |      25 | ±0     | 8,775 |
| 99         |      31 | ±0     | 8,910 |
| 99.9       |      46 | ±0     | 8,991 |
| 99.99      |     109 | ±0     | 8,999 |
| 99.999     |     109 | ±0     | 8,999 |
| 100        |     109 | ±0     | 8,999 |
|            |         |        |       |
| Mean:      |   11.99 | StDev: |  5.21 |
| Precision: | 0.0977% | Total: | 8,999 |
";
    assert_eq!(
        h.summary().table("Hardware:BranchMisses").to_string(),
        expected
    );
}

#[test]
fn one_line_forms() {
    let mut h = HistogramBuilder::new()
        .dense() // the exact window of Picollo for .NET's examples
        .relative_error(0.01)
        .min_trackable(10_000)
        .max_trackable(30_000)
        .plain()
        .unwrap();
    fill(&mut h, MONITORING_1);
    let mut summary = h.summary();
    assert_eq!(
        summary.one_line("GettingStartedMonitoring").to_string(),
        "GettingStartedMonitoring: Total=10,195,966, Overflow=0, Mean=21,443.7, P0=20,096, \
         P25=20,352, P50=21,120, P90=23,424, P95=23,936, P99=24,448, P999=24,960, P100=25,216"
    );

    h.reset();
    fill(&mut h, MONITORING_7);
    h.record_n(40_000, 115_673);
    h.summary_into(&mut summary);
    assert_eq!(
        summary.one_line("GettingStartedMonitoring").to_string(),
        "GettingStartedMonitoring: Total=10,217,114, Overflow=115,673, Mean=23,383.5, \
         P0=20,096, P25=20,608, P50=22,656, P90=28,288, P95=29,056, P99=29,824, P999=30,080, \
         P100=30,080"
    );

    let before = getting_started(BEFORE, 1);
    assert_eq!(
        before.one_line("").to_string(),
        "Total=1,000,000, Overflow=1, Mean=21,696.5, P0=20,096, P25=20,352, P50=21,376, \
         P90=23,936, P95=24,448, P99=24,960, P999=25,472, P100=25,472"
    );
}

#[test]
fn empty_histogram() {
    let h = HistogramBuilder::new()
        .dense() // the exact window of Picollo for .NET's examples
        .relative_error(0.01)
        .min_trackable(10_000)
        .max_trackable(30_000)
        .plain()
        .unwrap();
    let summary = h.summary();
    assert!(summary.is_empty());
    assert_eq!(summary.p50().rank, 50.0);
    assert_eq!((summary.p50().value, summary.p50().count), (0, 0));
    assert_eq!((summary.mean(), summary.stdev()), (0.0, 0.0));
    let expected = r"##### Empty
| Percentile |   Value | ±      | Count |
| :--------- | ------: | :----- | ----: |
| 0          |       - |        |     0 |
| 1          |       - |        |     0 |
| 5          |       - |        |     0 |
| 10         |       - |        |     0 |
| 25         |       - |        |     0 |
| 50         |       - |        |     0 |
| 75         |       - |        |     0 |
| 90         |       - |        |     0 |
| 92.5       |       - |        |     0 |
| 95         |       - |        |     0 |
| 97.5       |       - |        |     0 |
| 99         |       - |        |     0 |
| 99.9       |       - |        |     0 |
| 99.99      |       - |        |     0 |
| 99.999     |       - |        |     0 |
| 100        |       - |        |     0 |
|            |         |        |       |
| Mean:      |       - | StDev: |     - |
| Precision: | 0.7813% | Total: |     0 |
";
    assert_eq!(summary.table("Empty").to_string(), expected);
    assert_eq!(
        summary.one_line("Idle").to_string(),
        "Idle: Total=0, Overflow=0, Mean=-, P0=-, P25=-, P50=-, P90=-, P95=-, P99=-, P999=-, \
         P100=-"
    );
}

#[test]
fn diff_with_an_empty_side() {
    let empty = Summary::default();
    let mut h = picollo_alloc::HistogramBuilder::new().plain().unwrap(); // full range, sparse
    h.record_n(10, 3);
    h.record_n(30, 1);
    let after = h.summary();
    let expected = r"##### Warm-up
| Percentile |    Cold |    Warm |   Δ% |
| :--------- | ------: | ------: | ---: |
| 0          |       - |      10 |  n/a |
| 1          |       - |      10 |  n/a |
| 5          |       - |      10 |  n/a |
| 10         |       - |      10 |  n/a |
| 25         |       - |      10 |  n/a |
| 50         |       - |      10 |  n/a |
| 75         |       - |      10 |  n/a |
| 90         |       - |      30 |  n/a |
| 92.5       |       - |      30 |  n/a |
| 95         |       - |      30 |  n/a |
| 97.5       |       - |      30 |  n/a |
| 99         |       - |      30 |  n/a |
| 99.9       |       - |      30 |  n/a |
| 99.99      |       - |      30 |  n/a |
| 99.999     |       - |      30 |  n/a |
| 100        |       - |      30 |  n/a |
|            |         |         |      |
| Mean:      |       - |   15.00 |  n/a |
| StDev:     |       - |    8.66 |  n/a |
| Precision: | 0.0977% | 0.0977% | 0.0% |
| Total:     |       0 |       4 |  n/a |
| D-value:   |         |         |  n/a |
";
    assert_eq!(
        empty.diff(&after, "Warm-up", "Cold", "Warm").to_string(),
        expected
    );
}

#[test]
fn zero_deviation_diff() {
    let mut h = picollo_alloc::HistogramBuilder::new().plain().unwrap(); // full range, sparse
    h.record_n(100, 5);
    let before = h.summary();
    h.reset();
    h.record_n(50, 5);
    let after = h.summary();
    let text = before.diff(&after, "", "A", "B").to_string();
    assert!(
        text.starts_with("| Percentile |"),
        "no heading for an empty title"
    );
    assert!(
        text.ends_with("| D-value:   |         |         |   -inf |\n"),
        "{text}"
    );
    assert!(!text.contains("NaN"));
    let same = before.diff(&before, "", "A", "B").to_string();
    assert!(
        same.ends_with("| D-value:   |         |         | 0.00 |\n"),
        "{same}"
    );
}

#[test]
fn range_and_underflow_rows() {
    // Without a requested range the Range row shows what the window really tracks.
    let mut h = HistogramBuilder::new()
        .dense() // the exact window of Picollo for .NET's examples
        .relative_error(0.01)
        .min_trackable(10_000)
        .max_trackable(30_000)
        .plain()
        .unwrap();
    h.record_n(20_000, 2);
    h.record(5);
    let summary = h.summary();
    assert_eq!(summary.range(), (9_984, 30_207));
    let text = summary.table("Under").to_string();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[3], "| Underflow  |           |        |      1 |");
    assert_eq!(lines[4], "| 0          |    20,096 | ±128   |      1 |");
    assert_eq!(
        lines.last(),
        Some(&"| Range Min: |     9,984 | Max:   | 30,207 |")
    );
    assert_eq!(summary.underflow(), 1);
    assert!(summary
        .one_line("U")
        .to_string()
        .starts_with("U: Total=2, Overflow=0, Underflow=1, Mean=20,096.0, P0=20,096"));
    assert_eq!(summary.window().len(), h.window().len());
}

#[test]
fn default_display_is_the_titled_table() {
    let summary = getting_started(BEFORE, 1);
    let text = summary.to_string();
    assert!(text.starts_with("##### Histogram summary\n| Percentile |"));
    assert_eq!(
        text.lines().skip(1).collect::<Vec<_>>(),
        summary
            .table("x")
            .to_string()
            .lines()
            .skip(1)
            .collect::<Vec<_>>()
    );
}
