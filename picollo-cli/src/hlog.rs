//! Reading HdrHistogram interval logs (`.hlog`) for `report`, `diff` and `plot`.
//!
//! The intervals selected by tag and time are added up per tag, as HdrHistogram's own tools
//! do: into an HdrHistogram of at least 3 significant digits (the log's finest precision if
//! finer), each interval's buckets recorded at their lowest equivalent value. That sum
//! converts exactly (index for index) into a Picollo histogram for the tables.

use std::fs::File;
use std::io::BufReader;
use std::path::Path;

use clap::ValueEnum;
use picollo_alloc::hdr::{interop, HdrCounts, LogReader};
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

/// Which intervals of a log to use.
#[derive(Clone, Debug, Default)]
pub struct Selection {
    /// Only this tag (`Some("")` for the untagged intervals); every tag when `None`.
    pub tag: Option<String>,
    /// The earliest interval start, in seconds from the log's start time.
    pub from: Option<f64>,
    /// The latest interval start, in seconds from the log's start time.
    pub to: Option<f64>,
}

/// The selected intervals of one tag, added up.
#[derive(Clone, Debug)]
pub struct Group {
    /// The tag; `None` for untagged intervals.
    pub tag: Option<String>,
    /// How many intervals were added.
    pub intervals: usize,
    /// Their sum.
    pub counts: HdrCounts,
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
}

impl Log {
    /// The title of `group`: the file name, then `, tag T` or `, untagged` in a tagged log,
    /// then the interval count and the unit.
    pub fn title(&self, group: &Group, unit: Option<Unit>) -> String {
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

/// Reads the selected intervals of the log at `path`, added up per tag.
///
/// # Errors
/// A missing or unreadable file, a malformed line or histogram, a selection that matches no
/// interval.
pub fn load(path: &Path, selection: &Selection) -> Result<Log> {
    let shown = path.display();
    let file = File::open(path)
        .map_err(|e| CliError::new(format!("cannot open {shown}: {e}; check the path")))?;
    let from = selection.from.unwrap_or(f64::NEG_INFINITY);
    let to = selection.to.unwrap_or(f64::INFINITY);
    if from > to {
        return Err(CliError::new(format!(
            "--from {from} is after --to {to}: give the earlier time first"
        )));
    }
    let mut decoded: Vec<(Option<String>, Vec<HdrCounts>)> = Vec::new();
    let mut has_tags = false;
    let mut seen = 0usize;
    let mut span: Option<(f64, f64)> = None;
    let mut tags_seen: Vec<Option<String>> = Vec::new();
    for entry in LogReader::new(BufReader::new(file)) {
        let entry = entry.map_err(|e| {
            CliError::new(format!(
                "{shown}: {e}; is this an HdrHistogram interval log (.hlog)?"
            ))
        })?;
        seen += 1;
        has_tags |= entry.tag.is_some();
        if !tags_seen.contains(&entry.tag) {
            tags_seen.push(entry.tag.clone());
        }
        let t = entry.offset_start_sec;
        span = Some(span.map_or((t, t), |(lo, hi)| (lo.min(t), hi.max(t))));
        if t < from || t > to {
            continue;
        }
        if let Some(want) = &selection.tag {
            if entry.tag.as_deref().unwrap_or("") != want {
                continue;
            }
        }
        let counts = entry.decode().map_err(|e| {
            CliError::new(format!(
                "{shown}: line {}: cannot decode the histogram: {e}; the log is corrupt",
                entry.line
            ))
        })?;
        match decoded.iter_mut().find(|(tag, _)| *tag == entry.tag) {
            Some((_, list)) => list.push(counts),
            None => decoded.push((entry.tag.clone(), vec![counts])),
        }
    }
    if seen == 0 {
        return Err(CliError::new(format!(
            "{shown} holds no interval lines; give an HdrHistogram interval log (.hlog)"
        )));
    }
    if decoded.is_empty() {
        let mut why = Vec::new();
        if let Some(want) = &selection.tag {
            let present: Vec<String> = tags_seen
                .iter()
                .map(|t| t.clone().unwrap_or_else(|| "'' (untagged)".into()))
                .collect();
            why.push(format!(
                "tag {want:?} (tags present: {})",
                present.join(", ")
            ));
        }
        if selection.from.is_some() || selection.to.is_some() {
            let (lo, hi) = span.unwrap_or((0.0, 0.0));
            why.push(format!(
                "start times between {from} and {to} s (the intervals start from {lo:.3} to {hi:.3} s)"
            ));
        }
        return Err(CliError::new(format!(
            "no interval of {shown} matches {}; change the selection",
            why.join(" and ")
        )));
    }
    // Untagged first, then tags in order of appearance.
    decoded.sort_by_key(|(tag, _)| tag.is_some());
    let mut groups = Vec::with_capacity(decoded.len());
    for (tag, list) in decoded {
        let digits = list
            .iter()
            .map(|c| c.significant_digits)
            .max()
            .unwrap_or(3)
            .max(3);
        let mut sum = HdrCounts::new(1, i64::MAX as u64, digits)
            .map_err(|e| CliError::new(format!("{shown}: {e}")))?;
        for c in &list {
            sum.add(c).map_err(|e| {
                CliError::new(format!(
                    "{shown}: cannot add an interval: {e}; the log is corrupt"
                ))
            })?;
        }
        groups.push(Group {
            tag,
            intervals: list.len(),
            counts: sum,
        });
    }
    let name = path
        .file_name()
        .map_or_else(|| shown.to_string(), |n| n.to_string_lossy().into_owned());
    Ok(Log {
        name,
        has_tags,
        groups,
    })
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

/// The summary of `group` in `unit`, through an exact conversion to a Picollo histogram.
///
/// # Errors
/// As [`in_unit`], or a conversion error.
pub fn summary(group: &Group, unit: Option<Unit>) -> Result<Summary> {
    let counts = in_unit(&group.counts, unit)?;
    let h = interop::to_picollo(&counts)
        .map_err(|e| CliError::new(format!("cannot convert the histogram: {e}")))?;
    Ok(h.summary())
}
