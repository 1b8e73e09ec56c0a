//! Why a ring operation failed: [`RingError`].

use super::limits::{MAX_SLOTS, MIN_SLOTS, REQUEST_BYTES, VERSION};
use super::schema::SchemaError;
use core::fmt;

/// Why a ring could not be created or read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum RingError {
    /// The region has fewer words than the ring (or its header) needs.
    RegionTooSmall {
        /// Words needed.
        needed: usize,
        /// Words available.
        words: usize,
    },
    /// A raw region pointer is null or not aligned to 8 bytes.
    Misaligned,
    /// The slot count is not a power of two in `2..=2^31`.
    BadSlotCount(u64),
    /// The schema or a counter description breaks the header's limits.
    Schema(SchemaError),
    /// The magic word is 0: no writer has initialized the region (yet).
    Uninitialized,
    /// The magic word is wrong: not a ring.
    BadMagic(u64),
    /// The magic word is byte-swapped: a ring written by a machine of the other endianness.
    WrongEndianness,
    /// A header version this code does not read.
    UnsupportedVersion(u64),
    /// A header field is out of range or inconsistent (the header is untrusted).
    BadHeader {
        /// Which field.
        field: &'static str,
        /// Its value (for names, the entry index).
        value: u64,
    },
    /// More counters were given than the ring has counter slots (fixed when the ring was
    /// made: [`RingOptions`](super::RingOptions)`::counters`).
    TooManyCounters {
        /// Counters given.
        asked: usize,
        /// Counter slots the ring has.
        slots: usize,
    },
    /// `head` went backwards: the writer re-initialized the ring, or the region is corrupt.
    /// Attach again.
    HeadMovedBackwards {
        /// `head` now.
        head: u64,
        /// `head` before.
        before: u64,
    },
    /// The caller's buffer is shorter than the payload.
    BufferTooShort {
        /// Payload words.
        needed: usize,
        /// Buffer words.
        len: usize,
    },
    /// The header's schema is not the frame type's.
    SchemaMismatch,
    /// A [`RingBuffer`](super::RingBuffer) already handed out its writer.
    AlreadyClaimed,
    /// A counter request is longer than [`REQUEST_BYTES`] or holds control characters.
    BadRequest {
        /// Its length in bytes.
        len: usize,
    },
}

impl From<SchemaError> for RingError {
    fn from(e: SchemaError) -> Self {
        Self::Schema(e)
    }
}

impl fmt::Display for RingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::RegionTooSmall { needed, words } => write!(
                f,
                "ring region has {words} words, needs {needed}: enlarge it or use fewer slots"
            ),
            Self::Misaligned => f.write_str("ring region pointer is null or not 8-byte aligned"),
            Self::BadSlotCount(n) => write!(
                f,
                "ring slot count {n} is not a power of two between {MIN_SLOTS} and {MAX_SLOTS}"
            ),
            Self::Schema(e) => write!(f, "ring schema: {e}"),
            Self::Uninitialized => f.write_str("ring region is not initialized by a writer"),
            Self::BadMagic(m) => write!(f, "not a ring: magic {m:#018x}"),
            Self::WrongEndianness => {
                f.write_str("ring written by a machine of the other byte order")
            }
            Self::UnsupportedVersion(v) => {
                write!(f, "ring header version {v}, this code reads {VERSION}")
            }
            Self::BadHeader { field, value } => {
                write!(f, "corrupt ring header: {field} = {value}")
            }
            Self::TooManyCounters { asked, slots } => {
                write!(f, "{asked} counters given, the ring has {slots} counter slots")
            }
            Self::HeadMovedBackwards { head, before } => write!(
                f,
                "ring head moved backwards from {before} to {head}: the writer restarted; attach again"
            ),
            Self::BufferTooShort { needed, len } => write!(
                f,
                "frame buffer of {len} words is shorter than the {needed}-word payload"
            ),
            Self::SchemaMismatch => f.write_str("the ring's schema is not this frame type's"),
            Self::AlreadyClaimed => f.write_str("this ring buffer already has a writer"),
            Self::BadRequest { len } => write!(
                f,
                "counter request of {len} bytes: give at most {REQUEST_BYTES} bytes of names, \
                 without control characters"
            ),
        }
    }
}

impl core::error::Error for RingError {
    fn source(&self) -> Option<&(dyn core::error::Error + 'static)> {
        match self {
            Self::Schema(e) => Some(e),
            _ => None,
        }
    }
}
