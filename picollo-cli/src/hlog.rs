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

/// Files up to this size are read whole to tell their format by content; larger ones can
/// only be interval logs (read as a stream).
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
    if size <= WHOLE_FILE_BYTES {
        let mut bytes = Vec::with_capacity(size as usize);
        file.read_to_end(&mut bytes)
            .map_err(|e| CliError::new(format!("cannot read {shown}: {e}")))?;
        if let Some(log) = load_single(&name, &bytes, selection)? {
            return Ok(log);
        }
        return load_hlog(path, BufReader::new(bytes.as_slice()), selection);
    }
    load_hlog(path, BufReader::new(file), selection)
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
            counts,
        }],
        source,
    }))
}

fn load_hlog(path: &Path, input: impl std::io::BufRead, selection: &Selection) -> Result<Log> {
    let shown = path.display();
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
    for entry in LogReader::new(input) {
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
            "{shown} holds no interval lines; give an HdrHistogram interval log (.hlog), an \
             .hgrm percentile file or an encoded histogram (.hist, .histz)"
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
        source: Source::Hlog,
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

/// The summary of `group`, through an exact conversion to a Picollo histogram, printed in
/// `unit`: the buckets stay as logged and values are divided when printed, with the decimals
/// the unit needs ([`Summary::in_unit`]), so `--unit us` shows `16.384` where nanoseconds
/// show `16,384`, and nothing is re-bucketed or rounded.
///
/// # Errors
/// A conversion error (not for what [`load`] produces).
pub fn summary(group: &Group, unit: Option<Unit>) -> Result<Summary> {
    let h = interop::to_picollo(&group.counts)
        .map_err(|e| CliError::new(format!("cannot convert the histogram: {e}")))?;
    Ok(h.summary().in_unit(unit.map_or(1, Unit::divisor)))
}
