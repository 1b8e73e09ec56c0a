//! One line of an interval log: the format's version and legend, and [`parse_line`], which
//! classifies a line and parses an interval line without allocating.

use super::error::LogError;

/// The log format version the writer declares.
pub(crate) const LOG_FORMAT_VERSION: &str = "1.3";

/// The legend line HdrHistogram's writer emits (and readers skip).
pub(crate) const LEGEND: &str =
    "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"";

/// One parsed interval line, borrowing from the line text.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct IntervalLine<'a> {
    /// The `Tag=` value, if any.
    pub(crate) tag: Option<&'a str>,
    /// The start timestamp as written, in seconds.
    pub(crate) start_timestamp: f64,
    /// The interval length, in seconds.
    pub(crate) interval_length: f64,
    /// The `Interval_Max` column as written (informational).
    pub(crate) max: f64,
    /// The base64 text of the V2+deflate histogram.
    pub(crate) payload: &'a str,
}

/// A classified log line (see [`parse_line`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum LogLine<'a> {
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
/// ignored): what `LogReader` reads each line with. It never panics (`tests::never_panics`).
///
/// A `#[StartTime:`/`#[BaseTime:` comment whose number does not parse is an ordinary comment,
/// as in HdrHistogram.
///
/// # Errors
/// [`LogError::Syntax`] (with line 0) for a malformed interval line.
pub(crate) fn parse_line(line: &str) -> Result<LogLine<'_>, LogError> {
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

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(
            if cfg!(miri) { 8 } else { 256 }
        ))]

        /// Any line of printable text is classified or refused with an error, never a panic.
        #[test]
        fn never_panics(line in "\\PC{0,80}") {
            let _ = parse_line(&line);
        }
    }

    #[test]
    fn interval_and_base_time_lines() {
        let Ok(LogLine::Interval(l)) = parse_line("Tag=db,1.5,1.0,2.769,HISTFAAA") else {
            panic!("an interval line")
        };
        assert_eq!(
            (l.tag, l.start_timestamp, l.payload),
            (Some("db"), 1.5, "HISTFAAA")
        );
        assert!(matches!(
            parse_line("#[BaseTime: 12.5 (seconds since epoch)]"),
            Ok(LogLine::BaseTime(12.5))
        ));
        assert!(parse_line("1.0,2.0").is_err());
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
}
