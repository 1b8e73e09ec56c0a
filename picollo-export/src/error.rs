//! Errors of the exporter: each says what is wrong and what to do.

use core::fmt;
use std::io;

/// What went wrong registering, encoding, serving or pushing metrics.
#[derive(Debug)]
#[non_exhaustive]
pub enum ExportError {
    /// A metric name that Prometheus would reject (`[a-zA-Z_:][a-zA-Z0-9_:]*`).
    InvalidMetricName {
        /// The name given.
        name: String,
        /// Why it is refused.
        reason: &'static str,
    },
    /// A label name that Prometheus would reject (`[a-zA-Z_][a-zA-Z0-9_]*`, not `__…`).
    InvalidLabelName {
        /// The name given.
        name: String,
        /// Why it is refused.
        reason: &'static str,
    },
    /// The same label name twice in one label set.
    DuplicateLabel(String),
    /// A metric registered again under a name that holds another kind, or another help text.
    Conflict {
        /// The family name.
        name: String,
        /// What differs.
        reason: String,
    },
    /// A series with this name and label set is already registered.
    DuplicateSeries {
        /// The family name.
        name: String,
        /// The label set, as `{a="b",…}`.
        labels: String,
    },
    /// Classic bucket boundaries that are not strictly increasing, or empty.
    InvalidBoundaries(String),
    /// A socket or file operation failed.
    Io(io::Error),
    /// An OTLP receiver answered with an error status or rejected data points.
    Rejected {
        /// The HTTP status (200 for a partial success that rejected points).
        status: u16,
        /// What the receiver said.
        message: String,
    },
}

impl fmt::Display for ExportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::InvalidMetricName { name, reason } => write!(
                f,
                "invalid metric name {name:?}: {reason}; use letters, digits, '_' and ':', \
                 not starting with a digit"
            ),
            Self::InvalidLabelName { name, reason } => write!(
                f,
                "invalid label name {name:?}: {reason}; use letters, digits and '_', not \
                 starting with a digit or '__'"
            ),
            Self::DuplicateLabel(name) => {
                write!(f, "label {name:?} appears twice; give each label once")
            }
            Self::Conflict { name, reason } => write!(
                f,
                "metric {name:?} is already registered with {reason}; use another name"
            ),
            Self::DuplicateSeries { name, labels } => write!(
                f,
                "metric {name}{labels} is already registered; reuse the registered series or \
                 change a label"
            ),
            Self::InvalidBoundaries(why) => write!(f, "classic bucket boundaries: {why}"),
            Self::Io(e) => write!(f, "{e}"),
            Self::Rejected { status, message } => {
                write!(
                    f,
                    "the OTLP receiver rejected the export (HTTP {status}): {message}"
                )
            }
        }
    }
}

impl std::error::Error for ExportError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Io(e) => Some(e),
            _ => None,
        }
    }
}

impl From<io::Error> for ExportError {
    fn from(e: io::Error) -> Self {
        Self::Io(e)
    }
}
