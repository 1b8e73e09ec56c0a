//! # picollo-ring
//!
//! `#![no_std]` lossy frame rings: a single writer saves fixed-size frames into a circular
//! buffer of slots over any memory region; readers copy them out, validate them and count what
//! they lost. The writer never waits for a reader (as in the ppt tracer and OCaml's runtime
//! events). Rings exist on targets with native 64-bit atomics; elsewhere the crate is empty.
//! Feature `std` adds `csv`, a ring's frames as CSV.
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
//! use picollo_ring::{required_words, Frame, RingBuffer, RingOptions};
//!
//! picollo_ring::frame! {
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
//! # Ok::<(), picollo_ring::RingError>(())
//! ```

#![no_std]
#![doc(test(attr(deny(warnings))))]
// Library crates: an item is `pub` only where a user can reach it (the public surface is
// what users call; `missing_docs` is on for the workspace).
#![warn(unreachable_pub)]
// docs.rs (`--cfg docsrs`, nightly) marks the items that need a feature or a target.
#![cfg_attr(docsrs, feature(doc_cfg))]

#[cfg(any(test, feature = "std"))]
extern crate std;

// Frame rings are made of 64-bit atomic words: every item exists only on targets with native
// 64-bit atomics (never a lock-based emulation, see `picollo_core::cell`). Elsewhere
// (thumbv6m, thumbv7em, riscv32imc) the crate builds, empty.

// A `static` ring: const atomics, which loom's are not.
#[cfg(all(target_has_atomic = "64", not(loom)))]
mod buffer;
#[cfg(target_has_atomic = "64")]
mod counters;
#[cfg(all(target_has_atomic = "64", feature = "std"))]
#[cfg_attr(docsrs, doc(cfg(feature = "std")))]
pub mod csv;
#[cfg(target_has_atomic = "64")]
mod dynamic;
#[cfg(target_has_atomic = "64")]
mod error;
#[cfg(target_has_atomic = "64")]
mod frame;
#[cfg(target_has_atomic = "64")]
mod header;
#[cfg(target_has_atomic = "64")]
mod info;
#[cfg(target_has_atomic = "64")]
mod limits;
/// This crate's planted loom bugs (`picollo_core::plant!`): a `--cfg loom` build only, not part
/// of the API.
#[cfg(loom)]
#[doc(hidden)]
pub mod planted;
#[cfg(target_has_atomic = "64")]
mod reader;
#[cfg(target_has_atomic = "64")]
mod schema;
#[cfg(target_has_atomic = "64")]
mod sync;
#[cfg(target_has_atomic = "64")]
mod words;
#[cfg(target_has_atomic = "64")]
mod writer;

/// The word type of ring regions (re-exported for [`frame!`](crate::frame)).
#[cfg(target_has_atomic = "64")]
pub use sync::AtomicU64;

#[cfg(target_has_atomic = "64")]
pub use dynamic::{CounterValues, DynamicFrame, FieldValue, StrValue, Value};
#[cfg(target_has_atomic = "64")]
pub use frame::{
    CounterInterval, Counters, Frame, FrameField, Label, Time, TimeInterval, WordArray,
};
#[cfg(target_has_atomic = "64")]
pub use schema::{
    Field, FieldKind, Schema, SchemaError, MAX_COUNTERS, MAX_FIELDS, MAX_PAYLOAD_WORDS, NAME_BYTES,
};

#[cfg(all(target_has_atomic = "64", not(loom)))]
pub use buffer::RingBuffer;
#[cfg(target_has_atomic = "64")]
pub use counters::{CounterInfo, CounterRequest, CounterStatus, CounterTable, RequestStatus};
#[cfg(target_has_atomic = "64")]
pub use error::RingError;
#[cfg(target_has_atomic = "64")]
pub use header::{ClockInfo, ClockKind, RingOptions, WriterId};
#[cfg(target_has_atomic = "64")]
pub use info::{FieldInfo, RingInfo};
#[cfg(target_has_atomic = "64")]
pub use limits::{MAGIC, REQUEST_BYTES, VERSION};
#[cfg(target_has_atomic = "64")]
pub use reader::{Drained, RingReader};
#[cfg(target_has_atomic = "64")]
pub use words::{header_words, required_words};
#[cfg(target_has_atomic = "64")]
pub use writer::{store_payload, FrameWriter, RingWriter};

#[cfg(all(test, target_has_atomic = "64", not(loom)))]
mod tests;

/// The README's examples, compiled and run as doc tests.
#[cfg(all(doctest, target_has_atomic = "64"))]
#[doc = include_str!("../README.md")]
pub(crate) struct ReadmeDoctests;
