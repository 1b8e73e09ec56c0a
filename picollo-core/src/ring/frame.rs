//! Frame types and schemas: what one slot of a [ring](super) holds, described well enough for a
//! reader with no access to the writer's source.
//!
//! - A [`Schema`] names a frame type and lists its [`Field`]s (name and [`FieldKind`]). The ring
//!   header carries it in a fixed-size encoding (32 bytes for the frame name, 32 per field).
//! - [`Frame`] is a Rust type with a constant schema that encodes to and decodes from payload
//!   words. The [`frame!`](crate::frame) macro generates the struct and the impl from plain
//!   field declarations; each field type implements [`FrameField`].
//! - [`DynamicFrame`] decodes any frame by the schema a reader found in the header (ppt's
//!   `convert`); `picollo_alloc::csv` writes such frames as CSV rows.
//!
//! # Encoding
//!
//! Every scalar takes one 64-bit word (no packing): integers are zero- or sign-extended,
//! floats are stored as their bits, `bool` as 0 or 1. [`Label`] is 24 UTF-8 bytes in three
//! words (little-endian byte order inside each word). [`Time`] is one word, [`TimeInterval`]
//! two (start, end). [`Counters<N>`] is `N` words and [`CounterInterval<N>`] `2N` (all starts,
//! then all ends); counter slot `i` is described by the ring header's counter `i` (its name
//! and whether it could be measured), as ppt's `interval counter` leaves the actual counters
//! to the attach-time configuration.
//!
//! ```
//! use picollo_core::ring::{Frame, FieldKind, Label, TimeInterval};
//!
//! picollo_core::frame! {
//!     /// One request, as the server saw it.
//!     #[derive(Clone, Copy, Debug, Default, PartialEq)]
//!     pub struct Request {
//!         pub id: u64,
//!         pub status: i32,
//!         pub route: Label,
//!         pub duration: TimeInterval,
//!     }
//! }
//!
//! assert_eq!(Request::WORDS, 1 + 1 + 3 + 2);
//! assert_eq!(Request::SCHEMA.name, "Request");
//! assert_eq!(Request::SCHEMA.fields[1].kind, FieldKind::I32);
//!
//! let r = Request { id: 7, status: -2, route: Label::new("/index"), duration: TimeInterval::new(10, 25) };
//! let mut words = [0u64; Request::WORDS];
//! r.encode(&mut words);
//! assert_eq!(Request::decode(&words), Some(r));
//! ```

use core::fmt;

use portable_atomic::{AtomicU64, Ordering};

use super::RingInfo;

/// Longest field name, in bytes (and longest counter name).
pub const NAME_BYTES: usize = 24;
/// Longest frame (schema) name, in bytes.
pub const FRAME_NAME_BYTES: usize = 32;
/// Most fields one schema may have.
pub const MAX_FIELDS: usize = 32;
/// Most counters one ring header describes, and the widest counter field.
pub const MAX_COUNTERS: usize = 8;
/// Most payload words one frame may have (512 bytes).
pub const MAX_PAYLOAD_WORDS: usize = 64;
/// Longest string field, in words (64 bytes).
pub const MAX_STR_WORDS: usize = 8;

/// The type of one field, as the header encodes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum FieldKind {
    /// `u64`.
    U64,
    /// `i64`.
    I64,
    /// `u32`.
    U32,
    /// `i32`.
    I32,
    /// `u16`.
    U16,
    /// `i16`.
    I16,
    /// `u8`.
    U8,
    /// `i8`.
    I8,
    /// `f64`.
    F64,
    /// `f32`.
    F32,
    /// `bool`.
    Bool,
    /// A UTF-8 string of at most `8 * words` bytes, NUL-padded ([`Label`] has 3 words).
    Str {
        /// Words (1..=[`MAX_STR_WORDS`]).
        words: u8,
    },
    /// One timestamp in the header's clock ([`Time`]).
    Time,
    /// A start and an end timestamp ([`TimeInterval`], ppt's `interval time`).
    TimeInterval,
    /// One sample of `count` counters ([`Counters`], ppt's `counter`).
    Counters {
        /// Counter slots (1..=[`MAX_COUNTERS`]).
        count: u8,
    },
    /// Samples of `count` counters at the start and the end ([`CounterInterval`], ppt's
    /// `interval counter`).
    CounterInterval {
        /// Counter slots (1..=[`MAX_COUNTERS`]).
        count: u8,
    },
}

impl FieldKind {
    /// Payload words a field of this kind takes.
    pub const fn words(self) -> usize {
        match self {
            Self::Str { words } => words as usize,
            Self::TimeInterval => 2,
            Self::Counters { count } => count as usize,
            Self::CounterInterval { count } => 2 * count as usize,
            _ => 1,
        }
    }

    /// The tag byte of the header encoding.
    pub const fn tag(self) -> u8 {
        match self {
            Self::U64 => 1,
            Self::I64 => 2,
            Self::U32 => 3,
            Self::I32 => 4,
            Self::U16 => 5,
            Self::I16 => 6,
            Self::U8 => 7,
            Self::I8 => 8,
            Self::F64 => 9,
            Self::F32 => 10,
            Self::Bool => 11,
            Self::Str { .. } => 12,
            Self::Time => 13,
            Self::TimeInterval => 14,
            Self::Counters { .. } => 15,
            Self::CounterInterval { .. } => 16,
        }
    }

