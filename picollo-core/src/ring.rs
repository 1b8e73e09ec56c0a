//! Lossy frame rings: a single writer saves fixed-size frames into a circular buffer of slots
//! over any memory region; readers copy them out, validate them and count what they lost.
//! The writer never waits for a reader (seeds 002, ppt, and 004, OCaml runtime events).
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

use core::fmt;
use core::marker::PhantomData;

use portable_atomic::{fence, AtomicBool, Ordering};

mod frame;

/// The word type of ring regions (re-exported for [`frame!`](crate::frame)).
pub use portable_atomic::AtomicU64;

pub use frame::{
    CounterInterval, CounterValues, Counters, DynamicFrame, Field, FieldKind, FieldValue, Frame,
    FrameField, Label, Schema, SchemaError, StrValue, Time, TimeInterval, Value, WordArray,
    FRAME_NAME_BYTES, MAX_COUNTERS, MAX_FIELDS, MAX_PAYLOAD_WORDS, MAX_STR_WORDS, NAME_BYTES,
};

use frame::{check_counter_name, check_name, utf8_prefix};

/// The magic word: the bytes `PICORING` in little-endian order.
pub const MAGIC: u64 = u64::from_le_bytes(*b"PICORING");
/// The header layout version this code writes and reads.
pub const VERSION: u64 = 2;
/// Longest counter request text, in bytes (see [`RingReader::request_counters`]).
pub const REQUEST_BYTES: usize = 256;
/// Fewest slots a ring may have.
pub const MIN_SLOTS: u32 = 2;
/// Most slots a ring may have.
pub const MAX_SLOTS: u32 = 1 << 31;

/// Header word indices.
mod w {
    pub const MAGIC: usize = 0;
    pub const VERSION: usize = 1;
    pub const HEADER_WORDS: usize = 2;
    pub const SLOT_WORDS: usize = 3;
    pub const SLOT_COUNT: usize = 4;
    pub const WRITER_A: usize = 5;
    pub const WRITER_B: usize = 6;
    pub const FLAGS: usize = 7;
    pub const HEAD: usize = 8;
    pub const ATTACHED: usize = 16;
    pub const CLOCK_KIND: usize = 17;
    pub const CLOCK_HZ: usize = 18;
    pub const CLOCK_REF_TICKS: usize = 19;
    pub const CLOCK_REF_NS: usize = 20;
    pub const FIELD_COUNT: usize = 21;
    pub const COUNTER_COUNT: usize = 22;
    pub const RESERVED: usize = 23;
    pub const FRAME_NAME: usize = 24;
    /// Written by the writer: the counter table's seqlock.
    pub const COUNTERS_EPOCH: usize = 32;
    /// The first frame number the current counter table describes.
    pub const COUNTERS_SINCE: usize = 33;
    /// Written by readers (their own cache lines): the counter request.
    pub const REQUEST_SEQ: usize = 40;
    pub const REQUEST_ACK: usize = 41;
    pub const REQUEST_LEN: usize = 42;
    pub const REQUEST_TEXT: usize = 48;
    pub const TABLES: usize = 80;
    /// Words of one counter or field entry.
    pub const ENTRY: usize = 4;
}

/// Header words for a schema of `fields` fields and `counters` counters: the fixed part plus
/// one 4-word entry each, rounded up to whole 64-byte lines.
pub const fn header_words(fields: usize, counters: usize) -> usize {
    let raw = w::TABLES + w::ENTRY * (fields + counters);
    raw.div_ceil(8) * 8
}

/// Words a region needs for a ring of `slots` slots of `schema` frames and `counters` header
/// counters (saturating for absurd sizes, which [`RingWriter`] then rejects).
pub const fn required_words(schema: &Schema<'_>, counters: usize, slots: u32) -> usize {
    let slot_words = 1 + schema.payload_words();
    header_words(schema.fields.len(), counters)
        .saturating_add((slots as usize).saturating_mul(slot_words))
}

// ---------------------------------------------------------------------------------------------
// Header values
// ---------------------------------------------------------------------------------------------

/// Who writes a ring: an opaque pair of words. On Linux, `picollo-linux` stores the pid and
/// the process start time (from `/proc/<pid>/stat`), so a reader can tell a live writer from a
/// dead one whose pid was reused.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct WriterId(pub u64, pub u64);

/// What the timestamps of [`Time`] and [`TimeInterval`] fields count.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum ClockKind {
    /// Not said.
    #[default]
    Unspecified,
    /// `CLOCK_MONOTONIC` nanoseconds.
    MonotonicNs,
    /// `CLOCK_REALTIME` nanoseconds.
    RealtimeNs,
    /// Thread CPU time in nanoseconds.
    ThreadCpuNs,
    /// The x86 time-stamp counter.
    Tsc,
    /// A core cycle counter (Cortex-M `DWT_CYCCNT`, RISC-V `cycle`, …).
    Cycles,
    /// Something else; `hz` says how fast it ticks.
    Other,
}

impl ClockKind {
    const fn code(self) -> u64 {
        match self {
            Self::Unspecified => 0,
            Self::MonotonicNs => 1,
            Self::RealtimeNs => 2,
            Self::ThreadCpuNs => 3,
            Self::Tsc => 4,
            Self::Cycles => 5,
            Self::Other => 6,
        }
    }

    const fn from_code(c: u64) -> Option<Self> {
        Some(match c {
            0 => Self::Unspecified,
            1 => Self::MonotonicNs,
            2 => Self::RealtimeNs,
            3 => Self::ThreadCpuNs,
            4 => Self::Tsc,
            5 => Self::Cycles,
            6 => Self::Other,
            _ => return None,
        })
    }
}

/// The clock of a ring's timestamps.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ClockInfo {
    /// What it counts.
    pub kind: ClockKind,
    /// Ticks per second; 0 when unknown (a reader on the same machine can calibrate a TSC
    /// from the reference pair).
    pub hz: u64,
    /// A reading of the clock, taken together with `ref_ns`.
    pub ref_ticks: u64,
    /// `CLOCK_MONOTONIC` nanoseconds at `ref_ticks` (0 when not taken).
    pub ref_ns: u64,
}

impl ClockInfo {
    /// Nanosecond timestamps of `kind` (`hz = 10^9`).
    pub const fn nanoseconds(kind: ClockKind) -> Self {
        Self {
            kind,
            hz: 1_000_000_000,
            ref_ticks: 0,
            ref_ns: 0,
        }
    }
}

/// Whether a counter slot has values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum CounterStatus {
    /// The writer samples this counter.
    Measured,
    /// The counter was asked for but cannot be measured here (no hardware PMU, say): its
    /// values are meaningless and must be shown as unavailable, not as 0.
    Unavailable,
    /// No counter is assigned to this slot (a slot kept free for counters chosen later, at
    /// attach time): its values are meaningless.
    Unused,
}

impl CounterStatus {
    const fn code(self) -> u64 {
        match self {
            Self::Unused => 0,
            Self::Measured => 1,
            Self::Unavailable => 2,
        }
    }

    const fn from_code(code: u64) -> Option<Self> {
        match code {
            0 => Some(Self::Unused),
            1 => Some(Self::Measured),
            2 => Some(Self::Unavailable),
            _ => None,
        }
    }

    /// `measured`, `unavailable` or `unused`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Measured => "measured",
            Self::Unavailable => "unavailable",
            Self::Unused => "unused",
        }
    }
}

/// One counter slot the header describes: slot `i` of every counter field holds counter `i`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CounterInfo<'a> {
    /// Its name (`cycles`, `LLC-load-misses`, `r00c0`; 1..=24 bytes, no control characters;
    /// empty for an [`Unused`](CounterStatus::Unused) slot).
    pub name: &'a str,
    /// Whether it has values.
    pub status: CounterStatus,
    /// For an unavailable counter, the OS error number (`errno`) the writer got when it tried
    /// to open it; 0 when not known (and always 0 for the other statuses).
    pub errno: u32,
}

impl<'a> CounterInfo<'a> {
    /// A counter that is measured.
    pub const fn measured(name: &'a str) -> Self {
        Self {
            name,
            status: CounterStatus::Measured,
            errno: 0,
        }
    }

    /// A counter that was asked for but cannot be measured (reason not known).
    pub const fn unavailable(name: &'a str) -> Self {
        Self::unavailable_because(name, 0)
    }

    /// A counter that was asked for but cannot be measured: opening it failed with `errno`.
    pub const fn unavailable_because(name: &'a str, errno: u32) -> Self {
        Self {
            name,
            status: CounterStatus::Unavailable,
            errno,
        }
    }

    /// A slot with no counter assigned.
    pub const fn unused() -> Self {
        Self {
            name: "",
            status: CounterStatus::Unused,
            errno: 0,
        }
    }

