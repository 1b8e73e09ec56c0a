//! The V2 encoding: a 40-byte big-endian header, then the counts array as zig-zag LEB128 words
//! (at most 9 bytes each), a run of zeros as one negative word.

use std::io::{self, Write};
use std::{error, fmt};

use super::{Serializer, V2_COOKIE, V2_HEADER_SIZE};
use crate::{Counter, Histogram};

/// Longest encoded word: eight 7-bit groups, then the top byte as it is.
const MAX_WORD_LEN: usize = 9;

/// Why a V2 serialization failed.
#[derive(Debug)]
pub enum V2SerializeError {
    /// A count above `i64::MAX`: V2 words are signed 64-bit, so it cannot be encoded.
    CountNotSerializable,
    /// A size the encoder computes does not fit in `usize` on this platform.
    UsizeTypeTooSmall,
    /// Writing to the writer failed.
    IoError(io::Error),
}

impl From<io::Error> for V2SerializeError {
    fn from(e: io::Error) -> Self {
        V2SerializeError::IoError(e)
    }
}

impl fmt::Display for V2SerializeError {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            V2SerializeError::CountNotSerializable => {
                f.write_str("A count above i64::MAX cannot be zig-zag encoded")
            }
            V2SerializeError::UsizeTypeTooSmall => {
                f.write_str("Internal calculations cannot be represented in `usize`")
            }
            V2SerializeError::IoError(e) => write!(f, "An i/o operation failed: {e}"),
        }
    }
}

impl error::Error for V2SerializeError {
    fn source(&self) -> Option<&(dyn error::Error + 'static)> {
        match self {
            V2SerializeError::IoError(e) => Some(e),
            _ => None,
        }
    }
}

/// Writes the V2 encoding, the same bytes as HdrHistogram (Java) and `hdrhistogram`.
///
/// ```
/// use hdrhistogram::serialization::{Serializer, V2Serializer};
/// use hdrhistogram::Histogram;
/// # use picollo_hdrhistogram as hdrhistogram;
///
/// let mut h = Histogram::<u64>::new_with_bounds(1, 1_000_000, 2).unwrap();
/// h.record(42).unwrap();
/// let mut bytes = Vec::new();
/// let n = V2Serializer::new().serialize(&h, &mut bytes).unwrap();
/// assert_eq!(&bytes[..4], &[0x1c, 0x84, 0x93, 0x13]); // the V2 cookie
/// assert_eq!(n, 40 + 2); // the header, then two words: 42 zeros, a count of 1
/// ```
pub struct V2Serializer {
    /// The encoding is built here, then written in one call.
    buf: Vec<u8>,
}

impl Default for V2Serializer {
    fn default() -> Self {
        Self::new()
    }
}

impl V2Serializer {
    /// A serializer with empty buffers.
    pub fn new() -> V2Serializer {
        V2Serializer { buf: Vec::new() }
    }

    /// Builds the encoding of `h` in the buffer and returns its length.
    pub(super) fn encode<T: Counter>(
        &mut self,
        h: &Histogram<T>,
    ) -> Result<usize, V2SerializeError> {
        self.buf.clear();
        // Indices up to the one of the largest recorded value, as HdrHistogram encodes.
        let last = h
            .index_for(h.max())
            .ok_or(V2SerializeError::UsizeTypeTooSmall)?;
        let max_len = last
            .checked_add(1)
            .and_then(|n| n.checked_mul(MAX_WORD_LEN))
            .and_then(|n| n.checked_add(V2_HEADER_SIZE))
            .ok_or(V2SerializeError::UsizeTypeTooSmall)?;
        self.buf.reserve(max_len);
        self.buf.extend_from_slice(&V2_COOKIE.to_be_bytes());
        self.buf.extend_from_slice(&0u32.to_be_bytes()); // payload length, set below
        self.buf.extend_from_slice(&0u32.to_be_bytes()); // normalizing index offset
        self.buf
            .extend_from_slice(&u32::from(h.sigfig()).to_be_bytes());
        self.buf.extend_from_slice(&h.low().to_be_bytes());
        self.buf.extend_from_slice(&h.high().to_be_bytes());
        self.buf.extend_from_slice(&1.0f64.to_bits().to_be_bytes()); // integer to double ratio
        debug_assert_eq!(self.buf.len(), V2_HEADER_SIZE);

        let counts = h.counts();
        // The index of the maximum is always inside the counts array; should a histogram's
        // state say otherwise, the words stop at the array's end rather than panic.
        let counts = &counts[..counts.len().min(last + 1)];
        encode_counts(counts, &mut self.buf)?;

        let payload_len = self.buf.len() - V2_HEADER_SIZE;
        // At most 9 bytes for each of fewer than 2^23 counters: fits in a u32.
        let payload_len =
            u32::try_from(payload_len).map_err(|_| V2SerializeError::UsizeTypeTooSmall)?;
        self.buf[4..8].copy_from_slice(&payload_len.to_be_bytes());
        Ok(self.buf.len())
    }

