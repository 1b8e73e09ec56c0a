//! Reading histogram files for `report`, `diff` and `plot`, told apart by content (not by
//! name):
//!
//! - HdrHistogram interval logs (`.hlog`): the intervals selected by tag and time are added
//!   up per tag, as HdrHistogram's own tools do: into an HdrHistogram of at least 3
//!   significant digits (the log's finest precision if finer), each interval's buckets
//!   recorded at their lowest equivalent value;
//! - one encoded histogram (`.hist`, `.histz`): the V2 encoding, plain or compressed, as
//!   bytes or as base64 text;
//! - `.hgrm` percentile distributions: the histogram is rebuilt from the percentile steps
//!   (exact at the steps; the mean and deviation a little high, and said so on stderr);
//!   values with decimals are scaled to whole numbers (`×1000` in the title).
//!
//! Each converts exactly (index for index) into a Picollo histogram for the tables.
//!
//! # Memory
//!
//! An interval log is read as a stream: one interval is decoded at a time and added into its
//! tag's sum, kept sparse (one `(value, count)` pair per non-empty bucket), so a log of any
//! length takes the memory of one interval plus the sums, however many tags it has. A log
//! with more than [`MAX_TAGS`] tags (or `--max-tags`) is refused with an error that says so.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;

use clap::ValueEnum;
use picollo_alloc::hdr::{decode_blob, interop, BlobForm, HdrCounts, LogReader};
use picollo_alloc::hgrm::{looks_like_hgrm, parse_hgrm};
use picollo_alloc::{Summary, SummaryExt};

use crate::error::{CliError, Result};

/// A time unit for `--unit`: the log's values are taken to be nanoseconds and divided.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Unit {
    /// Nanoseconds: the values as logged.
    Ns,
    /// Microseconds: values divided by 1,000.
    Us,
    /// Milliseconds: values divided by 1,000,000.
    Ms,
    /// Seconds: values divided by 1,000,000,000.
    S,
}

impl Unit {
    /// What the logged nanoseconds are divided by.
    pub const fn divisor(self) -> u64 {
        match self {
            Self::Ns => 1,
            Self::Us => 1_000,
            Self::Ms => 1_000_000,
            Self::S => 1_000_000_000,
        }
    }

    /// The unit's symbol.
    pub const fn symbol(self) -> &'static str {
        match self {
            Self::Ns => "ns",
            Self::Us => "us",
            Self::Ms => "ms",
            Self::S => "s",
        }
    }
}

/// The most tags a log may have (selected tags, each with its own sum and table) unless
/// `--max-tags` says otherwise: 100,000.
pub const MAX_TAGS: usize = 100_000;

/// Which intervals of a log to use.
#[derive(Clone, Debug)]
pub struct Selection {
    /// Only this tag (`Some("")` for the untagged intervals); every tag when `None`.
    pub tag: Option<String>,
    /// The earliest interval start, in seconds from the log's start time.
    pub from: Option<f64>,
    /// The latest interval start, in seconds from the log's start time.
    pub to: Option<f64>,
    /// The most tags taken (see [`MAX_TAGS`]).
    pub max_tags: usize,
}

impl Default for Selection {
    fn default() -> Self {
        Self {
            tag: None,
            from: None,
            to: None,
            max_tags: MAX_TAGS,
        }
    }
}

impl Selection {
    /// Whether an interval starting `t` seconds after the log's start, with `tag`, is selected.
    pub fn takes(&self, t: f64, tag: Option<&str>) -> bool {
        let from = self.from.unwrap_or(f64::NEG_INFINITY);
        let to = self.to.unwrap_or(f64::INFINITY);
        t >= from
            && t <= to
            && self
                .tag
                .as_ref()
                .is_none_or(|want| tag.unwrap_or("") == want)
    }
}

