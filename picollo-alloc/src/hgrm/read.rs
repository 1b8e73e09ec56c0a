//! Reading `.hgrm` percentile distributions back: the text [`Hgrm`](super::Hgrm)
//! and HdrHistogram's `outputPercentileDistribution` print, in every form the HdrHistogram
//! tools write it:
//!
//! | writer | what differs |
//! |---|---|
//! | Java `HistogramLogProcessor` | two `#[…]` comment lines (time range, `StartTime`) before the header |
//! | Java `-csv` | comma-separated, quoted header, `Infinity` in the last row, no footer |
//! | Java, .NET `outputPercentileDistribution` | last row without `1/(1-Percentile)`; .NET files may have CRLF ends and a byte-order mark |
//! | `hdrhistogram` crate, `cli quantiles` | five columns (`QuantileValue`, `QuantileIteration`), `∞`, its counts length as `SubBuckets` |
//! | any | blank lines, `#` comments (`# Histogram counts indicate OVERFLOW values`), a `----` rule |
//!
//! An `.hgrm` file keeps the percentile steps, not the counts, so a histogram rebuilt from
//! it ([`HgrmFile::to_counts`]) puts each step's count at the step's value (the highest
//! value of its bucket, as HdrHistogram reports it): percentiles at the steps are exact,
//! between steps they round up to the next step, and the mean and deviation come out a
//! little high. The file's own mean, deviation and max are kept ([`HgrmFile::mean`], …).
//!
//! Untrusted text is fine: every line is checked (numbers, order, the footer against the
//! steps), lines and steps are bounded, and errors name the line.
//!
//! ```
//! use picollo_alloc::hgrm::{parse_hgrm, Hgrm};
//! use picollo_alloc::HistogramBuilder;
//! use picollo_core::Layout;
//!
//! let layout = Layout::from_block_scale(10).unwrap();
//! let mut h = HistogramBuilder::new().layout(layout).plain()?;
//! for v in 1..=1000u64 {
//!     h.record(v);
//! }
//! let text = Hgrm::new(&h, 5, 1.0)?.to_string();
//! let file = parse_hgrm(&text)?;
//! assert_eq!(file.total, Some(1000));
//! let counts = file.to_counts()?;
//! assert_eq!(counts.total_count(), 1000);
//! assert_eq!(counts.value_at_percentile(100.0), Some(1000));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use core::fmt;

use crate::hdr::{HdrCounts, HdrError};

/// Most lines an `.hgrm` text may have (a real one has a few hundred).
pub(crate) const MAX_HGRM_LINES: usize = 1 << 20;
/// Longest line, in bytes.
pub(crate) const MAX_HGRM_LINE: usize = 4096;
/// Most decimals kept when values have fractions (values are scaled by `10^decimals`).
pub(crate) const MAX_HGRM_DECIMALS: u32 = 9;

/// One percentile step of an `.hgrm` file.
#[derive(Clone, Debug, PartialEq)]
pub struct HgrmStep {
    /// The value as printed (scaled by the writer's output ratio).
    pub value: f64,
    /// The value as an integer of `10^-decimals` units (see [`HgrmFile::scale`]).
    pub scaled: u64,
    /// The percentile level, 0 to 1.
    pub percentile: f64,
    /// Values at or below `value`.
    pub total_count: u64,
}

/// A parsed `.hgrm` text ([`parse_hgrm`]).
///
/// An `.hgrm` file keeps the percentile steps, not the counts, so a histogram rebuilt from
/// it ([`HgrmFile::to_counts`]) puts each step's count at the step's value (the highest
/// value of its bucket, as HdrHistogram reports it): percentiles at the steps are exact,
/// between steps they round up to the next step, and the mean and deviation come out a
/// little high. The file's own mean, deviation and max are kept ([`HgrmFile::mean`], …).
/// Values with decimals (an output ratio other than 1) are kept as whole numbers of
/// `10^-decimals` units ([`HgrmStep::scaled`]).
///
/// Untrusted text is fine: every line is checked (numbers, order, the footer against the
/// steps), lines and steps are bounded (2^20, 4,096 bytes), and errors
/// name the line.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HgrmFile {
    /// The steps, in file order.
    pub steps: Vec<HgrmStep>,
    /// `#[Mean = …]`.
    pub mean: Option<f64>,
    /// `StdDeviation = …`.
    pub stdev: Option<f64>,
    /// `#[Max = …]`.
    pub max: Option<f64>,
    /// `Total count = …`.
    pub total: Option<u64>,
    /// `#[Buckets = …]`.
    pub buckets: Option<u64>,
    /// `SubBuckets = …`.
    pub sub_buckets: Option<u64>,
    /// Decimals of the integer scale: step values are kept as `value × 10^decimals` (0 when
    /// every value is a whole number, as with an output ratio of 1).
    pub decimals: u32,
}

