//! Encoding histograms to bytes and back: HdrHistogram's V2 format, plain and compressed, and
//! interval logs.
//!
//! This is `hdrhistogram`'s `serialization` module, the same types with the same behaviour:
//!
//! - [`V2Serializer`] writes the V2 encoding (cookie `0x1c849313`), byte for byte what
//!   HdrHistogram (Java) and `hdrhistogram` write for the same histogram.
//! - [`V2DeflateSerializer`] writes V2 + DEFLATE (cookie `0x1c849314`): the V2 bytes in a zlib
//!   stream. The compressed bytes may differ from another implementation's; what they
//!   decompress to does not.
//! - [`Deserializer`] reads either of them from any [`io::Read`], telling them apart by their
//!   cookie, and consumes exactly one encoded histogram, so several can be read back to back
//!   from one stream.
//! - [`interval_log`] writes and parses interval logs (`.hlog`): a timestamped sequence of
//!   base64-encoded histograms, as HdrHistogram's `HistogramLogWriter` writes them.
//!
//! A serializer or deserializer keeps its buffers between calls: reuse one for many
//! histograms.
//!
//! # Untrusted input
//!
//! Decoding never panics, whatever the bytes. It reads its input in bounded chunks and never
//! allocates by a length field it has read: its memory is the histogram the header describes
//! (the same allocation as [`Histogram::new_with_bounds`] with the header's bounds, at most about
//! 6.3 million counters) plus a few fixed buffers. A compressed histogram is inflated in chunks
//! too, so a small input that inflates to gigabytes costs time, not memory.
//!
//! # Examples
//!
//! A histogram written to a `Vec<u8>` and read back from a slice of it:
//!
//! ```
//! use hdrhistogram::serialization::{Deserializer, Serializer, V2Serializer};
//! use hdrhistogram::Histogram;
//! # use picollo_hdrhistogram as hdrhistogram;
//!
//! let mut h = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).unwrap();
//! h.record_n(1_500, 4).unwrap();
//! h.record(250_000).unwrap();
//!
//! let mut bytes = Vec::new();
//! let written = V2Serializer::new().serialize(&h, &mut bytes).unwrap();
//! assert_eq!(written, bytes.len());
//!
//! let back: Histogram<u64> = Deserializer::new().deserialize(&mut bytes.as_slice()).unwrap();
//! assert_eq!(back, h);
//! assert_eq!(back.count_at(1_500), 4);
//! ```
//!
//! Several histograms in one stream, compressed, read back one after the other and summed:
//!
//! ```
//! use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
//! use hdrhistogram::Histogram;
//! use std::io::Cursor;
//! # use picollo_hdrhistogram as hdrhistogram;
//!
//! let mut serializer = V2DeflateSerializer::new();
//! let mut stream = Vec::new();
//! for minute in 1..=3u64 {
//!     let mut h = Histogram::<u32>::new(3).unwrap();
//!     h.record_n(minute * 100, 10).unwrap();
//!     serializer.serialize(&h, &mut stream).unwrap();
//! }
//!
//! let mut deserializer = Deserializer::new();
//! let mut input = Cursor::new(&stream);
//! let mut hour = Histogram::<u32>::new(3).unwrap();
//! for _ in 0..3 {
//!     let h: Histogram<u32> = deserializer.deserialize(&mut input).unwrap();
//!     hour.add(&h).unwrap();
//! }
//! assert_eq!(hour.len(), 30);
//! assert_eq!(input.position() as usize, stream.len());
//! ```
//!
//! # With serde and similar frameworks
//!
//! A histogram has several encodings, so it implements no framework's serialization trait
//! itself. Wrap it in a type of your own that picks the encoding and implement the framework's
//! trait on the wrapper, calling a serializer from this module inside.

use std::{fmt, io};

use crate::{Counter, Histogram};

mod deserializer;
mod inflate;
pub mod interval_log;
mod v2_deflate_serializer;
mod v2_serializer;

pub use self::deserializer::{DeserializeError, Deserializer};
pub use self::v2_deflate_serializer::{V2DeflateSerializeError, V2DeflateSerializer};
pub use self::v2_serializer::{V2SerializeError, V2Serializer};

/// Cookie of a plain V2 encoding: HdrHistogram's `V2EncodingCookieBase` (`0x1c849303`) with
/// the word-size nibble `0x10`.
const V2_COOKIE: u32 = 0x1c84_9313;
/// Cookie of a V2 + DEFLATE encoding (`V2CompressedEncodingCookieBase | 0x10`).
const V2_COMPRESSED_COOKIE: u32 = 0x1c84_9314;
/// Bytes in a V2 header: cookie, payload length, normalizing offset, significant digits
/// (4 bytes each), lowest and highest value, integer-to-double ratio (8 bytes each).
const V2_HEADER_SIZE: usize = 40;

/// Writes a histogram in one encoding.
///
/// Each encoding has its serializer: [`V2Serializer`], [`V2DeflateSerializer`].
pub trait Serializer {
    /// What a failed serialization returns.
    type SerializeError: fmt::Debug;

    /// Writes `h` to `writer` and returns the number of bytes written.
    ///
    /// A `Vec<u8>` is a convenient writer when the bytes are wanted in memory.
    ///
    /// # Errors
    /// The serializer's error: a count the encoding cannot represent, or a failed write.
    fn serialize<T: Counter, W: io::Write>(
        &mut self,
        h: &Histogram<T>,
        writer: &mut W,
    ) -> Result<usize, Self::SerializeError>;
}