    /// The bytes the last successful [`encode`](Self::encode) built.
    pub(super) fn encoded(&self) -> &[u8] {
        &self.buf
    }
}

impl Serializer for V2Serializer {
    type SerializeError = V2SerializeError;

    fn serialize<T: Counter, W: Write>(
        &mut self,
        h: &Histogram<T>,
        writer: &mut W,
    ) -> Result<usize, V2SerializeError> {
        let len = self.encode(h)?;
        writer.write_all(&self.buf[..len])?;
        Ok(len)
    }
}

/// Appends the words of `counts` to `out`: a count as itself, a single zero as `0`, a run of
/// `n > 1` zeros as `-n`, each zig-zag encoded.
fn encode_counts<T: Counter>(counts: &[T], out: &mut Vec<u8>) -> Result<(), V2SerializeError> {
    let mut i = 0;
    while let Some(&count) = counts.get(i) {
        let word = if count == T::zero() {
            let run = counts[i..]
                .iter()
                .position(|c| *c != T::zero())
                .unwrap_or(counts.len() - i);
            i += run;
            if run == 1 {
                0
            } else {
                // A run is at most the counts array's length (under 2^23): fits in an i64.
                -(run as i64)
            }
        } else {
            i += 1;
            count
                .to_i64()
                .ok_or(V2SerializeError::CountNotSerializable)?
        };
        write_word(zig_zag(word), out);
    }
    Ok(())
}

/// Maps signed to unsigned so that small magnitudes stay small: 0, -1, 1, -2 → 0, 1, 2, 3.
fn zig_zag(n: i64) -> u64 {
    ((n << 1) ^ (n >> 63)) as u64
}

/// Appends `v` as LEB128-64b9B: 7 bits a byte, low bits first, the high bit set on every byte
/// but the last; the ninth byte, if reached, holds the top 8 bits whole.
fn write_word(mut v: u64, out: &mut Vec<u8>) {
    for _ in 0..MAX_WORD_LEN - 1 {
        if v < 0x80 {
            out.push(v as u8);
            return;
        }
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(v: u64) -> Vec<u8> {
        let mut out = Vec::new();
        write_word(v, &mut out);
        out
    }

    #[test]
    fn word_lengths() {
        assert_eq!(words(0), [0]);
        assert_eq!(words(0x7f), [0x7f]);
        assert_eq!(words(0x80), [0x80, 0x01]);
        assert_eq!(words((1 << 56) - 1).len(), 8);
        assert_eq!(words(1 << 56).len(), 9);
        assert_eq!(words(u64::MAX), [0xff; 9]);
    }

    #[test]
    fn zig_zag_values() {
        assert_eq!(zig_zag(0), 0);
        assert_eq!(zig_zag(-1), 1);
        assert_eq!(zig_zag(1), 2);
        assert_eq!(zig_zag(-2), 3);
        assert_eq!(zig_zag(i64::MAX), u64::MAX - 1);
        assert_eq!(zig_zag(i64::MIN), u64::MAX);
    }

    #[test]
    fn runs_and_counts() {
        let mut out = Vec::new();
        encode_counts(&[0u64, 5, 0, 0, 0, 7, 0], &mut out).unwrap();
        // 0, 5, -3, 7, 0
        assert_eq!(out, [0, 10, 5, 14, 0]);
        out.clear();
        assert!(matches!(
            encode_counts(&[u64::MAX], &mut out),
            Err(V2SerializeError::CountNotSerializable)
        ));
    }
}