/// Why an `.hgrm` text could not be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HgrmParseError {
    /// The 1-based line (0 for the whole text).
    pub line: usize,
    /// What is wrong.
    pub what: String,
}

impl fmt::Display for HgrmParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            f.write_str(&self.what)
        } else {
            write!(f, "line {}: {}", self.line, self.what)
        }
    }
}

impl std::error::Error for HgrmParseError {}

const HEADER: [&str; 4] = ["Value", "Percentile", "TotalCount", "1/(1-Percentile)"];
/// The header of the `hdrhistogram` crate's `cli quantiles` example.
const RUST_HEADER: [&str; 5] = [
    "Value",
    "QuantileValue",
    "QuantileIteration",
    "TotalCount",
    "1/(1-Quantile)",
];
/// HdrHistogram Java's `-csv` header.
const CSV_HEADER: &str = r#""Value","Percentile","TotalCount","1/(1-Percentile)""#;

/// Which writer's columns a text has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Columns {
    /// HdrHistogram Java's and .NET's `outputPercentileDistribution`, Picollo's
    /// [`Hgrm`](super::Hgrm): value, percentile, total count, `1/(1-p)`.
    Plain,
    /// HdrHistogram Java's `-csv`: the same columns, comma-separated.
    Csv,
    /// The `hdrhistogram` crate's `cli quantiles`: value, the quantile of the value, the
    /// quantile iterated to, total count, `1/(1-q)`.
    Rust,
}

impl Columns {
    fn of_header(line: &str) -> Option<Self> {
        let line = line.trim();
        if line.split_whitespace().eq(HEADER) {
            Some(Self::Plain)
        } else if line.split_whitespace().eq(RUST_HEADER) {
            Some(Self::Rust)
        } else if line == CSV_HEADER {
            Some(Self::Csv)
        } else {
            None
        }
    }
}

/// Whether a line says nothing: blank, or a comment before the header (`#[Overall percentile
/// distribution …]`, `#[StartTime: …]`), or a plain `#` comment anywhere (`# Histogram counts
/// indicate OVERFLOW values`), or a `----` rule (wrk2 prints one under its distribution).
fn is_comment(line: &str, header_seen: bool) -> bool {
    let t = line.trim();
    t.is_empty()
        || (t.starts_with('#') && !(header_seen && t.starts_with("#[")))
        || (t.len() >= 3 && t.bytes().all(|b| b == b'-'))
}

/// Whether `text` starts like an `.hgrm` file: after blank and `#` comment lines, its first
/// line is a column header (`Value Percentile TotalCount 1/(1-Percentile)`, Java's `-csv`
/// header, or the `hdrhistogram` crate's `Value QuantileValue QuantileIteration …`).
pub fn looks_like_hgrm(text: &str) -> bool {
    text.trim_start_matches('\u{feff}')
        .lines()
        .find(|l| !is_comment(l, false))
        .is_some_and(|l| Columns::of_header(l).is_some())
}

/// A non-negative decimal number, exactly: its integer and fraction digits.
struct Decimal<'a> {
    int: &'a str,
    frac: &'a str,
}

impl<'a> Decimal<'a> {
    fn parse(s: &'a str) -> Option<Self> {
        let (int, frac) = s.split_once('.').unwrap_or((s, ""));
        let digits = |t: &str| t.bytes().all(|b| b.is_ascii_digit());
        if int.is_empty() || !digits(int) || !digits(frac) || int.len() > 20 {
            return None;
        }
        Some(Self { int, frac })
    }

