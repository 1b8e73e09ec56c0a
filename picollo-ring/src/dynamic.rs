//! Frames decoded by the schema a reader found in the header, with no access to the writer's
//! types (ppt's `convert`): [`DynamicFrame`], its [`FieldValue`]s and their [`Value`]s.

use core::fmt;

use super::frame::{first, utf8_prefix};
use super::info::RingInfo;
use super::schema::{FieldKind, MAX_COUNTERS, MAX_STR_WORDS};

/// A decoded string value (up to 8 words).
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
/// use picollo_ring::{DynamicFrame, Frame, RingBuffer, RingOptions, TimeInterval, Value};
/// use picollo_ring::required_words;
///
/// picollo_ring::frame! {
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