    /// The header's status word: the status code, the errno in the high half.
    const fn status_word(&self) -> u64 {
        self.status.code() | (self.errno as u64) << 32
    }

    /// Checks the name against the status: a name for a used slot, none for an unused one,
    /// an errno only for an unavailable one.
    fn check(&self) -> Result<(), SchemaError> {
        match self.status {
            CounterStatus::Unused if !self.name.is_empty() || self.errno != 0 => {
                Err(SchemaError::BadCounter)
            }
            CounterStatus::Unused => Ok(()),
            CounterStatus::Measured if self.errno != 0 => Err(SchemaError::BadCounter),
            _ => check_counter_name(self.name),
        }
    }
}

/// What a writer puts in the header besides the schema.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RingOptions<'a> {
    /// Slots (a power of two in `2..=2^31`).
    pub slots: u32,
    /// The writer's identity.
    pub writer: WriterId,
    /// The clock of time fields.
    pub clock: ClockInfo,
    /// The counters of counter fields' slots (at most [`MAX_COUNTERS`]).
    pub counters: &'a [CounterInfo<'a>],
}

impl RingOptions<'static> {
    /// `slots` slots, no identity, unspecified clock, no counters.
    pub const fn new(slots: u32) -> Self {
        Self {
            slots,
            writer: WriterId(0, 0),
            clock: ClockInfo {
                kind: ClockKind::Unspecified,
                hz: 0,
                ref_ticks: 0,
                ref_ns: 0,
            },
            counters: &[],
        }
    }
}

impl<'a> RingOptions<'a> {
    /// With a writer identity.
    pub const fn with_writer(mut self, writer: WriterId) -> Self {
        self.writer = writer;
        self
    }

    /// With a clock.
    pub const fn with_clock(mut self, clock: ClockInfo) -> Self {
        self.clock = clock;
        self
    }

    /// With counter descriptions.
    pub const fn with_counters<'b>(self, counters: &'b [CounterInfo<'b>]) -> RingOptions<'b> {
        RingOptions {
            slots: self.slots,
            writer: self.writer,
            clock: self.clock,
            counters,
        }
    }
}

/// A counter request a writer took ([`RingWriter::take_counter_request`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CounterRequest<'a> {
    /// Its sequence number, for [`RingWriter::ack_counter_request`].
    pub seq: u64,
    /// The counters asked for, as the reader wrote them (comma-separated names, by
    /// convention; the writer decides how to read it).
    pub text: &'a str,
}

/// Where a counter request stands ([`RingReader::request_status`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum RequestStatus {
    /// The writer has not acknowledged it yet (it checks between frames it chooses, spans
    /// for example; an idle writer never does).
    Pending,
    /// The writer applied it: the header's counter table is its outcome.
    Applied,
    /// The writer applied a later request instead (another reader asked after this one).
    Superseded,
}

// ---------------------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------------------

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
    /// A [`RingBuffer`] already handed out its writer.
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

#[cfg(feature = "defmt")]
impl defmt::Format for Schema<'_> {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(f, "Schema({=str}, {} fields)", self.name, self.fields.len())
    }
}

// ---------------------------------------------------------------------------------------------
// Raw regions
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
pub unsafe fn region_from_raw<'a>(ptr: *mut u8, len: usize) -> Result<&'a [AtomicU64], RingError> {
    if ptr.is_null() || (ptr as usize) % core::mem::align_of::<AtomicU64>() != 0 {
        return Err(RingError::Misaligned);
    }
    let words = len / core::mem::size_of::<AtomicU64>();
    // SAFETY: `ptr` is non-null and aligned for `AtomicU64` (checked above); the caller
    // guarantees `len >= words * 8` bytes are valid, live for `'a`, and only ever accessed as
    // atomics, so viewing them as a shared slice of `AtomicU64` is sound.
    Ok(unsafe { core::slice::from_raw_parts(ptr.cast::<AtomicU64>(), words) })
}

#[inline(always)]
fn word(region: &[AtomicU64], i: usize) -> Result<&AtomicU64, RingError> {
    region.get(i).ok_or(RingError::RegionTooSmall {
        needed: i + 1,
        words: region.len(),
    })
}

/// Where header words come from: a live region (relaxed atomic loads) or a plain copy (a
/// capture file).
trait Words {
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

fn load<W: Words + ?Sized>(region: &W, i: usize) -> Result<u64, RingError> {
    region.word(i).ok_or(RingError::RegionTooSmall {
        needed: i + 1,
        words: region.words(),
    })
}

/// Encodes `name` into `words` words of NUL-padded little-endian bytes, through `set`.
fn encode_name(set: &mut dyn FnMut(usize, u64), at: usize, name: &str, words: usize) {
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
struct NameBuf<const N: usize> {
    bytes: [u8; N],
}

impl<const N: usize> NameBuf<N> {
    const EMPTY: Self = Self { bytes: [0; N] };

    fn read<W: Words + ?Sized>(region: &W, at: usize) -> Result<Self, RingError> {
        let mut bytes = [0u8; N];
        for (k, chunk) in bytes.chunks_mut(8).enumerate() {
            let v = load(region, at + k)?.to_le_bytes();
            chunk.copy_from_slice(v.get(..chunk.len()).unwrap_or(&[]));
        }
        Ok(Self { bytes })
    }

    fn as_str(&self) -> &str {
        utf8_prefix(&self.bytes)
    }

    /// Whether the bytes are exactly a valid string followed by NUL padding.
    fn is_clean(&self) -> bool {
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

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct FieldDesc {
    name: NameBuf<NAME_BYTES>,
    kind: FieldKind,
    offset: u16,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct CounterDesc {
    name: NameBuf<NAME_BYTES>,
    status: CounterStatus,
    errno: u32,
}

impl CounterDesc {
    const UNUSED: Self = Self {
        name: NameBuf::EMPTY,
        status: CounterStatus::Unused,
        errno: 0,
    };

    fn info(&self) -> CounterInfo<'_> {
        CounterInfo {
            name: self.name.as_str(),
            status: self.status,
            errno: self.errno,
        }
    }
}

/// The counter slots a header describes: what slot `i` of every counter field holds.
///
/// The writer may replace the table while readers are attached (counters chosen at attach
/// time); readers learn which frames each table describes from the header's epoch and
/// first-frame words (see [`RingReader`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CounterTable {
    entries: [CounterDesc; MAX_COUNTERS],
    len: usize,
}

impl CounterTable {
    /// `slots` slots, none assigned.
    pub const fn unused(slots: usize) -> Self {
        Self {
            entries: [CounterDesc::UNUSED; MAX_COUNTERS],
            len: if slots < MAX_COUNTERS {
                slots
            } else {
                MAX_COUNTERS
            },
        }
    }

    /// Reads `len` entries of 4 words at `at`, checking each.
    fn read<W: Words + ?Sized>(region: &W, at: usize, len: usize) -> Result<Self, RingError> {
        let bad = |field: &'static str, value: u64| RingError::BadHeader { field, value };
        if len > MAX_COUNTERS {
            return Err(bad("counter count", len as u64));
        }
        let mut t = Self::unused(len);
        for (i, c) in t.entries.iter_mut().enumerate().take(len) {
            let at = at + w::ENTRY * i;
            let name = NameBuf::<NAME_BYTES>::read(region, at)?;
            let word = load(region, at + 3)?;
            let status =
                CounterStatus::from_code(word & 0xffff_ffff).ok_or(bad("counter status", word))?;
            let d = CounterDesc {
                name,
                status,
                errno: (word >> 32) as u32,
            };
            if !name.is_clean() || d.info().check().is_err() {
                return Err(bad("counter name", i as u64));
            }
            *c = d;
        }
        Ok(t)
    }

    /// Decodes a table from its words (4 per slot, as [`CounterTable::encode`] writes them),
    /// checking every entry: a capture file's record of a table change.
    pub fn decode(words: &[u64]) -> Result<Self, RingError> {
        if words.len() % w::ENTRY != 0 {
            return Err(RingError::BadHeader {
                field: "counter table words",
                value: words.len() as u64,
            });
        }
        Self::read(words, 0, words.len() / w::ENTRY)
    }

    /// The table from counter descriptions (checked).
    pub fn new(counters: &[CounterInfo<'_>]) -> Result<Self, SchemaError> {
        if counters.len() > MAX_COUNTERS {
            return Err(SchemaError::TooManyCounters(counters.len()));
        }
        let mut t = Self::unused(counters.len());
        for (d, c) in t.entries.iter_mut().zip(counters) {
            c.check()?;
            let mut name = NameBuf::EMPTY;
            let b = c.name.as_bytes();
            name.bytes
                .get_mut(..b.len())
                .ok_or(SchemaError::NameTooLong {
                    len: b.len(),
                    max: NAME_BYTES,
                })?
                .copy_from_slice(b);
            *d = CounterDesc {
                name,
                status: c.status,
                errno: c.errno,
            };
        }
        Ok(t)
    }

    /// Slots.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the table has no slots.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The slots, in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = CounterInfo<'_>> + '_ {
        self.entries.iter().take(self.len).map(CounterDesc::info)
    }

    /// Words of the encoding: 4 per slot.
    pub fn encoded_words(&self) -> usize {
        w::ENTRY * self.len
    }

    /// Writes the encoding (24-byte name, status word per slot) into `out`; returns the words
    /// written ([`CounterTable::encoded_words`]; fewer if `out` is shorter).
    pub fn encode(&self, out: &mut [u64]) -> usize {
        let n = self.encoded_words().min(out.len());
        let mut set = |i: usize, v: u64| {
            if let Some(o) = out.get_mut(i) {
                *o = v;
            }
        };
        self.write(&mut set, 0);
        n
    }

    fn write(&self, set: &mut dyn FnMut(usize, u64), at: usize) {
        for (i, c) in self.iter().enumerate() {
            let at = at + w::ENTRY * i;
            encode_name(set, at, c.name, 3);
            set(at + 3, c.status_word());
        }
    }
}

/// One field as a reader found it in a header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FieldInfo<'a> {
    /// The name.
    pub name: &'a str,
    /// The kind.
    pub kind: FieldKind,
    /// Its first payload word.
    pub offset: usize,
}

/// How often [`RingInfo::parse`] retries while the writer rewrites its counter table.
const TABLE_RETRIES: u32 = 1 << 16;

/// A validated copy of a ring header: geometry, writer, clock, counters and schema.
///
/// Readers get it from [`RingInfo::parse`] (through [`RingReader`]); it never changes after,
/// whatever the writer does to the region, except that a [`RingReader`] swaps in the counter
/// table that describes the frame it delivers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RingInfo {
    header_words: usize,
    slot_words: usize,
    slot_count: u64,
    writer: WriterId,
    clock: ClockInfo,
    name: NameBuf<FRAME_NAME_BYTES>,
    fields: [FieldDesc; MAX_FIELDS],
    field_count: usize,
    counters: CounterTable,
    counters_epoch: u64,
    counters_since: u64,
}

impl RingInfo {
    /// Reads and checks the header of `region`, treating every field as untrusted. The
    /// counter table is read under its seqlock (retried while the writer rewrites it).
    pub fn parse(region: &[AtomicU64]) -> Result<Self, RingError> {
        if region.len() < w::TABLES {
            return Err(RingError::RegionTooSmall {
                needed: w::TABLES,
                words: region.len(),
            });
        }
        // Acquire: the writer stores the magic last, with Release, after the header.
        check_magic(word(region, w::MAGIC)?.load(Ordering::Acquire))?;
        let epoch_word = word(region, w::COUNTERS_EPOCH)?;
        let mut tries = 0;
        loop {
            let epoch = epoch_word.load(Ordering::Acquire);
            if epoch & 1 == 0 {
                let info = Self::decode(region, false);
                fence(Ordering::Acquire);
                if epoch_word.load(Ordering::Relaxed) == epoch {
                    return info;
                }
            }
            tries += 1;
            if tries >= TABLE_RETRIES {
                return Err(RingError::BadHeader {
                    field: "counter table epoch",
                    value: epoch,
                });
            }
            core::hint::spin_loop();
        }
    }