    /// Whether the fraction has a non-zero digit.
    fn has_fraction(&self) -> bool {
        self.frac.bytes().any(|b| b != b'0')
    }

    /// The value times `10^decimals`, rounded half up; `None` on overflow.
    fn scaled(&self, decimals: u32) -> Option<u64> {
        let mut v: u128 = self.int.parse().ok()?;
        let frac = self.frac.as_bytes();
        for i in 0..decimals as usize {
            let d = frac.get(i).map_or(0, |b| b - b'0');
            v = v.checked_mul(10)?.checked_add(u128::from(d))?;
        }
        if frac.get(decimals as usize).is_some_and(|b| *b >= b'5') {
            v = v.checked_add(1)?;
        }
        u64::try_from(v).ok()
    }
}

/// Whether `c` is a `1/(1-Percentile)` cell: a number, or infinity as Java (`Infinity`), the
/// crate (`∞`) or others (`inf`) print it.
fn is_inverse(c: &str) -> bool {
    matches!(c, "Infinity" | "∞" | "inf" | "Inf") || c.parse::<f64>().is_ok()
}

/// Parses an `.hgrm` text (see [`HgrmFile`]): what HdrHistogram Java (plain and `-csv`), .NET,
/// the `hdrhistogram` crate's `cli quantiles` and Picollo write, with comment lines before
/// the header, `#[Mean …]` footer lines, blank lines, CRLF line ends and a byte-order mark.
///
/// # Errors
/// A missing header, a malformed or out-of-order step, a footer that contradicts the steps,
/// or more than 2^20 lines.
pub fn parse_hgrm(text: &str) -> Result<HgrmFile, HgrmParseError> {
    let text = text.trim_start_matches('\u{feff}');
    let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, l));
    let columns = read_header(&mut lines)?;
    let mut file = HgrmFile::default();
    let mut raw: Vec<(usize, &str)> = Vec::new();
    let mut footer_seen = false;
    for (n, line) in lines {
        if n > MAX_HGRM_LINES {
            return Err(err(n, format!("more than {MAX_HGRM_LINES} lines")));
        }
        if line.len() > MAX_HGRM_LINE {
            return Err(err(n, format!("a line longer than {MAX_HGRM_LINE} bytes")));
        }
        let t = line.trim();
        if is_comment(t, true) {
            continue;
        }
        if let Some(body) = t.strip_prefix("#[") {
            footer_seen = true;
            read_footer_line(&mut file, n, body)?;
        } else if footer_seen {
            return Err(err(n, "a percentile step after the footer".into()));
        } else {
            raw.push((n, t));
        }
    }
    if columns == Columns::Rust {
        file.sub_buckets = rust_sub_buckets(file.buckets, file.sub_buckets);
    }
    let cells = raw
        .iter()
        .map(|&(n, t)| read_step(columns, n, t))
        .collect::<Result<Vec<_>, _>>()?;
    // Decimals: those of the value column, when any value has a fraction.
    file.decimals = cells
        .iter()
        .filter(|c| c.value.has_fraction())
        .map(|c| (c.value.frac.len() as u32).min(MAX_HGRM_DECIMALS))
        .max()
        .unwrap_or(0);
    file.steps = ordered_steps(cells, file.decimals)?;
    check_footer(&file)?;
    Ok(file)
}

fn err(line: usize, what: String) -> HgrmParseError {
    HgrmParseError { line, what }
}

/// The column header, after the comment lines before it: which writer's columns follow.
fn read_header<'a>(
    lines: &mut impl Iterator<Item = (usize, &'a str)>,
) -> Result<Columns, HgrmParseError> {
    match lines.find(|(_, l)| !is_comment(l, false)) {
        Some((n, l)) => Columns::of_header(l).ok_or_else(|| {
            err(
                n,
                "not an .hgrm percentile distribution: the first line after the comments is \
                 not `Value Percentile TotalCount 1/(1-Percentile)`"
                    .into(),
            )
        }),
        None => Err(err(0, "empty text: not an .hgrm file".into())),
    }
}