    /// The parameter byte of the header encoding (string words, counter slots; else 0).
    pub const fn param(self) -> u8 {
        match self {
            Self::Str { words } => words,
            Self::Counters { count } | Self::CounterInterval { count } => count,
            _ => 0,
        }
    }

    /// Decodes a tag and parameter; `None` for an unknown tag or an out-of-range parameter
    /// (the header is untrusted).
    pub const fn from_tag(tag: u8, param: u8) -> Option<Self> {
        let plain = match tag {
            1 => Self::U64,
            2 => Self::I64,
            3 => Self::U32,
            4 => Self::I32,
            5 => Self::U16,
            6 => Self::I16,
            7 => Self::U8,
            8 => Self::I8,
            9 => Self::F64,
            10 => Self::F32,
            11 => Self::Bool,
            13 => Self::Time,
            14 => Self::TimeInterval,
            12 if param >= 1 && param as usize <= MAX_STR_WORDS => {
                return Some(Self::Str { words: param })
            }
            15 if param >= 1 && param as usize <= MAX_COUNTERS => {
                return Some(Self::Counters { count: param })
            }
            16 if param >= 1 && param as usize <= MAX_COUNTERS => {
                return Some(Self::CounterInterval { count: param })
            }
            _ => return None,
        };
        if param == 0 {
            Some(plain)
        } else {
            None
        }
    }

    /// Whether the parameter is in range (strings 1..=8 words, counters 1..=8 slots).
    pub const fn is_valid(self) -> bool {
        Self::from_tag(self.tag(), self.param()).is_some()
    }

    /// The kind's name as a schema listing shows it: `u64`, `str[24]`, `interval time`,
    /// `interval counter[3]`, ….
    pub fn write_name(self, f: &mut dyn fmt::Write) -> fmt::Result {
        match self {
            Self::U64 => f.write_str("u64"),
            Self::I64 => f.write_str("i64"),
            Self::U32 => f.write_str("u32"),
            Self::I32 => f.write_str("i32"),
            Self::U16 => f.write_str("u16"),
            Self::I16 => f.write_str("i16"),
            Self::U8 => f.write_str("u8"),
            Self::I8 => f.write_str("i8"),
            Self::F64 => f.write_str("f64"),
            Self::F32 => f.write_str("f32"),
            Self::Bool => f.write_str("bool"),
            Self::Str { words } => write!(f, "str[{}]", 8 * words as usize),
            Self::Time => f.write_str("time"),
            Self::TimeInterval => f.write_str("interval time"),
            Self::Counters { count } => write!(f, "counter[{count}]"),
            Self::CounterInterval { count } => write!(f, "interval counter[{count}]"),
        }
    }
}

impl fmt::Display for FieldKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.write_name(f)
    }
}

/// One field of a schema: its name and type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Field<'a> {
    /// The name (1..=[`NAME_BYTES`] bytes, ASCII graphic characters except `,` and `"`).
    pub name: &'a str,
    /// The type.
    pub kind: FieldKind,
}

impl<'a> Field<'a> {
    /// A field.
    pub const fn new(name: &'a str, kind: FieldKind) -> Self {
        Self { name, kind }
    }
}

/// A frame type: its name and fields, in payload order.
///
/// The schema is what the ring header carries; [`Schema::check`] enforces the limits of the
/// fixed-size encoding (names, field count, payload size).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Schema<'a> {
    /// The frame type's name (1..=[`FRAME_NAME_BYTES`] bytes, ASCII graphic characters
    /// except `,` and `"`).
    pub name: &'a str,
    /// The fields, in payload order.
    pub fields: &'a [Field<'a>],
}

/// Why a schema (or a counter description) cannot go into a ring header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum SchemaError {
    /// A name is empty.
    EmptyName,
    /// A name is longer than the encoding allows.
    NameTooLong {
        /// Its length in bytes.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// A name has a character outside ASCII graphic characters, or `,` or `"` (they would
    /// break CSV headers).
    BadNameChar,
    /// Two fields have the same name.
    DuplicateField,
    /// More fields than [`MAX_FIELDS`].
    TooManyFields(usize),
    /// More payload words than [`MAX_PAYLOAD_WORDS`].
    PayloadTooLarge(usize),
    /// A field kind's parameter is out of range (string of 0 or more than 8 words, counter
    /// field of 0 or more than 8 slots).
    BadKind,
    /// More counters than [`MAX_COUNTERS`].
    TooManyCounters(usize),
    /// A counter description is inconsistent: an unused slot with a name or an errno, or a
    /// measured counter with an errno.
    BadCounter,
}

impl fmt::Display for SchemaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::EmptyName => f.write_str("a schema name is empty"),
            Self::NameTooLong { len, max } => {
                write!(
                    f,
                    "a schema name has {len} bytes, more than the {max} allowed"
                )
            }
            Self::BadNameChar => f.write_str(
                "a schema name has a character other than ASCII letters, digits and punctuation \
                 (or has `,` or `\"`)",
            ),
            Self::DuplicateField => f.write_str("two fields have the same name"),
            Self::TooManyFields(n) => write!(f, "{n} fields, more than the {MAX_FIELDS} allowed"),
            Self::PayloadTooLarge(n) => write!(
                f,
                "{n} payload words, more than the {MAX_PAYLOAD_WORDS} allowed"
            ),
            Self::BadKind => f.write_str("a field kind's size is out of range"),
            Self::TooManyCounters(n) => {
                write!(f, "{n} counters, more than the {MAX_COUNTERS} allowed")
            }
            Self::BadCounter => f.write_str(
                "a counter description is inconsistent (an unused slot with a name or an \
                 errno, or a measured counter with an errno)",
            ),
        }
    }
}