    /// Reads and checks a copy of a header (as [`RingInfo::encode_header`] writes it, in a
    /// capture file): the same checks as [`RingInfo::parse`], without the slots.
    pub fn from_header_words(words: &[u64]) -> Result<Self, RingError> {
        if words.len() < w::TABLES {
            return Err(RingError::RegionTooSmall {
                needed: w::TABLES,
                words: words.len(),
            });
        }
        check_magic(load(words, w::MAGIC)?)?;
        Self::decode(words, true)
    }

    fn decode<W: Words + ?Sized>(region: &W, header_only: bool) -> Result<Self, RingError> {
        let version = load(region, w::VERSION)?;
        if version != VERSION {
            return Err(RingError::UnsupportedVersion(version));
        }
        let bad = |field: &'static str, value: u64| RingError::BadHeader { field, value };
        for (i, field) in [(w::FLAGS, "flags"), (w::RESERVED, "reserved word")] {
            let v = load(region, i)?;
            if v != 0 {
                return Err(bad(field, v));
            }
        }
        let epoch = load(region, w::COUNTERS_EPOCH)?;
        if epoch & 1 != 0 {
            return Err(bad("counter table epoch", epoch));
        }

        let field_count = load(region, w::FIELD_COUNT)?;
        if field_count > MAX_FIELDS as u64 {
            return Err(bad("field count", field_count));
        }
        let counter_count = load(region, w::COUNTER_COUNT)?;
        if counter_count > MAX_COUNTERS as u64 {
            return Err(bad("counter count", counter_count));
        }
        let (field_count, counter_count) = (field_count as usize, counter_count as usize);
        let header = load(region, w::HEADER_WORDS)?;
        let expected_header = header_words(field_count, counter_count);
        if header != expected_header as u64 {
            return Err(bad("header words", header));
        }
        if region.words() < expected_header {
            return Err(RingError::RegionTooSmall {
                needed: expected_header,
                words: region.words(),
            });
        }

        let slot_count = load(region, w::SLOT_COUNT)?;
        if !slot_count.is_power_of_two()
            || slot_count < u64::from(MIN_SLOTS)
            || slot_count > u64::from(MAX_SLOTS)
        {
            return Err(bad("slot count", slot_count));
        }
        let slot_words = load(region, w::SLOT_WORDS)?;
        if slot_words == 0 || slot_words > 1 + MAX_PAYLOAD_WORDS as u64 {
            return Err(bad("slot words", slot_words));
        }
        let slot_words = slot_words as usize;
        let total = usize::try_from(slot_count)
            .ok()
            .and_then(|n| n.checked_mul(slot_words))
            .and_then(|n| n.checked_add(expected_header))
            .ok_or(bad("slot count", slot_count))?;
        if !header_only && region.words() < total {
            return Err(RingError::RegionTooSmall {
                needed: total,
                words: region.words(),
            });
        }

        let clock_kind = load(region, w::CLOCK_KIND)?;
        let clock = ClockInfo {
            kind: ClockKind::from_code(clock_kind).ok_or(bad("clock kind", clock_kind))?,
            hz: load(region, w::CLOCK_HZ)?,
            ref_ticks: load(region, w::CLOCK_REF_TICKS)?,
            ref_ns: load(region, w::CLOCK_REF_NS)?,
        };

        let name = NameBuf::<FRAME_NAME_BYTES>::read(region, w::FRAME_NAME)?;
        if !name.is_clean() || check_name(name.as_str(), FRAME_NAME_BYTES).is_err() {
            return Err(bad("frame name", 0));
        }

        let counters = CounterTable::read(region, w::TABLES, counter_count)?;

        let mut fields = [FieldDesc {
            name: NameBuf::EMPTY,
            kind: FieldKind::U64,
            offset: 0,
        }; MAX_FIELDS];
        let mut offset = 0usize;
        for i in 0..field_count {
            let at = w::TABLES + w::ENTRY * (counter_count + i);
            let name = NameBuf::<NAME_BYTES>::read(region, at)?;
            if !name.is_clean() || check_name(name.as_str(), NAME_BYTES).is_err() {
                return Err(bad("field name", i as u64));
            }
            if fields
                .iter()
                .take(i)
                .any(|f| f.name.as_str() == name.as_str())
            {
                return Err(bad("duplicate field name", i as u64));
            }
            let meta = load(region, at + 3)?;
            let kind = FieldKind::from_tag(meta as u8, (meta >> 8) as u8)
                .ok_or(bad("field kind", meta))?;
            let words = (meta >> 16) & 0xffff;
            let at_offset = (meta >> 32) & 0xffff;
            if words != kind.words() as u64 || at_offset != offset as u64 || meta >> 48 != 0 {
                return Err(bad("field layout", meta));
            }
            offset += kind.words();
            if offset > MAX_PAYLOAD_WORDS {
                return Err(bad("payload words", offset as u64));
            }
            if let Some(f) = fields.get_mut(i) {
                *f = FieldDesc {
                    name,
                    kind,
                    offset: at_offset as u16,
                };
            }
        }
        if offset + 1 != slot_words {
            return Err(bad("slot words", slot_words as u64));
        }

        Ok(Self {
            header_words: expected_header,
            slot_words,
            slot_count,
            writer: WriterId(load(region, w::WRITER_A)?, load(region, w::WRITER_B)?),
            clock,
            name,
            fields,
            field_count,
            counters,
            counters_epoch: epoch,
            counters_since: load(region, w::COUNTERS_SINCE)?,
        })
    }

