//! HdrHistogram interval logs (`.hlog`): a streaming reader and a writer.
//!
//! The layout follows HdrHistogram (Java) `HistogramLogWriter` / `HistogramLogReader`:
//!
//! ```text
//! #[Histogram log format version 1.3]
//! #[StartTime: 1441812279.474 (seconds since epoch), Wed Sep 09 15:24:39 UTC 2015]
//! "StartTimestamp","Interval_Length","Interval_Max","Interval_Compressed_Histogram"
//! 0.127,1.007,2.769,HISTFAAAAEV42pNpmSzMwMCgyAABTBDKT4GBgdnNYMcCBvsPEBEJISEuATEZMQ4uASkhIR4nrxg9v2lMaxhvMekILGZkKmcCAEf2CsI=
//! Tag=A,0.127,1.007,2.769,HISTFAAAAEV42pNpmSzMwMCgyAABTBDKT4GBgdnNYMcCBvsPEBEJISEuATEZMQ4uASkhIR4nrxg9v2lMaxhvMekILGZkKmcCAEf2CsI=
//! ```
//!
//! Each interval line is `[Tag=<tag>,]<start>,<length>,<max>,<base64 of a V2+deflate blob>`,
//! with times in seconds (3 decimals) and the max column scaled by the writer's unit ratio
//! (1 000 000 by default: nanoseconds logged as milliseconds).

use core::fmt;
use std::io::{self, BufRead, Write};

use base64::Engine as _;

use super::{DecodeLimits, HdrCounts, HdrError, BEST_COMPRESSION};

/// The log format version the writer declares.
pub const LOG_FORMAT_VERSION: &str = "1.3";

/// The legend line HdrHistogram's writer emits (and readers skip).
pub const LEGEND: &str =
    "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"";

/// Default divisor of the `Interval_Max` column (HdrHistogram's: nanoseconds to milliseconds).
pub const DEFAULT_MAX_VALUE_UNIT_RATIO: f64 = 1_000_000.0;

/// Default longest line the reader accepts, in bytes.
pub const DEFAULT_MAX_LINE_LEN: usize = 16 << 20;

/// If the first timestamp is more than this many seconds before the start time (and no
/// `#[BaseTime:` was seen), timestamps are relative to the start time (HdrHistogram's rule).
pub const RELATIVE_TIMESTAMP_THRESHOLD_SEC: f64 = 365.0 * 24.0 * 3600.0;

const BASE64_DECODE: base64::engine::GeneralPurpose =
    base64::engine::general_purpose::STANDARD_PAD_INDIFFERENT;
const BASE64_ENCODE: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

/// What went wrong reading or writing an interval log.
#[derive(Debug)]
#[non_exhaustive]
pub enum LogError {
    /// The underlying reader or writer failed. A reader stops after this error.
    Io(io::Error),
    /// A line longer than the reader's limit; the line is skipped.
    LineTooLong {
        /// 1-based line number.
        line: u64,
        /// The limit in bytes.
        limit: usize,
    },
    /// A line that is not UTF-8.
    NotUtf8 {
        /// 1-based line number.
        line: u64,
    },
    /// A line that is neither a comment, a legend nor a valid interval line.
    Syntax {
        /// 1-based line number (0 from [`parse_line`], which does not know it).
        line: u64,
        /// What is wrong.
        reason: &'static str,
    },
    /// A tag that is empty or contains a comma, space or line break.
    InvalidTag(String),
    /// A comment containing a line break.
    InvalidComment,
    /// Encoding the histogram failed.
    Hdr(HdrError),
}

impl fmt::Display for LogError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Io(e) => write!(f, "interval log I/O error: {e}"),
            Self::LineTooLong { line, limit } => write!(
                f,
                "line {line} is longer than {limit} bytes (raise LogReader::with_max_line_len if the log is trusted)"
            ),
            Self::NotUtf8 { line } => write!(f, "line {line} is not valid UTF-8"),
            Self::Syntax { line, reason } => write!(f, "line {line}: {reason}"),
            Self::InvalidTag(t) => write!(
                f,
                "invalid tag {t:?}: tags must be non-empty and contain no commas, spaces or line breaks"
            ),
            Self::InvalidComment => write!(f, "comments cannot contain line breaks"),
            Self::Hdr(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for LogError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Io(e) => Some(e),
            Self::Hdr(e) => Some(e),
            _ => None,
        }
    }
}