impl core::error::Error for SchemaError {}

/// Checks a schema name: length and characters.
pub(crate) const fn check_name(name: &str, max: usize) -> Result<(), SchemaError> {
    let b = name.as_bytes();
    if b.is_empty() {
        return Err(SchemaError::EmptyName);
    }
    if b.len() > max {
        return Err(SchemaError::NameTooLong { len: b.len(), max });
    }
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if !c.is_ascii_graphic() || c == b',' || c == b'"' {
            return Err(SchemaError::BadNameChar);
        }
        i += 1;
    }
    Ok(())
}

/// Checks a counter name: 1..=[`NAME_BYTES`] bytes of UTF-8 without control characters
/// (perf event names such as `cpu/event=0x3c,umask=0x00/` may hold commas; CSV quotes them).
pub(crate) fn check_counter_name(name: &str) -> Result<(), SchemaError> {
    if name.is_empty() {
        return Err(SchemaError::EmptyName);
    }
    if name.len() > NAME_BYTES {
        return Err(SchemaError::NameTooLong {
            len: name.len(),
            max: NAME_BYTES,
        });
    }
    if name.chars().any(char::is_control) {
        return Err(SchemaError::BadNameChar);
    }
    Ok(())
}

const fn str_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

impl<'a> Schema<'a> {
    /// A schema.
    pub const fn new(name: &'a str, fields: &'a [Field<'a>]) -> Self {
        Self { name, fields }
    }

    /// Payload words of one frame: the sum of the fields' words.
    pub const fn payload_words(&self) -> usize {
        let mut sum = 0;
        let mut i = 0;
        while i < self.fields.len() {
            sum += self.fields[i].kind.words();
            i += 1;
        }
        sum
    }

    /// Checks the limits of the header encoding: names, field count, kinds, unique field
    /// names, payload size. A `const fn`, so `frame!` rejects a bad schema at compile time.
    pub const fn check(&self) -> Result<(), SchemaError> {
        if let Err(e) = check_name(self.name, FRAME_NAME_BYTES) {
            return Err(e);
        }
        if self.fields.len() > MAX_FIELDS {
            return Err(SchemaError::TooManyFields(self.fields.len()));
        }
        let mut i = 0;
        while i < self.fields.len() {
            let f = self.fields[i];
            if let Err(e) = check_name(f.name, NAME_BYTES) {
                return Err(e);
            }
            if !f.kind.is_valid() {
                return Err(SchemaError::BadKind);
            }
            let mut j = 0;
            while j < i {
                if str_eq(self.fields[j].name, f.name) {
                    return Err(SchemaError::DuplicateField);
                }
                j += 1;
            }
            i += 1;
        }
        let words = self.payload_words();
        if words > MAX_PAYLOAD_WORDS {
            return Err(SchemaError::PayloadTooLarge(words));
        }
        Ok(())
    }

    /// Whether `check` passes (for `const` assertions).
    pub const fn is_valid(&self) -> bool {
        self.check().is_ok()
    }
}

// ---------------------------------------------------------------------------------------------
// Field types
// ---------------------------------------------------------------------------------------------

/// A Rust type usable as a field of a [`frame!`](crate::frame) struct.
///
/// `encode` writes exactly `KIND.words()` words into `out` (a shorter `out` gets what fits);
/// `decode` reads them back (missing words read as 0). Implemented for the integer types,
/// `f32`, `f64`, `bool`, [`Label`], [`Time`], [`TimeInterval`], [`Counters`] and
/// [`CounterInterval`].
pub trait FrameField: Sized {
    /// The header's description of the field type.
    const KIND: FieldKind;
    /// Writes the field's words.
    fn encode(&self, out: &mut [u64]);
    /// Reads the field back from its words.
    fn decode(words: &[u64]) -> Self;
    /// Stores the field's words straight into ring words (relaxed), as the writer does.
    /// The default encodes into a stack buffer first.
    #[inline(always)]
    fn store(&self, out: &[AtomicU64]) {
        let mut buf = [0u64; 2 * MAX_COUNTERS];
        let n = Self::KIND.words().min(buf.len());
        if let Some(b) = buf.get_mut(..n) {
            self.encode(b);
        }
        for (o, v) in out.iter().zip(buf.iter().take(n)) {
            o.store(*v, Ordering::Relaxed);
        }
    }
}

#[inline(always)]
fn first(words: &[u64]) -> u64 {
    words.first().copied().unwrap_or(0)
}

macro_rules! scalar_field {
    ($($ty:ty => $kind:ident, |$v:ident| $enc:expr, |$w:ident| $dec:expr;)*) => {$(
        impl FrameField for $ty {
            const KIND: FieldKind = FieldKind::$kind;
            #[inline(always)]
            fn encode(&self, out: &mut [u64]) {
                if let Some(o) = out.first_mut() {
                    let $v = *self;
                    *o = $enc;
                }
            }
            #[inline(always)]
            fn decode(words: &[u64]) -> Self {
                let $w = first(words);
                $dec
            }
            #[inline(always)]
            fn store(&self, out: &[AtomicU64]) {
                if let Some(o) = out.first() {
                    let $v = *self;
                    o.store($enc, Ordering::Relaxed);
                }
            }
        }
    )*};
}

scalar_field! {
    u64 => U64, |v| v, |w| w;
    i64 => I64, |v| v as u64, |w| w as i64;
    u32 => U32, |v| u64::from(v), |w| w as u32;
    i32 => I32, |v| i64::from(v) as u64, |w| w as i32;
    u16 => U16, |v| u64::from(v), |w| w as u16;
    i16 => I16, |v| i64::from(v) as u64, |w| w as i16;
    u8 => U8, |v| u64::from(v), |w| w as u8;
    i8 => I8, |v| i64::from(v) as u64, |w| w as i8;
    f64 => F64, |v| v.to_bits(), |w| f64::from_bits(w);
    f32 => F32, |v| u64::from(v.to_bits()), |w| f32::from_bits(w as u32);
    bool => Bool, |v| u64::from(v), |w| w != 0;
}

/// A string of at most 24 UTF-8 bytes (three words): a name, a route, a phase.
///
/// [`Label::new`] truncates longer strings at a character boundary; it is a `const fn`, so a
/// label can be encoded at compile time.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Label {
    bytes: [u8; Label::BYTES],
}

