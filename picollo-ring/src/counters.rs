//! The counter table of a ring: what each counter slot of a frame measures ([`CounterInfo`],
//! [`CounterStatus`]), its encoding in the header ([`CounterTable`]), and counter requests
//! from a reader to the writer ([`CounterRequest`], [`RequestStatus`]).

use super::error::*;
use super::schema::*;
use super::words::*;

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

    pub(super) const fn from_code(code: u64) -> Option<Self> {
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

/// A counter request a writer took
/// ([`RingWriter::take_counter_request`](super::RingWriter::take_counter_request)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CounterRequest<'a> {
    /// Its sequence number, for
    /// [`RingWriter::ack_counter_request`](super::RingWriter::ack_counter_request).
    pub seq: u64,
    /// The counters asked for, as the reader wrote them (comma-separated names, by
    /// convention; the writer decides how to read it).
    pub text: &'a str,
}

/// Where a counter request stands
/// ([`RingReader::request_status`](super::RingReader::request_status)).
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

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) struct CounterDesc {
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
/// first-frame words (see [`RingReader`](super::RingReader)).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CounterTable {
    entries: [CounterDesc; MAX_COUNTERS],
    pub(super) len: usize,
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
    pub(super) fn read<W: Words + ?Sized>(
        region: &W,
        at: usize,
        len: usize,
    ) -> Result<Self, RingError> {
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
        if !words.len().is_multiple_of(w::ENTRY) {
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
    pub(crate) fn encoded_words(&self) -> usize {
        w::ENTRY * self.len
    }

    /// Writes the encoding (24-byte name, status word per slot) into `out`; returns the words
    /// written (`CounterTable::encoded_words`; fewer if `out` is shorter).
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

    pub(super) fn write(&self, set: &mut dyn FnMut(usize, u64), at: usize) {
        for (i, c) in self.iter().enumerate() {
            let at = at + w::ENTRY * i;
            encode_name(set, at, c.name, 3);
            set(at + 3, c.status_word());
        }
    }
}