    /// Writes this header as a writer would have made it (counter table included; `head`,
    /// `attached`, the table epoch and the request area zero) into `out`, which must hold
    /// [`RingInfo::header_words`] words: what a capture file stores so that
    /// [`RingInfo::from_header_words`] gives this description back.
    pub fn encode_header(&self, out: &mut [u64]) -> Result<usize, RingError> {
        let n = self.header_words;
        let len = out.len();
        let out = out
            .get_mut(..n)
            .ok_or(RingError::BufferTooShort { needed: n, len })?;
        out.fill(0);
        let mut fields = [Field::new("", FieldKind::U64); MAX_FIELDS];
        for (d, f) in fields.iter_mut().zip(self.fields()) {
            *d = Field::new(f.name, f.kind);
        }
        let schema = Schema::new(
            self.frame_name(),
            fields.get(..self.field_count).unwrap_or(&[]),
        );
        let mut set = |i: usize, v: u64| {
            if let Some(o) = out.get_mut(i) {
                *o = v;
            }
        };
        write_header(
            &mut set,
            &schema,
            self.slot_count,
            self.writer,
            self.clock,
            &self.counters,
        );
        set(w::MAGIC, MAGIC);
        Ok(n)
    }

    /// Header words (slots start here).
    pub fn header_words(&self) -> usize {
        self.header_words
    }

    /// Words per slot: the sequence word plus the payload.
    pub fn slot_words(&self) -> usize {
        self.slot_words
    }

    /// Payload words per frame.
    pub fn payload_words(&self) -> usize {
        self.slot_words - 1
    }

    /// Slots (a power of two).
    pub fn slot_count(&self) -> u64 {
        self.slot_count
    }

    /// Words of the whole ring: header plus slots.
    pub fn region_words(&self) -> usize {
        // Checked against the region's length in `parse`, so this does not overflow.
        self.header_words + self.slot_count as usize * self.slot_words
    }

    /// The writer's identity.
    pub fn writer(&self) -> WriterId {
        self.writer
    }

    /// The clock of time fields.
    pub fn clock(&self) -> ClockInfo {
        self.clock
    }

    /// The frame type's name.
    pub fn frame_name(&self) -> &str {
        self.name.as_str()
    }

    /// The fields, in payload order.
    pub fn fields(&self) -> impl ExactSizeIterator<Item = FieldInfo<'_>> + '_ {
        self.fields
            .iter()
            .take(self.field_count)
            .map(|f| FieldInfo {
                name: f.name.as_str(),
                kind: f.kind,
                offset: usize::from(f.offset),
            })
    }

    /// The counters that counter fields' slots hold, in slot order.
    pub fn counters(&self) -> impl ExactSizeIterator<Item = CounterInfo<'_>> + '_ {
        self.counters.iter()
    }

    /// The counter table.
    pub fn counter_table(&self) -> &CounterTable {
        &self.counters
    }

    /// The counter table's epoch: 0 for the table the writer started with, 2 more for each
    /// replacement (counters chosen at attach time).
    pub fn counters_epoch(&self) -> u64 {
        self.counters_epoch
    }

    /// The first frame number the counter table describes (frames before it were written
    /// with an earlier table).
    pub fn counters_since(&self) -> u64 {
        self.counters_since
    }

    /// Replaces the counter table (a capture file's table change): `table` must have as many
    /// slots as the header describes.
    pub fn set_counter_table(
        &mut self,
        table: CounterTable,
        epoch: u64,
        since: u64,
    ) -> Result<(), RingError> {
        if table.len() != self.counters.len() {
            return Err(RingError::BadHeader {
                field: "counter count",
                value: table.len() as u64,
            });
        }
        self.counters = table;
        self.counters_epoch = epoch;
        self.counters_since = since;
        Ok(())
    }

    /// What the header says about counter slot `slot`: `None` when it describes no counter
    /// there (the values are whatever the writer put in).
    pub fn counter_status(&self, slot: usize) -> Option<CounterStatus> {
        self.counters.iter().nth(slot).map(|c| c.status)
    }

    /// Whether counter slot `slot` has values the header vouches for: it names the counter
    /// and marks it measured.
    pub fn counter_measured(&self, slot: usize) -> bool {
        self.counter_status(slot) == Some(CounterStatus::Measured)
    }

    /// Whether the header's schema is exactly `schema` (names, kinds, order).
    pub fn matches(&self, schema: &Schema<'_>) -> bool {
        self.frame_name() == schema.name
            && self.field_count == schema.fields.len()
            && self
                .fields()
                .zip(schema.fields)
                .all(|(a, b)| a.name == b.name && a.kind == b.kind)
    }
}

fn check_magic(magic: u64) -> Result<(), RingError> {
    if magic == MAGIC {
        return Ok(());
    }
    Err(match magic {
        0 => RingError::Uninitialized,
        m if m.swap_bytes() == MAGIC => RingError::WrongEndianness,
        m => RingError::BadMagic(m),
    })
}

/// Writes every header word but the magic, `head`, `attached` and the request area: the
/// geometry, identity, clock, counter table and schema.
fn write_header(
    set: &mut dyn FnMut(usize, u64),
    schema: &Schema<'_>,
    slots: u64,
    writer: WriterId,
    clock: ClockInfo,
    counters: &CounterTable,
) {
    let header = header_words(schema.fields.len(), counters.len());
    let slot_words = 1 + schema.payload_words();
    set(w::VERSION, VERSION);
    set(w::HEADER_WORDS, header as u64);
    set(w::SLOT_WORDS, slot_words as u64);
    set(w::SLOT_COUNT, slots);
    set(w::WRITER_A, writer.0);
    set(w::WRITER_B, writer.1);
    set(w::CLOCK_KIND, clock.kind.code());
    set(w::CLOCK_HZ, clock.hz);
    set(w::CLOCK_REF_TICKS, clock.ref_ticks);
    set(w::CLOCK_REF_NS, clock.ref_ns);
    set(w::FIELD_COUNT, schema.fields.len() as u64);
    set(w::COUNTER_COUNT, counters.len() as u64);
    encode_name(set, w::FRAME_NAME, schema.name, 4);
    counters.write(set, w::TABLES);
    let mut offset = 0u64;
    for (i, f) in schema.fields.iter().enumerate() {
        let at = w::TABLES + w::ENTRY * (counters.len() + i);
        encode_name(set, at, f.name, 3);
        let words = f.kind.words() as u64;
        let meta =
            u64::from(f.kind.tag()) | u64::from(f.kind.param()) << 8 | words << 16 | offset << 32;
        set(at + 3, meta);
        offset += words;
    }
}

impl fmt::Display for RingInfo {
    /// `frame Name { a: u64, t: interval time } × 1024 slots, counters: cycles, instructions`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "frame {} {{", self.frame_name())?;
        for (i, field) in self.fields().enumerate() {
            let sep = if i == 0 { " " } else { ", " };
            write!(f, "{sep}{}: {}", field.name, field.kind)?;
        }
        write!(f, " }} × {} slots", self.slot_count)?;
        if !self.counters.is_empty() {
            f.write_str(", counters:")?;
            for c in self.counters() {
                match c.status {
                    CounterStatus::Measured => write!(f, " {}", c.name)?,
                    CounterStatus::Unavailable => write!(f, " {} (unavailable)", c.name)?,
                    CounterStatus::Unused => f.write_str(" (unused)")?,
                }
            }
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// Writer
// ---------------------------------------------------------------------------------------------

/// Where a disabled writer points its `attached` and `head`: never attached, writes discarded.
static DETACHED: AtomicU64 = AtomicU64::new(0);

/// The writing end of a ring, untyped: frames are slices of payload words. See
/// [`FrameWriter`] for typed frames, and the [module docs](self) for the protocol.
///
/// A ring has one writer: [`RingWriter::new`] takes the region by `&mut`, [`RingBuffer`]
/// hands out its writer once, and the raw constructor makes it the caller's promise.
pub struct RingWriter<'a> {
    attached: &'a AtomicU64,
    head: &'a AtomicU64,
    slots: &'a [AtomicU64],
    slot_words: usize,
    mask: u64,
    next: u64,
    region: &'a [AtomicU64],
    /// The request sequence word (readers write it).
    request: &'a AtomicU64,
    /// The last request sequence this writer took.
    taken: u64,
    /// Counter slots the header describes.
    counter_slots: usize,
}

impl fmt::Debug for RingWriter<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RingWriter")
            .field("slot_words", &self.slot_words)
            .field("slots", &(self.mask.wrapping_add(1)))
            .field("next", &self.next)
            .field("attached", &self.attached_count())
            .finish_non_exhaustive()
    }
}