impl Label {
    /// Bytes a label holds.
    pub const BYTES: usize = 24;

    /// The label of `s`, truncated to 24 bytes at a character boundary.
    pub const fn new(s: &str) -> Self {
        let b = s.as_bytes();
        let mut len = if b.len() < Self::BYTES {
            b.len()
        } else {
            Self::BYTES
        };
        // Back up to a character boundary: continuation bytes are 0b10xx_xxxx.
        while len > 0 && len < b.len() && (b[len] & 0xC0) == 0x80 {
            len -= 1;
        }
        let mut bytes = [0u8; Self::BYTES];
        let mut i = 0;
        while i < len {
            bytes[i] = b[i];
            i += 1;
        }
        Self { bytes }
    }

    /// The three words of the encoding (little-endian bytes in each word).
    pub const fn to_words(&self) -> [u64; 3] {
        let mut out = [0u64; 3];
        let mut i = 0;
        while i < Self::BYTES {
            out[i / 8] |= (self.bytes[i] as u64) << (8 * (i % 8));
            i += 1;
        }
        out
    }

    /// A label from its words; bytes after the first NUL are dropped.
    pub const fn from_words(words: [u64; 3]) -> Self {
        let mut bytes = [0u8; Self::BYTES];
        let mut i = 0;
        while i < Self::BYTES {
            bytes[i] = (words[i / 8] >> (8 * (i % 8))) as u8;
            i += 1;
        }
        Self { bytes }
    }

    /// The string: the bytes up to the first NUL, cut at the last valid UTF-8 boundary (a
    /// label decoded from an untrusted frame may hold anything).
    pub fn as_str(&self) -> &str {
        utf8_prefix(&self.bytes)
    }
}

/// The longest valid UTF-8 prefix of `bytes` before the first NUL.
pub(crate) fn utf8_prefix(bytes: &[u8]) -> &str {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    let b = bytes.get(..end).unwrap_or(&[]);
    match core::str::from_utf8(b) {
        Ok(s) => s,
        // `valid_up_to` is a char boundary of valid UTF-8, so the second parse succeeds.
        Err(e) => core::str::from_utf8(b.get(..e.valid_up_to()).unwrap_or(&[])).unwrap_or(""),
    }
}

impl fmt::Debug for Label {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for Label {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FrameField for Label {
    const KIND: FieldKind = FieldKind::Str { words: 3 };
    #[inline(always)]
    fn encode(&self, out: &mut [u64]) {
        for (o, w) in out.iter_mut().zip(self.to_words()) {
            *o = w;
        }
    }
    #[inline]
    fn decode(words: &[u64]) -> Self {
        let mut w = [0u64; 3];
        for (d, s) in w.iter_mut().zip(words) {
            *d = *s;
        }
        Self::from_words(w)
    }
}

/// One timestamp in the clock the ring header names (ppt's `time`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Time(pub u64);

impl FrameField for Time {
    const KIND: FieldKind = FieldKind::Time;
    #[inline(always)]
    fn encode(&self, out: &mut [u64]) {
        if let Some(o) = out.first_mut() {
            *o = self.0;
        }
    }
    #[inline(always)]
    fn store(&self, out: &[AtomicU64]) {
        if let Some(o) = out.first() {
            o.store(self.0, Ordering::Relaxed);
        }
    }
    #[inline(always)]
    fn decode(words: &[u64]) -> Self {
        Self(first(words))
    }
}

/// A start and an end timestamp (ppt's `interval time`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct TimeInterval {
    /// The start.
    pub start: u64,
    /// The end.
    pub end: u64,
}

impl TimeInterval {
    /// An interval.
    pub const fn new(start: u64, end: u64) -> Self {
        Self { start, end }
    }

