//! The ring region's word layout: the header words' indices ([`w`]), sizes ([`header_words`],
//! [`required_words`](super::required_words)), limits, and checked word access into a region.

use core::fmt;

use crate::sync::Ordering;

use super::error::*;
use super::frame::*;
use super::limits::*;
use super::schema::*;
use crate::sync::AtomicU64;

/// Header word indices.
pub(super) mod w {
    pub(crate) const MAGIC: usize = 0;
    pub(crate) const VERSION: usize = 1;
    pub(crate) const HEADER_WORDS: usize = 2;
    pub(crate) const SLOT_WORDS: usize = 3;
    pub(crate) const SLOT_COUNT: usize = 4;
    pub(crate) const WRITER_A: usize = 5;
    pub(crate) const WRITER_B: usize = 6;
    pub(crate) const FLAGS: usize = 7;
    pub(crate) const HEAD: usize = 8;
    pub(crate) const ATTACHED: usize = 16;
    pub(crate) const CLOCK_KIND: usize = 17;
    pub(crate) const CLOCK_HZ: usize = 18;
    pub(crate) const CLOCK_REF_TICKS: usize = 19;
    pub(crate) const CLOCK_REF_NS: usize = 20;
    pub(crate) const FIELD_COUNT: usize = 21;
    pub(crate) const COUNTER_COUNT: usize = 22;
    pub(crate) const RESERVED: usize = 23;
    pub(crate) const FRAME_NAME: usize = 24;
    /// Written by the writer: the counter table's seqlock.
    pub(crate) const COUNTERS_EPOCH: usize = 32;
    /// The first frame number the current counter table describes.
    pub(crate) const COUNTERS_SINCE: usize = 33;
    /// Written by readers (their own cache lines): the counter request.
    pub(crate) const REQUEST_SEQ: usize = 40;
    pub(crate) const REQUEST_ACK: usize = 41;
    pub(crate) const REQUEST_LEN: usize = 42;
    pub(crate) const REQUEST_TEXT: usize = 48;
    pub(crate) const TABLES: usize = 80;
    /// Words of one counter or field entry.
    pub(crate) const ENTRY: usize = 4;
}

/// Header words for a schema of `fields` fields and `counters` counters: the fixed part plus
/// one 4-word entry each, rounded up to whole 64-byte lines.
pub const fn header_words(fields: usize, counters: usize) -> usize {
    let raw = w::TABLES + w::ENTRY * (fields + counters);
    raw.div_ceil(8) * 8
}

/// Words a region needs for a ring of `slots` slots of `schema` frames and `counters` header
/// counters (saturating for absurd sizes, which [`RingWriter`](super::RingWriter) then rejects).
pub const fn required_words(schema: &Schema<'_>, counters: usize, slots: u32) -> usize {
    let slot_words = 1 + schema.payload_words();
    header_words(schema.fields.len(), counters)
        .saturating_add((slots as usize).saturating_mul(slot_words))
}

// ---------------------------------------------------------------------------------------------
// Header values
// ---------------------------------------------------------------------------------------------

/// Views `len` bytes at `ptr` as ring words (`len` is rounded down to whole words).
///
/// Returns [`RingError::Misaligned`] when `ptr` is null or not aligned for `AtomicU64`.
///
/// # Safety
///
/// For all of `'a`:
/// - `ptr..ptr+len` is valid for reads and writes (mapped, not freed or unmapped, and not
///   shrunk, for a shared-memory mapping);
/// - every access to those bytes, from this or any other thread or process, is an atomic
///   access of aligned 64-bit words (no plain reads or writes, no byte-wise copies);
/// - no Rust reference to those bytes other than through the returned slice exists.
///
/// Racing atomic accesses by other processes are expected: that is how rings share memory.
pub(crate) unsafe fn region_from_raw<'a>(
    ptr: *mut u8,
    len: usize,
) -> Result<&'a [AtomicU64], RingError> {
    if ptr.is_null() || !(ptr as usize).is_multiple_of(core::mem::align_of::<AtomicU64>()) {
        return Err(RingError::Misaligned);
    }
    let words = len / core::mem::size_of::<AtomicU64>();
    // SAFETY: `ptr` is non-null and aligned for `AtomicU64` (checked above); the caller
    // guarantees `len >= words * 8` bytes are valid, live for `'a`, and only ever accessed as
    // atomics, so viewing them as a shared slice of `AtomicU64` is sound.
    Ok(unsafe { core::slice::from_raw_parts(ptr.cast::<AtomicU64>(), words) })
}

