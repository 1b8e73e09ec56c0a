//! Which intervals of a log are used: [`Selection`] (tag, time range, tag limit) and the
//! `--unit` they are printed in, and [`Scan`], what a pass saw, which explains a selection
//! that matched nothing. A leaf.

use std::collections::HashSet;
use std::fmt;
use std::io::BufRead;

use clap::{Args, ValueEnum};
use picollo_alloc::hdr::{LogEntry, LogReader};

use crate::error::{CliError, Result};

/// A time unit for `--unit`: the log's values are taken to be nanoseconds and divided.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum Unit {
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
    pub(crate) const fn divisor(self) -> u64 {
        match self {
            Self::Ns => 1,
            Self::Us => 1_000,
            Self::Ms => 1_000_000,
            Self::S => 1_000_000_000,
        }
    }

    /// The unit's symbol.
    pub(crate) const fn symbol(self) -> &'static str {
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
pub(crate) const MAX_TAGS: usize = 100_000;

/// Which intervals of a log to use.
#[derive(Clone, Debug)]
pub(crate) struct Selection {
    /// Only this tag (`Some("")` for the untagged intervals); every tag when `None`.
    pub(crate) tag: Option<String>,
    /// The earliest interval start, in seconds from the log's start time.
    pub(crate) from: Option<f64>,
    /// The latest interval start, in seconds from the log's start time.
    pub(crate) to: Option<f64>,
    /// The most tags taken (see [`MAX_TAGS`]).
    pub(crate) max_tags: usize,
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
    pub(crate) fn takes(&self, t: f64, tag: Option<&str>) -> bool {
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

impl Selection {
    /// The intervals of an interval log this selection takes, in order. Every interval read
    /// is noted in `scan` first (for the error when none is taken); a line that cannot be read
    /// is an error naming the file as `shown`.
    pub(crate) fn intervals<'a, R: BufRead + 'a>(
        &'a self,
        log: LogReader<R>,
        shown: &'a dyn fmt::Display,
        scan: &'a mut Scan,
    ) -> impl Iterator<Item = Result<LogEntry>> + 'a {
        log.filter_map(move |entry| {
            let entry = match entry {
                Ok(entry) => entry,
                Err(e) => {
                    return Some(Err(CliError::new(format!(
                        "{shown}: {e}; is this an HdrHistogram interval log (.hlog)?"
                    ))))
                }
            };
            scan.saw(&entry, self.max_tags);
            self.takes(entry.offset_start_sec, entry.tag.as_deref())
                .then_some(Ok(entry))
        })
    }
}

/// Refuses `--from` after `--to`.
pub(crate) fn check_range(selection: &Selection) -> Result<()> {
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
pub(crate) struct Scan {
    /// Interval lines read.
    pub(crate) seen: usize,
    /// Whether any interval has a tag.
    pub(crate) has_tags: bool,
    /// The distinct tags seen, up to the tag limit.
    tags: Vec<Option<String>>,
    known: HashSet<Option<String>>,
    more_tags: bool,
    span: Option<(f64, f64)>,
}

impl Scan {
    /// Notes an interval.
    pub(crate) fn saw(&mut self, entry: &LogEntry, max_tags: usize) {
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
    pub(crate) fn check(
        &self,
        shown: &str,
        nothing_selected: bool,
        selection: &Selection,
    ) -> Result<()> {
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

// The interval selection options of `report`, `diff`, `plot` and `export` (flattened into
// each; a doc comment here would become their `about`).
#[derive(Debug, Args, Clone)]
pub(crate) struct SelectArgs {
    /// Only intervals with this tag ('' for the untagged ones).
    #[arg(long, value_name = "T")]
    tag: Option<String>,
    /// Only intervals starting at or after S seconds from the log's start time.
    #[arg(long, value_name = "S")]
    from: Option<f64>,
    /// Only intervals starting at or before S seconds from the log's start time.
    #[arg(long, value_name = "S")]
    to: Option<f64>,
    /// Convert values, taking the log to be in nanoseconds (values as logged when absent).
    #[arg(long, value_enum)]
    pub(crate) unit: Option<Unit>,
    /// The most tags an interval log may have: each tag is summed (and exported) on its own,
    /// so a log with more is refused rather than filling memory.
    #[arg(long, value_name = "N", default_value_t = MAX_TAGS)]
    max_tags: usize,
}

impl SelectArgs {
    /// The selection these options ask for.
    ///
    /// # Errors
    /// A `--from` or `--to` that is not finite, or `--max-tags 0`.
    pub(crate) fn selection(&self) -> Result<Selection> {
        for (name, v) in [("--from", self.from), ("--to", self.to)] {
            if v.is_some_and(|v| !v.is_finite()) {
                return Err(CliError::new(format!(
                    "{name} must be a finite number of seconds"
                )));
            }
        }
        if self.max_tags == 0 {
            return Err(CliError::new(
                "--max-tags 0 would refuse every log; give at least 1".to_owned(),
            ));
        }
        Ok(Selection {
            tag: self.tag.clone(),
            from: self.from,
            to: self.to,
            max_tags: self.max_tags,
        })
    }
}