    /// `end - start`, wrapping.
    pub const fn duration(&self) -> u64 {
        self.end.wrapping_sub(self.start)
    }
}

impl FrameField for TimeInterval {
    const KIND: FieldKind = FieldKind::TimeInterval;
    #[inline(always)]
    fn encode(&self, out: &mut [u64]) {
        if let [s, e, ..] = out {
            *s = self.start;
            *e = self.end;
        }
    }
    #[inline(always)]
    fn store(&self, out: &[AtomicU64]) {
        if let [s, e, ..] = out {
            s.store(self.start, Ordering::Relaxed);
            e.store(self.end, Ordering::Relaxed);
        }
    }
    #[inline(always)]
    fn decode(words: &[u64]) -> Self {
        Self {
            start: first(words),
            end: words.get(1).copied().unwrap_or(0),
        }
    }
}

/// One sample of `N` counters (ppt's `counter`); slot `i` is the ring header's counter `i`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Counters<const N: usize> {
    /// The values.
    pub values: [u64; N],
}

impl<const N: usize> Default for Counters<N> {
    fn default() -> Self {
        Self { values: [0; N] }
    }
}

impl<const N: usize> FrameField for Counters<N> {
    const KIND: FieldKind = {
        assert!(N >= 1 && N <= MAX_COUNTERS, "1 to 8 counter slots");
        FieldKind::Counters { count: N as u8 }
    };
    #[inline(always)]
    fn encode(&self, out: &mut [u64]) {
        for (o, v) in out.iter_mut().zip(&self.values) {
            *o = *v;
        }
    }
    #[inline]
    fn decode(words: &[u64]) -> Self {
        let mut values = [0; N];
        for (d, s) in values.iter_mut().zip(words) {
            *d = *s;
        }
        Self { values }
    }
}

/// Samples of `N` counters at the start and the end of an interval (ppt's
/// `interval counter`); slot `i` is the ring header's counter `i`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CounterInterval<const N: usize> {
    /// The samples at the start.
    pub start: [u64; N],
    /// The samples at the end.
    pub end: [u64; N],
}

impl<const N: usize> Default for CounterInterval<N> {
    fn default() -> Self {
        Self {
            start: [0; N],
            end: [0; N],
        }
    }
}

impl<const N: usize> CounterInterval<N> {
    /// `end[i] - start[i]`, wrapping; `None` when `i >= N`.
    pub fn delta(&self, i: usize) -> Option<u64> {
        Some(self.end.get(i)?.wrapping_sub(*self.start.get(i)?))
    }
}

impl<const N: usize> FrameField for CounterInterval<N> {
    const KIND: FieldKind = {
        assert!(N >= 1 && N <= MAX_COUNTERS, "1 to 8 counter slots");
        FieldKind::CounterInterval { count: N as u8 }
    };
    #[inline(always)]
    fn encode(&self, out: &mut [u64]) {
        for (o, v) in out.iter_mut().zip(self.start.iter().chain(&self.end)) {
            *o = *v;
        }
    }
    #[inline(always)]
    fn store(&self, out: &[AtomicU64]) {
        for (o, v) in out.iter().zip(self.start.iter().chain(&self.end)) {
            o.store(*v, Ordering::Relaxed);
        }
    }
    #[inline]
    fn decode(words: &[u64]) -> Self {
        let mut r = Self::default();
        for (d, s) in r.start.iter_mut().chain(r.end.iter_mut()).zip(words) {
            *d = *s;
        }
        r
    }
}

// ---------------------------------------------------------------------------------------------
// Frames
// ---------------------------------------------------------------------------------------------

mod sealed {
    pub trait Sealed {}
    impl<const N: usize> Sealed for [u64; N] {}
}

/// `[u64; N]`: the stack buffer a frame encodes into before the ring stores it (sealed).
pub trait WordArray: sealed::Sealed + Copy + AsRef<[u64]> + AsMut<[u64]> {
    /// All zeros.
    const ZERO: Self;
    /// Stores the words into `dst[..N]` (relaxed atomic stores; nothing if `dst` is
    /// shorter). The length is a constant, so the stores unroll.
    fn store_into(&self, dst: &[AtomicU64]);
}

impl<const N: usize> WordArray for [u64; N] {
    const ZERO: Self = [0; N];
    #[inline(always)]
    fn store_into(&self, dst: &[AtomicU64]) {
        if let Some(dst) = dst.get(..N) {
            for (d, v) in dst.iter().zip(self) {
                d.store(*v, Ordering::Relaxed);
            }
        }
    }
}

/// A frame type: a constant schema and the encoding of its payload.
///
/// Write it with [`frame!`](crate::frame), which keeps `SCHEMA`, `WORDS`, `Words`, `encode`
/// and `decode` in step with the struct. A hand-written impl must keep them in step too:
/// `WORDS == SCHEMA.payload_words()`, `Words = [u64; WORDS]`, and `encode` writes the fields
/// in schema order with each [`FieldKind`]'s encoding.
pub trait Frame: Sized {
    /// The schema the ring header carries.
    const SCHEMA: Schema<'static>;
    /// Payload words of one frame (`SCHEMA.payload_words()`).
    const WORDS: usize;
    /// `[u64; WORDS]`.
    type Words: WordArray;
    /// Writes the payload into `out[..WORDS]` (a shorter `out` gets what fits).
    fn encode(&self, out: &mut [u64]);
    /// Reads a frame back; `None` when `words` is shorter than `WORDS`.
    fn decode(words: &[u64]) -> Option<Self>;
    /// Stores the payload into ring words `out[..WORDS]` with relaxed atomic stores (nothing
    /// if `out` is shorter): what [`FrameWriter`](super::FrameWriter) calls inside the
    /// writer protocol. The default encodes into `Words` and stores that; `frame!` stores
    /// each field directly, which spares a copy (and a store-forwarding stall when the frame
    /// was just filled in memory).
    #[inline(always)]
    fn store(&self, out: &[AtomicU64]) {
        let mut words = Self::Words::ZERO;
        self.encode(words.as_mut());
        words.store_into(out);
    }
}