/// HdrHistogram counts added up sparsely: one `(value, count)` pair per non-empty bucket,
/// sorted by value, where the value is the bucket's lowest (HdrHistogram's `add` rule: each
/// bucket is recorded at its lowest equivalent value).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SparseCounts {
    entries: Vec<(u64, u64)>,
}

impl SparseCounts {
    /// Adds the non-empty buckets of `counts`; `scratch` is a buffer reused between calls.
    ///
    /// # Errors
    /// A count that overflows `u64` (the sum is left as it was).
    pub fn add(&mut self, counts: &HdrCounts, scratch: &mut Vec<(u64, u64)>) -> Result<()> {
        scratch.clear();
        let mut mine = self.entries.iter().copied().peekable();
        for b in counts.iter_recorded() {
            while let Some(&(v, n)) = mine.peek() {
                if v >= b.lowest {
                    break;
                }
                scratch.push((v, n));
                mine.next();
            }
            let mut n = b.count;
            if let Some(&(v, m)) = mine.peek() {
                if v == b.lowest {
                    n = n.checked_add(m).ok_or_else(|| {
                        CliError::new(format!(
                            "the counts at value {v} overflow 64 bits; the log is corrupt"
                        ))
                    })?;
                    mine.next();
                }
            }
            match scratch.last_mut() {
                // Buckets whose lowest values coincide (never in a valid histogram).
                Some((v, m)) if *v == b.lowest => {
                    *m = m.checked_add(n).ok_or_else(|| {
                        CliError::new(format!("the counts at value {v} overflow 64 bits"))
                    })?
                }
                _ => scratch.push((b.lowest, n)),
            }
        }
        scratch.extend(mine);
        // Copied rather than swapped, so each sum keeps a capacity of its own size.
        self.entries.clear();
        self.entries.extend_from_slice(scratch);
        Ok(())
    }

    /// The sum as HdrHistogram counts of the given geometry, each value recorded at its index.
    ///
    /// # Errors
    /// An invalid geometry, or a value beyond it.
    pub fn to_counts(
        &self,
        lowest_discernible: u64,
        highest_trackable: u64,
        significant_digits: u8,
    ) -> std::result::Result<HdrCounts, picollo_alloc::hdr::HdrError> {
        let mut out = HdrCounts::new(lowest_discernible, highest_trackable, significant_digits)?;
        for &(v, n) in &self.entries {
            out.record(v, n)?;
        }
        Ok(out)
    }
}

/// Per-tag state of a log read as a stream: found by hash, kept in order of first
/// appearance, at most `max` tags.
#[derive(Debug)]
pub struct Tags<T> {
    index: HashMap<Option<String>, usize>,
    tags: Vec<(Option<String>, T)>,
    max: usize,
}

impl<T> Tags<T> {
    /// No tags yet; at most `max`.
    pub fn new(max: usize) -> Self {
        Self {
            index: HashMap::new(),
            tags: Vec::new(),
            max,
        }
    }

    /// The state of `tag`, made by `make` if it is new.
    ///
    /// # Errors
    /// `tag` would be one tag more than the limit.
    pub fn entry(&mut self, tag: &Option<String>, make: impl FnOnce() -> T) -> Result<&mut T> {
        let i = match self.index.get(tag) {
            Some(&i) => i,
            None => {
                if self.tags.len() >= self.max {
                    return Err(CliError::new(format!(
                        "the log has more than {} tags (the limit, each tag being summed and \
                         reported on its own); select one with --tag, or raise the limit with \
                         --max-tags",
                        self.max
                    )));
                }
                self.index.insert(tag.clone(), self.tags.len());
                self.tags.push((tag.clone(), make()));
                self.tags.len() - 1
            }
        };
        Ok(&mut self.tags[i].1)
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.tags.is_empty()
    }

    /// The tags and their states: untagged first, then tags in order of first appearance.
    pub fn into_ordered(mut self) -> Vec<(Option<String>, T)> {
        self.tags.sort_by_key(|(tag, _)| tag.is_some());
        self.tags
    }
}