/// A footer field: how its value is read, and where it goes.
enum FooterField {
    /// A finite number.
    Number(fn(&mut HgrmFile) -> &mut Option<f64>),
    /// A count.
    Count(fn(&mut HgrmFile) -> &mut Option<u64>),
}

/// The footer's fields, by the name the writers print (`#[Mean = …, StdDeviation = …]`).
const FOOTER: [(&str, FooterField); 6] = [
    ("Mean", FooterField::Number(|f| &mut f.mean)),
    ("StdDeviation", FooterField::Number(|f| &mut f.stdev)),
    ("Max", FooterField::Number(|f| &mut f.max)),
    ("Total count", FooterField::Count(|f| &mut f.total)),
    ("Buckets", FooterField::Count(|f| &mut f.buckets)),
    ("SubBuckets", FooterField::Count(|f| &mut f.sub_buckets)),
];

/// Reads footer line `n` (`body`: what follows its `#[`) into `file`.
fn read_footer_line(file: &mut HgrmFile, n: usize, body: &str) -> Result<(), HgrmParseError> {
    let body = body
        .strip_suffix(']')
        .ok_or_else(|| err(n, "a footer line without its closing `]`".into()))?;
    for pair in body.split(',') {
        let (k, v) = pair
            .split_once('=')
            .ok_or_else(|| err(n, format!("footer item `{}` has no `=`", pair.trim())))?;
        let (k, v) = (k.trim(), v.trim());
        let field = FOOTER
            .iter()
            .find(|(name, _)| *name == k)
            .map(|(_, field)| field)
            .ok_or_else(|| err(n, format!("unknown footer item `{k}`")))?;
        match field {
            FooterField::Number(slot) => {
                let x = v.parse::<f64>().ok().filter(|x| x.is_finite());
                *slot(file) = Some(x.ok_or_else(|| err(n, format!("`{v}` is not a number")))?);
            }
            FooterField::Count(slot) => {
                let x = v.parse::<u64>();
                *slot(file) = Some(x.map_err(|_| err(n, format!("`{v}` is not a count")))?);
            }
        }
    }
    Ok(())
}

/// The `hdrhistogram` crate's `SubBuckets` is its counts length, `(buckets + 1) ·
/// sub_buckets / 2`: the sub-bucket count it stands for, when it is one.
fn rust_sub_buckets(buckets: Option<u64>, sub_buckets: Option<u64>) -> Option<u64> {
    if let (Some(b), Some(len)) = (buckets, sub_buckets) {
        let sub = (len / (b + 1)).saturating_mul(2);
        if sub.is_power_of_two() && (b + 1).saturating_mul(sub / 2) == len {
            return Some(sub);
        }
    }
    sub_buckets
}

/// The cells of one step line, checked.
struct StepCells<'a> {
    line: usize,
    text_value: &'a str,
    value: Decimal<'a>,
    percentile: f64,
    total_count: u64,
}

/// Reads step line `n` (`t`, trimmed) of a text with `columns`.
fn read_step(columns: Columns, n: usize, t: &str) -> Result<StepCells<'_>, HgrmParseError> {
    let cols: Vec<&str> = match columns {
        Columns::Csv => t.split(',').map(str::trim).collect(),
        _ => t.split_whitespace().collect(),
    };
    // Value, percentile, total count and the optional `1/(1-p)`, by column index.
    let (at, expected) = match columns {
        Columns::Rust => ([0, 2, 3, 4], 4..=5),
        _ => ([0, 1, 2, 3], 3..=4),
    };
    if !expected.contains(&cols.len()) {
        let (lo, hi) = (expected.start(), expected.end());
        return Err(err(
            n,
            format!("a step has {} columns ({lo} or {hi} expected)", cols.len()),
        ));
    }
    let value = Decimal::parse(cols[at[0]])
        .ok_or_else(|| err(n, format!("value `{}` is not a number", cols[at[0]])))?;
    let in_unit = |c: &str| c.parse::<f64>().ok().filter(|p| (0.0..=1.0).contains(p));
    let percentile = in_unit(cols[at[1]]).ok_or_else(|| {
        err(
            n,
            format!("percentile `{}` is not between 0 and 1", cols[at[1]]),
        )
    })?;
    let total_count: u64 = cols[at[2]]
        .parse()
        .map_err(|_| err(n, format!("total count `{}` is not a count", cols[at[2]])))?;
    if columns == Columns::Rust && in_unit(cols[1]).is_none() {
        return Err(err(
            n,
            format!("quantile `{}` is not between 0 and 1", cols[1]),
        ));
    }
    if let Some(c) = cols.get(at[3]) {
        if !is_inverse(c) {
            return Err(err(n, format!("`{c}` is not a number")));
        }
    }
    Ok(StepCells {
        line: n,
        text_value: cols[at[0]],
        value,
        percentile,
        total_count,
    })
}