impl From<io::Error> for LogError {
    fn from(e: io::Error) -> Self {
        Self::Io(e)
    }
}

impl From<HdrError> for LogError {
    fn from(e: HdrError) -> Self {
        Self::Hdr(e)
    }
}

/// One parsed interval line, borrowing from the line text.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IntervalLine<'a> {
    /// The `Tag=` value, if any.
    pub tag: Option<&'a str>,
    /// The start timestamp as written, in seconds.
    pub start_timestamp: f64,
    /// The interval length, in seconds.
    pub interval_length: f64,
    /// The `Interval_Max` column as written (informational).
    pub max: f64,
    /// The base64 text of the V2+deflate histogram.
    pub payload: &'a str,
}

/// A classified log line (see [`parse_line`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LogLine<'a> {
    /// An empty (or whitespace-only) line.
    Blank,
    /// A `#` comment other than a start or base time; the text after `#`.
    Comment(&'a str),
    /// `#[StartTime: <seconds since epoch> ...]`.
    StartTime(f64),
    /// `#[BaseTime: <seconds since epoch> ...]`.
    BaseTime(f64),
    /// A legend line (starts with `"`).
    Legend,
    /// An interval line.
    Interval(IntervalLine<'a>),
}

fn syntax(reason: &'static str) -> LogError {
    LogError::Syntax { line: 0, reason }
}

fn parse_seconds(field: &str, what: &'static str) -> Result<f64, LogError> {
    match field.trim().parse::<f64>() {
        Ok(v) if v.is_finite() => Ok(v),
        _ => Err(syntax(what)),
    }
}

/// The number after a `#[StartTime:` / `#[BaseTime:` marker, as HdrHistogram's scanner reads
/// it: the next token delimited by spaces or commas.
fn marker_time(rest: &str) -> Option<f64> {
    let rest = rest.trim_start_matches([' ', ',']);
    let end = rest.find([' ', ',', ']']).unwrap_or(rest.len());
    rest[..end].parse::<f64>().ok().filter(|v| v.is_finite())
}

/// Classifies and parses one log line (without its line terminator; a trailing `\r` is
/// ignored). This is the log-side fuzzing entry point: it never panics.
///
/// A `#[StartTime:`/`#[BaseTime:` comment whose number does not parse is an ordinary comment,
/// as in HdrHistogram.
///
/// ```
/// use picollo_alloc::hdr::{parse_line, LogLine};
///
/// let LogLine::Interval(l) = parse_line("Tag=db,1.5,1.0,2.769,HISTFAAA")? else { panic!() };
/// assert_eq!((l.tag, l.start_timestamp, l.payload), (Some("db"), 1.5, "HISTFAAA"));
/// assert_eq!(parse_line("#[BaseTime: 12.5 (seconds since epoch)]")?, LogLine::BaseTime(12.5));
/// assert!(parse_line("1.0,2.0").is_err());
/// # Ok::<(), picollo_alloc::hdr::LogError>(())
/// ```
///
/// # Errors
/// [`LogError::Syntax`] (with line 0) for a malformed interval line.
pub fn parse_line(line: &str) -> Result<LogLine<'_>, LogError> {
    let line = line.strip_suffix('\r').unwrap_or(line);
    if line.trim().is_empty() {
        return Ok(LogLine::Blank);
    }
    if let Some(comment) = line.strip_prefix('#') {
        if let Some(t) = comment.strip_prefix("[StartTime:").and_then(marker_time) {
            return Ok(LogLine::StartTime(t));
        }
        if let Some(t) = comment.strip_prefix("[BaseTime:").and_then(marker_time) {
            return Ok(LogLine::BaseTime(t));
        }
        return Ok(LogLine::Comment(comment));
    }
    if line.starts_with('"') {
        return Ok(LogLine::Legend);
    }
    let mut fields = line.split(',');
    let mut first = fields.next().unwrap_or("").trim();
    let tag = match first.strip_prefix("Tag=") {
        Some(t) => {
            first = fields
                .next()
                .ok_or(syntax("tag without an interval"))?
                .trim();
            Some(t)
        }
        None => None,
    };
    let start_timestamp = parse_seconds(first, "start timestamp is not a finite number")?;
    let interval_length = parse_seconds(
        fields.next().ok_or(syntax("missing interval length"))?,
        "interval length is not a finite number",
    )?;
    let max = fields
        .next()
        .ok_or(syntax("missing interval max"))?
        .trim()
        .parse::<f64>()
        .map_err(|_| syntax("interval max is not a number"))?;
    let payload = fields
        .next()
        .ok_or(syntax("missing histogram payload"))?
        .trim();
    if payload.is_empty() {
        return Err(syntax("empty histogram payload"));
    }
    if fields.any(|f| !f.trim().is_empty()) {
        return Err(syntax("unexpected fields after the histogram payload"));
    }
    Ok(LogLine::Interval(IntervalLine {
        tag,
        start_timestamp,
        interval_length,
        max,
        payload,
    }))
}

