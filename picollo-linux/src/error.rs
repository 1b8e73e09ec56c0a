//! One error type for everything in this crate: it carries the errno where there is one, and
//! says what to do about it ([`PerfError::action`]).

use core::fmt;
use std::path::PathBuf;

use crate::event::{Event, ParseEventError};

/// Where the kernel's `perf_event_paranoid` setting lives.
pub(crate) const PARANOID_PATH: &str = "/proc/sys/kernel/perf_event_paranoid";

/// Reads `/proc/sys/kernel/perf_event_paranoid`: -1 allows everything, 0 allows CPU-wide
/// counting, 1 allows kernel counting, 2 allows only user-space counting
/// (`exclude_kernel = 1`), and 3 or more (Debian, Android) forbids unprivileged use. `None` when
/// the file cannot be read.
pub fn perf_event_paranoid() -> Option<i32> {
    std::fs::read_to_string(PARANOID_PATH)
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// An event left out of a session, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DroppedEvent {
    /// The event.
    pub event: Event,
    /// Why it could not be opened.
    pub error: PerfError,
}

/// Everything that can go wrong opening, reading or resolving counters.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum PerfError {
    /// `perf_event_open` said EACCES or EPERM: not privileged enough for this request.
    PermissionDenied {
        /// The event's name.
        event: String,
        /// EACCES or EPERM.
        errno: i32,
        /// `perf_event_paranoid` when the error happened.
        paranoid: Option<i32>,
        /// Whether the request excluded the kernel.
        exclude_kernel: bool,
    },
    /// ENOENT, EOPNOTSUPP or ENODEV: this CPU, VM or kernel does not expose the event (or the
    /// PMU named in a `pmu/…/` event does not exist).
    Unsupported {
        /// The event's name.
        event: String,
        /// The errno.
        errno: i32,
    },
    /// EINVAL: the group cannot be scheduled on the PMU, or an attribute is invalid for the
    /// event.
    CannotSchedule {
        /// The event's name.
        event: String,
        /// EINVAL.
        errno: i32,
    },
    /// EMFILE or ENFILE: out of file descriptors (each counter holds one).
    TooManyOpenFiles {
        /// The event's name.
        event: String,
        /// EMFILE or ENFILE.
        errno: i32,
    },
    /// ESRCH: the target process or thread does not exist.
    NoSuchTarget {
        /// The event's name.
        event: String,
        /// ESRCH.
        errno: i32,
    },
    /// Any other errno from a system call.
    Os {
        /// The call: `perf_event_open`, `read`, `ioctl`, `mmap`, …
        op: &'static str,
        /// The event's name, when one was involved.
        event: Option<String>,
        /// The errno.
        errno: i32,
    },
    /// The group `read()` returned 0 bytes: a pinned group was evicted from the PMU (it could
    /// not be scheduled) and stays in an error state.
    PinnedGroupEvicted,
    /// The group `read()` returned a layout that does not match the opened counters.
    MalformedRead {
        /// Bytes read.
        bytes: usize,
        /// Bytes expected.
        expected: usize,
    },
    /// An event name did not parse.
    Parse(ParseEventError),
    /// A `pmu/…/` event could not be resolved through sysfs (unknown term, value too wide,
    /// unreadable or malformed `format` file).
    Pmu {
        /// The event's name.
        event: String,
        /// What was wrong.
        reason: String,
    },
    /// A sysfs or procfs file could not be read or parsed.
    Sysfs {
        /// The file.
        path: PathBuf,
        /// What was wrong.
        reason: String,
    },
    /// The builder was given no events.
    NoEvents,
    /// Every event was unsupported and the builder was told to drop unsupported events.
    AllEventsDropped(Vec<DroppedEvent>),
}