/// The steps, their values scaled by `10^decimals`, checked not to decrease.
fn ordered_steps(
    cells: Vec<StepCells<'_>>,
    decimals: u32,
) -> Result<Vec<HgrmStep>, HgrmParseError> {
    let mut steps: Vec<HgrmStep> = Vec::with_capacity(cells.len());
    for c in cells {
        let scaled = c
            .value
            .scaled(decimals)
            .ok_or_else(|| err(c.line, format!("value `{}` is too large", c.text_value)))?;
        let step = HgrmStep {
            value: c.text_value.parse().unwrap_or(f64::INFINITY),
            scaled,
            percentile: c.percentile,
            total_count: c.total_count,
        };
        if let Some(p) = steps.last() {
            if step.scaled < p.scaled
                || step.percentile < p.percentile
                || step.total_count < p.total_count
            {
                return Err(err(
                    c.line,
                    "a step below the one before it (values, percentiles and counts must not \
                     decrease)"
                        .into(),
                ));
            }
        }
        steps.push(step);
    }
    Ok(steps)
}

/// The footer's total count against the steps.
fn check_footer(file: &HgrmFile) -> Result<(), HgrmParseError> {
    if let (Some(total), Some(last)) = (file.total, file.steps.last()) {
        if last.total_count != total {
            return Err(err(
                0,
                format!(
                    "the last step counts {} values, the footer's total count is {total}",
                    last.total_count
                ),
            ));
        }
    }
    if file.steps.is_empty() && file.total.is_some_and(|t| t > 0) {
        return Err(err(
            0,
            "a footer with values but no percentile steps".into(),
        ));
    }
    Ok(())
}

impl HgrmFile {
    /// `10^decimals`: the factor between the file's values and [`HgrmStep::scaled`].
    pub fn scale(&self) -> u64 {
        10u64.pow(self.decimals)
    }

    /// Values counted by the steps.
    pub fn total_count(&self) -> u64 {
        self.steps.last().map_or(0, |s| s.total_count)
    }

    /// The significant digits of a histogram at least as precise as the file's: the
    /// smallest `d` whose HdrHistogram sub-bucket count reaches the footer's `SubBuckets`
    /// (3 when the file does not say), at most 5.
    pub fn significant_digits(&self) -> u8 {
        let Some(sub) = self.sub_buckets else {
            return 3;
        };
        (0..=5u8)
            .find(|&d| {
                let needed = 2 * 10u64.pow(u32::from(d));
                needed.next_power_of_two() >= sub
            })
            .unwrap_or(5)
    }