/// One interval of a log, with its histogram still encoded: call [`decode`](Self::decode) to
/// get the counts.
#[derive(Debug, Clone, PartialEq)]
pub struct LogEntry {
    /// 1-based line number in the log.
    pub line: u64,
    /// The `Tag=` value, if any.
    pub tag: Option<String>,
    /// The start timestamp as written in the line, in seconds.
    pub start_timestamp: f64,
    /// The interval length, in seconds.
    pub interval_length: f64,
    /// The `Interval_Max` column as written.
    pub max_column: f64,
    /// Absolute start time in seconds since the epoch: `start_timestamp + base time`.
    pub absolute_start_sec: f64,
    /// Start time relative to the log's start time: `absolute_start_sec - start time`.
    pub offset_start_sec: f64,
    /// The base64 text of the V2+deflate histogram.
    pub payload_base64: String,
}

impl LogEntry {
    /// Absolute end time: `absolute_start_sec + interval_length`.
    pub fn absolute_end_sec(&self) -> f64 {
        self.absolute_start_sec + self.interval_length
    }

    /// Base64-decodes and decodes the histogram with the default [`DecodeLimits`].
    ///
    /// # Errors
    /// [`HdrError::Base64`] or any decoding error.
    pub fn decode(&self) -> Result<HdrCounts, HdrError> {
        self.decode_with_limits(&DecodeLimits::default())
    }

    /// [`decode`](Self::decode) with explicit limits.
    ///
    /// # Errors
    /// [`HdrError::Base64`] or any decoding error.
    pub fn decode_with_limits(&self, limits: &DecodeLimits) -> Result<HdrCounts, HdrError> {
        let bytes = BASE64_DECODE
            .decode(self.payload_base64.as_bytes())
            .map_err(|e| HdrError::Base64(e.to_string()))?;
        HdrCounts::decode_with_limits(&bytes, limits)
    }
}

/// Which timestamp a time range is checked against (see [`LogReader::range`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RangeMode {
    /// Seconds relative to the log's start time ([`LogEntry::offset_start_sec`]), as HdrHistogram's
    /// `nextIntervalHistogram(start, end)`.
    Relative,
    /// Absolute seconds since the epoch ([`LogEntry::absolute_start_sec`]), as
    /// `nextAbsoluteIntervalHistogram(start, end)`.
    Absolute,
}