impl PerfError {
    /// Maps an errno from `perf_event_open` for `event` to the matching variant.
    pub(crate) fn from_open_errno(errno: i32, event: &str, exclude_kernel: bool) -> Self {
        let event = event.to_owned();
        match errno {
            libc::EACCES | libc::EPERM => Self::PermissionDenied {
                event,
                errno,
                paranoid: perf_event_paranoid(),
                exclude_kernel,
            },
            libc::ENOENT | libc::EOPNOTSUPP | libc::ENODEV => Self::Unsupported { event, errno },
            libc::EINVAL => Self::CannotSchedule { event, errno },
            libc::EMFILE | libc::ENFILE => Self::TooManyOpenFiles { event, errno },
            libc::ESRCH => Self::NoSuchTarget { event, errno },
            _ => Self::Os {
                op: "perf_event_open",
                event: Some(event),
                errno,
            },
        }
    }

    /// The errno, for errors that came from a system call.
    pub fn errno(&self) -> Option<i32> {
        match self {
            Self::PermissionDenied { errno, .. }
            | Self::Unsupported { errno, .. }
            | Self::CannotSchedule { errno, .. }
            | Self::TooManyOpenFiles { errno, .. }
            | Self::NoSuchTarget { errno, .. }
            | Self::Os { errno, .. } => Some(*errno),
            _ => None,
        }
    }

    /// Whether the event is simply not available here (what
    /// [`OnUnsupported::Drop`](crate::session::OnUnsupported::Drop) drops): ENOENT, EOPNOTSUPP,
    /// ENODEV, or EINVAL for one event.
    pub fn is_unsupported(&self) -> bool {
        matches!(self, Self::Unsupported { .. } | Self::CannotSchedule { .. })
    }

    /// What to do about it.
    pub fn action(&self) -> String {
        match self {
            Self::PermissionDenied {
                paranoid,
                exclude_kernel,
                ..
            } => {
                let now = match paranoid {
                    Some(p) => format!("it is {p}"),
                    None => "it could not be read".to_owned(),
                };
                let excl = if *exclude_kernel {
                    "the request already excludes the kernel, so paranoid must be <= 2"
                } else {
                    "this request counts the kernel: set exclude_kernel(true) (and \
                     exclude_hv(true)) on the builder, which paranoid 2 allows"
                };
                format!(
                    "lower {PARANOID_PATH} ({now}; 2 allows user-space-only counting, 1 kernel \
                     counting, 0 CPU-wide counting, 3+ nothing unprivileged) or grant \
                     CAP_PERFMON; {excl}"
                )
            }
            Self::Unsupported { .. } => "this CPU or VM does not expose the event: hardware, \
                cache and raw events need a hardware PMU, which VMs without a virtual PMU \
                (vPMU) lack. Check `Capabilities::detect()`, use software events (task-clock, \
                page-faults), or build with OnUnsupported::Drop"
                .to_owned(),
            Self::CannotSchedule { .. } => "the group cannot be scheduled on the PMU (more \
                events than counters, or events that cannot share a group), or an attribute is \
                invalid for this event: open fewer events per session, or check the event's \
                config and exclusion flags"
                .to_owned(),
            Self::TooManyOpenFiles { .. } => "each counter holds one file descriptor: raise the \
                limit (`ulimit -n`) or open fewer counters"
                .to_owned(),
            Self::NoSuchTarget { .. } => {
                "the target pid/tid does not exist (or has exited): check the target".to_owned()
            }
            Self::Os { .. } => "see the errno; perf_event_open(2) lists the causes".to_owned(),
            Self::PinnedGroupEvicted => "the pinned group did not fit on the PMU: unpin it \
                (pinned(false)) to let it multiplex, or open fewer events"
                .to_owned(),
            Self::MalformedRead { .. } => {
                "this is a bug or a kernel mismatch: please report it".to_owned()
            }
            Self::Parse(_) => "write the event as perf does (see `perf list`)".to_owned(),
            Self::Pmu { .. } => "check /sys/bus/event_source/devices/<pmu>/format and events \
                for the terms this PMU accepts"
                .to_owned(),
            Self::Sysfs { .. } => "check that sysfs and procfs are mounted and readable".to_owned(),
            Self::NoEvents => "add at least one event to the builder".to_owned(),
            Self::AllEventsDropped(_) => "no requested event is available here: use software \
                events (task-clock, page-faults) on machines without a hardware PMU"
                .to_owned(),
        }
    }
}

