//! The capture file format's constants (magic, version, limits, record kinds) and
//! [`CaptureError`].

use core::fmt;
use std::io;

use picollo_ring::{RingError, MAX_COUNTERS};

/// The file magic.
pub(crate) const MAGIC: [u8; 8] = *b"PICOCAPT";
/// The format version this code writes and reads.
pub(crate) const VERSION: u32 = 1;
/// The largest record payload a reader accepts (and a writer produces): 1 MiB.
pub(crate) const MAX_RECORD_BYTES: u64 = 1 << 20;
/// The most rings one capture may describe.
pub(crate) const MAX_RINGS: u32 = 4096;
/// Longest ring name, in bytes.
pub(crate) const MAX_RING_NAME: usize = 255;

pub(super) const FILE_HEADER: usize = 32;
pub(super) const RECORD_HEADER: usize = 16;
/// The longest ring header: 80 fixed words, 32 fields and 8 counters of 4 words.
pub(super) const MAX_HEADER_WORDS: usize = 80 + 4 * (32 + MAX_COUNTERS);
/// Frame bytes a writer buffers before it writes a frames record.
pub(super) const FRAME_BUFFER: usize = 64 << 10;

pub(super) mod kind {
    pub(crate) const RING: u32 = 1;
    pub(crate) const FRAMES: u32 = 2;
    pub(crate) const LOST: u32 = 3;
    pub(crate) const COUNTERS: u32 = 4;
    pub(crate) const END: u32 = 5;
}

/// Why a capture could not be written or read.
#[derive(Debug)]
#[non_exhaustive]
pub(crate) enum CaptureError {
    /// Reading or writing the file failed.
    Io(io::Error),
    /// The file is not a capture, or is damaged: what is wrong, at which byte.
    Invalid {
        /// The byte offset of the file header or record at fault.
        offset: u64,
        /// What is wrong.
        what: String,
    },
    /// A ring header or counter table in the file is invalid.
    Ring {
        /// The byte offset of the record.
        offset: u64,
        /// What the ring code said.
        error: RingError,
    },
    /// A writer was given something it cannot record (a name too long, too many rings).
    Unrecordable(String),
}

impl fmt::Display for CaptureError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Io(e) => write!(f, "{e}"),
            Self::Invalid { offset, what } => write!(f, "at byte {offset}: {what}"),
            Self::Ring { offset, error } => {
                write!(f, "at byte {offset}: invalid ring description: {error}")
            }
            Self::Unrecordable(what) => write!(f, "cannot record: {what}"),
        }
    }
}

impl std::error::Error for CaptureError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Io(e) => Some(e),
            Self::Ring { error, .. } => Some(error),
            _ => None,
        }
    }
}

impl From<io::Error> for CaptureError {
    fn from(e: io::Error) -> Self {
        Self::Io(e)
    }
}