/// Defines a frame struct and implements [`Frame`](crate::ring::Frame) for it: the schema
/// (frame name = struct name, field names, field types) comes from the declaration.
///
/// Field types must implement [`FrameField`](crate::ring::FrameField): integers, `f32`, `f64`,
/// `bool`, [`Label`](crate::ring::Label), [`Time`](crate::ring::Time),
/// [`TimeInterval`](crate::ring::TimeInterval), [`Counters<N>`](crate::ring::Counters) and
/// [`CounterInterval<N>`](crate::ring::CounterInterval). Attributes (derives, docs) pass
/// through. A schema over the header's limits (names over 24 bytes, more than 32 fields,
/// more than 64 payload words) is a compile-time error.
///
/// ```
/// use picollo_core::ring::{CounterInterval, Frame, TimeInterval};
///
/// picollo_core::frame! {
///     /// ppt's `first` frame: `int a, b, c; interval time duration; interval counter events;`.
///     #[derive(Clone, Copy, Debug, Default, PartialEq)]
///     pub struct First {
///         pub a: i32,
///         pub b: i32,
///         pub c: i32,
///         pub duration: TimeInterval,
///         pub events: CounterInterval<3>,
///     }
/// }
/// assert_eq!(First::WORDS, 3 + 2 + 6);
/// assert_eq!(First::SCHEMA.fields[4].name, "events");
/// ```
///
/// ```compile_fail
/// picollo_core::frame! {
///     pub struct TooLong {
///         pub a_field_name_longer_than_24_bytes: u64,
///     }
/// }
/// ```
#[macro_export]
macro_rules! frame {
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident {
            $( $(#[$fmeta:meta])* $fvis:vis $field:ident : $ty:ty ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        $vis struct $name {
            $( $(#[$fmeta])* $fvis $field : $ty ),*
        }

        impl $crate::ring::Frame for $name {
            const SCHEMA: $crate::ring::Schema<'static> = $crate::ring::Schema::new(
                ::core::stringify!($name),
                &[$(
                    $crate::ring::Field::new(
                        ::core::stringify!($field),
                        <$ty as $crate::ring::FrameField>::KIND,
                    )
                ),*],
            );
            const WORDS: usize = 0 $( + <$ty as $crate::ring::FrameField>::KIND.words() )*;
            type Words = [u64; 0 $( + <$ty as $crate::ring::FrameField>::KIND.words() )*];

            #[inline(always)]
            #[allow(unused_variables, unused_assignments, unused_mut)]
            fn encode(&self, out: &mut [u64]) {
                let mut at = 0usize;
                $(
                    let w = <$ty as $crate::ring::FrameField>::KIND.words();
                    if let ::core::option::Option::Some(dst) = out.get_mut(at..at + w) {
                        <$ty as $crate::ring::FrameField>::encode(&self.$field, dst);
                    }
                    at += w;
                )*
            }

            #[inline(always)]
            #[allow(unused_variables, unused_assignments, unused_mut)]
            fn store(&self, out: &[$crate::ring::AtomicU64]) {
                // One length check; the per-field ranges below are then known in bounds.
                let ::core::option::Option::Some(out) =
                    out.get(..<Self as $crate::ring::Frame>::WORDS)
                else {
                    return;
                };
                let mut at = 0usize;
                $(
                    let w = <$ty as $crate::ring::FrameField>::KIND.words();
                    if let ::core::option::Option::Some(dst) = out.get(at..at + w) {
                        <$ty as $crate::ring::FrameField>::store(&self.$field, dst);
                    }
                    at += w;
                )*
            }

            #[inline]
            #[allow(unused_variables, unused_assignments, unused_mut)]
            fn decode(words: &[u64]) -> ::core::option::Option<Self> {
                let mut at = 0usize;
                ::core::option::Option::Some(Self {$(
                    $field: {
                        let w = <$ty as $crate::ring::FrameField>::KIND.words();
                        let v = <$ty as $crate::ring::FrameField>::decode(
                            words.get(at..at + w)?,
                        );
                        at += w;
                        v
                    },
                )*})
            }
        }

        const _: () = ::core::assert!(
            <$name as $crate::ring::Frame>::SCHEMA.is_valid(),
            "frame schema over the ring header's limits: names of 1..=24 ASCII graphic bytes \
             (no `,` or `\"`), at most 32 fields, at most 64 payload words",
        );
    };
}

// ---------------------------------------------------------------------------------------------
// Decoding by schema
// ---------------------------------------------------------------------------------------------

/// A decoded string value (up to [`MAX_STR_WORDS`] words).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct StrValue {
    bytes: [u8; 8 * MAX_STR_WORDS],
}

impl StrValue {
    fn from_words(words: &[u64]) -> Self {
        let mut bytes = [0u8; 8 * MAX_STR_WORDS];
        for (chunk, w) in bytes.chunks_exact_mut(8).zip(words) {
            chunk.copy_from_slice(&w.to_le_bytes());
        }
        Self { bytes }
    }

    /// The string up to the first NUL, cut at the last valid UTF-8 boundary.
    pub fn as_str(&self) -> &str {
        utf8_prefix(&self.bytes)
    }
}

impl fmt::Debug for StrValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

/// Up to [`MAX_COUNTERS`] counter values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CounterValues {
    values: [u64; MAX_COUNTERS],
    len: u8,
}

