//! What a writer puts in a ring's header: who wrote it ([`WriterId`]), its clock
//! ([`ClockKind`], [`ClockInfo`]) and the options it was opened with ([`RingOptions`]).

use super::counters::*;
use super::limits::*;
use super::schema::*;
use super::words::*;

/// Who writes a ring: an opaque pair of words. On Linux, `picollo-linux` stores the pid and
/// the process start time (from `/proc/<pid>/stat`), so a reader can tell a live writer from a
/// dead one whose pid was reused.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct WriterId(pub u64, pub u64);

/// What the timestamps of [`Time`](super::Time) and [`TimeInterval`](super::TimeInterval) fields
/// count.
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

    pub(super) const fn from_code(c: u64) -> Option<Self> {
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

#[cfg(feature = "defmt")]
#[cfg_attr(docsrs, doc(cfg(feature = "defmt")))]
impl defmt::Format for Schema<'_> {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(f, "Schema({=str}, {} fields)", self.name, self.fields.len())
    }
}

// ---------------------------------------------------------------------------------------------
// Raw regions
// ---------------------------------------------------------------------------------------------

/// Writes every header word but the magic, `head`, `attached` and the request area: the
/// geometry, identity, clock, counter table and schema.
pub(super) fn write_header(
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