/// A tag's sum, while the log is read.
#[derive(Debug, Default)]
struct Summing {
    intervals: usize,
    digits: u8,
    sum: SparseCounts,
}

/// The selected intervals of one tag, added up.
#[derive(Clone, Debug)]
pub struct Group {
    /// The tag; `None` for untagged intervals.
    pub tag: Option<String>,
    /// How many intervals were added.
    pub intervals: usize,
    sum: GroupSum,
}

/// A group's sum: one histogram as read, or an interval log's sparse sum.
#[derive(Clone, Debug)]
enum GroupSum {
    Whole(HdrCounts),
    Sparse { digits: u8, sum: SparseCounts },
}

impl Group {
    /// The sum as HdrHistogram counts: for an interval log, an HdrHistogram of at least 3
    /// significant digits (the log's finest precision if finer) covering every 63-bit value,
    /// built now (one group at a time keeps memory small).
    ///
    /// # Errors
    /// A value that does not fit (a corrupt log).
    pub fn counts(&self) -> Result<HdrCounts> {
        match &self.sum {
            GroupSum::Whole(c) => Ok(c.clone()),
            GroupSum::Sparse { digits, sum } => {
                sum.to_counts(1, i64::MAX as u64, *digits).map_err(|e| {
                    CliError::new(format!("cannot add an interval: {e}; the log is corrupt"))
                })
            }
        }
    }
}

/// What a file holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// An interval log.
    Hlog,
    /// An `.hgrm` percentile distribution; values are the file's times `scale`.
    Hgrm {
        /// `10^decimals` of the file's value column (1 for whole numbers).
        scale: u64,
    },
    /// One encoded histogram.
    Blob(BlobForm),
}

/// A log's groups, in the order their tags first appear (untagged first when present).
#[derive(Clone, Debug)]
pub struct Log {
    /// The file name, for titles.
    pub name: String,
    /// Whether any interval of the file has a tag (to name the untagged group).
    pub has_tags: bool,
    /// The groups.
    pub groups: Vec<Group>,
    /// What the file holds.
    pub source: Source,
}

impl Log {
    /// The file and what it holds, for a diff's context lines.
    pub fn describe(&self) -> String {
        match self.source {
            Source::Hlog => {
                let n: usize = self.groups.iter().map(|g| g.intervals).sum();
                format!("{} ({n} intervals)", self.name)
            }
            Source::Hgrm { .. } => format!("{} (.hgrm percentile distribution)", self.name),
            Source::Blob(_) => format!("{} (one histogram)", self.name),
        }
    }

    /// The title of `group`: the file name, then `, tag T` or `, untagged` in a tagged log,
    /// then the interval count (or what the file holds) and the unit.
    pub fn title(&self, group: &Group, unit: Option<Unit>) -> String {
        let unit_text = unit.map_or(String::new(), |u| format!(", {}", u.symbol()));
        match self.source {
            Source::Hgrm { scale } => {
                let scaled = if scale > 1 {
                    format!(", values ×{scale}")
                } else {
                    String::new()
                };
                return format!("{} (percentile distribution{scaled}{unit_text})", self.name);
            }
            Source::Blob(_) => return format!("{} (one histogram{unit_text})", self.name),
            Source::Hlog => {}
        }
        let mut t = self.name.clone();
        match (&group.tag, self.has_tags) {
            (Some(tag), _) => t.push_str(&format!(", tag {tag}")),
            (None, true) => t.push_str(", untagged"),
            (None, false) => {}
        }
        let n = group.intervals;
        t.push_str(&format!(
            " ({n} interval{}{})",
            if n == 1 { "" } else { "s" },
            unit.map_or(String::new(), |u| format!(", {}", u.symbol()))
        ));
        t
    }
}

/// Files that do not start like an interval log, up to this size, are read whole to tell
/// their format by content; larger ones can only be interval logs (read as a stream).
const WHOLE_FILE_BYTES: u64 = 64 << 20;