impl CounterValues {
    fn from_words(words: &[u64]) -> Self {
        let mut values = [0; MAX_COUNTERS];
        let mut len = 0u8;
        for (d, s) in values.iter_mut().zip(words) {
            *d = *s;
            len += 1;
        }
        Self { values, len }
    }

    /// The values, one per counter slot.
    pub fn as_slice(&self) -> &[u64] {
        self.values.get(..usize::from(self.len)).unwrap_or(&[])
    }
}

/// The value of one field of a [`DynamicFrame`].
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum Value {
    /// An unsigned integer field (`u8` to `u64`).
    Unsigned(u64),
    /// A signed integer field (`i8` to `i64`).
    Signed(i64),
    /// A floating-point field (`f32` widened).
    Float(f64),
    /// A `bool`.
    Bool(bool),
    /// A string.
    Str(StrValue),
    /// A timestamp.
    Time(u64),
    /// A time interval.
    TimeInterval {
        /// Start.
        start: u64,
        /// End.
        end: u64,
    },
    /// One sample of counters.
    Counters(CounterValues),
    /// Counter samples at the start and the end.
    CounterInterval {
        /// Samples at the start.
        start: CounterValues,
        /// Samples at the end.
        end: CounterValues,
    },
}

impl Value {
    /// Decodes the words of one field of `kind`.
    pub fn decode(kind: FieldKind, words: &[u64]) -> Value {
        let w = first(words);
        match kind {
            FieldKind::U64 => Value::Unsigned(w),
            FieldKind::U32 => Value::Unsigned(u64::from(w as u32)),
            FieldKind::U16 => Value::Unsigned(u64::from(w as u16)),
            FieldKind::U8 => Value::Unsigned(u64::from(w as u8)),
            FieldKind::I64 => Value::Signed(w as i64),
            FieldKind::I32 => Value::Signed(i64::from(w as i32)),
            FieldKind::I16 => Value::Signed(i64::from(w as i16)),
            FieldKind::I8 => Value::Signed(i64::from(w as i8)),
            FieldKind::F64 => Value::Float(f64::from_bits(w)),
            FieldKind::F32 => Value::Float(f64::from(f32::from_bits(w as u32))),
            FieldKind::Bool => Value::Bool(w != 0),
            FieldKind::Str { .. } => Value::Str(StrValue::from_words(words)),
            FieldKind::Time => Value::Time(w),
            FieldKind::TimeInterval => Value::TimeInterval {
                start: w,
                end: words.get(1).copied().unwrap_or(0),
            },
            FieldKind::Counters { .. } => Value::Counters(CounterValues::from_words(words)),
            FieldKind::CounterInterval { count } => {
                let n = usize::from(count).min(words.len());
                let (s, e) = words.split_at(n);
                Value::CounterInterval {
                    start: CounterValues::from_words(s),
                    end: CounterValues::from_words(e),
                }
            }
        }
    }
}

/// A frame decoded by the schema a reader found in a ring header: no access to the writer's
/// types needed.
///
/// ```
/// use picollo_core::ring::{DynamicFrame, Frame, RingBuffer, RingOptions, TimeInterval, Value};
/// use picollo_core::ring::required_words;
///
/// picollo_core::frame! {
///     pub struct Io { pub bytes: u32, pub ok: bool, pub t: TimeInterval }
/// }
/// static RING: RingBuffer<{ required_words(&Io::SCHEMA, 0, 8) }> = RingBuffer::new();
///
/// let mut w = RING.frame_writer::<Io>(&RingOptions::new(8))?;
/// let mut r = RING.reader()?; // attaching turns saving on
/// w.save(&Io { bytes: 512, ok: true, t: TimeInterval::new(3, 9) });
///
/// let mut buf = [0u64; 8];
/// let n = r.next_into(&mut buf)?.expect("one frame");
/// let f = DynamicFrame::new(r.info(), n, &buf);
/// assert_eq!(f.get("bytes"), Some(Value::Unsigned(512)));
/// assert_eq!(f.get("t"), Some(Value::TimeInterval { start: 3, end: 9 }));
/// assert_eq!(f.fields().map(|v| v.name).collect::<Vec<_>>(), ["bytes", "ok", "t"]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug)]
pub struct DynamicFrame<'a> {
    info: &'a RingInfo,
    number: u64,
    words: &'a [u64],
}

/// One field of a [`DynamicFrame`]: its name, kind and value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FieldValue<'a> {
    /// The field's name.
    pub name: &'a str,
    /// Its kind.
    pub kind: FieldKind,
    /// Its value.
    pub value: Value,
}

