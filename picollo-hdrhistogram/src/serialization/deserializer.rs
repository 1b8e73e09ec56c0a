//! Reading V2 and V2 + DEFLATE from an [`io::Read`], a bounded chunk at a time.
//!
//! The checks and their order are `hdrhistogram`'s, so a bad input gets the same
//! [`DeserializeError`] variant: the header's fields one by one, the histogram's parameters, then
//! the payload, which must be readable in full before any error in its words is reported.

use std::io::{self, Read};
use std::{error, fmt};

use miniz_oxide::inflate::stream::InflateState;
use miniz_oxide::DataFormat;

use super::inflate::InflateReader;
use super::{V2_COMPRESSED_COOKIE, V2_COOKIE};
use crate::{Counter, Histogram};

/// Payload bytes read at a time: the most the deserializer buffers, whatever the payload length
/// field says.
const PAYLOAD_CHUNK: usize = 64 * 1024;

/// Why a deserialization failed.
#[derive(Debug)]
pub enum DeserializeError {
    /// Reading failed, or the input ended before the encoding did.
    IoError(io::Error),
    /// The first four bytes (of the input, or of the decompressed contents) are not the cookie
    /// of a supported encoding.
    InvalidCookie,
    /// The encoding uses a feature this implementation does not support: a non-zero
    /// normalizing index offset, or an integer-to-double ratio other than 1 (both belong to
    /// HdrHistogram's `DoubleHistogram`).
    UnsupportedFeature,
    /// A count does not fit in the counter type asked for.
    UnsuitableCounterType,
    /// The header's lowest value, highest value or significant digits do not make a valid
    /// histogram.
    InvalidParameters,
    /// A length or index in the encoding does not fit in `usize` on this platform.
    UsizeTypeTooSmall,
    /// The payload holds a count beyond the counts array that the header's value range implies.
    EncodedArrayTooLong,
}

impl From<io::Error> for DeserializeError {
    fn from(e: io::Error) -> Self {
        DeserializeError::IoError(e)
    }
}

impl fmt::Display for DeserializeError {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        // The texts are `hdrhistogram`'s, word for word.
        let text = match self {
            DeserializeError::IoError(e) => return write!(f, "An i/o operation failed: {e}"),
            DeserializeError::InvalidCookie => {
                "The cookie (first 4 bytes) did not match that for any supported format"
            }
            DeserializeError::UnsupportedFeature => {
                "The histogram uses features that this implementation doesn't support"
            }
            DeserializeError::UnsuitableCounterType => {
                "A count exceeded what can be represented in the chosen counter type"
            }
            DeserializeError::InvalidParameters => {
                "The serialized parameters were invalid(e.g. lowest value, highest value, etc)"
            }
            DeserializeError::UsizeTypeTooSmall => {
                "The current system's pointer width cannot represent the encoded histogram"
            }
            DeserializeError::EncodedArrayTooLong => {
                "The encoded array is longer than it should be for the histogram's value range"
            }
        };
        f.write_str(text)
    }
}

impl error::Error for DeserializeError {
    fn source(&self) -> Option<&(dyn error::Error + 'static)> {
        match self {
            DeserializeError::IoError(e) => Some(e),
            _ => None,
        }
    }
}

/// Reads histograms in any supported encoding (V2, V2 + DEFLATE), recognized by their cookie.
///
/// Each call consumes exactly one encoded histogram from the reader, so histograms written one
/// after another to a stream are read back the same way.
///
/// ```
/// use hdrhistogram::serialization::{Deserializer, Serializer, V2Serializer};
/// use hdrhistogram::Histogram;
/// # use picollo_hdrhistogram as hdrhistogram;
///
/// let mut h = Histogram::<u16>::new_with_bounds(1, 10_000, 2).unwrap();
/// h.record_n(100, 3).unwrap();
/// let mut bytes = Vec::new();
/// V2Serializer::new().serialize(&h, &mut bytes).unwrap();
///
/// let mut deserializer = Deserializer::new();
/// let back: Histogram<u16> = deserializer.deserialize(&mut &bytes[..]).unwrap();
/// assert_eq!(back.count_at(100), 3);
///
/// // Bad input is an error, never a panic.
/// assert!(deserializer.deserialize::<u16, _>(&mut &bytes[..20]).is_err());
/// ```
pub struct Deserializer {
    /// Payload bytes, read a chunk at a time.
    chunk: Vec<u8>,
    /// Compressed input, for V2 + DEFLATE.
    z_input: Vec<u8>,
    /// The inflater, made on first use.
    inflater: Option<Box<InflateState>>,
}