/// Reads the histogram file at `path`: an interval log's selected intervals added up per
/// tag, an `.hgrm` distribution or one encoded histogram (see the [module docs](self)).
///
/// # Errors
/// A missing or unreadable file, a malformed line or histogram, a selection that matches no
/// interval (or any selection, for a file that is not an interval log).
pub fn load(path: &Path, selection: &Selection) -> Result<Log> {
    let shown = path.display();
    let open = || {
        File::open(path)
            .map_err(|e| CliError::new(format!("cannot open {shown}: {e}; check the path")))
    };
    let mut file = open()?;
    let size = file.metadata().map_or(u64::MAX, |m| m.len());
    let name = path
        .file_name()
        .map_or_else(|| shown.to_string(), |n| n.to_string_lossy().into_owned());
    // An interval log says so on its first line: streamed from there, never read whole.
    let mut head = Vec::with_capacity(SNIFF_BYTES as usize);
    (&mut file)
        .take(SNIFF_BYTES)
        .read_to_end(&mut head)
        .map_err(|e| CliError::new(format!("cannot read {shown}: {e}")))?;
    if looks_like_hlog(&head) {
        return load_hlog(
            path,
            BufReader::new(std::io::Cursor::new(head).chain(file)),
            selection,
        );
    }
    if size <= WHOLE_FILE_BYTES {
        let mut bytes = head;
        bytes.reserve(
            usize::try_from(size)
                .unwrap_or(0)
                .saturating_sub(bytes.len()),
        );
        file.read_to_end(&mut bytes)
            .map_err(|e| CliError::new(format!("cannot read {shown}: {e}")))?;
        if let Some(log) = load_single(&name, &bytes, selection)? {
            return Ok(log);
        }
        return load_hlog(path, BufReader::new(bytes.as_slice()), selection);
    }
    load_hlog(
        path,
        BufReader::new(std::io::Cursor::new(head).chain(file)),
        selection,
    )
}

/// How much of a file is read to tell an interval log from the other formats.
const SNIFF_BYTES: u64 = 4096;

/// Whether `head` (a file's first bytes) starts like an HdrHistogram interval log: its first
/// non-empty line is a `#[…]` header, the column legend, or an interval line (tagged, or four
/// comma-separated columns ending in an encoded histogram).
fn looks_like_hlog(head: &[u8]) -> bool {
    let text = match std::str::from_utf8(head) {
        Ok(t) => t,
        // Cut in the middle of a character: what comes before it.
        Err(e) => std::str::from_utf8(&head[..e.valid_up_to()]).unwrap_or(""),
    };
    // Comment lines (`#[…]`) start interval logs and HdrHistogram Java's `.hgrm` files alike
    // (both may carry `#[StartTime: …]`): the first line that is not a comment decides. A head
    // of comments only is taken for a log (a log with no interval yet).
    let mut comments = false;
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if line.starts_with('#') {
            comments = true;
            continue;
        }
        return line.starts_with("\"StartTimestamp\"")
            || line.starts_with("Tag=")
            || line
                .split(',')
                .nth(3)
                .is_some_and(|h| h.starts_with("HIST") || h.starts_with("DHIS"));
    }
    comments
}