/// A streaming interval-log reader over any [`BufRead`]: one line in memory at a time, each
/// histogram decoded only when asked.
///
/// Iterating yields `Result<LogEntry, LogError>` per interval line; comment, legend and blank
/// lines are consumed silently (start and base times update the reader's state). After a
/// malformed line the next call continues with the following line; after an I/O error the
/// iterator ends.
///
/// Timestamps follow HdrHistogram's reader: without `#[StartTime:` the first interval's
/// timestamp is the start time; without `#[BaseTime:` the base time is the start time if the
/// first timestamp is more than a year ([`RELATIVE_TIMESTAMP_THRESHOLD_SEC`]) before the start
/// time (relative timestamps), and 0 otherwise (absolute timestamps).
///
/// ```
/// use picollo_alloc::hdr::{HdrCounts, LogReader, LogWriter};
///
/// let mut h = HdrCounts::new(1, 3_600_000_000_000, 3)?;
/// h.record(1_500_000, 3)?;
/// let mut w = LogWriter::new(Vec::new());
/// w.write_log_format_version()?;
/// w.write_start_time(1_441_812_279_474)?;
/// w.write_legend()?;
/// w.write_interval(None, 0.127, 1.134, &h)?;
/// w.write_interval(Some("db"), 1.134, 2.140, &h)?;
/// let text = w.into_inner();
///
/// let mut reader = LogReader::new(&text[..]);
/// let first = reader.next().unwrap()?;
/// assert_eq!(first.start_timestamp, 0.127);
/// assert_eq!(reader.base_time_sec(), Some(1_441_812_279.474)); // relative timestamps
/// assert_eq!(first.decode()?.total_count(), 3);
/// let second = reader.next().unwrap()?;
/// assert_eq!(second.tag.as_deref(), Some("db"));
/// assert!(reader.next().is_none());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct LogReader<R> {
    input: R,
    buf: Vec<u8>,
    line_no: u64,
    max_line_len: usize,
    start_time: Option<f64>,
    base_time: Option<f64>,
    done: bool,
}

impl<R: BufRead> LogReader<R> {
    /// A reader with the default line limit ([`DEFAULT_MAX_LINE_LEN`]).
    pub fn new(input: R) -> Self {
        Self {
            input,
            buf: Vec::new(),
            line_no: 0,
            max_line_len: DEFAULT_MAX_LINE_LEN,
            start_time: None,
            base_time: None,
            done: false,
        }
    }

    /// Sets the longest accepted line in bytes; longer lines yield [`LogError::LineTooLong`]
    /// and are skipped without being buffered.
    pub fn with_max_line_len(mut self, max_line_len: usize) -> Self {
        self.max_line_len = max_line_len;
        self
    }

    /// The start time in seconds since the epoch: from the latest `#[StartTime:` comment, or
    /// the first interval's timestamp; `None` before either was read.
    pub fn start_time_sec(&self) -> Option<f64> {
        self.start_time
    }

    /// The base time in seconds (from `#[BaseTime:` or deduced at the first interval);
    /// `None` before either happened.
    pub fn base_time_sec(&self) -> Option<f64> {
        self.base_time
    }

    /// Number of lines read so far.
    pub fn line_number(&self) -> u64 {
        self.line_no
    }

    /// Restricts iteration to intervals whose start lies in `[start_sec, end_sec]`, as
    /// HdrHistogram's `nextIntervalHistogram(start, end)` (with [`RangeMode::Relative`]) or
    /// `nextAbsoluteIntervalHistogram` (with [`RangeMode::Absolute`]): earlier intervals are
    /// skipped undecoded, and the first interval past `end_sec` ends the iteration (logs are
    /// in time order).
    pub fn range(self, start_sec: f64, end_sec: f64, mode: RangeMode) -> LogRange<R> {
        LogRange {
            reader: self,
            start_sec,
            end_sec,
            mode,
            done: false,
        }
    }

