//! Interval logs: a histogram per interval of time, one line each, as HdrHistogram (Java)'s
//! `HistogramLogWriter` and `HistogramLogReader` write and read them (`.hlog` files).
//!
//! ```text
//! #[StartTime: 1441812279.474 (seconds since epoch), Wed Sep 09 15:24:39 UTC 2015]
//! "StartTimestamp","Interval_Length","Interval_Max","Interval_Compressed_Histogram"
//! 0.127,1.007,2.769,HISTFAAAAEV42pNpmSzMwMCgyAABTBDKT4GBgdnNYMcCBvsPEBEJ...
//! Tag=A,0.127,1.007,2.769,HISTFAAAAEV42pNpmSzMwMCgyAABTBDKT4GBgdnNYMcCBvsPEBEJ...
//! ```
//!
//! An interval line is `[Tag=<tag>,]<start>,<duration>,<max>,<histogram>`: the start and the
//! duration in seconds, the largest value divided by a display divisor, the histogram encoded
//! (V2 or V2 + DEFLATE) then base64. Lines starting with `#` are comments, and so are the
//! `#[StartTime: ...]` and `#[BaseTime: ...]` headers, which the parser reports as entries.
//!
//! - To write a log: [`IntervalLogWriterBuilder`] (comments and headers), then
//!   [`IntervalLogWriter`] (comments and histograms).
//! - To read one: [`IntervalLogIterator`] over the log's bytes. It yields the headers and the
//!   intervals with their metadata; a histogram is only decoded when you decode it (base64,
//!   then a [`Deserializer`](super::Deserializer)), so finding the intervals you want is cheap.
//!
//! # Timestamps
//!
//! What an interval's start timestamp is relative to depends on the headers:
//!
//! - **BaseTime** (seconds since the epoch): interval timestamps are seconds since it.
//! - Without a BaseTime, interval timestamps are seconds since the epoch, except that Java's
//!   reader takes them as seconds since **StartTime** when they are more than a year smaller
//!   than it.
//! - **StartTime** (seconds since the epoch) says when the measured thing started (a process, a
//!   benchmark), which can be before the first interval; a consumer that plots intervals over
//!   time may take it as time zero.
//!
//! The writer writes each header at most once, before any interval. A log may hold several (Java
//! resets its notion of start on each); the iterator yields every one where it is, and what
//! they mean for the intervals after them is left to the caller.
//!
//! # Examples
//!
//! Writing a log, then reading it back:
//!
//! ```
//! use hdrhistogram::serialization::interval_log::{
//!     IntervalLogIterator, IntervalLogWriterBuilder, LogEntry, Tag,
//! };
//! use hdrhistogram::serialization::V2DeflateSerializer;
//! use hdrhistogram::Histogram;
//! use std::time::{Duration, SystemTime};
//! # use picollo_hdrhistogram as hdrhistogram;
//!
//! let mut log = Vec::new();
//! let mut serializer = V2DeflateSerializer::new();
//! {
//!     let mut writer = IntervalLogWriterBuilder::new()
//!         .add_comment("latency of GET /")
//!         .with_start_time(SystemTime::now())
//!         .with_max_value_divisor(1_000_000.0) // nanoseconds shown as milliseconds
//!         .begin_log_with(&mut log, &mut serializer)
//!         .unwrap();
//!     let mut h = Histogram::<u64>::new_with_bounds(1, 60_000_000_000, 3).unwrap();
//!     for second in 0..3u64 {
//!         h.record(2_000_000 * (second + 1)).unwrap();
//!         let start = Duration::from_secs(second);
//!         writer
//!             .write_histogram(&h, start, Duration::from_secs(1), Tag::new("get"))
//!             .unwrap();
//!         h.reset();
//!     }
//! }
//!
//! let maxima: Vec<f64> = IntervalLogIterator::new(&log)
//!     .filter_map(|entry| match entry.unwrap() {
//!         LogEntry::Interval(interval) => Some(interval.max()),
//!         LogEntry::StartTime(_) | LogEntry::BaseTime(_) => None,
//!     })
//!     .collect();
//! assert_eq!(maxima, [2.001, 4.002, 6.001]);
//! ```
//!
//! Reading lines, skipping comments:
//!
//! ```
//! use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
//! use std::time::Duration;
//! # use picollo_hdrhistogram as hdrhistogram;
//!
//! let log = b"#a comment\n1.500,1.000,0.042,HISTFAAAAB...\n";
//! let mut entries = IntervalLogIterator::new(log);
//! match entries.next() {
//!     Some(Ok(LogEntry::Interval(interval))) => {
//!         assert_eq!(interval.start_timestamp(), Duration::from_millis(1_500));
//!         assert_eq!(interval.tag(), None);
//!         assert_eq!(interval.encoded_histogram(), "HISTFAAAAB...");
//!     }
//!     other => panic!("{other:?}"),
//! }
//! assert_eq!(entries.next(), None);
//! ```

