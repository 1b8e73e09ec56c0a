//! The ring format's constants: its magic word, header version and size limits. A leaf: every
//! other part of the ring reads them.

/// The magic word: the bytes `PICORING` in little-endian order.
pub const MAGIC: u64 = u64::from_le_bytes(*b"PICORING");
/// The header layout version this code writes and reads.
pub const VERSION: u64 = 2;
/// Longest counter request text, in bytes (see
/// [`RingReader::request_counters`](super::RingReader::request_counters)).
pub const REQUEST_BYTES: usize = 256;
/// Fewest slots a ring may have.
pub(crate) const MIN_SLOTS: u32 = 2;
/// Most slots a ring may have.
pub(crate) const MAX_SLOTS: u32 = 1 << 31;