fn errno_text(errno: i32) -> String {
    std::io::Error::from_raw_os_error(errno).to_string()
}

impl fmt::Display for PerfError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::PermissionDenied { event, errno, .. } => {
                write!(
                    f,
                    "permission denied opening `{event}` ({})",
                    errno_text(*errno)
                )?;
            }
            Self::Unsupported { event, errno } => {
                write!(
                    f,
                    "event `{event}` is not supported here ({})",
                    errno_text(*errno)
                )?;
            }
            Self::CannotSchedule { event, errno } => write!(
                f,
                "event `{event}` cannot be scheduled or is invalid ({})",
                errno_text(*errno)
            )?,
            Self::TooManyOpenFiles { event, errno } => write!(
                f,
                "too many open files opening `{event}` ({})",
                errno_text(*errno)
            )?,
            Self::NoSuchTarget { event, errno } => {
                write!(f, "no such target for `{event}` ({})", errno_text(*errno))?;
            }
            Self::Os { op, event, errno } => {
                write!(f, "{op} failed")?;
                if let Some(e) = event {
                    write!(f, " for `{e}`")?;
                }
                write!(f, " ({})", errno_text(*errno))?;
            }
            Self::PinnedGroupEvicted => f.write_str("the pinned counter group was evicted")?,
            Self::MalformedRead { bytes, expected } => {
                write!(f, "group read returned {bytes} bytes, expected {expected}")?
            }
            Self::Parse(e) => write!(f, "{e}")?,
            Self::Pmu { event, reason } => write!(f, "cannot resolve `{event}`: {reason}")?,
            Self::Sysfs { path, reason } => write!(f, "{}: {reason}", path.display())?,
            Self::NoEvents => f.write_str("no events requested")?,
            Self::AllEventsDropped(d) => {
                f.write_str("every event was unsupported and dropped:")?;
                for x in d {
                    write!(f, " `{}` ({})", x.event, x.error)?;
                }
            }
        }
        write!(f, "; {}", self.action())
    }
}

impl std::error::Error for PerfError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Parse(e) => Some(e),
            _ => None,
        }
    }
}

impl From<ParseEventError> for PerfError {
    fn from(e: ParseEventError) -> Self {
        Self::Parse(e)
    }
}

impl From<PerfError> for picollo_core::source::SourceError {
    fn from(e: PerfError) -> Self {
        match e.errno() {
            Some(n) => Self::Os(n),
            None => Self::Unavailable,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg_attr(miri, ignore = "miri isolation forbids reading perf_event_paranoid")]
    fn actions_name_the_fix() {
        let e = PerfError::from_open_errno(libc::EACCES, "task-clock", false);
        let s = e.to_string();
        assert!(
            s.contains("perf_event_paranoid") && s.contains("exclude_kernel"),
            "{s}"
        );
        assert_eq!(e.errno(), Some(libc::EACCES));

        let e = PerfError::from_open_errno(libc::ENOENT, "cycles", true);
        let s = e.to_string();
        assert!(
            s.contains("does not expose") && s.contains("hardware PMU"),
            "{s}"
        );
        assert!(e.is_unsupported());

        let e = PerfError::from_open_errno(libc::EINVAL, "cycles", true);
        assert!(e.to_string().contains("cannot be scheduled"));
        assert!(matches!(e, PerfError::CannotSchedule { .. }));

        let e = PerfError::from_open_errno(libc::EMFILE, "cycles", true);
        assert!(e.to_string().contains("ulimit -n"));

        let e = PerfError::from_open_errno(libc::E2BIG, "cycles", true);
        assert!(matches!(
            e,
            PerfError::Os {
                errno: libc::E2BIG,
                ..
            }
        ));
        assert!(!e.is_unsupported());
    }
}