use std::error::Error;
use std::fmt::Write as _;
use std::{fmt, io, ops, time};

use base64::Engine as _;

use super::Serializer;
use crate::{Counter, Histogram};

mod parse;

/// Starts an interval log: the comments and headers that come before the intervals.
///
/// Set them, then [`begin_log_with`](Self::begin_log_with) writes them and returns the
/// [`IntervalLogWriter`] for the intervals.
pub struct IntervalLogWriterBuilder {
    comments: Vec<String>,
    start_time: Option<f64>,
    base_time: Option<f64>,
    max_value_divisor: f64,
}

impl Default for IntervalLogWriterBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl IntervalLogWriterBuilder {
    /// A builder with no comments, no headers and a max value divisor of 1.
    pub fn new() -> IntervalLogWriterBuilder {
        IntervalLogWriterBuilder {
            comments: Vec::new(),
            start_time: None,
            base_time: None,
            max_value_divisor: 1.0,
        }
    }

    /// Adds a comment, written first, in the order added. Each line of a comment with `\n` in it
    /// is a comment line of its own.
    pub fn add_comment(&mut self, s: &str) -> &mut Self {
        self.comments.push(s.to_owned());
        self
    }

    /// Sets the StartTime header (see the [module's docs](self) on timestamps). A later call
    /// replaces the time.
    pub fn with_start_time(&mut self, time: time::SystemTime) -> &mut Self {
        self.start_time = Some(system_time_as_fp_seconds(time));
        self
    }

    /// Sets the BaseTime header (see the [module's docs](self) on timestamps). A later call
    /// replaces the time.
    pub fn with_base_time(&mut self, time: time::SystemTime) -> &mut Self {
        self.base_time = Some(system_time_as_fp_seconds(time));
        self
    }

    /// Sets what each interval's maximum is divided by in its line (1 unless set): the column
    /// is for people to read, so nanoseconds can be shown as milliseconds with 10<sup>6</sup>.
    /// A divisor other than 1 is recorded in a `#[MaxValueDivisor: ...]` comment. A later
    /// call replaces the divisor.
    pub fn with_max_value_divisor(&mut self, max_value_divisor: f64) -> &mut Self {
        self.max_value_divisor = max_value_divisor;
        self
    }

    /// Writes the comments and headers to `writer` and returns the writer of the intervals,
    /// which encodes histograms with `serializer`.
    ///
    /// # Errors
    /// A failed write.
    pub fn begin_log_with<'a, 'b, W: 'a + io::Write, S: 'b + Serializer>(
        &self,
        writer: &'a mut W,
        serializer: &'b mut S,
    ) -> Result<IntervalLogWriter<'a, 'b, W, S>, io::Error> {
        let mut log = IntervalLogWriter {
            writer,
            serializer,
            line: String::new(),
            encoded: Vec::new(),
            max_value_divisor: self.max_value_divisor,
        };
        for c in &self.comments {
            log.write_comment(c)?;
        }
        if let Some(t) = self.start_time {
            writeln!(log.writer, "#[StartTime: {t:.3} (seconds since epoch)]")?;
        }
        if let Some(t) = self.base_time {
            writeln!(log.writer, "#[BaseTime: {t:.3} (seconds since epoch)]")?;
        }
        // Java writes no such line, but a maximum divided without a trace would mislead.
        if self.max_value_divisor != 1.0 {
            writeln!(
                log.writer,
                "#[MaxValueDivisor: {:.3}]",
                self.max_value_divisor
            )?;
        }
        Ok(log)
    }
}

/// Writes the intervals of a log (and comments between them).
///
/// Made by [`IntervalLogWriterBuilder::begin_log_with`]; write a histogram for each interval
/// as it ends.
///
/// ```
/// use hdrhistogram::serialization::interval_log::IntervalLogWriterBuilder;
/// use hdrhistogram::serialization::V2Serializer;
/// use hdrhistogram::Histogram;
/// use std::time::Duration;
/// # use picollo_hdrhistogram as hdrhistogram;
///
/// let mut log = Vec::new();
/// let mut serializer = V2Serializer::new();
/// let mut writer = IntervalLogWriterBuilder::new()
///     .begin_log_with(&mut log, &mut serializer)
///     .unwrap();
/// writer.write_comment("warm-up done").unwrap();
/// let h = Histogram::<u64>::new(3).unwrap();
/// writer
///     .write_histogram(&h, Duration::from_secs(10), Duration::from_secs(1), None)
///     .unwrap();
/// let text = std::str::from_utf8(&log).unwrap();
/// assert!(text.starts_with("#warm-up done\n10.000,1.000,0.000,HIST"));
/// ```
pub struct IntervalLogWriter<'a, 'b, W: 'a + io::Write, S: 'b + Serializer> {
    writer: &'a mut W,
    serializer: &'b mut S,
    /// The text of a line: its tag, then the base64 of its histogram.
    line: String,
    /// A histogram's encoding.
    encoded: Vec<u8>,
    max_value_divisor: f64,
}

