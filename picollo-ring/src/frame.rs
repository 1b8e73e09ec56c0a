//! Frame types and schemas: what one slot of a [ring](super) holds, described well enough for a
//! reader with no access to the writer's source.
//!
//! - A [`Schema`] names a frame type and lists its [`Field`]s (name and [`FieldKind`]). The ring
//!   header carries it in a fixed-size encoding (32 bytes for the frame name, 32 per field).
//! - [`Frame`] is a Rust type with a constant schema that encodes to and decodes from payload
//!   words. The [`frame!`](crate::frame) macro generates the struct and the impl from plain
//!   field declarations; each field type implements [`FrameField`].
//! - [`DynamicFrame`] decodes any frame by the schema a reader found in the header (ppt's
//!   `convert`); `picollo_ring::csv` writes such frames as CSV rows.
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
//! use picollo_ring::{Frame, FieldKind, Label, TimeInterval};
//!
//! picollo_ring::frame! {
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

use crate::sync::{AtomicU64, Ordering};

use super::schema::*;

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
pub(super) fn first(words: &[u64]) -> u64 {
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
    pub(crate) const BYTES: usize = 24;

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

/// Defines a frame struct and implements [`Frame`](crate::Frame) for it: the schema
/// (frame name = struct name, field names, field types) comes from the declaration.
///
/// Field types must implement [`FrameField`](crate::FrameField): integers, `f32`, `f64`,
/// `bool`, [`Label`](crate::Label), [`Time`](crate::Time),
/// [`TimeInterval`](crate::TimeInterval), [`Counters<N>`](crate::Counters) and
/// [`CounterInterval<N>`](crate::CounterInterval). Attributes (derives, docs) pass
/// through. A schema over the header's limits (names over 24 bytes, more than 32 fields,
/// more than 64 payload words) is a compile-time error.
///
/// ```
/// use picollo_ring::{CounterInterval, Frame, TimeInterval};
///
/// picollo_ring::frame! {
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
/// picollo_ring::frame! {
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

        impl $crate::Frame for $name {
            const SCHEMA: $crate::Schema<'static> = $crate::Schema::new(
                ::core::stringify!($name),
                &[$(
                    $crate::Field::new(
                        ::core::stringify!($field),
                        <$ty as $crate::FrameField>::KIND,
                    )
                ),*],
            );
            const WORDS: usize = 0 $( + <$ty as $crate::FrameField>::KIND.words() )*;
            type Words = [u64; 0 $( + <$ty as $crate::FrameField>::KIND.words() )*];

            #[inline(always)]
            #[allow(unused_variables, unused_assignments, unused_mut)]
            fn encode(&self, out: &mut [u64]) {
                let mut at = 0usize;
                $(
                    let w = <$ty as $crate::FrameField>::KIND.words();
                    if let ::core::option::Option::Some(dst) = out.get_mut(at..at + w) {
                        <$ty as $crate::FrameField>::encode(&self.$field, dst);
                    }
                    at += w;
                )*
            }

            #[inline(always)]
            #[allow(unused_variables, unused_assignments, unused_mut)]
            fn store(&self, out: &[$crate::AtomicU64]) {
                // One length check; the per-field ranges below are then known in bounds.
                let ::core::option::Option::Some(out) =
                    out.get(..<Self as $crate::Frame>::WORDS)
                else {
                    return;
                };
                let mut at = 0usize;
                $(
                    let w = <$ty as $crate::FrameField>::KIND.words();
                    if let ::core::option::Option::Some(dst) = out.get(at..at + w) {
                        <$ty as $crate::FrameField>::store(&self.$field, dst);
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
                        let w = <$ty as $crate::FrameField>::KIND.words();
                        let v = <$ty as $crate::FrameField>::decode(
                            words.get(at..at + w)?,
                        );
                        at += w;
                        v
                    },
                )*})
            }
        }

        const _: () = ::core::assert!(
            <$name as $crate::Frame>::SCHEMA.is_valid(),
            "frame schema over the ring header's limits: names of 1..=24 ASCII graphic bytes \
             (no `,` or `\"`), at most 32 fields, at most 64 payload words",
        );
    };
}

// ---------------------------------------------------------------------------------------------
// Decoding by schema
// ---------------------------------------------------------------------------------------------

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