impl Default for Deserializer {
    fn default() -> Self {
        Self::new()
    }
}

impl Deserializer {
    /// A deserializer with empty buffers.
    pub fn new() -> Deserializer {
        Deserializer {
            chunk: Vec::new(),
            z_input: Vec::new(),
            inflater: None,
        }
    }

    /// Reads one encoded histogram from `reader`.
    ///
    /// `&[u8]` (as `&mut &bytes[..]`) and [`io::Cursor`] are handy readers for bytes in memory.
    ///
    /// # Errors
    /// A [`DeserializeError`] saying what is wrong with the input; a histogram whose counts do
    /// not fit in `T` is [`DeserializeError::UnsuitableCounterType`].
    pub fn deserialize<T: Counter, R: Read>(
        &mut self,
        reader: &mut R,
    ) -> Result<Histogram<T>, DeserializeError> {
        match read_u32(reader)? {
            V2_COOKIE => read_v2(reader, &mut self.chunk),
            V2_COMPRESSED_COOKIE => self.read_compressed(reader),
            _ => Err(DeserializeError::InvalidCookie),
        }
    }

    /// The rest of a V2 + DEFLATE encoding, after its cookie.
    fn read_compressed<T: Counter, R: Read>(
        &mut self,
        reader: &mut R,
    ) -> Result<Histogram<T>, DeserializeError> {
        let z_len = read_u32(reader)?;
        // Only the declared length is read from the outer reader, a chunk at a time.
        let src = Read::take(&mut *reader, u64::from(z_len));
        let state = self
            .inflater
            .get_or_insert_with(|| InflateState::new_boxed(DataFormat::Zlib));
        let mut inflated = InflateReader::new(src, &mut self.z_input, state);
        if read_u32(&mut inflated)? != V2_COOKIE {
            return Err(DeserializeError::InvalidCookie);
        }
        let h = read_v2(&mut inflated, &mut self.chunk)?;
        // Leave the outer reader after the whole encoding (the checksum, any padding).
        inflated.skip_rest();
        Ok(h)
    }
}

fn read_u32<R: Read>(reader: &mut R) -> io::Result<u32> {
    let mut b = [0; 4];
    reader.read_exact(&mut b)?;
    Ok(u32::from_be_bytes(b))
}

fn read_u64<R: Read>(reader: &mut R) -> io::Result<u64> {
    let mut b = [0; 8];
    reader.read_exact(&mut b)?;
    Ok(u64::from_be_bytes(b))
}

/// The error a payload that ends inside a word reads as: `read_exact`'s own end-of-input error,
/// as `hdrhistogram` reports it.
fn truncated() -> io::Error {
    let mut nothing: &[u8] = &[];
    match nothing.read_exact(&mut [0]) {
        Err(e) => e,
        Ok(()) => io::ErrorKind::UnexpectedEof.into(),
    }
}