impl<'a, 'b, W: 'a + io::Write, S: 'b + Serializer> IntervalLogWriter<'a, 'b, W, S> {
    /// Writes a comment. Each line of a comment with `\n` in it is a comment line of its own.
    ///
    /// # Errors
    /// A failed write.
    pub fn write_comment(&mut self, s: &str) -> io::Result<()> {
        for line in s.split('\n') {
            writeln!(self.writer, "#{line}")?;
        }
        Ok(())
    }

    /// Writes the line of one interval: `h` encoded with the log's serializer.
    ///
    /// `start_timestamp` is when the interval started: seconds since the epoch, or since the
    /// log's BaseTime when it has one (see the [module's docs](self) on timestamps).
    /// `duration` is how long the interval lasted; `tag`, if any, labels the line.
    ///
    /// # Errors
    /// A failed serialization or write. The line's start may have been written when the
    /// serialization fails.
    pub fn write_histogram<T: Counter>(
        &mut self,
        h: &Histogram<T>,
        start_timestamp: time::Duration,
        duration: time::Duration,
        tag: Option<Tag>,
    ) -> Result<(), IntervalLogWriterError<S::SerializeError>> {
        self.line.clear();
        if let Some(Tag(t)) = tag {
            // Writing to a String cannot fail.
            let _ = write!(self.line, "Tag={t},");
        }
        write!(
            self.writer,
            "{}{:.3},{:.3},{:.3},",
            self.line,
            duration_as_fp_seconds(start_timestamp),
            duration_as_fp_seconds(duration),
            // Divided as a float, as Java does.
            h.max() as f64 / self.max_value_divisor
        )?;
        self.encoded.clear();
        self.serializer
            .serialize(h, &mut self.encoded)
            .map_err(IntervalLogWriterError::SerializeError)?;
        self.line.clear();
        base64::engine::general_purpose::STANDARD.encode_string(&self.encoded, &mut self.line);
        self.line.push('\n');
        self.writer.write_all(self.line.as_bytes())?;
        Ok(())
    }
}

/// Why writing an interval failed.
#[derive(Debug)]
pub enum IntervalLogWriterError<E> {
    /// The serializer failed to encode the histogram.
    SerializeError(E),
    /// Writing failed.
    IoError(io::Error),
}

impl<E> From<io::Error> for IntervalLogWriterError<E> {
    fn from(e: io::Error) -> Self {
        IntervalLogWriterError::IoError(e)
    }
}

impl<E: fmt::Display + fmt::Debug> fmt::Display for IntervalLogWriterError<E> {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            IntervalLogWriterError::SerializeError(e) => {
                write!(f, "Histogram serialization failed: {e}")
            }
            IntervalLogWriterError::IoError(e) => write!(f, "An i/o error occurred: {e}"),
        }
    }
}

impl<E: Error + 'static> Error for IntervalLogWriterError<E> {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        match self {
            IntervalLogWriterError::SerializeError(e) => Some(e),
            IntervalLogWriterError::IoError(e) => Some(e),
        }
    }
}

/// The tag of an interval: text without `,`, `\r`, `\n` or ` `.
///
/// [`as_str`](Self::as_str) or `Deref` give the text.
///
/// ```
/// use hdrhistogram::serialization::interval_log::Tag;
/// # use picollo_hdrhistogram as hdrhistogram;
///
/// assert_eq!(Tag::new("db-read").map(|t| t.as_str()), Some("db-read"));
/// assert_eq!(Tag::new("a,b"), None);
/// ```
#[derive(Debug, PartialEq, Clone, Copy)]
pub struct Tag<'a>(&'a str);

impl<'a> Tag<'a> {
    /// The tag `s`, or `None` if `s` contains `,`, `\r`, `\n` or ` `.
    pub fn new(s: &'a str) -> Option<Tag<'a>> {
        if s.contains([',', '\r', '\n', ' ']) {
            None
        } else {
            Some(Tag(s))
        }
    }

    /// The tag's text.
    pub fn as_str(&self) -> &'a str {
        self.0
    }
}

