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
//! with more than [`MAX_TAGS`](select::MAX_TAGS) tags (or `--max-tags`) is refused with an error that says so.

// The parts: `select` (which intervals, and why none) and `sum` (adding them up), both
// leaves.
mod select;
mod sum;

pub(crate) use select::{check_range, Scan, SelectArgs, Selection, Unit};
pub(crate) use sum::{SparseCounts, Tags};

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;

use picollo_alloc::hdr::{decode_blob, interop, BlobForm, HdrCounts, LogReader};
use picollo_alloc::hgrm::{looks_like_hgrm, parse_hgrm};
use picollo_alloc::{Summary, SummaryExt};

use crate::error::{CliError, Result};

/// A tag's sum, while the log is read.
#[derive(Debug, Default)]
struct Summing {
    intervals: usize,
    digits: u8,
    sum: SparseCounts,
}

/// The selected intervals of one tag, added up.
#[derive(Clone, Debug)]
pub(crate) struct Group {
    /// The tag; `None` for untagged intervals.
    pub(crate) tag: Option<String>,
    /// How many intervals were added.
    pub(crate) intervals: usize,
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
    pub(crate) fn counts(&self) -> Result<HdrCounts> {
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
pub(crate) enum Source {
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
pub(crate) struct Log {
    /// The file name, for titles.
    pub(crate) name: String,
    /// Whether any interval of the file has a tag (to name the untagged group).
    pub(crate) has_tags: bool,
    /// The groups.
    pub(crate) groups: Vec<Group>,
    /// What the file holds.
    pub(crate) source: Source,
}

impl Log {
    /// The file and what it holds, for a diff's context lines.
    pub(crate) fn describe(&self) -> String {
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
    pub(crate) fn title(&self, group: &Group, unit: Option<Unit>) -> String {
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
pub(crate) fn load(path: &Path, selection: &Selection) -> Result<Log> {
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
    for entry in selection.intervals(LogReader::new(input), &shown, &mut scan) {
        let entry = entry?;
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

/// The counts of `group` in `unit`: each bucket's midpoint divided and rounded to the
/// nearest integer, re-recorded. The counts as logged when `unit` is `None` or nanoseconds.
///
/// # Errors
/// Only for counts that are not a valid HdrHistogram (which [`load`] does not produce).
pub(crate) fn in_unit(counts: &HdrCounts, unit: Option<Unit>) -> Result<HdrCounts> {
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
pub(crate) fn summary(group: &Group, unit: Option<Unit>) -> Result<Summary> {
    let h = interop::to_picollo(&group.counts()?)
        .map_err(|e| CliError::new(format!("cannot convert the histogram: {e}")))?;
    Ok(h.summary().in_unit(unit.map_or(1, Unit::divisor)))
}

#[cfg(test)]
mod tests {
    use super::*;

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