/// The rest of a plain V2 encoding, after its cookie.
fn read_v2<T: Counter, R: Read>(
    reader: &mut R,
    chunk: &mut Vec<u8>,
) -> Result<Histogram<T>, DeserializeError> {
    let payload_len =
        usize::try_from(read_u32(reader)?).map_err(|_| DeserializeError::UsizeTypeTooSmall)?;
    if read_u32(reader)? != 0 {
        // A normalizing index offset.
        return Err(DeserializeError::UnsupportedFeature);
    }
    let digits =
        u8::try_from(read_u32(reader)?).map_err(|_| DeserializeError::InvalidParameters)?;
    let low = read_u64(reader)?;
    let high = read_u64(reader)?;
    let ratio = f64::from_bits(read_u64(reader)?);
    if ratio != 1.0 {
        return Err(DeserializeError::UnsupportedFeature);
    }
    let mut h = Histogram::new_with_bounds(low, high, digits)
        .map_err(|_| DeserializeError::InvalidParameters)?;

    // The payload is read a chunk at a time and decoded as it comes. An error in its words
    // is kept until the payload has been read to its end: input that ends early is an i/o
    // error first, as when the payload is read whole before decoding.
    let want = payload_len.min(PAYLOAD_CHUNK);
    if chunk.len() < want {
        chunk.resize(want, 0);
    }
    let mut words = WordDecoder::default();
    let mut word_error = None;
    let mut left = payload_len;
    while left > 0 {
        let bytes = &mut chunk[..left.min(PAYLOAD_CHUNK)];
        reader.read_exact(bytes)?;
        left -= bytes.len();
        if word_error.is_none() {
            word_error = words.feed(bytes, &mut h).err();
        }
    }
    if let Some(e) = word_error {
        return Err(e);
    }
    if words.in_word() {
        return Err(DeserializeError::IoError(truncated()));
    }
    // Totals and extremes from the counts. With none, the new histogram's are already right
    // (and a restat would set its maximum to the unit's mask, not 0, as `hdrhistogram`'s
    // deserializer does not).
    if let Some(len) = words.scan_len() {
        h.restat(len);
    }
    Ok(h)
}

/// Decodes payload words as their bytes arrive, into the histogram's counts.
#[derive(Default)]
struct WordDecoder {
    /// Bits of the word being read.
    value: u64,
    /// Bytes of the word read so far (0 to 8).
    bytes: u32,
    /// Counts index the next count goes to.
    index: usize,
    /// Index of the last non-zero count written.
    last_set: Option<usize>,
}

impl WordDecoder {
    /// Decodes the words in `bytes`, a word possibly carried over from the previous call and
    /// into the next.
    fn feed<T: Counter>(
        &mut self,
        bytes: &[u8],
        h: &mut Histogram<T>,
    ) -> Result<(), DeserializeError> {
        for &b in bytes {
            // LEB128-64b9B: 7 bits a byte, low first, the high bit set on all but a word's last
            // byte; a ninth byte holds the top 8 bits whole.
            if self.bytes == 8 {
                self.value |= u64::from(b) << 56;
            } else {
                self.value |= u64::from(b & 0x7f) << (7 * self.bytes);
                if b & 0x80 != 0 {
                    self.bytes += 1;
                    continue;
                }
            }
            let zz = core::mem::take(&mut self.value);
            self.bytes = 0;
            // Zig-zag back to signed: 0, 1, 2, 3 → 0, -1, 1, -2.
            let word = ((zz >> 1) as i64) ^ -((zz & 1) as i64);
            self.word(word, h)?;
        }
        Ok(())
    }

    /// Applies one word: a count for the next index, or (negative) a run of zero counts.
    fn word<T: Counter>(
        &mut self,
        word: i64,
        h: &mut Histogram<T>,
    ) -> Result<(), DeserializeError> {
        let step = if word < 0 {
            // i64::MIN has no positive counterpart: as large a run as no platform can index.
            word.checked_neg()
                .and_then(|n| usize::try_from(n).ok())
                .ok_or(DeserializeError::UsizeTypeTooSmall)?
        } else {
            let count = T::from_i64(word).ok_or(DeserializeError::UnsuitableCounterType)?;
            if count > T::zero() {
                h.set_count_at_index(self.index, count)
                    .map_err(|()| DeserializeError::EncodedArrayTooLong)?;
                self.last_set = Some(self.index);
            }
            1
        };
        self.index = self
            .index
            .checked_add(step)
            .ok_or(DeserializeError::UsizeTypeTooSmall)?;
        Ok(())
    }

    /// The payload ended inside a word.
    fn in_word(&self) -> bool {
        self.bytes != 0
    }

    /// How many counts hold everything written (up to the last non-zero one), if any.
    fn scan_len(&self) -> Option<usize> {
        self.last_set.map(|i| i + 1)
    }
}
