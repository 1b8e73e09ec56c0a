//! What a reader learns from a ring's header: [`RingInfo`] (schema, fields, counters, clock),
//! read and checked from the region.

use core::fmt;

use crate::sync::{fence, spin_loop, Ordering};

use super::counters::*;
use super::error::*;
use super::header::*;
use super::limits::*;
use super::schema::*;
use super::words::*;
use crate::sync::AtomicU64;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct FieldDesc {
    name: NameBuf<NAME_BYTES>,
    kind: FieldKind,
    offset: u16,
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
pub(super) const TABLE_RETRIES: u32 = 1 << 16;

/// A validated copy of a ring header: geometry, writer, clock, counters and schema.
///
/// Readers get it from [`RingInfo::parse`] (through [`RingReader`](super::RingReader)); it never
/// changes after, whatever the writer does to the region, except that a
/// [`RingReader`](super::RingReader) swaps in the counter table that describes the frame it
/// delivers.
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
    pub(super) counters: CounterTable,
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
            spin_loop();
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
        check_words(region, &COUNTS)?;
        let epoch = load(region, w::COUNTERS_EPOCH)?;
        let field_count = load(region, w::FIELD_COUNT)? as usize;
        let counter_count = load(region, w::COUNTER_COUNT)? as usize;
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
        check_words(region, &SLOTS)?;
        let slot_count = load(region, w::SLOT_COUNT)?;
        let slot_words = load(region, w::SLOT_WORDS)? as usize;
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
        let clock = read_clock(region)?;
        let name = NameBuf::<FRAME_NAME_BYTES>::read(region, w::FRAME_NAME)?;
        if !name.is_clean() || check_name(name.as_str(), FRAME_NAME_BYTES).is_err() {
            return Err(bad("frame name", 0));
        }
        let counters = CounterTable::read(region, w::TABLES, counter_count)?;
        let (fields, payload) = read_fields(region, counter_count, field_count)?;
        if payload + 1 != slot_words {
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
    pub(crate) fn slot_words(&self) -> usize {
        self.slot_words
    }

    /// Payload words per frame.
    pub fn payload_words(&self) -> usize {
        self.slot_words - 1
    }

    /// Slots (a power of two).
    pub(crate) fn slot_count(&self) -> u64 {
        self.slot_count
    }

    /// Words of the whole ring: header plus slots.
    pub(crate) fn region_words(&self) -> usize {
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
    /// there (the values are whatever the writer put in). The CSV's cells (feature `std`).
    #[cfg(any(test, feature = "std"))]
    pub(crate) fn counter_status(&self, slot: usize) -> Option<CounterStatus> {
        self.counters.iter().nth(slot).map(|c| c.status)
    }

    #[cfg(test)]
    /// Whether counter slot `slot` has values the header vouches for: it names the counter
    /// and marks it measured.
    pub(crate) fn counter_measured(&self, slot: usize) -> bool {
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

/// A header word checked on its own: the word, its name in errors, and what it may hold.
type CheckedWord = (usize, &'static str, fn(u64) -> bool);

/// The header's flags, reserved word, counter table epoch and table sizes, checked in this
/// order (the epoch is even outside a table rewrite; the sizes bound every table read).
const COUNTS: [CheckedWord; 5] = [
    (w::FLAGS, "flags", |v| v == 0),
    (w::RESERVED, "reserved word", |v| v == 0),
    (w::COUNTERS_EPOCH, "counter table epoch", |v| v & 1 == 0),
    (w::FIELD_COUNT, "field count", |v| v <= MAX_FIELDS as u64),
    (w::COUNTER_COUNT, "counter count", |v| {
        v <= MAX_COUNTERS as u64
    }),
];

/// The slot geometry: a power-of-two count within the limits, and words that hold a
/// sequence word and at most the largest payload.
const SLOTS: [CheckedWord; 2] = [
    (w::SLOT_COUNT, "slot count", |v| {
        v.is_power_of_two() && v >= u64::from(MIN_SLOTS) && v <= u64::from(MAX_SLOTS)
    }),
    (w::SLOT_WORDS, "slot words", |v| {
        v != 0 && v <= 1 + MAX_PAYLOAD_WORDS as u64
    }),
];

fn bad(field: &'static str, value: u64) -> RingError {
    RingError::BadHeader { field, value }
}

/// Checks `words` of `region`, in order: the first that does not hold what it may is the
/// error.
fn check_words<W: Words + ?Sized>(region: &W, words: &[CheckedWord]) -> Result<(), RingError> {
    for &(at, field, valid) in words {
        let v = load(region, at)?;
        if !valid(v) {
            return Err(bad(field, v));
        }
    }
    Ok(())
}

/// The header's clock: its kind (checked), rate and reference pair.
fn read_clock<W: Words + ?Sized>(region: &W) -> Result<ClockInfo, RingError> {
    let clock_kind = load(region, w::CLOCK_KIND)?;
    Ok(ClockInfo {
        kind: ClockKind::from_code(clock_kind).ok_or(bad("clock kind", clock_kind))?,
        hz: load(region, w::CLOCK_HZ)?,
        ref_ticks: load(region, w::CLOCK_REF_TICKS)?,
        ref_ns: load(region, w::CLOCK_REF_NS)?,
    })
}

/// The schema's `field_count` field descriptions (after the `counter_count` counter
/// entries), each checked (clean, distinct names; known kinds; offsets that follow one
/// another), and the payload words they take.
fn read_fields<W: Words + ?Sized>(
    region: &W,
    counter_count: usize,
    field_count: usize,
) -> Result<([FieldDesc; MAX_FIELDS], usize), RingError> {
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
        let kind =
            FieldKind::from_tag(meta as u8, (meta >> 8) as u8).ok_or(bad("field kind", meta))?;
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
    Ok((fields, offset))
}
