//! [`LogError`]: what can go wrong reading or writing an interval log. A leaf.

use core::fmt;
use std::io;

use crate::hdr::error::HdrError;

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
        /// 1-based line number (0 from the line parser, which does not know it).
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
