//! Writing interval logs: [`LogWriter`], with HdrHistogram's `HistogramLogWriter` layout
//! (Java's number and date formats), and [`sanitize_tag`].

use std::io::Write;

use base64::Engine as _;

use super::error::LogError;
use super::line::{LEGEND, LOG_FORMAT_VERSION};
use crate::hdr::codec::BEST_COMPRESSION;
use crate::hdr::java_fmt::java_fixed;
use crate::hdr::HdrCounts;

/// Default divisor of the `Interval_Max` column (HdrHistogram's: nanoseconds to milliseconds).
pub(crate) const DEFAULT_MAX_VALUE_UNIT_RATIO: f64 = 1_000_000.0;

const BASE64_ENCODE: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

/// Formats like Java's `String.format(Locale.US, "%.3f", x)`: the shortest decimal
/// representation of `x`, rounded half-up to 3 decimals.
pub(crate) fn push_fixed3(out: &mut String, x: f64) {
    java_fixed(out, x, 0, 3);
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
    /// A writer with base time 0, unit ratio 1,000,000 and compression
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

    /// Writes the legend line (`LEGEND`).
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
}