impl<'a> DynamicFrame<'a> {
    /// Frame `number` with payload `words`, described by `info` (from
    /// [`RingReader::info`](super::RingReader::info)). Missing words read as 0.
    pub fn new(info: &'a RingInfo, number: u64, words: &'a [u64]) -> Self {
        Self {
            info,
            number,
            words,
        }
    }

    /// The frame number (0 for the first frame the writer saved).
    pub fn number(&self) -> u64 {
        self.number
    }

    /// The header this frame is decoded by.
    pub fn info(&self) -> &'a RingInfo {
        self.info
    }

    /// The raw payload words.
    pub fn words(&self) -> &'a [u64] {
        self.words
    }

    /// The fields, in schema order.
    pub fn fields(&self) -> impl Iterator<Item = FieldValue<'a>> + 'a {
        let words = self.words;
        self.info.fields().map(move |f| FieldValue {
            name: f.name,
            kind: f.kind,
            value: Value::decode(
                f.kind,
                words
                    .get(f.offset..f.offset + f.kind.words())
                    .unwrap_or(&[]),
            ),
        })
    }

    /// The value of the field called `name`.
    pub fn get(&self, name: &str) -> Option<Value> {
        self.fields().find(|f| f.name == name).map(|f| f.value)
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::string::String;

    crate::frame! {
        #[derive(Clone, Copy, Debug, Default, PartialEq)]
        struct All {
            a: u64,
            b: i64,
            c: u32,
            d: i32,
            e: u16,
            f: i16,
            g: u8,
            h: i8,
            i: f64,
            j: f32,
            k: bool,
            l: Label,
            m: Time,
            n: TimeInterval,
            o: Counters<2>,
            p: CounterInterval<3>,
        }
    }

    crate::frame! {
        struct Empty {}
    }

    #[test]
    fn ring_frame_roundtrip_every_kind() {
        let v = All {
            a: u64::MAX,
            b: i64::MIN,
            c: u32::MAX,
            d: -5,
            e: 65535,
            f: -300,
            g: 200,
            h: -100,
            i: -1.5,
            j: 0.25,
            k: true,
            l: Label::new("héllo wörld"),
            m: Time(42),
            n: TimeInterval::new(5, 3),
            o: Counters { values: [1, 2] },
            p: CounterInterval {
                start: [1, 2, 3],
                end: [4, 6, 8],
            },
        };
        assert_eq!(All::WORDS, 11 + 3 + 1 + 2 + 2 + 6);
        assert_eq!(All::SCHEMA.payload_words(), All::WORDS);
        assert!(All::SCHEMA.check().is_ok());
        let mut w = <All as Frame>::Words::ZERO;
        v.encode(w.as_mut());
        assert_eq!(All::decode(&w), Some(v));
        assert_eq!(All::decode(&w[..All::WORDS - 1]), None);
        // Sign extension: i32 -5 is stored as i64 -5.
        assert_eq!(w[3], (-5i64) as u64);
        assert_eq!(v.n.duration(), u64::MAX - 1);
        assert_eq!(v.p.delta(2), Some(5));
        assert_eq!(v.p.delta(3), None);
        assert_eq!(Empty::WORDS, 0);
        assert_eq!(Empty::decode(&[]).map(|_| ()), Some(()));
    }

    #[test]
    fn ring_frame_labels() {
        assert_eq!(Label::new("abc").as_str(), "abc");
        let long = "abcdefghijklmnopqrstuvwxyz";
        assert_eq!(Label::new(long).as_str(), &long[..24]);
        // 23 ASCII bytes then a 2-byte character: cut before it.
        let s = "aaaaaaaaaaaaaaaaaaaaaaaé";
        assert_eq!(Label::new(s).as_str(), "aaaaaaaaaaaaaaaaaaaaaaa");
        let l = Label::new("phase:parse");
        assert_eq!(Label::from_words(l.to_words()), l);
        // Invalid UTF-8 from an untrusted frame: the valid prefix.
        let bad = Label::from_words([u64::from_le_bytes(*b"ab\xffcdefg"), 0, 0]);
        assert_eq!(bad.as_str(), "ab");
    }

    #[test]
    fn ring_frame_schema_checks() {
        const F: [Field<'static>; 2] = [
            Field::new("x", FieldKind::U64),
            Field::new("x", FieldKind::U64),
        ];
        assert_eq!(
            Schema::new("s", &F).check(),
            Err(SchemaError::DuplicateField)
        );
        assert_eq!(Schema::new("", &[]).check(), Err(SchemaError::EmptyName));
        assert_eq!(
            Schema::new("a,b", &[]).check(),
            Err(SchemaError::BadNameChar)
        );
        let big = [Field::new("x", FieldKind::CounterInterval { count: 8 })];
        assert!(Schema::new("s", &big).check().is_ok());
        let bad = [Field::new("x", FieldKind::CounterInterval { count: 9 })];
        assert_eq!(Schema::new("s", &bad).check(), Err(SchemaError::BadKind));
        for tag in 0..=255u8 {
            for param in [0u8, 1, 3, 8, 9, 255] {
                if let Some(k) = FieldKind::from_tag(tag, param) {
                    assert_eq!((k.tag(), k.param()), (tag, param));
                    assert!(k.is_valid());
                }
            }
        }
        let mut s = String::new();
        FieldKind::CounterInterval { count: 3 }
            .write_name(&mut s)
            .unwrap();
        assert_eq!(s, "interval counter[3]");
    }
}