    /// Reads the next line into `self.buf` (without terminator). `Ok(false)` at end of input.
    fn read_line(&mut self) -> Result<bool, LogError> {
        self.buf.clear();
        let mut got_bytes = false;
        let mut too_long = false;
        loop {
            let available = match self.input.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(LogError::Io(e)),
            };
            if available.is_empty() {
                if !got_bytes {
                    return Ok(false);
                }
                break;
            }
            got_bytes = true;
            let (chunk, used, end_of_line) = match available.iter().position(|&b| b == b'\n') {
                Some(i) => (&available[..i], i + 1, true),
                None => (available, available.len(), false),
            };
            if !too_long {
                if self.buf.len() + chunk.len() > self.max_line_len {
                    too_long = true;
                    self.buf.clear();
                } else {
                    self.buf.extend_from_slice(chunk);
                }
            }
            self.input.consume(used);
            if end_of_line {
                break;
            }
        }
        self.line_no += 1;
        if too_long {
            return Err(LogError::LineTooLong {
                line: self.line_no,
                limit: self.max_line_len,
            });
        }
        Ok(true)
    }

    /// The next interval entry, or `None` at the end of the log.
    pub fn next_entry(&mut self) -> Option<Result<LogEntry, LogError>> {
        while !self.done {
            match self.read_line() {
                Ok(true) => {}
                Ok(false) => {
                    self.done = true;
                    return None;
                }
                Err(e @ LogError::Io(_)) => {
                    self.done = true;
                    return Some(Err(e));
                }
                Err(e) => return Some(Err(e)),
            }
            let line_no = self.line_no;
            let Ok(text) = core::str::from_utf8(&self.buf) else {
                return Some(Err(LogError::NotUtf8 { line: line_no }));
            };
            // A UTF-8 byte-order mark some editors add.
            let text = text.strip_prefix('\u{feff}').unwrap_or(text);
            let parsed = match parse_line(text) {
                Ok(p) => p,
                Err(LogError::Syntax { reason, .. }) => {
                    return Some(Err(LogError::Syntax {
                        line: line_no,
                        reason,
                    }))
                }
                Err(e) => return Some(Err(e)),
            };
            match parsed {
                LogLine::Blank | LogLine::Comment(_) | LogLine::Legend => {}
                LogLine::StartTime(t) => self.start_time = Some(t),
                LogLine::BaseTime(t) => self.base_time = Some(t),
                LogLine::Interval(l) => {
                    let ts = l.start_timestamp;
                    let start = *self.start_time.get_or_insert(ts);
                    let base = *self.base_time.get_or_insert(
                        if ts < start - RELATIVE_TIMESTAMP_THRESHOLD_SEC {
                            start
                        } else {
                            0.0
                        },
                    );
                    let absolute = ts + base;
                    return Some(Ok(LogEntry {
                        line: line_no,
                        tag: l.tag.map(str::to_owned),
                        start_timestamp: ts,
                        interval_length: l.interval_length,
                        max_column: l.max,
                        absolute_start_sec: absolute,
                        offset_start_sec: absolute - start,
                        payload_base64: l.payload.to_owned(),
                    }));
                }
            }
        }
        None
    }
}

impl<R: BufRead> Iterator for LogReader<R> {
    type Item = Result<LogEntry, LogError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_entry()
    }
}

/// A time-range view of a [`LogReader`] (see [`LogReader::range`]).
#[derive(Debug)]
pub struct LogRange<R> {
    reader: LogReader<R>,
    start_sec: f64,
    end_sec: f64,
    mode: RangeMode,
    done: bool,
}

impl<R> LogRange<R> {
    /// The underlying reader (for its start and base times).
    pub fn reader(&self) -> &LogReader<R> {
        &self.reader
    }
}

impl<R: BufRead> Iterator for LogRange<R> {
    type Item = Result<LogEntry, LogError>;

    fn next(&mut self) -> Option<Self::Item> {
        while !self.done {
            let entry = match self.reader.next_entry()? {
                Ok(e) => e,
                Err(e) => return Some(Err(e)),
            };
            let t = match self.mode {
                RangeMode::Relative => entry.offset_start_sec,
                RangeMode::Absolute => entry.absolute_start_sec,
            };
            if t < self.start_sec {
                continue;
            }
            if t > self.end_sec {
                self.done = true;
                return None;
            }
            return Some(Ok(entry));
        }
        None
    }
}

/// Formats like Java's `String.format(Locale.US, "%.3f", x)`: the shortest decimal
/// representation of `x`, rounded half-up to 3 decimals.
pub(crate) fn push_fixed3(out: &mut String, x: f64) {
    crate::hgrm::java_fixed(out, x, 0, 3);
}

/// `"EEE MMM dd HH:mm:ss zzz yyyy"` in UTC, as Java's `Date.toString()` in a UTC zone.
fn java_date_utc(msec: i64) -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let secs = msec.div_euclid(1000);
    let days = secs.div_euclid(86_400);
    let sod = secs.rem_euclid(86_400);
    // Civil-from-days (proleptic Gregorian), days since 1970-01-01.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{} {} {:02} {:02}:{:02}:{:02} UTC {}",
        DAYS[days.rem_euclid(7) as usize],
        MONTHS[(month - 1) as usize],
        day,
        sod / 3600,
        sod / 60 % 60,
        sod % 60,
        year
    )
}