    /// A histogram rebuilt from the steps (in [`HgrmStep::scaled`] units): each step's new
    /// count at its value. See [`HgrmFile`] for what that keeps exactly.
    ///
    /// # Errors
    /// A value beyond what an HdrHistogram can track (`i64::MAX`).
    pub fn to_counts(&self) -> Result<HdrCounts, HdrError> {
        // Tracking up to the highest step only, not to `i64::MAX`, keeps the counts small
        // (a 5-digit histogram to `i64::MAX` would take 48 MiB).
        let highest = self.steps.last().map_or(2, |s| s.scaled).max(2);
        let mut h = HdrCounts::new(1, highest, self.significant_digits())?;
        let mut below = 0u64;
        for s in &self.steps {
            let n = s.total_count - below;
            if n > 0 {
                h.record(s.scaled, n)?;
            }
            below = s.total_count;
        }
        Ok(h)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hgrm::Hgrm;
    use crate::HistogramBuilder;
    use picollo_core::Layout;

    fn hgrm_of(values: impl Iterator<Item = u64>, ratio: f64) -> String {
        let layout = Layout::from_block_scale(10).unwrap();
        let mut h = HistogramBuilder::new()
            .layout(layout)
            .max_trackable(1 << 40)
            .plain()
            .unwrap();
        for v in values {
            h.record(v);
        }
        Hgrm::new(&h, 5, ratio).unwrap().to_string()
    }

    #[test]
    fn roundtrip_keeps_percentiles_at_the_steps() {
        let text = hgrm_of(1..=100_000u64, 1.0);
        assert!(looks_like_hgrm(&text));
        let f = parse_hgrm(&text).unwrap();
        assert_eq!(f.decimals, 0);
        assert_eq!(f.total, Some(100_000));
        assert_eq!(f.sub_buckets, Some(2048));
        assert_eq!(f.significant_digits(), 3);
        let c = f.to_counts().unwrap();
        assert_eq!(c.total_count(), 100_000);
        for s in &f.steps {
            let p = s.percentile * 100.0;
            assert_eq!(c.value_at_percentile(p), Some(s.scaled), "at {p}");
        }
        assert_eq!(c.max(), f.max.unwrap() as u64);
    }

    #[test]
    fn fractional_values_are_scaled() {
        // Microseconds printed as milliseconds: three decimals.
        let text = hgrm_of((1..=1000u64).map(|v| v * 1013), 1000.0);
        let f = parse_hgrm(&text).unwrap();
        assert_eq!(f.decimals, 3);
        assert_eq!(f.scale(), 1000);
        let last = f.steps.last().unwrap();
        assert!((last.value * 1000.0 - last.scaled as f64).abs() < 1.0);
        assert_eq!(f.to_counts().unwrap().total_count(), 1000);
    }

    #[test]
    fn empty_histogram() {
        let text = hgrm_of(std::iter::empty(), 1.0);
        let f = parse_hgrm(&text).unwrap();
        assert!(f.steps.is_empty());
        assert_eq!(f.to_counts().unwrap().total_count(), 0);
    }

    #[test]
    fn bad_texts_name_the_line() {
        let good = hgrm_of(1..=100u64, 1.0);
        let e = |t: &str| parse_hgrm(t).unwrap_err().to_string();
        assert!(e("").contains("empty"));
        assert!(e("hello\n").contains("line 1: not an .hgrm"));
        let mut lines: Vec<&str> = good.lines().collect();
        lines.swap(3, 4);
        let swapped = e(&lines.join("\n"));
        assert!(swapped.contains("line 5: a step below"), "{swapped}");
        let bad = good.replacen(" 0.000000000000 ", " 7.000000000000 ", 1);
        assert!(e(&bad).contains("is not between 0 and 1"), "{}", e(&bad));
        let bad = good.replace(
            "Total count    =          100]",
            "Total count    =          101]",
        );
        assert!(e(&bad).contains("footer's total count is 101"));
        let bad = format!("{good}       5.000 0.5 3\n");
        assert!(e(&bad).contains("after the footer"));
        let bad = good.replace("#[Buckets", "#[Bogus");
        assert!(e(&bad).contains("unknown footer item"));
        let huge = format!("{}\n99999999999999999999 0.5 1\n", HEADER.join(" "));
        assert!(e(&huge).contains("too large"));
    }

    #[test]
    fn arbitrary_texts_never_panic() {
        let good = hgrm_of(1..=1000u64, 1.0);
        let bytes = good.as_bytes();
        let mut rng = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        let alphabet = b"0123456789. \n#[]=,-eInfity";
        for _ in 0..5000 {
            let mut v = bytes.to_vec();
            for _ in 0..1 + next() % 6 {
                let i = (next() % v.len() as u64) as usize;
                v[i] = alphabet[(next() % alphabet.len() as u64) as usize];
            }
            if let Ok(f) = parse_hgrm(std::str::from_utf8(&v).unwrap()) {
                let _ = f.to_counts();
            }
        }
    }
}
