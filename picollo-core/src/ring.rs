//! Lossy frame rings: a single writer saves fixed-size frames into a circular buffer of slots
//! over any memory region; readers copy them out, validate them and count what they lost.
//! The writer never waits for a reader (as in the ppt tracer and OCaml's runtime events).
//!
//! # Layout
//!
//! A region is a slice of `portable_atomic::AtomicU64` words: a header, then `slot_count`
//! slots of `slot_words` words. Every access is atomic, so a reader copying a slot while the
//! writer overwrites it races only on atomics (no undefined behaviour), and the sequence word
//! tells it to throw the copy away.
//!
//! | words | header field |
//! |---|---|
//! | 0 | magic `PICORING` (little-endian bytes; a byte-swapped magic means the other endianness) |
//! | 1, 2 | version (2), header words |
//! | 3, 4 | slot words (`1 + payload`), slot count (a power of two, 2..=2^31) |
//! | 5, 6 | writer identity ([`WriterId`]: pid and process start time on Linux) |
//! | 7 | flags (0) |
//! | 8 | `head`: frames saved (its own cache line) |
//! | 16 | `attached`: how many readers are attached (0 = saving is a no-op) |
//! | 17..=20 | clock: kind, ticks per second, a reference pair (ticks, ns) |
//! | 21, 22 | field count, counter slots |
//! | 24..=27 | frame name (32 bytes) |
//! | 32, 33 | counter table epoch (odd while the writer rewrites the table), first frame of the table |
//! | 40..=42 | counter request: sequence (odd while a reader writes it), acknowledged sequence, length |
//! | 48..=79 | counter request text (256 bytes) |
//! | 80.. | counters (24-byte name + status word each), then fields (24-byte name + a word with kind, size and offset) |
//!
//! The header is padded to whole cache lines; slot `i` starts at `header_words + i * slot_words`.
//! Slot word 0 is the sequence word; the payload follows.
//!
//! # Protocol
//!
//! Writer, frame `n` (in slot `n mod slot_count`):
//! `seq = 2n+1` (Relaxed), `fence(Release)`, payload stores (Relaxed), `seq = 2n+2` (Release),
//! `head = n+1` (Release). It never reads what a reader wrote except the `attached` word: with
//! no reader attached, a save is one relaxed load and a branch.
//!
//! Reader, frame `j`: `s1 = seq` (Acquire), payload loads (Relaxed), `fence(Acquire)`,
//! `s2 = seq` (Relaxed); the copy is accepted only if `s1 == s2 == 2j+2`. Anything else means
//! the writer overwrote the slot: the frame is counted as lost. A reader more than a ring
//! behind `head` resumes at `head - slot_count/2` (not `head - slot_count`, which the writer
//! would overwrite at once), counting the skipped frames as lost. So, exactly, every frame
//! number the reader passes is either accepted once or lost once.
//!
//! # Untrusted headers
//!
//! Readers treat the region as written by anyone: [`RingInfo::parse`] checks every header
//! field (magic, version, sizes against the region, power-of-two slot count, names, field
//! kinds, offsets and their sum) and keeps a private copy, so nothing the writer changes later
//! can move a reader's accesses out of the region. A bad header is an error, never a panic.
//!
//! # Example: a static ring in firmware, drained in the same program
//!
//! ```
//! use picollo_core::ring::{required_words, Frame, RingBuffer, RingOptions};
//!
//! picollo_core::frame! {
//!     #[derive(Clone, Copy, Debug, PartialEq)]
//!     pub struct Tick { pub n: u32, pub cycles: u64 }
//! }
//! const SLOTS: u32 = 16;
//! static RING: RingBuffer<{ required_words(&Tick::SCHEMA, 0, SLOTS) }> = RingBuffer::new();
//!
//! let mut w = RING.frame_writer::<Tick>(&RingOptions::new(SLOTS))?;
//! assert!(!w.save(&Tick { n: 0, cycles: 1 })); // nobody attached: a no-op
//!
//! let mut r = RING.reader()?; // a debugger can set `attached` the same way
//! for n in 1..=40 {
//!     w.save(&Tick { n, cycles: 100 * u64::from(n) });
//! }
//! let mut seen = Vec::new();
//! while let Some((number, tick)) = r.next_frame::<Tick>()? {
//!     seen.push((number, tick.n));
//! }
//! // 40 frames into 16 slots: the reader resumed at 40 - 16/2 and counted the rest as lost.
//! assert_eq!(r.lost(), 32);
//! assert_eq!(seen.first(), Some(&(32, 33)));
//! assert_eq!(r.accepted() + r.lost(), 40);
//! # Ok::<(), picollo_core::ring::RingError>(())
//! ```

// A `static` ring: const atomics, which loom's are not.
#[cfg(not(loom))]
mod buffer;
mod counters;
mod dynamic;
mod error;
mod frame;
mod header;
mod info;
mod limits;
mod reader;
mod schema;
mod words;
mod writer;

/// The word type of ring regions (re-exported for [`frame!`](crate::frame)).
pub use crate::sync::AtomicU64;

pub use dynamic::{CounterValues, DynamicFrame, FieldValue, StrValue, Value};
pub use frame::{
    CounterInterval, Counters, Frame, FrameField, Label, Time, TimeInterval, WordArray,
};
pub use schema::{
    Field, FieldKind, Schema, SchemaError, FRAME_NAME_BYTES, MAX_COUNTERS, MAX_FIELDS,
    MAX_PAYLOAD_WORDS, MAX_STR_WORDS, NAME_BYTES,
};

#[cfg(not(loom))]
pub use buffer::RingBuffer;
pub use counters::{CounterInfo, CounterRequest, CounterStatus, CounterTable, RequestStatus};
pub use error::RingError;
pub use header::{ClockInfo, ClockKind, RingOptions, WriterId};
pub use info::{FieldInfo, RingInfo};
pub use limits::{MAGIC, MAX_SLOTS, MIN_SLOTS, REQUEST_BYTES, VERSION};
pub use reader::{Drained, RingReader};
pub use words::{header_words, region_from_raw, required_words};
pub use writer::{store_payload, FrameWriter, RingWriter};

#[cfg(all(test, not(loom)))]
mod tests;