impl<'a> RingWriter<'a> {
    /// Initializes a ring for `schema` frames over `region` and returns its writer.
    ///
    /// The header is written, every sequence word and `head` zeroed, `attached` cleared; the
    /// magic word is stored last (Release), so a reader never sees half a header. Payload
    /// words are left as they are. Readers get the region back from [`RingWriter::region`].
    pub fn new(
        region: &'a mut [AtomicU64],
        schema: &Schema<'_>,
        options: &RingOptions<'_>,
    ) -> Result<Self, RingError> {
        Self::init(region, schema, options)
    }

    /// As [`RingWriter::new`], over a raw region (shared memory, a linker-placed buffer).
    ///
    /// # Safety
    ///
    /// As [`region_from_raw`], and: no other writer writes the region during `'a`.
    pub unsafe fn from_raw(
        ptr: *mut u8,
        len: usize,
        schema: &Schema<'_>,
        options: &RingOptions<'_>,
    ) -> Result<Self, RingError> {
        // SAFETY: forwarded from this function's contract.
        let region = unsafe { region_from_raw(ptr, len)? };
        Self::init(region, schema, options)
    }

    /// Initializes over a shared view; callers make sure there is one writer.
    fn init(
        region: &'a [AtomicU64],
        schema: &Schema<'_>,
        options: &RingOptions<'_>,
    ) -> Result<Self, RingError> {
        schema.check()?;
        let counters = CounterTable::new(options.counters)?;
        let slots = options.slots;
        if !slots.is_power_of_two() || slots < MIN_SLOTS {
            return Err(RingError::BadSlotCount(u64::from(slots)));
        }
        let needed = required_words(schema, options.counters.len(), slots);
        if region.len() < needed {
            return Err(RingError::RegionTooSmall {
                needed,
                words: region.len(),
            });
        }
        let header = header_words(schema.fields.len(), options.counters.len());
        let slot_words = 1 + schema.payload_words();
        let mut set = |i: usize, v: u64| {
            if let Some(cell) = region.get(i) {
                cell.store(v, Ordering::Relaxed);
            }
        };

        // Invalidate first: a reader parsing concurrently sees no magic, or the old header
        // whose geometry still fits the region.
        word(region, w::MAGIC)?.store(0, Ordering::Relaxed);
        fence(Ordering::Release);
        for i in 1..header {
            set(i, 0);
        }
        write_header(
            &mut set,
            schema,
            u64::from(slots),
            options.writer,
            options.clock,
            &counters,
        );
        let slots_region = region.get(header..needed).unwrap_or(&[]);
        for seq in slots_region.iter().step_by(slot_words) {
            seq.store(0, Ordering::Relaxed);
        }
        word(region, w::MAGIC)?.store(MAGIC, Ordering::Release);

        Ok(Self {
            attached: word(region, w::ATTACHED)?,
            head: word(region, w::HEAD)?,
            slots: slots_region,
            slot_words,
            mask: u64::from(slots) - 1,
            next: 0,
            region: region.get(..needed).unwrap_or(region),
            request: word(region, w::REQUEST_SEQ)?,
            taken: 0,
            counter_slots: counters.len(),
        })
    }

    /// Whether a reader is attached: one relaxed load.
    #[inline(always)]
    pub fn is_attached(&self) -> bool {
        self.attached.load(Ordering::Relaxed) != 0
    }

    /// The `attached` word itself, for a caller that keeps its own fast "is anyone
    /// listening" check (a thread-local pointer to it, say). After
    /// [`RingWriter::disable`] it is a word that stays 0.
    pub fn attached_word(&self) -> &'a AtomicU64 {
        self.attached
    }

    /// The `attached` word: how many readers say they are attached.
    pub fn attached_count(&self) -> u64 {
        self.attached.load(Ordering::Relaxed)
    }

    /// Saves a frame if a reader is attached; returns whether it did. Without a reader this
    /// is one relaxed load and a branch.
    ///
    /// A `payload` shorter than the ring's payload is padded with zeros; a longer one is
    /// truncated.
    #[inline(always)]
    pub fn save_words(&mut self, payload: &[u64]) -> bool {
        if !self.is_attached() {
            return false;
        }
        self.write_words(payload);
        true
    }

    /// Writes a frame whether or not a reader is attached (for post-mortem rings read with
    /// [`RingReader::inspect`]). Never blocks.
    #[inline]
    pub fn write_words(&mut self, payload: &[u64]) {
        self.write_with(|data| store_payload(data, payload));
    }

    /// Writes a frame whether or not a reader is attached, with `fill` storing the payload:
    /// the sequence word goes odd, `fill` gets the slot's payload words to store into
    /// (relaxed stores; it should store every word, or readers see the slot's old values),
    /// then the sequence word goes even and `head` advances. For typed frames,
    /// [`Frame::store`] is such a `fill`.
    #[inline(always)]
    pub fn write_with(&mut self, fill: impl FnOnce(&[AtomicU64])) {
        let n = self.next;
        let at = (n & self.mask) as usize * self.slot_words;
        let Some((seq, data)) = self
            .slots
            .get(at..at + self.slot_words)
            .and_then(<[_]>::split_first)
        else {
            return; // a disabled writer has no slots
        };
        let odd = n.wrapping_mul(2).wrapping_add(1);
        seq.store(odd, Ordering::Relaxed);
        fence(Ordering::Release);
        fill(data);
        seq.store(odd.wrapping_add(1), Ordering::Release);
        self.head.store(n.wrapping_add(1), Ordering::Release);
        self.next = n.wrapping_add(1);
    }

    /// Frames written so far (the next frame's number).
    pub fn frames_written(&self) -> u64 {
        self.next
    }

    /// Payload words per frame.
    pub fn payload_words(&self) -> usize {
        self.slot_words - 1
    }

    /// Slots.
    pub fn slot_count(&self) -> u64 {
        self.mask.wrapping_add(1)
    }

    /// The ring's words (header and slots), for readers in the same program:
    /// `RingReader::attach(writer.region())`.
    pub fn region(&self) -> &'a [AtomicU64] {
        self.region
    }

    /// Clears `attached` (sets it to 0). For the owner of an attach protocol that knows no
    /// reader is left (on Linux: `flock(LOCK_EX | LOCK_NB)` succeeded); readers still attached
    /// stop receiving frames.
    pub fn clear_attached(&self) {
        self.attached.store(0, Ordering::Relaxed);
    }

    /// Turns this writer off for good: every later save and write is a no-op, and the ring is
    /// never touched again (for a child process after `fork`, which must not write into its
    /// parent's ring).
    pub fn disable(&mut self) {
        self.attached = &DETACHED;
        self.head = &DETACHED;
        self.request = &DETACHED;
        self.taken = 0;
        self.slots = &[];
    }

    /// Whether a reader has asked for other counters since the last
    /// [`RingWriter::take_counter_request`]: one relaxed load of a word only readers write.
    /// Check it where changing counters is safe (between spans, say).
    #[inline(always)]
    pub fn has_counter_request(&self) -> bool {
        self.request.load(Ordering::Relaxed) != self.taken
    }

    /// Takes the pending counter request: its text (counter names, comma-separated, as the
    /// reader wrote it; at most [`REQUEST_BYTES`]) copied into `buf`, and its sequence number
    /// for [`RingWriter::ack_counter_request`]. `None` when there is none, or when a reader is
    /// writing one right now (ask again later). A request is taken once.
    pub fn take_counter_request<'b>(
        &mut self,
        buf: &'b mut [u8; REQUEST_BYTES],
    ) -> Option<CounterRequest<'b>> {
        if self.is_disabled() {
            return None;
        }
        let seq = self.request.load(Ordering::Acquire);
        if seq == self.taken || seq & 1 == 1 {
            return None;
        }
        let len = self
            .region
            .get(w::REQUEST_LEN)
            .map_or(0, |l| l.load(Ordering::Relaxed));
        let len = usize::try_from(len).unwrap_or(0).min(REQUEST_BYTES);
        for (chunk, cell) in buf
            .chunks_mut(8)
            .zip(self.region.iter().skip(w::REQUEST_TEXT))
        {
            chunk.copy_from_slice(&cell.load(Ordering::Relaxed).to_le_bytes());
        }
        fence(Ordering::Acquire);
        if self.request.load(Ordering::Relaxed) != seq {
            return None;
        }
        self.taken = seq;
        let text = utf8_prefix(buf.get(..len).unwrap_or(&[]));
        Some(CounterRequest { seq, text })
    }

    /// Tells readers that request `seq` is done: its outcome is the counter table now in the
    /// header ([`RingWriter::set_counters`]).
    pub fn ack_counter_request(&mut self, seq: u64) {
        if let Some(ack) = self.region.get(w::REQUEST_ACK) {
            if !self.is_disabled() {
                ack.store(seq, Ordering::Release);
            }
        }
    }

    /// Counter slots the header describes (the most counters [`RingWriter::set_counters`]
    /// takes).
    pub fn counter_slots(&self) -> usize {
        self.counter_slots
    }

    /// Replaces the header's counter table (counters chosen at attach time): frames from the
    /// next one on hold `counters` in their counter slots; slots past `counters.len()` become
    /// unused. Readers switch tables at the right frame (see [`RingReader`]).
    ///
    /// The table is rewritten under a seqlock (its epoch word odd meanwhile), with the first
    /// frame it describes; a reader that finds more than one change since it last looked
    /// marks the frames in between as not attributable rather than guessing.
    pub fn set_counters(&mut self, counters: &[CounterInfo<'_>]) -> Result<(), RingError> {
        if counters.len() > self.counter_slots {
            return Err(RingError::BadHeader {
                field: "counter count",
                value: counters.len() as u64,
            });
        }
        let mut table = CounterTable::new(counters)?;
        table.len = self.counter_slots;
        if self.is_disabled() {
            return Ok(());
        }
        let epoch = word(self.region, w::COUNTERS_EPOCH)?;
        let e = epoch.load(Ordering::Relaxed);
        epoch.store(e.wrapping_add(1), Ordering::Relaxed);
        fence(Ordering::Release);
        let region = self.region;
        let mut set = |i: usize, v: u64| {
            if let Some(cell) = region.get(i) {
                cell.store(v, Ordering::Relaxed);
            }
        };
        table.write(&mut set, w::TABLES);
        set(w::COUNTERS_SINCE, self.next);
        epoch.store(e.wrapping_add(2), Ordering::Release);
        Ok(())
    }

    /// Whether [`RingWriter::disable`] was called.
    pub fn is_disabled(&self) -> bool {
        self.slots.is_empty()
    }
}