/// An `.hgrm` file or an encoded histogram, or `None` for anything else.
fn load_single(name: &str, bytes: &[u8], selection: &Selection) -> Result<Option<Log>> {
    let blob = decode_blob(bytes).map_err(|e| {
        CliError::new(format!(
            "{name}: looks like an encoded HdrHistogram but does not decode: {e}"
        ))
    })?;
    let (counts, source) = match blob {
        Some((counts, form)) => (counts, Source::Blob(form)),
        None => {
            let Some(text) = std::str::from_utf8(bytes)
                .ok()
                .filter(|t| looks_like_hgrm(t))
            else {
                return Ok(None);
            };
            let file = parse_hgrm(text).map_err(|e| {
                CliError::new(format!("{name}: {e}; the .hgrm percentile file is damaged"))
            })?;
            let counts = file
                .to_counts()
                .map_err(|e| CliError::new(format!("{name}: {e}")))?;
            let fmt = |v: Option<f64>| v.map_or("?".to_owned(), |v| format!("{v}"));
            eprintln!(
                "picollo: {name}: rebuilt from its {} percentile steps: percentiles at the steps \
                 are exact, the mean and stdev a little high (the file says mean {}, stdev {}{})",
                file.steps.len(),
                fmt(file.mean),
                fmt(file.stdev),
                if file.scale() > 1 {
                    format!("; values ×{} to make them whole", file.scale())
                } else {
                    String::new()
                }
            );
            (
                counts,
                Source::Hgrm {
                    scale: file.scale(),
                },
            )
        }
    };
    if selection.tag.is_some() || selection.from.is_some() || selection.to.is_some() {
        return Err(CliError::new(format!(
            "{name} holds one histogram, not an interval log: --tag, --from and --to do not \
             apply; drop them"
        )));
    }
    Ok(Some(Log {
        name: name.to_owned(),
        has_tags: false,
        groups: vec![Group {
            tag: None,
            intervals: 1,
            sum: GroupSum::Whole(counts),
        }],
        source,
    }))
}

fn load_hlog(path: &Path, input: impl std::io::BufRead, selection: &Selection) -> Result<Log> {
    let shown = path.display();
    check_range(selection)?;
    let mut sums: Tags<Summing> = Tags::new(selection.max_tags);
    let mut scan = Scan::default();
    let mut scratch = Vec::new();
    for entry in LogReader::new(input) {
        let entry = entry.map_err(|e| {
            CliError::new(format!(
                "{shown}: {e}; is this an HdrHistogram interval log (.hlog)?"
            ))
        })?;
        scan.saw(&entry, selection.max_tags);
        if !selection.takes(entry.offset_start_sec, entry.tag.as_deref()) {
            continue;
        }
        let counts = entry.decode().map_err(|e| {
            CliError::new(format!(
                "{shown}: line {}: cannot decode the histogram: {e}; the log is corrupt",
                entry.line
            ))
        })?;
        let s = sums.entry(&entry.tag, Summing::default)?;
        s.intervals += 1;
        s.digits = s.digits.max(counts.significant_digits);
        s.sum
            .add(&counts, &mut scratch)
            .map_err(|e| CliError::new(format!("{shown}: line {}: {e}", entry.line)))?;
    }
    scan.check(&shown.to_string(), sums.is_empty(), selection)?;
    let groups = sums
        .into_ordered()
        .into_iter()
        .map(|(tag, s)| Group {
            tag,
            intervals: s.intervals,
            sum: GroupSum::Sparse {
                digits: s.digits.max(3),
                sum: s.sum,
            },
        })
        .collect();
    let name = path
        .file_name()
        .map_or_else(|| shown.to_string(), |n| n.to_string_lossy().into_owned());
    Ok(Log {
        name,
        has_tags: scan.has_tags,
        groups,
        source: Source::Hlog,
    })
}

/// Refuses `--from` after `--to`.
pub fn check_range(selection: &Selection) -> Result<()> {
    let from = selection.from.unwrap_or(f64::NEG_INFINITY);
    let to = selection.to.unwrap_or(f64::INFINITY);
    if from > to {
        return Err(CliError::new(format!(
            "--from {from} is after --to {to}: give the earlier time first"
        )));
    }
    Ok(())
}

/// What a pass over a log saw, for its error messages: intervals, tags (a bounded sample),
/// start times.
#[derive(Debug, Default)]
pub struct Scan {
    /// Interval lines read.
    pub seen: usize,
    /// Whether any interval has a tag.
    pub has_tags: bool,
    /// The distinct tags seen, up to the tag limit.
    tags: Vec<Option<String>>,
    known: HashSet<Option<String>>,
    more_tags: bool,
    span: Option<(f64, f64)>,
}

