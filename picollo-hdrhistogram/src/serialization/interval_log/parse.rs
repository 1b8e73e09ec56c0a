//! The interval log's line grammar, as `hdrhistogram` parses it (with `nom`), rewritten over
//! byte slices: every function takes the unparsed input and returns what it recognized with
//! the input after it, or `None`. A field that ends at a delimiter (`,` of a tag, `\n` of a line)
//! ends at the first one in the input, even on a later line, as there.

use std::str;
use std::time::Duration;

use super::{IntervalLogHistogram, LogEntry, Tag};

/// `(before, after)` around the first `delim`, which neither includes.
fn split_at_byte(input: &[u8], delim: u8) -> Option<(&[u8], &[u8])> {
    let i = input.iter().position(|&b| b == delim)?;
    Some((&input[..i], &input[i + 1..]))
}

/// The input after the next `\n`.
fn after_newline(input: &[u8]) -> Option<&[u8]> {
    split_at_byte(input, b'\n').map(|(_, rest)| rest)
}

fn digits(input: &[u8]) -> usize {
    input.iter().take_while(|b| b.is_ascii_digit()).count()
}

/// `<seconds>.<fraction>`: seconds a `u64` as `str::parse` reads it (an optional `+`, then
/// digits), the fraction one or more digits, of which the first nine count (nanoseconds).
pub(super) fn fract_sec_duration(input: &[u8]) -> Option<(&[u8], Duration)> {
    // The seconds run to the first '.'; only '+' and digits can parse as a u64, so the scan
    // stops at the first other byte (which must be that '.'): linear in the line, not in the
    // rest of the input.
    let dot = input
        .iter()
        .position(|&b| !(b.is_ascii_digit() || b == b'+'))?;
    if input[dot] != b'.' {
        return None;
    }
    let secs: u64 = str::from_utf8(&input[..dot]).ok()?.parse().ok()?;
    let frac = &input[dot + 1..];
    let n = digits(frac);
    if n == 0 {
        return None;
    }
    let used = n.min(9);
    let mut nanos = frac[..used]
        .iter()
        .fold(0u32, |acc, &d| acc * 10 + u32::from(d - b'0'));
    for _ in used..9 {
        nanos *= 10;
    }
    // nanos < 10^9: no carry into the seconds, no overflow.
    Some((&frac[n..], Duration::new(secs, nanos)))
}

/// Length of the float at the start of `input` (nom's `recognize_float`): a sign, then digits
/// with an optional `.` and optional fraction digits, or `.` and digits; then an optional
/// exponent, whose digits are required once its `e` is there.
fn float_len(input: &[u8]) -> Option<usize> {
    let mut i = usize::from(matches!(input.first(), Some(b'+' | b'-')));
    let int = digits(&input[i..]);
    if int > 0 {
        i += int;
        if input.get(i) == Some(&b'.') {
            i += 1;
            i += digits(&input[i..]);
        }
    } else if input.get(i) == Some(&b'.') && digits(&input[i + 1..]) > 0 {
        i += 1;
        i += digits(&input[i..]);
    } else {
        return None;
    }
    if matches!(input.get(i), Some(b'e' | b'E')) {
        let mut j = i + 1;
        if matches!(input.get(j), Some(b'+' | b'-')) {
            j += 1;
        }
        let exp = digits(&input[j..]);
        if exp == 0 {
            return None;
        }
        i = j + exp;
    }
    Some(i)
}

/// Length of `nan`, `infinity` or `inf` (any case, no sign) at the start of `input`.
fn special_float_len(input: &[u8]) -> Option<usize> {
    ["nan", "infinity", "inf"]
        .iter()
        .find(|w| {
            input
                .get(..w.len())
                .is_some_and(|p| p.eq_ignore_ascii_case(w.as_bytes()))
        })
        .map(|w| w.len())
}

/// A float as nom's `double` reads it: the text recognized above, then `str::parse`.
pub(super) fn float(input: &[u8]) -> Option<(&[u8], f64)> {
    let len = float_len(input).or_else(|| special_float_len(input))?;
    let value = str::from_utf8(&input[..len]).ok()?.parse().ok()?;
    Some((&input[len..], value))
}

/// `Tag=<text>,`: the text up to the first ',', which must be UTF-8.
fn tag_field(input: &[u8]) -> Option<(&[u8], Tag<'_>)> {
    let (text, rest) = split_at_byte(input.strip_prefix(b"Tag=")?, b',')?;
    Some((rest, Tag(str::from_utf8(text).ok()?)))
}

