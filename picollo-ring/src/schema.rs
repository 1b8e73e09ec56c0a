//! Frame schemas: the names and kinds of a frame's fields ([`Schema`], [`Field`],
//! [`FieldKind`]), the limits on them, and the checks a schema passes ([`SchemaError`]). A
//! leaf: the frame types, the header and the decoder all read it.

use core::fmt;

/// Longest field name, in bytes (and longest counter name).
pub const NAME_BYTES: usize = 24;
/// Longest frame (schema) name, in bytes.
pub(crate) const FRAME_NAME_BYTES: usize = 32;
/// Most fields one schema may have.
pub const MAX_FIELDS: usize = 32;
/// Most counters one ring header describes, and the widest counter field.
pub const MAX_COUNTERS: usize = 8;
/// Most payload words one frame may have (512 bytes).
pub const MAX_PAYLOAD_WORDS: usize = 64;
/// Longest string field, in words (64 bytes).
pub(crate) const MAX_STR_WORDS: usize = 8;

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
    /// A UTF-8 string of at most `8 * words` bytes, NUL-padded ([`Label`](super::Label) has 3
    /// words).
    Str {
        /// Words (1..=8).
        words: u8,
    },
    /// One timestamp in the header's clock ([`Time`](super::Time)).
    Time,
    /// A start and an end timestamp ([`TimeInterval`](super::TimeInterval), ppt's `interval time`).
    TimeInterval,
    /// One sample of `count` counters ([`Counters`](super::Counters), ppt's `counter`).
    Counters {
        /// Counter slots (1..=[`MAX_COUNTERS`]).
        count: u8,
    },
    /// Samples of `count` counters at the start and the end
    /// ([`CounterInterval`](super::CounterInterval), ppt's `interval counter`).
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
    pub(crate) const fn param(self) -> u8 {
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
    pub(crate) fn write_name(self, f: &mut dyn fmt::Write) -> fmt::Result {
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
    /// The frame type's name (1..=32 bytes, ASCII graphic characters
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