impl ops::Deref for Tag<'_> {
    type Target = str;

    fn deref(&self) -> &Self::Target {
        self.as_str()
    }
}

/// One interval of a parsed log: its metadata and its histogram, still encoded.
#[derive(PartialEq, Debug)]
pub struct IntervalLogHistogram<'a> {
    tag: Option<Tag<'a>>,
    start_timestamp: time::Duration,
    duration: time::Duration,
    max: f64,
    encoded_histogram: &'a str,
}

impl<'a> IntervalLogHistogram<'a> {
    /// The interval's tag, if its line has one.
    pub fn tag(&self) -> Option<Tag<'a>> {
        self.tag
    }

    /// When the interval started: seconds since the epoch, or since the log's BaseTime or
    /// StartTime (see the [module's docs](self) on timestamps).
    pub fn start_timestamp(&self) -> time::Duration {
        self.start_timestamp
    }

    /// How long the interval lasted.
    pub fn duration(&self) -> time::Duration {
        self.duration
    }

    /// The interval's largest value as the line gives it: divided by the writer's max value
    /// divisor (1 unless set), rounded to 3 decimals.
    pub fn max(&self) -> f64 {
        self.max
    }

    /// The histogram, base64-encoded. Decode the base64, then give the bytes to a
    /// [`Deserializer`](super::Deserializer).
    pub fn encoded_histogram(&self) -> &'a str {
        self.encoded_histogram
    }
}

/// An entry of an interval log: a header or an interval. Comments and the legend line are not
/// entries.
///
/// Where StartTime and BaseTime headers appear changes how the timestamps of the intervals
/// after them read: see the [module's docs](self).
#[derive(PartialEq, Debug)]
#[allow(variant_size_differences)]
pub enum LogEntry<'a> {
    /// A StartTime header: seconds since the epoch.
    StartTime(time::Duration),
    /// A BaseTime header: seconds since the epoch.
    BaseTime(time::Duration),
    /// An interval.
    Interval(IntervalLogHistogram<'a>),
}

/// Why parsing an interval log stopped.
#[derive(Debug, PartialEq)]
pub enum LogIteratorError {
    /// A line is neither an entry, a comment nor the legend (nor a complete line: the last
    /// line needs its `\n`).
    ParseError {
        /// Offset in the log's bytes of the line that did not parse.
        offset: usize,
    },
}

/// The entries of an interval log, parsed from its bytes (UTF-8 text), without decoding the
/// histograms.
///
/// Comments and the legend line are skipped. A line that does not parse ends the iteration
/// with a [`LogIteratorError`]; the iterator yields `None` after it.
///
/// Parsing is cheap (no allocation; the intervals borrow from the input): select the intervals
/// you want by their timestamps or tags, then decode only those. Unlike Java's
/// `HistogramLogReader`, the StartTime and BaseTime headers are yielded as they come, not
/// applied, so any way of combining them is possible.
pub struct IntervalLogIterator<'a> {
    orig_len: usize,
    input: &'a [u8],
    ended: bool,
}

impl<'a> IntervalLogIterator<'a> {
    /// An iterator over the entries of the log in `input`.
    pub fn new(input: &'a [u8]) -> IntervalLogIterator<'a> {
        IntervalLogIterator {
            orig_len: input.len(),
            input,
            ended: false,
        }
    }
}

impl<'a> Iterator for IntervalLogIterator<'a> {
    type Item = Result<LogEntry<'a>, LogIteratorError>;

    fn next(&mut self) -> Option<Self::Item> {
        // Every pass consumes a line or returns.
        while !self.ended {
            if self.input.is_empty() {
                self.ended = true;
                return None;
            }
            // Entries first: the StartTime and BaseTime headers look like comments too.
            if let Some((rest, entry)) = parse::log_entry(self.input) {
                self.input = rest;
                return Some(Ok(entry));
            }
            match parse::ignored_line(self.input) {
                Some(rest) => self.input = rest,
                None => {
                    self.ended = true;
                    return Some(Err(LogIteratorError::ParseError {
                        offset: self.orig_len - self.input.len(),
                    }));
                }
            }
        }
        None
    }
}

fn duration_as_fp_seconds(d: time::Duration) -> f64 {
    d.as_secs() as f64 + f64::from(d.subsec_nanos()) / 1_000_000_000_f64
}

/// Seconds since the epoch; negative for a time before it.
fn system_time_as_fp_seconds(time: time::SystemTime) -> f64 {
    match time.duration_since(time::UNIX_EPOCH) {
        Ok(after) => duration_as_fp_seconds(after),
        Err(e) => -duration_as_fp_seconds(e.duration()),
    }
}