/// A typed writer: saves `F` frames into a ring whose schema is `F::SCHEMA`.
pub struct FrameWriter<'a, F> {
    ring: RingWriter<'a>,
    _frame: PhantomData<fn(&F)>,
}

impl<F> fmt::Debug for FrameWriter<'_, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("FrameWriter").field(&self.ring).finish()
    }
}

impl<'a, F: Frame> FrameWriter<'a, F> {
    /// Initializes a ring for `F` over `region` (see [`RingWriter::new`]).
    pub fn new(region: &'a mut [AtomicU64], options: &RingOptions<'_>) -> Result<Self, RingError> {
        Ok(Self::wrap(RingWriter::new(region, &F::SCHEMA, options)?))
    }

    /// As [`FrameWriter::new`] over a raw region.
    ///
    /// # Safety
    ///
    /// As [`RingWriter::from_raw`].
    pub unsafe fn from_raw(
        ptr: *mut u8,
        len: usize,
        options: &RingOptions<'_>,
    ) -> Result<Self, RingError> {
        // SAFETY: forwarded from this function's contract.
        Ok(Self::wrap(unsafe {
            RingWriter::from_raw(ptr, len, &F::SCHEMA, options)?
        }))
    }

    fn wrap(ring: RingWriter<'a>) -> Self {
        Self {
            ring,
            _frame: PhantomData,
        }
    }

    /// Saves `frame` if a reader is attached; returns whether it did. Without a reader this is
    /// one relaxed load and a branch.
    #[inline(always)]
    pub fn save(&mut self, frame: &F) -> bool {
        if !self.ring.is_attached() {
            return false;
        }
        self.write(frame);
        true
    }

    /// Writes `frame` whether or not a reader is attached.
    #[inline(always)]
    pub fn write(&mut self, frame: &F) {
        // The ring was made for `F`, so its payload is `F::WORDS` long: fixed-length stores.
        self.ring.write_with(|data| frame.store(data));
    }

    /// The untyped writer.
    pub fn ring(&self) -> &RingWriter<'a> {
        &self.ring
    }

    /// The untyped writer, mutably (to [`disable`](RingWriter::disable) it, say).
    pub fn ring_mut(&mut self) -> &mut RingWriter<'a> {
        &mut self.ring
    }

    /// The untyped writer, by value.
    pub fn into_inner(self) -> RingWriter<'a> {
        self.ring
    }

    /// The ring's words, for readers in the same program.
    pub fn region(&self) -> &'a [AtomicU64] {
        self.ring.region()
    }
}

// ---------------------------------------------------------------------------------------------
// Reader
// ---------------------------------------------------------------------------------------------

/// What one [`RingReader::drain`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Drained {
    /// Frames delivered.
    pub accepted: u64,
    /// Frames lost (overwritten before they could be copied, or skipped after a lap).
    pub lost: u64,
}

/// Spins before a reader takes over a counter request another reader left half-written
/// (fewer under miri, which interprets every spin).
const TAKEOVER_SPINS: u32 = if cfg!(miri) { 1 << 6 } else { 1 << 20 };

/// How many counter-table changes a reader queues ahead of the frames it has delivered.
const TABLE_QUEUE: usize = 4;

/// A counter table waiting for its first frame.
#[derive(Clone, Copy, Debug)]
struct TableSwitch {
    since: u64,
    table: CounterTable,
    /// The table's epoch; odd for a stretch whose counters are not known.
    epoch: u64,
}

/// The reading end of a ring: copies frames out, validates them, counts lost frames.
///
/// Frame numbers start at 0 with the writer's first frame. An attached reader starts at the
/// `head` it found when it attached; [`RingReader::accepted`] plus [`RingReader::lost`] is
/// always the number of frames it has passed since [`RingReader::start`].
///
/// # Counter tables
///
/// A writer may replace its counter table ([`RingWriter::set_counters`], after a reader's
/// [`RingReader::request_counters`]). The reader checks the table's epoch each time it
/// looks at `head` and queues the new table with the first frame it describes, so
/// [`RingReader::info`] (and every [`DynamicFrame`] delivered) always describes the frame at
/// hand. If the table changed more than once between two looks, the frames between the
/// last frame known under the old table and the first under the newest one cannot be
/// attributed: they are delivered with every counter slot unused (an odd
/// [`RingInfo::counters_epoch`]) and counted in [`RingReader::unattributed`].
pub struct RingReader<'a> {
    region: &'a [AtomicU64],
    slots: &'a [AtomicU64],
    info: RingInfo,
    mask: u64,
    start: u64,
    next: u64,
    head_seen: u64,
    accepted: u64,
    lost: u64,
    attached: bool,
    /// The addresses and lengths of the name and fields of the last schema
    /// `next_frame::<F>` matched (a schema with the same ones has the same contents).
    matched: Option<(usize, usize, usize, usize)>,
    /// Counter tables to switch to, oldest first.
    switches: [Option<TableSwitch>; TABLE_QUEUE],
    /// The epoch of the newest table known (queued or in `info`).
    epoch_seen: u64,
    /// Frames below this number are known to be under the newest known table or earlier.
    known_below: u64,
    unattributed: u64,
}

impl fmt::Debug for RingReader<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RingReader")
            .field("info", &self.info)
            .field("next", &self.next)
            .field("accepted", &self.accepted)
            .field("lost", &self.lost)
            .field("attached", &self.attached)
            .finish_non_exhaustive()
    }
}

impl<'a> RingReader<'a> {
    /// Validates the header, increments `attached` (so the writer starts saving) and starts
    /// at the current `head`. Dropping the reader decrements `attached`.
    ///
    /// Incrementing needs a compare-and-swap or fetch-add; on targets without one (thumbv6m,
    /// riscv32imc) build with `portable-atomic`'s single-core or critical-section option (see
    /// [`crate::atomic`]).
    pub fn attach(region: &'a [AtomicU64]) -> Result<Self, RingError> {
        let mut r = Self::inspect(region)?;
        r.set_attached()?;
        Ok(r)
    }

    /// Validates the header without attaching: the writer's saves stay no-ops, but frames it
    /// wrote with [`RingWriter::write_words`] (or before it crashed) can be read. Starts at the
    /// oldest frame that may still be in the ring, `head - slot_count`.
    pub fn inspect(region: &'a [AtomicU64]) -> Result<Self, RingError> {
        let info = RingInfo::parse(region)?;
        let header = info.header_words();
        let slots = region.get(header..info.region_words()).unwrap_or(&[]);
        let head = word(region, w::HEAD)?.load(Ordering::Acquire);
        let start = head.saturating_sub(info.slot_count());
        let mut r = Self {
            region,
            slots,
            mask: info.slot_count() - 1,
            start,
            next: start,
            head_seen: head,
            accepted: 0,
            lost: 0,
            attached: false,
            matched: None,
            switches: [None; TABLE_QUEUE],
            epoch_seen: info.counters_epoch(),
            known_below: info.counters_since(),
            unattributed: 0,
            info,
        };
        // Frames written before the current table (still in the ring) used an earlier one,
        // which the header no longer holds.
        if start < r.info.counters_since() {
            r.push_switch(TableSwitch {
                since: r.info.counters_since(),
                table: r.info.counters,
                epoch: r.info.counters_epoch(),
            });
            let unknown = CounterTable::unused(r.info.counters.len());
            let epoch = r.info.counters_epoch().wrapping_sub(1);
            let since = r.info.counters_since();
            let _ = r.info.set_counter_table(unknown, epoch, since);
        }
        Ok(r)
    }