#[inline(always)]
pub(super) fn word(region: &[AtomicU64], i: usize) -> Result<&AtomicU64, RingError> {
    region.get(i).ok_or(RingError::RegionTooSmall {
        needed: i + 1,
        words: region.len(),
    })
}

/// Where header words come from: a live region (relaxed atomic loads) or a plain copy (a
/// capture file).
pub(super) trait Words {
    fn word(&self, i: usize) -> Option<u64>;
    fn words(&self) -> usize;
}

impl Words for [AtomicU64] {
    #[inline]
    fn word(&self, i: usize) -> Option<u64> {
        self.get(i).map(|w| w.load(Ordering::Relaxed))
    }
    fn words(&self) -> usize {
        self.len()
    }
}

impl Words for [u64] {
    #[inline]
    fn word(&self, i: usize) -> Option<u64> {
        self.get(i).copied()
    }
    fn words(&self) -> usize {
        self.len()
    }
}

pub(super) fn load<W: Words + ?Sized>(region: &W, i: usize) -> Result<u64, RingError> {
    region.word(i).ok_or(RingError::RegionTooSmall {
        needed: i + 1,
        words: region.words(),
    })
}

/// Encodes `name` into `words` words of NUL-padded little-endian bytes, through `set`.
pub(super) fn encode_name(set: &mut dyn FnMut(usize, u64), at: usize, name: &str, words: usize) {
    let b = name.as_bytes();
    for k in 0..words {
        let mut v = [0u8; 8];
        for (j, d) in v.iter_mut().enumerate() {
            *d = b.get(8 * k + j).copied().unwrap_or(0);
        }
        set(at + k, u64::from_le_bytes(v));
    }
}

// ---------------------------------------------------------------------------------------------
// The validated header
// ---------------------------------------------------------------------------------------------

/// A name read from a header: up to `N` bytes, checked on parse.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub(super) struct NameBuf<const N: usize> {
    pub(super) bytes: [u8; N],
}

impl<const N: usize> NameBuf<N> {
    pub(super) const EMPTY: Self = Self { bytes: [0; N] };

    pub(super) fn read<W: Words + ?Sized>(region: &W, at: usize) -> Result<Self, RingError> {
        let mut bytes = [0u8; N];
        for (k, chunk) in bytes.chunks_mut(8).enumerate() {
            let v = load(region, at + k)?.to_le_bytes();
            chunk.copy_from_slice(v.get(..chunk.len()).unwrap_or(&[]));
        }
        Ok(Self { bytes })
    }

    pub(super) fn as_str(&self) -> &str {
        utf8_prefix(&self.bytes)
    }

    /// Whether the bytes are exactly a valid string followed by NUL padding.
    pub(super) fn is_clean(&self) -> bool {
        let s = self.as_str().len();
        self.bytes
            .get(s..)
            .is_some_and(|t| t.iter().all(|&b| b == 0))
    }
}

impl<const N: usize> fmt::Debug for NameBuf<N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

pub(super) fn check_magic(magic: u64) -> Result<(), RingError> {
    if magic == MAGIC {
        return Ok(());
    }
    Err(match magic {
        0 => RingError::Uninitialized,
        m if m.swap_bytes() == MAGIC => RingError::WrongEndianness,
        m => RingError::BadMagic(m),
    })
}