/// `name` as an interval tag: the characters a tag cannot hold (`,` and whitespace, which
/// end a tag when the log is read back) replaced by `_`, and an empty name as `_`; a valid
/// tag is returned unchanged.
///
/// ```
/// assert_eq!(picollo_alloc::hdr::sanitize_tag("rpc{code=\"a b\",x}"), "rpc{code=\"a_b\"_x}");
/// assert_eq!(picollo_alloc::hdr::sanitize_tag(""), "_");
/// ```
pub fn sanitize_tag(name: &str) -> String {
    if name.is_empty() {
        return "_".to_owned();
    }
    name.chars()
        .map(|c| {
            if c == ',' || c.is_whitespace() {
                '_'
            } else {
                c
            }
        })
        .collect()
}

fn check_tag(tag: &str) -> Result<(), LogError> {
    if tag.is_empty() || tag.contains([',', ' ', '\r', '\n']) {
        return Err(LogError::InvalidTag(tag.to_owned()));
    }
    Ok(())
}

/// An interval-log writer with HdrHistogram's `HistogramLogWriter` layout.
///
/// By convention a log starts with a comment naming the producer, then
/// [`write_log_format_version`](Self::write_log_format_version),
/// [`write_start_time`](Self::write_start_time) and [`write_legend`](Self::write_legend).
/// Each interval is compressed at level 9 (as the Java writer) unless changed.
///
/// ```
/// use picollo_alloc::hdr::{HdrCounts, LogWriter};
///
/// let mut h = HdrCounts::new(1, 1 << 40, 2)?;
/// h.record(2_768_895, 1)?;
/// let mut w = LogWriter::new(Vec::new());
/// w.write_interval(Some("A"), 0.127, 1.134, &h)?;
/// let line = String::from_utf8(w.into_inner())?;
/// assert!(line.starts_with("Tag=A,0.127,1.007,2.769,HISTF"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct LogWriter<W: Write> {
    out: W,
    base_time_msec: i64,
    max_value_unit_ratio: f64,
    level: u8,
    line: String,
}

impl<W: Write> LogWriter<W> {
    /// A writer with base time 0, unit ratio [`DEFAULT_MAX_VALUE_UNIT_RATIO`] and compression
    /// level [`BEST_COMPRESSION`].
    pub fn new(out: W) -> Self {
        Self {
            out,
            base_time_msec: 0,
            max_value_unit_ratio: DEFAULT_MAX_VALUE_UNIT_RATIO,
            level: BEST_COMPRESSION,
            line: String::new(),
        }
    }

    /// Sets the divisor of the `Interval_Max` column.
    pub fn set_max_value_unit_ratio(&mut self, ratio: f64) {
        self.max_value_unit_ratio = ratio;
    }

    /// Sets the zlib compression level (0 to 10).
    pub fn set_compression_level(&mut self, level: u8) {
        self.level = level;
    }

    /// Sets the base time subtracted by [`write_interval_msec`](Self::write_interval_msec)
    /// (HdrHistogram `setBaseTime`). It is not written; see
    /// [`write_base_time`](Self::write_base_time).
    pub fn set_base_time_msec(&mut self, base_time_msec: i64) {
        self.base_time_msec = base_time_msec;
    }

    /// The base time set by [`set_base_time_msec`](Self::set_base_time_msec).
    pub fn base_time_msec(&self) -> i64 {
        self.base_time_msec
    }

    /// Writes `#<comment>`.
    ///
    /// # Errors
    /// [`LogError::InvalidComment`] if the comment contains a line break, or an I/O error.
    pub fn write_comment(&mut self, comment: &str) -> Result<(), LogError> {
        if comment.contains(['\n', '\r']) {
            return Err(LogError::InvalidComment);
        }
        writeln!(self.out, "#{comment}")?;
        Ok(())
    }

    /// Writes `#[Histogram log format version 1.3]`.
    ///
    /// # Errors
    /// An I/O error.
    pub fn write_log_format_version(&mut self) -> Result<(), LogError> {
        writeln!(
            self.out,
            "#[Histogram log format version {LOG_FORMAT_VERSION}]"
        )?;
        Ok(())
    }

    /// Writes `#[StartTime: <seconds, 3 decimals> (seconds since epoch), <date>]`; the date is
    /// in Java's `Date.toString()` layout, in UTC.
    ///
    /// # Errors
    /// An I/O error.
    pub fn write_start_time(&mut self, start_time_msec: i64) -> Result<(), LogError> {
        let mut secs = String::new();
        push_fixed3(&mut secs, start_time_msec as f64 / 1000.0);
        writeln!(
            self.out,
            "#[StartTime: {secs} (seconds since epoch), {}]",
            java_date_utc(start_time_msec)
        )?;
        Ok(())
    }