    /// [`RingReader::attach`] over a raw region.
    ///
    /// # Safety
    ///
    /// As [`region_from_raw`].
    pub unsafe fn attach_raw(ptr: *mut u8, len: usize) -> Result<Self, RingError> {
        // SAFETY: forwarded from this function's contract.
        Self::attach(unsafe { region_from_raw(ptr, len)? })
    }

    /// [`RingReader::inspect`] over a raw region.
    ///
    /// # Safety
    ///
    /// As [`region_from_raw`].
    pub unsafe fn inspect_raw(ptr: *mut u8, len: usize) -> Result<Self, RingError> {
        // SAFETY: forwarded from this function's contract.
        Self::inspect(unsafe { region_from_raw(ptr, len)? })
    }

    /// Attaches an inspecting reader (see [`RingReader::attach`]): increments `attached` and
    /// moves to the current `head`, resetting the counts. Does nothing if already attached.
    ///
    /// For attach protocols that must do something between validating and attaching (on
    /// Linux, take `flock(LOCK_SH)` first).
    pub fn set_attached(&mut self) -> Result<(), RingError> {
        if self.attached {
            return Ok(());
        }
        word(self.region, w::ATTACHED)?.fetch_add(1, Ordering::SeqCst);
        self.attached = true;
        let head = word(self.region, w::HEAD)?.load(Ordering::SeqCst);
        self.start = head;
        self.next = head;
        self.head_seen = head;
        self.accepted = 0;
        self.lost = 0;
        Ok(())
    }

    /// Detaches (decrements `attached`, never below 0); the reader can still read what is in
    /// the ring. Dropping an attached reader does this.
    pub fn detach(&mut self) {
        if !self.attached {
            return;
        }
        self.attached = false;
        if let Some(a) = self.region.get(w::ATTACHED) {
            let _ = a.fetch_update(Ordering::SeqCst, Ordering::Relaxed, |v| v.checked_sub(1));
        }
    }

    /// Whether this reader is attached.
    pub fn is_attached(&self) -> bool {
        self.attached
    }

    /// The validated header.
    pub fn info(&self) -> &RingInfo {
        &self.info
    }

    /// The ring's `head` now: frames the writer has saved.
    pub fn head(&self) -> u64 {
        self.region
            .get(w::HEAD)
            .map_or(0, |h| h.load(Ordering::Acquire))
    }

    /// The frame number this reader started at.
    pub fn start(&self) -> u64 {
        self.start
    }

    /// The next frame number this reader will try.
    pub fn position(&self) -> u64 {
        self.next
    }

    /// Frames delivered so far.
    pub fn accepted(&self) -> u64 {
        self.accepted
    }

    /// Frames lost so far: overwritten before they were copied, or skipped after a lap.
    pub fn lost(&self) -> u64 {
        self.lost
    }

    /// Frames delivered with counters that could not be attributed (the counter table
    /// changed more than once between two looks at the header).
    pub fn unattributed(&self) -> u64 {
        self.unattributed
    }

    fn refresh_head(&mut self) -> Result<(), RingError> {
        let head = word(self.region, w::HEAD)?.load(Ordering::Acquire);
        if head < self.head_seen {
            return Err(RingError::HeadMovedBackwards {
                head,
                before: self.head_seen,
            });
        }
        self.head_seen = head;
        self.check_counters(head)
    }

    /// Looks at the counter table's epoch after reading `head` (Acquire): if it did not
    /// change, every frame below `head` was written under the newest known table (the writer
    /// changes the table before the frames it describes, and publishes those with `head`).
    fn check_counters(&mut self, head: u64) -> Result<(), RingError> {
        let epoch = word(self.region, w::COUNTERS_EPOCH)?.load(Ordering::Relaxed);
        if epoch == self.epoch_seen {
            self.known_below = self.known_below.max(head);
            return Ok(());
        }
        let Some((table, since, epoch)) = self.read_counter_table()? else {
            return Ok(()); // being rewritten: look again next time
        };
        if epoch == self.epoch_seen {
            return Ok(());
        }
        if epoch != self.epoch_seen.wrapping_add(2) {
            // Changes were missed: from the last frame known until this table, unknown.
            self.push_switch(TableSwitch {
                since: self.known_below.min(since),
                table: CounterTable::unused(table.len()),
                epoch: epoch.wrapping_sub(1),
            });
        }
        self.push_switch(TableSwitch {
            since,
            table,
            epoch,
        });
        self.epoch_seen = epoch;
        self.known_below = head.max(since);
        Ok(())
    }

    /// Reads the counter table and its first frame under the table's seqlock; `None` if the
    /// writer kept rewriting it.
    fn read_counter_table(&self) -> Result<Option<(CounterTable, u64, u64)>, RingError> {
        let epoch_word = word(self.region, w::COUNTERS_EPOCH)?;
        for _ in 0..64 {
            let epoch = epoch_word.load(Ordering::Acquire);
            if epoch & 1 == 0 {
                let table = CounterTable::read(self.region, w::TABLES, self.info.counters.len());
                let since = load(self.region, w::COUNTERS_SINCE);
                fence(Ordering::Acquire);
                if epoch_word.load(Ordering::Relaxed) == epoch {
                    return Ok(Some((table?, since?, epoch)));
                }
            }
            core::hint::spin_loop();
        }
        Ok(None)
    }

    fn push_switch(&mut self, switch: TableSwitch) {
        if let Some(free) = self.switches.iter_mut().find(|s| s.is_none()) {
            *free = Some(switch);
            return;
        }
        // Full (the table changed faster than frames were read): everything queued is
        // unknown, then the new table.
        let first = self.switches[0].map_or(switch.since, |s| s.since);
        self.switches = [None; TABLE_QUEUE];
        self.switches[0] = Some(TableSwitch {
            since: first,
            table: CounterTable::unused(switch.table.len()),
            epoch: switch.epoch.wrapping_sub(1),
        });
        self.switches[1] = Some(switch);
    }

    /// Switches `info` to the tables whose first frame is at or before frame `j`.
    #[inline]
    fn apply_switches(&mut self, j: u64) {
        while let Some(s) = self.switches[0] {
            if j < s.since {
                break;
            }
            let _ = self.info.set_counter_table(s.table, s.epoch, s.since);
            self.switches.rotate_left(1);
            self.switches[TABLE_QUEUE - 1] = None;
        }
    }

