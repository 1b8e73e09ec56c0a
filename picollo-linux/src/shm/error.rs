//! [`ShmError`]: why a shared-memory ring could not be created, attached or read, with the
//! errno where there is one.

use core::fmt;

use std::io;

use picollo_ring::RingError;

use super::segment::MAX_NAME_BYTES;

/// Why a shared-memory ring could not be created, attached or read.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ShmError {
    /// A ring name is empty, too long, or has characters other than ASCII letters, digits,
    /// `_`, `-` and `.` (or starts with `.`).
    BadName(String),
    /// No such segment: the writer has not created it, or has exited.
    NotFound(String),
    /// The segment path leads to something that is not a Picollo ring (another file, a
    /// memfd of another name).
    NotARing {
        /// The segment path.
        segment: String,
        /// What it leads to (the `/proc` link's target).
        target: String,
    },
    /// The segment is not sealed against shrinking and growing: its owner could truncate it
    /// under the mapping (not a segment Picollo created; refused).
    NotSealed {
        /// The segment.
        segment: String,
        /// Its seals (`F_GET_SEALS`).
        seals: i32,
    },
    /// This process already has a ring of that name.
    AlreadyExists(String),
    /// A system call failed.
    Os {
        /// The call.
        op: &'static str,
        /// The segment.
        segment: String,
        /// The errno.
        errno: i32,
    },
    /// The segment belongs to another user.
    NotOwner {
        /// The segment.
        segment: String,
        /// Its owner.
        uid: u32,
    },
    /// The segment is accessible to group or others (rings are created 0600).
    BadMode {
        /// The segment.
        segment: String,
        /// Its mode bits.
        mode: u32,
    },
    /// The segment's size is not a whole number of words, or is above
    /// 1 GiB.
    BadSize {
        /// The segment.
        segment: String,
        /// Its size.
        bytes: u64,
    },
    /// The writer held its lock for a long time: `flock(LOCK_SH)` kept failing.
    Busy(String),
    /// The header's writer pid is not the pid in the segment's name.
    WrongWriter {
        /// The segment.
        segment: String,
        /// The pid in the name.
        pid: i32,
        /// The pid in the header.
        header_pid: u64,
    },
    /// The ring itself (header validation, reading).
    Ring {
        /// The segment.
        segment: String,
        /// What the ring said.
        error: RingError,
    },
    /// Writing CSV (or another output) failed.
    Io {
        /// What was being written.
        op: &'static str,
        /// The I/O error kind.
        kind: io::ErrorKind,
        /// The I/O error's message.
        message: String,
    },
}

impl ShmError {
    pub(super) fn os(op: &'static str, segment: &str, errno: i32) -> Self {
        Self::Os {
            op,
            segment: segment.to_owned(),
            errno,
        }
    }

    pub(super) fn ring(segment: &str, error: RingError) -> Self {
        Self::Ring {
            segment: segment.to_owned(),
            error,
        }
    }

    pub(super) fn io(op: &'static str, e: &io::Error) -> Self {
        Self::Io {
            op,
            kind: e.kind(),
            message: e.to_string(),
        }
    }
}

impl fmt::Display for ShmError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::BadName(n) => write!(
                f,
                "bad ring name {n:?}: use 1 to {MAX_NAME_BYTES} ASCII letters, digits, `_`, `-` or `.`"
            ),
            Self::NotFound(s) => write!(
                f,
                "no ring segment {s}: the writer has not created it yet, or has exited \
                 (see `list_rings`)"
            ),
            Self::NotARing { segment, target } => {
                write!(f, "{segment} is not a Picollo ring (it is {target:?})")
            }
            Self::NotSealed { segment, seals } => write!(
                f,
                "ring segment {segment} is not sealed against resizing (seals {seals:#x}): \
                 not a segment Picollo created; refusing it"
            ),
            Self::AlreadyExists(s) => write!(f, "this process already has a ring {s}"),
            Self::Os { op, segment, errno } => write!(
                f,
                "{op} on {segment} failed: {}",
                io::Error::from_raw_os_error(*errno)
            ),
            Self::NotOwner { segment, uid } => write!(
                f,
                "ring segment {segment} belongs to uid {uid}: attach as that user"
            ),
            Self::BadMode { segment, mode } => write!(
                f,
                "ring segment {segment} has mode {mode:o}, readable or writable by others: \
                 not a segment Picollo created; refusing it"
            ),
            Self::BadSize { segment, bytes } => {
                write!(f, "ring segment {segment} has an implausible size of {bytes} bytes")
            }
            Self::Busy(s) => write!(f, "ring segment {s} stayed locked by its writer; try again"),
            Self::WrongWriter {
                segment,
                pid,
                header_pid,
            } => write!(
                f,
                "ring segment {segment} is named for pid {pid} but its header says pid {header_pid}"
            ),
            Self::Ring { segment, error } => write!(f, "ring segment {segment}: {error}"),
            Self::Io { op, message, .. } => write!(f, "{op}: {message}"),
        }
    }
}

impl std::error::Error for ShmError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Ring { error, .. } => Some(error),
            _ => None,
        }
    }
}