impl Scan {
    /// Notes an interval.
    pub fn saw(&mut self, entry: &picollo_alloc::hdr::LogEntry, max_tags: usize) {
        self.seen += 1;
        self.has_tags |= entry.tag.is_some();
        if !self.known.contains(&entry.tag) {
            if self.known.len() < max_tags {
                self.known.insert(entry.tag.clone());
                self.tags.push(entry.tag.clone());
            } else {
                self.more_tags = true;
            }
        }
        let t = entry.offset_start_sec;
        self.span = Some(self.span.map_or((t, t), |(lo, hi)| (lo.min(t), hi.max(t))));
    }

    /// The error for a log with no interval, or none selected.
    ///
    /// # Errors
    /// When `nothing_selected` or no interval was seen.
    pub fn check(&self, shown: &str, nothing_selected: bool, selection: &Selection) -> Result<()> {
        if self.seen == 0 {
            return Err(CliError::new(format!(
                "{shown} holds no interval lines; give an HdrHistogram interval log (.hlog), an \
                 .hgrm percentile file or an encoded histogram (.hist, .histz)"
            )));
        }
        if !nothing_selected {
            return Ok(());
        }
        let mut why = Vec::new();
        if let Some(want) = &selection.tag {
            const SHOWN: usize = 20;
            let mut present: Vec<String> = self
                .tags
                .iter()
                .take(SHOWN)
                .map(|t| t.clone().unwrap_or_else(|| "'' (untagged)".into()))
                .collect();
            if self.tags.len() > SHOWN || self.more_tags {
                present.push(format!(
                    "… ({}{} in all)",
                    if self.more_tags { "more than " } else { "" },
                    self.tags.len()
                ));
            }
            why.push(format!(
                "tag {want:?} (tags present: {})",
                present.join(", ")
            ));
        }
        if selection.from.is_some() || selection.to.is_some() {
            let from = selection.from.unwrap_or(f64::NEG_INFINITY);
            let to = selection.to.unwrap_or(f64::INFINITY);
            let (lo, hi) = self.span.unwrap_or((0.0, 0.0));
            why.push(format!(
                "start times between {from} and {to} s (the intervals start from {lo:.3} to {hi:.3} s)"
            ));
        }
        Err(CliError::new(format!(
            "no interval of {shown} matches {}; change the selection",
            why.join(" and ")
        )))
    }
}

/// The counts of `group` in `unit`: each bucket's midpoint divided and rounded to the
/// nearest integer, re-recorded. The counts as logged when `unit` is `None` or nanoseconds.
///
/// # Errors
/// Only for counts that are not a valid HdrHistogram (which [`load`] does not produce).
pub fn in_unit(counts: &HdrCounts, unit: Option<Unit>) -> Result<HdrCounts> {
    let div = unit.map_or(1, Unit::divisor);
    if div == 1 {
        return Ok(counts.clone());
    }
    let err = |e: picollo_alloc::hdr::HdrError| CliError::new(format!("unit conversion: {e}"));
    let mut out = HdrCounts::new(
        counts.lowest_discernible,
        counts.highest_trackable,
        counts.significant_digits,
    )
    .map_err(err)?;
    for b in counts.iter_recorded() {
        let mid = b.lowest / 2 + b.highest / 2 + (b.lowest % 2 + b.highest % 2) / 2;
        let v = (mid + div / 2) / div;
        out.record(v, b.count).map_err(err)?;
    }
    Ok(out)
}