    /// Writes `#[BaseTime: <seconds, 3 decimals> (seconds since epoch)]`.
    ///
    /// # Errors
    /// An I/O error.
    pub fn write_base_time(&mut self, base_time_msec: i64) -> Result<(), LogError> {
        let mut secs = String::new();
        push_fixed3(&mut secs, base_time_msec as f64 / 1000.0);
        writeln!(self.out, "#[BaseTime: {secs} (seconds since epoch)]")?;
        Ok(())
    }

    /// Writes the legend line ([`LEGEND`]).
    ///
    /// # Errors
    /// An I/O error.
    pub fn write_legend(&mut self) -> Result<(), LogError> {
        writeln!(self.out, "{LEGEND}")?;
        Ok(())
    }

    /// Writes one interval line: `[Tag=<tag>,]<start>,<end - start>,<max / ratio>,<base64>`,
    /// the numbers with 3 decimals (rounded half-up, as Java's `%.3f`) and the histogram as
    /// base64 of its V2+deflate encoding. Timestamps are written as given.
    ///
    /// # Errors
    /// [`LogError::InvalidTag`], an encoding error ([`LogError::Hdr`]) or an I/O error.
    pub fn write_interval(
        &mut self,
        tag: Option<&str>,
        start_sec: f64,
        end_sec: f64,
        counts: &HdrCounts,
    ) -> Result<(), LogError> {
        if let Some(t) = tag {
            check_tag(t)?;
        }
        let blob = counts.encode_v2_deflate(self.level)?;
        let mut line = core::mem::take(&mut self.line);
        line.clear();
        if let Some(t) = tag {
            line.push_str("Tag=");
            line.push_str(t);
            line.push(',');
        }
        push_fixed3(&mut line, start_sec);
        line.push(',');
        push_fixed3(&mut line, end_sec - start_sec);
        line.push(',');
        push_fixed3(&mut line, counts.max_as_f64() / self.max_value_unit_ratio);
        line.push(',');
        BASE64_ENCODE.encode_string(&blob, &mut line);
        line.push('\n');
        let result = self.out.write_all(line.as_bytes());
        self.line = line;
        result?;
        Ok(())
    }

    /// [`write_interval`](Self::write_interval) with millisecond timestamps, relative to the
    /// base time: writes `(start_msec - base) / 1000` (HdrHistogram's
    /// `outputIntervalHistogram(histogram)` form).
    ///
    /// # Errors
    /// As [`write_interval`](Self::write_interval).
    pub fn write_interval_msec(
        &mut self,
        tag: Option<&str>,
        start_msec: i64,
        end_msec: i64,
        counts: &HdrCounts,
    ) -> Result<(), LogError> {
        let start = start_msec.saturating_sub(self.base_time_msec) as f64 / 1000.0;
        let end = end_msec.saturating_sub(self.base_time_msec) as f64 / 1000.0;
        self.write_interval(tag, start, end, counts)
    }

    /// Flushes the underlying writer.
    ///
    /// # Errors
    /// An I/O error.
    pub fn flush(&mut self) -> Result<(), LogError> {
        self.out.flush()?;
        Ok(())
    }

    /// The underlying writer.
    pub fn get_ref(&self) -> &W {
        &self.out
    }