    /// Asks the writer to count `counters` (by convention comma-separated counter names,
    /// as the writer's counter configuration takes them; at most [`REQUEST_BYTES`] bytes)
    /// and returns the request's sequence number for [`RingReader::request_status`].
    ///
    /// The request goes into the header's request area under a seqlock that readers take
    /// with a compare-and-swap; a request left half-written by a reader that died is taken
    /// over after a while. The writer applies the latest request when it chooses (spans: at
    /// the next outermost span) and answers with a new counter table, which this reader
    /// picks up like any table change.
    pub fn request_counters(&self, counters: &str) -> Result<u64, RingError> {
        if counters.len() > REQUEST_BYTES || counters.chars().any(char::is_control) {
            return Err(RingError::BadRequest {
                len: counters.len(),
            });
        }
        let seq = word(self.region, w::REQUEST_SEQ)?;
        let len = word(self.region, w::REQUEST_LEN)?;
        let mut spins = 0u32;
        let mine = loop {
            let s = seq.load(Ordering::Relaxed);
            // Even: free. Odd for too long: a reader died writing; take over (still odd).
            let claim = if s & 1 == 0 {
                s.wrapping_add(1)
            } else if spins >= TAKEOVER_SPINS {
                s.wrapping_add(2)
            } else {
                spins += 1;
                core::hint::spin_loop();
                continue;
            };
            if seq
                .compare_exchange(s, claim, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
            {
                break claim;
            }
        };
        fence(Ordering::Release);
        len.store(counters.len() as u64, Ordering::Relaxed);
        let b = counters.as_bytes();
        for (k, cell) in self
            .region
            .iter()
            .skip(w::REQUEST_TEXT)
            .take(REQUEST_BYTES / 8)
            .enumerate()
        {
            let mut v = [0u8; 8];
            for (j, d) in v.iter_mut().enumerate() {
                *d = b.get(8 * k + j).copied().unwrap_or(0);
            }
            cell.store(u64::from_le_bytes(v), Ordering::Relaxed);
        }
        let done = mine.wrapping_add(1);
        // A compare-and-swap, not a store: if another reader took over meanwhile, its
        // request stands and this one is superseded.
        let _ = seq.compare_exchange(mine, done, Ordering::Release, Ordering::Relaxed);
        Ok(done)
    }

    /// Whether the writer has applied request `seq` ([`RingReader::request_counters`]).
    pub fn request_status(&self, seq: u64) -> RequestStatus {
        let ack = self
            .region
            .get(w::REQUEST_ACK)
            .map_or(0, |a| a.load(Ordering::Acquire));
        match (ack.wrapping_sub(seq) as i64).signum() {
            0 => RequestStatus::Applied,
            1 => RequestStatus::Superseded,
            _ => RequestStatus::Pending,
        }
    }

    /// The newest counter table the header holds (after looking at it again): what frames
    /// from now on will be described by. [`RingReader::info`] describes the frames delivered
    /// so far.
    pub fn latest_counters(&mut self) -> Result<CounterTable, RingError> {
        self.refresh_head()?;
        Ok(self
            .switches
            .iter()
            .rev()
            .flatten()
            .next()
            .map_or(self.info.counters, |s| s.table))
    }

    /// Copies frame `j` into `buf`; whether the copy is frame `j`, whole.
    #[inline]
    fn read_slot(&self, j: u64, buf: &mut [u64]) -> bool {
        let sw = self.info.slot_words();
        let at = (j & self.mask) as usize * sw;
        let Some((seq, data)) = self.slots.get(at..at + sw).and_then(<[_]>::split_first) else {
            return false;
        };
        let expected = j.wrapping_mul(2).wrapping_add(2);
        if seq.load(Ordering::Acquire) != expected {
            return false;
        }
        for (d, s) in buf.iter_mut().zip(data) {
            *d = s.load(Ordering::Relaxed);
        }
        fence(Ordering::Acquire);
        seq.load(Ordering::Relaxed) == expected
    }

    /// Copies the next frame's payload into `buf` and returns its number; `Ok(None)` when the
    /// reader has caught up with `head`. Lost frames are skipped and counted.
    pub fn next_into(&mut self, buf: &mut [u64]) -> Result<Option<u64>, RingError> {
        self.next_before(buf, u64::MAX)
    }

    /// As `next_into`, not going past frame `limit`.
    fn next_before(&mut self, buf: &mut [u64], limit: u64) -> Result<Option<u64>, RingError> {
        let needed = self.info.payload_words();
        let len = buf.len();
        let buf = buf
            .get_mut(..needed)
            .ok_or(RingError::BufferTooShort { needed, len })?;
        loop {
            if self.next >= limit {
                return Ok(None);
            }
            if self.next >= self.head_seen {
                self.refresh_head()?;
                if self.next >= self.head_seen {
                    return Ok(None);
                }
            }
            // More than a ring behind: those frames are overwritten; resume half a ring behind
            // head so the writer does not overwrite the next frames at once.
            let cap = self.info.slot_count();
            if self.head_seen - self.next > cap {
                // Resume relative to the newest head, not the one cached.
                self.refresh_head()?;
                let resume = self.head_seen - cap / 2;
                self.lost += resume - self.next;
                self.next = resume;
                if self.next >= limit {
                    return Ok(None);
                }
            }
            let j = self.next;
            self.next = j + 1;
            self.apply_switches(j);
            if self.read_slot(j, buf) {
                self.accepted += 1;
                if self.info.counters_epoch() & 1 == 1 {
                    self.unattributed += 1;
                }
                return Ok(Some(j));
            }
            // Overwritten under us (or a corrupt sequence word): lost. The writer is lapping,
            // so look at head again before the next frame.
            self.lost += 1;
            self.refresh_head()?;
        }
    }

    /// Reads the next frame as an `F`; `Err(SchemaMismatch)` when the header's schema is not
    /// `F::SCHEMA`.
    pub fn next_frame<F: Frame>(&mut self) -> Result<Option<(u64, F)>, RingError> {
        // Compare the schema once per frame type, not once per frame.
        let key = (
            F::SCHEMA.name.as_ptr() as usize,
            F::SCHEMA.name.len(),
            F::SCHEMA.fields.as_ptr() as usize,
            F::SCHEMA.fields.len(),
        );
        if self.matched != Some(key) {
            if !self.info.matches(&F::SCHEMA) {
                return Err(RingError::SchemaMismatch);
            }
            self.matched = Some(key);
        }
        let mut buf = [0u64; MAX_PAYLOAD_WORDS];
        match self.next_into(&mut buf)? {
            Some(n) => Ok(F::decode(&buf).map(|f| (n, f))),
            None => Ok(None),
        }
    }

    /// Delivers every frame up to the `head` seen on entry to `f`, decoded by the header's
    /// schema, and returns what this call accepted and lost. A writer faster than the reader
    /// cannot keep it here forever.
    pub fn drain(&mut self, mut f: impl FnMut(DynamicFrame<'_>)) -> Result<Drained, RingError> {
        self.drain_words(|info, n, words| f(DynamicFrame::new(info, n, words)))
    }

    /// As [`RingReader::drain`], with raw payload words: `f(header, frame number, payload)`.
    pub fn drain_words(
        &mut self,
        mut f: impl FnMut(&RingInfo, u64, &[u64]),
    ) -> Result<Drained, RingError> {
        self.refresh_head()?;
        let limit = self.head_seen;
        let (a0, l0) = (self.accepted, self.lost);
        let mut buf = [0u64; MAX_PAYLOAD_WORDS];
        let n = self.info.payload_words();
        while let Some(number) = self.next_before(&mut buf, limit)? {
            f(&self.info, number, buf.get(..n).unwrap_or(&[]));
        }
        Ok(Drained {
            accepted: self.accepted - a0,
            lost: self.lost - l0,
        })
    }
}

impl Drop for RingReader<'_> {
    fn drop(&mut self) {
        self.detach();
    }
}

// ---------------------------------------------------------------------------------------------
// Static buffers
// ---------------------------------------------------------------------------------------------

/// `W` words for a ring, usable in a `static` (firmware): size it with [`required_words`].
///
/// It hands out one writer ([`RingBuffer::writer`], [`RingBuffer::frame_writer`]) and any
/// number of readers.
pub struct RingBuffer<const W: usize> {
    words: [AtomicU64; W],
    claimed: AtomicBool,
}

impl<const W: usize> Default for RingBuffer<W> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const W: usize> fmt::Debug for RingBuffer<W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RingBuffer")
            .field("words", &W)
            .field("claimed", &self.claimed.load(Ordering::Relaxed))
            .finish()
    }
}

impl<const W: usize> RingBuffer<W> {
    /// Zeroed words, no writer yet.
    pub const fn new() -> Self {
        Self {
            words: [const { AtomicU64::new(0) }; W],
            claimed: AtomicBool::new(false),
        }
    }

    fn claim(&self) -> Result<(), RingError> {
        if self.claimed.swap(true, Ordering::AcqRel) {
            return Err(RingError::AlreadyClaimed);
        }
        Ok(())
    }

    /// Initializes the ring and returns its only writer; [`RingError::AlreadyClaimed`] on a
    /// second call (a failed call does not claim).
    pub fn writer(
        &self,
        schema: &Schema<'_>,
        options: &RingOptions<'_>,
    ) -> Result<RingWriter<'_>, RingError> {
        self.claim()?;
        RingWriter::init(&self.words, schema, options).inspect_err(|_| {
            self.claimed.store(false, Ordering::Release);
        })
    }

    /// As [`RingBuffer::writer`], typed.
    pub fn frame_writer<F: Frame>(
        &self,
        options: &RingOptions<'_>,
    ) -> Result<FrameWriter<'_, F>, RingError> {
        Ok(FrameWriter::wrap(self.writer(&F::SCHEMA, options)?))
    }

    /// An attached reader (see [`RingReader::attach`]).
    pub fn reader(&self) -> Result<RingReader<'_>, RingError> {
        RingReader::attach(&self.words)
    }

    /// An inspecting reader (see [`RingReader::inspect`]).
    pub fn inspect(&self) -> Result<RingReader<'_>, RingError> {
        RingReader::inspect(&self.words)
    }

    /// The words (for a debugger script, or to copy out a post-mortem image).
    pub fn words(&self) -> &[AtomicU64] {
        &self.words
    }
}

/// Stores `payload` into a slot's payload words (relaxed), zeroing the words it does not
/// cover so readers never see a previous frame's tail. The `fill` of every plain-word save.
#[inline(always)]
pub fn store_payload(data: &[AtomicU64], payload: &[u64]) {
    for (d, v) in data.iter().zip(payload) {
        d.store(*v, Ordering::Relaxed);
    }
    if let Some(rest) = data.get(payload.len()..) {
        for d in rest {
            d.store(0, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests;