/// The summary of `group`, through an exact conversion to a Picollo histogram, printed in
/// `unit`: the buckets stay as logged and values are divided when printed, with the decimals
/// the unit needs ([`Summary::in_unit`]), so `--unit us` shows `16.384` where nanoseconds
/// show `16,384`, and nothing is re-bucketed or rounded.
///
/// # Errors
/// A conversion error (not for what [`load`] produces).
pub fn summary(group: &Group, unit: Option<Unit>) -> Result<Summary> {
    let h = interop::to_picollo(&group.counts()?)
        .map_err(|e| CliError::new(format!("cannot convert the histogram: {e}")))?;
    Ok(h.summary().in_unit(unit.map_or(1, Unit::divisor)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(digits: u8, values: &[(u64, u64)]) -> HdrCounts {
        let mut c = HdrCounts::new(1, 1 << 40, digits).unwrap();
        for &(v, n) in values {
            c.record(v, n).unwrap();
        }
        c
    }

    /// The sparse sum, rebuilt, equals HdrHistogram's `add` of the same intervals, at equal
    /// and at different precisions.
    #[test]
    fn sparse_sum_is_hdr_add() {
        let intervals = [
            counts(3, &[(1, 2), (1000, 1), (5_000_000, 7)]),
            counts(3, &[(1, 1), (999, 4), (123_456_789, 1)]),
            counts(2, &[(7, 1), (1000, 3), (5_000_001, 2)]),
            counts(3, &[]),
        ];
        let mut dense = HdrCounts::new(1, i64::MAX as u64, 3).unwrap();
        let mut sparse = SparseCounts::default();
        let mut scratch = Vec::new();
        for c in &intervals {
            dense.add(c).unwrap();
            sparse.add(c, &mut scratch).unwrap();
        }
        let rebuilt = sparse.to_counts(1, i64::MAX as u64, 3).unwrap();
        assert!(rebuilt.same_content(&dense));
        assert_eq!(rebuilt.total_count(), 2 + 1 + 7 + 1 + 4 + 1 + 1 + 3 + 2);
        // Overflow is an error, and leaves the sum as it was.
        let mut big = SparseCounts::default();
        big.add(&counts(3, &[(5, u64::MAX)]), &mut scratch).unwrap();
        let before = big.clone();
        assert!(big.add(&counts(3, &[(5, 1)]), &mut scratch).is_err());
        assert_eq!(big, before);
    }

    #[test]
    fn tag_limit() {
        let mut tags: Tags<u32> = Tags::new(2);
        *tags.entry(&Some("a".into()), || 0).unwrap() += 1;
        *tags.entry(&None, || 0).unwrap() += 1;
        *tags.entry(&Some("a".into()), || 0).unwrap() += 1;
        let e = tags.entry(&Some("b".into()), || 0).unwrap_err();
        assert!(e.to_string().contains("more than 2 tags"), "{e}");
        assert_eq!(
            tags.into_ordered(),
            [(None, 1), (Some("a".to_owned()), 2)],
            "untagged first"
        );
    }

    #[test]
    fn sniffing() {
        for hlog in [
            "#[Logged with jHiccup]\n",
            "\n\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"\n",
            "Tag=a,0.1,1.0,2.0,HISTFAAA\n",
            "0.127,1.007,2.769,HISTFAAAAEV42pNp\n",
            "#[StartTime: 1441812279.474 (seconds since epoch)]\n0.127,1.007,2.769,HISTFAAAAEV42pNp\n",
        ] {
            assert!(looks_like_hlog(hlog.as_bytes()), "{hlog:?}");
        }
        for other in [
            "       Value     Percentile TotalCount 1/(1-Percentile)\n",
            // HdrHistogram Java's HistogramLogProcessor: two comment lines, then the header.
            "#[Overall percentile distribution between 0.000 and <Infinite> seconds]\n\
             #[StartTime: 1441812279.474 (seconds since epoch)]\n\
             \x20      Value     Percentile TotalCount 1/(1-Percentile)\n",
            "HISTFAAAACl42pNpmSzMwMDAxAABzFCaEUKLQ2gmCM0HoQUhNDOEZoHSAEc5Ask=",
            "",
            "\u{1c}\u{84}\u{93}\u{14}\0\0",
        ] {
            assert!(!looks_like_hlog(other.as_bytes()), "{other:?}");
        }
    }
}
