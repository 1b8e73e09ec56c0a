//! The error type of the HdrHistogram codec.

use core::fmt;

/// What went wrong while encoding, decoding or combining HdrHistogram counts.
///
/// Every decoder path returns one of these instead of panicking. The `Display` text names the
/// field or the limit involved, so a message alone tells the user what to fix.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum HdrError {
    /// The input ended before a complete structure could be read.
    Truncated {
        /// What was being read: `"V2 header"`, `"payload"`, `"compressed contents"`, ...
        what: &'static str,
        /// Bytes the structure needs (at least).
        needed: usize,
        /// Bytes that were available.
        available: usize,
    },
    /// The first four bytes are not a known HdrHistogram cookie.
    UnknownCookie(u32),
    /// A known HdrHistogram cookie (V0 or V1 encoding) that this codec does not decode.
    UnsupportedEncoding(u32),
    /// A compressed blob whose inner (decompressed) header is not a plain V2 header.
    BadInnerCookie(u32),
    /// The header describes a histogram HdrHistogram itself refuses to construct.
    InvalidGeometry(&'static str),
    /// The header's counts-array length is beyond the decoder's limit.
    CountsTooLong {
        /// Counts-array length implied by the header's geometry.
        len: usize,
        /// The configured limit ([`DecodeLimits::max_counts_len`](crate::hdr::DecodeLimits)).
        limit: usize,
    },
    /// The declared payload length is negative, larger than the configured limit, or larger
    /// than the largest payload the header's geometry can produce (9 bytes per counts entry).
    BadPayloadLength {
        /// The payload length field as read.
        declared: i64,
        /// The largest acceptable value for this header.
        max: usize,
    },
    /// The declared compressed length is negative.
    BadCompressedLength(i32),
    /// A zig-zag LEB128 word runs past the end of the payload.
    TruncatedVarint {
        /// Byte offset of the word inside the payload.
        offset: usize,
    },
    /// A zero run longer than `i32::MAX` (HdrHistogram rejects these too).
    ZeroRunTooLong(i64),
    /// The payload writes a count beyond the counts array the header's geometry implies.
    IndexOutOfRange {
        /// The counts index that was written.
        index: usize,
        /// The counts-array length of the geometry.
        counts_len: usize,
    },
    /// The zlib stream is corrupt (bad header, bad block, checksum mismatch or truncated).
    Inflate(&'static str),
    /// The decompressed blob is not exactly `40 + payload length` bytes long.
    DecompressedLengthMismatch {
        /// `40 + payload length`, from the inner header.
        declared: usize,
        /// What decompression produced (`None`: more than `declared`).
        actual: Option<usize>,
    },
    /// Bytes remain after a complete encoded histogram.
    TrailingBytes(usize),
    /// A count above `i64::MAX` cannot be encoded: HdrHistogram counts are signed 64-bit.
    CountTooLarge {
        /// Counts index of the offending count.
        index: usize,
        /// The count.
        count: u64,
    },
    /// Adding counts overflowed `u64`.
    CountOverflow {
        /// Counts index where the sum overflowed.
        index: usize,
    },
    /// A value does not fit the counts array of the target geometry.
    ValueOutOfRange {
        /// The value.
        value: u64,
        /// Highest value the target geometry can record.
        highest: u64,
    },
    /// The base64 text of a log line is not valid base64.
    Base64(String),
    /// A subtrahend holds more values at a counts entry than the histogram it is subtracted
    /// from (nothing was subtracted).
    SubtrahendTooLarge {
        /// The lowest value of the entry.
        value: u64,
        /// Values the histogram holds there.
        have: u64,
        /// Values the subtrahend holds there.
        subtract: u64,
    },
}

impl fmt::Display for HdrError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Truncated {
                what,
                needed,
                available,
            } => write!(
                f,
                "truncated input: {what} needs {needed} bytes, only {available} available"
            ),
            Self::UnknownCookie(c) => write!(
                f,
                "not an HdrHistogram encoding: cookie {c:#010x} (expected {:#010x} for V2 or {:#010x} for V2+deflate)",
                crate::hdr::codec::V2_COOKIE,
                crate::hdr::codec::V2_DEFLATE_COOKIE
            ),
            Self::UnsupportedEncoding(c) => write!(
                f,
                "HdrHistogram cookie {c:#010x} is a V0/V1 encoding; only V2 (and V2+deflate) are supported: re-encode with HdrHistogram 2.1.7 or later"
            ),
            Self::BadInnerCookie(c) => write!(
                f,
                "compressed HdrHistogram blob contains cookie {c:#010x}, expected a plain V2 header ({:#010x})",
                crate::hdr::codec::V2_COOKIE
            ),
            Self::InvalidGeometry(why) => write!(f, "invalid HdrHistogram geometry: {why}"),
            Self::CountsTooLong { len, limit } => write!(
                f,
                "header implies a counts array of {len} entries, above the decode limit of {limit} (raise DecodeLimits::max_counts_len if the input is trusted)"
            ),
            Self::BadPayloadLength { declared, max } => write!(
                f,
                "declared payload length {declared} is outside 0..={max} for this header"
            ),
            Self::BadCompressedLength(n) => write!(f, "declared compressed length {n} is negative"),
            Self::TruncatedVarint { offset } => write!(
                f,
                "zig-zag LEB128 word at payload offset {offset} runs past the end of the payload"
            ),
            Self::ZeroRunTooLong(n) => write!(
                f,
                "encoded zero run of {n} exceeds i32::MAX (corrupt payload)"
            ),
            Self::IndexOutOfRange { index, counts_len } => write!(
                f,
                "payload writes counts index {index}, beyond the {counts_len} entries the header's geometry allows"
            ),
            Self::Inflate(why) => write!(f, "zlib decompression failed: {why}"),
            Self::DecompressedLengthMismatch { declared, actual } => match actual {
                Some(a) => write!(
                    f,
                    "decompressed blob is {a} bytes, its header declares {declared}"
                ),
                None => write!(
                    f,
                    "decompressed blob is longer than the {declared} bytes its header declares"
                ),
            },
            Self::TrailingBytes(n) => write!(f, "{n} unexpected bytes after the encoded histogram"),
            Self::CountTooLarge { index, count } => write!(
                f,
                "count {count} at index {index} exceeds i64::MAX and cannot be encoded"
            ),
            Self::CountOverflow { index } => write!(f, "count at index {index} overflowed u64"),
            Self::ValueOutOfRange { value, highest } => write!(
                f,
                "value {value} is beyond the highest recordable value {highest} of the target geometry"
            ),
            Self::Base64(why) => write!(f, "invalid base64 histogram payload: {why}"),
            Self::SubtrahendTooLarge {
                value,
                have,
                subtract,
            } => write!(
                f,
                "cannot subtract {subtract} values at {value}, where the histogram holds {have}; nothing was subtracted"
            ),
        }
    }
}

impl std::error::Error for HdrError {}
