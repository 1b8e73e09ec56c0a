//! The V2 wire format's constants: the cookies and the header length (the codec's own), the
//! compression levels HdrHistogram uses (public), and the largest counts array a valid header
//! can imply. A leaf.

/// Cookie of a plain V2 encoding (`V2EncodingCookieBase | 0x10`).
pub(crate) const V2_COOKIE: u32 = 0x1C84_9313;
/// Cookie of a V2+deflate encoding (`V2CompressedEncodingCookieBase | 0x10`).
pub(crate) const V2_DEFLATE_COOKIE: u32 = 0x1C84_9314;
/// Size of the V2 header in bytes.
pub(crate) const V2_HEADER_LEN: usize = 40;
/// Compression level HdrHistogram's log writer uses (`Deflater.BEST_COMPRESSION`).
pub const BEST_COMPRESSION: u8 = 9;
/// Compression level of HdrHistogram's `encodeIntoCompressedByteBuffer(buffer)` (zlib default).
pub const DEFAULT_COMPRESSION: u8 = 6;

/// Largest counts-array length any valid HdrHistogram geometry has
/// (`significant_digits = 5`, `lowest = 1`, `highest = i64::MAX`).
pub(crate) const MAX_GEOMETRY_COUNTS_LEN: usize = 6_160_384;