    /// Returns the underlying writer (not flushed).
    pub fn into_inner(self) -> W {
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f3(x: f64) -> String {
        let mut s = String::new();
        push_fixed3(&mut s, x);
        s
    }

    #[test]
    fn fixed3_matches_java_half_up() {
        assert_eq!(f3(2.768895), "2.769");
        assert_eq!(f3(1.007), "1.007");
        assert_eq!(f3(0.0625), "0.063");
        assert_eq!(f3(0.0), "0.000");
        assert_eq!(f3(-0.0), "-0.000");
        assert_eq!(f3(9.9996), "10.000");
        assert_eq!(f3(999.9999), "1000.000");
        assert_eq!(f3(-1.2345), "-1.235");
        assert_eq!(f3(1441812279.474), "1441812279.474");
        assert_eq!(f3(1e21), "1000000000000000000000.000");
        assert_eq!(f3(f64::NAN), "NaN");
    }

    #[test]
    fn date_like_java() {
        // 2015-09-09 15:24:39 UTC was a Wednesday.
        assert_eq!(
            java_date_utc(1_441_812_279_474),
            "Wed Sep 09 15:24:39 UTC 2015"
        );
        assert_eq!(java_date_utc(0), "Thu Jan 01 00:00:00 UTC 1970");
        assert_eq!(
            java_date_utc(951_782_400_000),
            "Tue Feb 29 00:00:00 UTC 2000"
        );
        assert_eq!(java_date_utc(-1000), "Wed Dec 31 23:59:59 UTC 1969");
    }

    #[test]
    fn line_classification() {
        assert_eq!(parse_line("").unwrap(), LogLine::Blank);
        assert_eq!(parse_line("  \r").unwrap(), LogLine::Blank);
        assert_eq!(
            parse_line("#[StartTime: 1441812279.474 (seconds since epoch), Wed]").unwrap(),
            LogLine::StartTime(1441812279.474)
        );
        assert_eq!(
            parse_line("#[StartTime: soon]").unwrap(),
            LogLine::Comment("[StartTime: soon]")
        );
        assert_eq!(parse_line(LEGEND).unwrap(), LogLine::Legend);
        assert!(parse_line("Tag=A").is_err());
        assert!(parse_line("1,2,3,").is_err());
        assert!(parse_line("x,2,3,abc").is_err());
        assert!(parse_line("1,NaN,3,abc").is_err());
        assert!(parse_line("1,2,3,abc,extra").is_err());
        assert!(parse_line("1,2,3,abc,").is_ok());
    }

    #[test]
    fn byte_order_mark_is_ignored() {
        let mut r = LogReader::new("\u{feff}#[StartTime: 5.0]\n6.0,1,0,AAAA\n".as_bytes());
        let e = r.next().unwrap().unwrap();
        assert_eq!((e.absolute_start_sec, e.offset_start_sec), (6.0, 1.0));
    }

    #[test]
    fn long_lines_are_skipped() {
        let text = format!("{}\n0.5,1.0,0.0,AAAA\n", "#".repeat(100));
        let mut r = LogReader::new(text.as_bytes()).with_max_line_len(50);
        assert!(matches!(
            r.next(),
            Some(Err(LogError::LineTooLong { line: 1, .. }))
        ));
        let e = r.next().unwrap().unwrap();
        assert_eq!(e.line, 2);
        assert!(e.decode().is_err());
        assert!(r.next().is_none());
    }

    #[test]
    fn timestamp_rule() {
        // Relative timestamps under an explicit start time.
        let mut r = LogReader::new(&b"#[StartTime: 1000000000.0 x]\n1.5,1,0,AAAA\n"[..]);
        let e = r.next().unwrap().unwrap();
        assert_eq!(e.absolute_start_sec, 1000000001.5);
        assert_eq!(e.offset_start_sec, 1.5);
        // Absolute timestamps (no year-long gap to the start time).
        let mut r = LogReader::new(&b"#[StartTime: 1000000000.0 x]\n1000000002.0,1,0,AAAA\n"[..]);
        let e = r.next().unwrap().unwrap();
        assert_eq!(e.absolute_start_sec, 1000000002.0);
        assert_eq!(e.offset_start_sec, 2.0);
        // No start time: the first timestamp is the start.
        let mut r = LogReader::new(&b"5.0,1,0,AAAA\n7.0,1,0,AAAA\n"[..]);
        assert_eq!(r.next().unwrap().unwrap().offset_start_sec, 0.0);
        let e = r.next().unwrap().unwrap();
        assert_eq!((e.absolute_start_sec, e.offset_start_sec), (7.0, 2.0));
        // Explicit base time wins.
        let mut r = LogReader::new(&b"#[StartTime: 100.0]\n#[BaseTime: 90.0]\n20.0,1,0,AAAA\n"[..]);
        let e = r.next().unwrap().unwrap();
        assert_eq!((e.absolute_start_sec, e.offset_start_sec), (110.0, 10.0));
    }
}
