//! HdrHistogram interop: the V2 encoding (plain and deflate) and interval logs (`.hlog`).
//!
//! This module works in HdrHistogram's own index space. [`HdrCounts`] holds the V2 header
//! fields and the counts array by HdrHistogram counts index; [`HdrGeometry`] gives the value
//! range of each index. Mapping to Picollo's histograms is a separate step: when precisions
//! match it is index for index (significant digits `d` ↔ block size
//! `2^ceil(log2(2·10^d)) / 2`, the unit magnitude as a shift).
//!
//! - **Codec**: [`HdrCounts::decode`] reads V2 (`0x1C849313`) and V2+deflate (`0x1C849314`);
//!   [`HdrCounts::encode_v2`] writes V2 byte-identical to HdrHistogram (Java)
//!   `encodeIntoByteBuffer`; [`HdrCounts::encode_v2_deflate`] writes V2+deflate (zlib bytes
//!   differ from Java's, the decoded content does not). V0/V1 encodings are refused with
//!   [`HdrError::UnsupportedEncoding`].
//! - **Hostile input**: decoding never panics, checks every length field against the input and
//!   against [`DecodeLimits`] before allocating, and every loop consumes input. [`decode_any`]
//!   and [`LogReader`] are the fuzzing entry points.
//! - **Interval logs**: [`LogReader`] streams entries from any `BufRead`, decoding a histogram
//!   only when [`LogEntry::decode`] is called; [`LogReader::range`] selects a time range;
//!   [`LogWriter`] writes HdrHistogram's layout.
//! - **Single histograms** (`.hist`, `.histz`): [`decode_blob`] tells binary and base64
//!   encodings apart by content.
//!
//! ```
//! use picollo_alloc::hdr::{HdrCounts, BEST_COMPRESSION};
//!
//! let mut h = HdrCounts::new(1, i64::MAX as u64, 3)?;
//! for v in 0..1000u64 {
//!     h.record(v * 7, 1)?;
//! }
//! let z = h.encode_v2_deflate(BEST_COMPRESSION)?;
//! let back = HdrCounts::decode(&z)?;
//! assert!(back.same_content(&h));
//! assert_eq!(back.value_at_percentile(99.9), Some(6_987));
//! # Ok::<(), picollo_alloc::hdr::HdrError>(())
//! ```

mod blob;
mod codec;
mod counts;
mod error;
pub mod interop;
pub(crate) mod java_fmt;
mod log;
pub(crate) mod zigzag;

pub use blob::{decode_blob, BlobForm};
pub use codec::{
    decode_any, decode_any_with_limits, DecodeLimits, BEST_COMPRESSION, DEFAULT_COMPRESSION,
};
pub use counts::{HdrBucket, HdrGeometry};
pub use error::HdrError;
pub use interop::{
    add_hdr, export, export_v2_deflate, export_v2_into, from_picollo, to_picollo, to_picollo_in,
    BucketMapping, ExportOptions, ExportReport, HdrExport, HdrView, Import, InteropError,
};
pub use log::{sanitize_tag, LogEntry, LogError, LogRange, LogReader, LogWriter, RangeMode};

// Defined here, its methods in the children: `counts` (geometry, records, reads) and
// `codec` (decoding and encoding).
/// An HdrHistogram in its own index space: the V2 header fields plus the counts array.
///
/// This is the neutral form the codec reads and writes. `counts[i]` is the count of
/// HdrHistogram counts-array index `i` (in logical order: HdrHistogram's
/// `getCountAtIndex(i)`, before any normalizing offset is applied to storage); the value range
/// of index `i` is given by [`HdrGeometry::lowest_equivalent`] and
/// [`HdrGeometry::highest_equivalent`]. For a `DoubleHistogram`'s internal histogram, real values
/// are integer values times [`int_to_double_ratio`](Self::int_to_double_ratio).
///
/// `counts` may be shorter than the geometry's [`counts_len`](HdrGeometry::counts_len): missing
/// entries are zero. A decoded histogram's `counts` ends at the last count the payload wrote.
///
/// ```
/// use picollo_alloc::hdr::HdrCounts;
///
/// let mut h = HdrCounts::new(1, 3_600_000_000, 3)?;
/// h.record(1_000, 2)?;
/// h.record(123_456, 1)?;
/// let bytes = h.encode_v2()?;
/// let back = HdrCounts::decode(&bytes)?;
/// assert_eq!(back.total_count(), 3);
/// assert_eq!(back.max(), 123_519);
/// assert_eq!(back.value_at_percentile(50.0), Some(1_000));
/// # Ok::<(), picollo_alloc::hdr::HdrError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct HdrCounts {
    /// Lowest discernible value (HdrHistogram `lowestDiscernibleValue`, >= 1).
    pub lowest_discernible: u64,
    /// Highest trackable value (HdrHistogram `highestTrackableValue`).
    pub highest_trackable: u64,
    /// Significant decimal digits, 0 to 5.
    pub significant_digits: u8,
    /// HdrHistogram's normalizing index offset (non-zero only for shifted `DoubleHistogram`
    /// internals). Carried through encode and decode unchanged; `counts` is in logical order.
    pub normalizing_offset: i32,
    /// Integer-to-double conversion ratio (1.0 for integer histograms).
    pub int_to_double_ratio: f64,
    /// Counts by HdrHistogram counts-array index; missing trailing entries are zero.
    pub counts: Vec<u64>,
}
