//! Reading interval logs: [`LogReader`] streams [`LogEntry`] values from any `BufRead` (one
//! line in memory at a time, HdrHistogram's timestamp rules), [`LogRange`] selects a time
//! range, and [`LogEntry::decode`] decodes an interval's histogram when asked.

use std::io::{self, BufRead};

use base64::Engine as _;

use super::error::LogError;
use super::line::{parse_line, LogLine};
use crate::hdr::codec::DecodeLimits;
use crate::hdr::error::HdrError;
use crate::hdr::HdrCounts;

/// Default longest line the reader accepts, in bytes.
pub(crate) const DEFAULT_MAX_LINE_LEN: usize = 16 << 20;

/// If the first timestamp is more than this many seconds before the start time (and no
/// `#[BaseTime:` was seen), timestamps are relative to the start time (HdrHistogram's rule).
pub(crate) const RELATIVE_TIMESTAMP_THRESHOLD_SEC: f64 = 365.0 * 24.0 * 3600.0;

const BASE64_DECODE: base64::engine::GeneralPurpose =
    base64::engine::general_purpose::STANDARD_PAD_INDIFFERENT;

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
/// first timestamp is more than a year (`RELATIVE_TIMESTAMP_THRESHOLD_SEC`) before the start
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
    /// A reader with the default line limit (16 MiB).
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
    pub(crate) fn next_entry(&mut self) -> Option<Result<LogEntry, LogError>> {
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

#[cfg(test)]
mod tests {
    use super::*;

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