/// `[Tag=<tag>,]<start>,<duration>,<max>,<encoded histogram>\n`.
fn interval(input: &[u8]) -> Option<(&[u8], LogEntry<'_>)> {
    let (input, tag) = match tag_field(input) {
        Some((rest, tag)) => (rest, Some(tag)),
        None => (input, None),
    };
    let (input, start_timestamp) = fract_sec_duration(input)?;
    let input = input.strip_prefix(b",")?;
    let (input, duration) = fract_sec_duration(input)?;
    let input = input.strip_prefix(b",")?;
    let (input, max) = float(input)?;
    let input = input.strip_prefix(b",")?;
    let (encoded, rest) = split_at_byte(input, b'\n')?;
    // A CRLF line keeps its '\r's out of the histogram's text.
    let encoded_histogram = str::from_utf8(encoded).ok()?.trim_end_matches('\r');
    Some((
        rest,
        LogEntry::Interval(IntervalLogHistogram {
            tag,
            start_timestamp,
            duration,
            max,
            encoded_histogram,
        }),
    ))
}

/// `<prefix><seconds>.<fraction> <anything>\n`: a StartTime or BaseTime header.
fn time_header<'a>(input: &'a [u8], prefix: &[u8]) -> Option<(&'a [u8], Duration)> {
    let (input, time) = fract_sec_duration(input.strip_prefix(prefix)?)?;
    let rest = after_newline(input.strip_prefix(b" ")?)?;
    Some((rest, time))
}

/// A line that is an entry: StartTime, BaseTime (both before the comment rule, as they are
/// comments too), or an interval.
pub(super) fn log_entry(input: &[u8]) -> Option<(&[u8], LogEntry<'_>)> {
    if let Some((rest, t)) = time_header(input, b"#[StartTime: ") {
        return Some((rest, LogEntry::StartTime(t)));
    }
    if let Some((rest, t)) = time_header(input, b"#[BaseTime: ") {
        return Some((rest, LogEntry::BaseTime(t)));
    }
    interval(input)
}

/// A line that carries nothing: a comment (`#...`) or the legend (`"StartTimestamp"...`).
/// Returns the input after it.
pub(super) fn ignored_line(input: &[u8]) -> Option<&[u8]> {
    input
        .strip_prefix(b"#")
        .or_else(|| input.strip_prefix(b"\"StartTimestamp\""))
        .and_then(after_newline)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dur(input: &str) -> Option<(&str, Duration)> {
        fract_sec_duration(input.as_bytes()).map(|(rest, d)| (str::from_utf8(rest).unwrap(), d))
    }

    #[test]
    fn durations() {
        assert_eq!(dur("1.5,"), Some((",", Duration::new(1, 500_000_000))));
        assert_eq!(
            dur("0.123456789"),
            Some(("", Duration::new(0, 123_456_789)))
        );
        assert_eq!(
            dur("3.1234567891x"),
            Some(("x", Duration::new(3, 123_456_789)))
        );
        assert_eq!(dur("+7.0"), Some(("", Duration::new(7, 0))));
        assert_eq!(dur("7."), None);
        assert_eq!(dur(".5"), None);
        assert_eq!(dur("-1.5"), None);
        assert_eq!(dur("18446744073709551616.0"), None);
        assert_eq!(dur("1 .5"), None);
    }

    fn fl(input: &str) -> Option<(&str, f64)> {
        float(input.as_bytes()).map(|(rest, v)| (str::from_utf8(rest).unwrap(), v))
    }

    #[test]
    fn floats() {
        assert_eq!(fl("2.769,"), Some((",", 2.769)));
        assert_eq!(fl("-1e3,"), Some((",", -1000.0)));
        assert_eq!(fl("1.,"), Some((",", 1.0)));
        assert_eq!(fl(".5,"), Some((",", 0.5)));
        assert_eq!(fl("5E-1"), Some(("", 0.5)));
        assert_eq!(fl("INF,"), Some((",", f64::INFINITY)));
        assert_eq!(fl("Infinity"), Some(("", f64::INFINITY)));
        assert!(fl("nan,").unwrap().1.is_nan());
        assert_eq!(fl("1e,"), None);
        assert_eq!(fl("-inf"), None);
        assert_eq!(fl("."), None);
        assert_eq!(fl(""), None);
    }
}
