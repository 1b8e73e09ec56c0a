//! Decoding V2 and V2+deflate blobs from untrusted bytes: [`DecodeLimits`], the header checks
//! (cookie, geometry, lengths against the input and the limits, before anything is allocated)
//! and the payload decoder, which checks every counts index against the geometry.

use super::format::{MAX_GEOMETRY_COUNTS_LEN, V2_HEADER_LEN};
use crate::hdr::counts::HdrGeometry;
use crate::hdr::error::HdrError;
use crate::hdr::zigzag;
use crate::hdr::HdrCounts;

const V2_BASE: u32 = 0x1C84_9303;
const V2_DEFLATE_BASE: u32 = 0x1C84_9304;
const V1_BASE: u32 = 0x1C84_9301;
const V1_DEFLATE_BASE: u32 = 0x1C84_9302;
const V0_BASE: u32 = 0x1C84_9308;
const V0_DEFLATE_BASE: u32 = 0x1C84_9309;

/// HdrHistogram ignores the word-size nibble (bits 4 to 7) when matching cookies.
fn cookie_base(cookie: u32) -> u32 {
    cookie & !0xf0
}

/// Resource limits applied while decoding untrusted input.
///
/// Every length field is checked against the input size and these limits before anything is
/// allocated from it. The defaults accept every histogram HdrHistogram can produce; tighten them
/// for untrusted input (a fuzz target, a network service). Memory used by a decode is at most
/// `8 * max_counts_len` bytes for the counts plus `40 + max_payload_len` bytes for a
/// decompressed blob.
///
/// ```
/// use picollo_alloc::hdr::{DecodeLimits, HdrCounts, HdrError};
///
/// let h = HdrCounts::new(1, i64::MAX as u64, 5)?; // 6 160 384 counts entries
/// let bytes = h.encode_v2()?;
/// let tight = DecodeLimits::default().with_max_counts_len(1 << 16);
/// assert!(matches!(
///     HdrCounts::decode_with_limits(&bytes, &tight),
///     Err(HdrError::CountsTooLong { .. })
/// ));
/// # Ok::<(), HdrError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct DecodeLimits {
    /// Largest counts-array length (implied by the header's geometry) that is accepted.
    /// Default: 6,160,384 counts, i.e. no valid geometry is refused.
    pub max_counts_len: usize,
    /// Largest declared payload length, in bytes, that is accepted (and so the largest
    /// decompressed size, minus the 40-byte header). Default: 9 bytes per entry of
    /// the largest geometry's 6,160,384 counts (about 53 MiB).
    pub max_payload_len: usize,
}

impl Default for DecodeLimits {
    fn default() -> Self {
        Self {
            max_counts_len: MAX_GEOMETRY_COUNTS_LEN,
            max_payload_len: MAX_GEOMETRY_COUNTS_LEN * zigzag::MAX_ENCODED_LEN,
        }
    }
}

impl DecodeLimits {
    /// Sets [`max_counts_len`](Self::max_counts_len).
    pub fn with_max_counts_len(mut self, max_counts_len: usize) -> Self {
        self.max_counts_len = max_counts_len;
        self
    }

    /// Sets [`max_payload_len`](Self::max_payload_len).
    pub fn with_max_payload_len(mut self, max_payload_len: usize) -> Self {
        self.max_payload_len = max_payload_len;
        self
    }
}

/// Decodes a V2 or V2+deflate histogram with the default [`DecodeLimits`]: the entry point for a
/// cargo-fuzz target. Never panics; never allocates more than the limits allow.
///
/// ```
/// use picollo_alloc::hdr::decode_any;
///
/// assert!(decode_any(b"").is_err());
/// assert!(decode_any(&[0x1c, 0x84, 0x93, 0x14, 0xff, 0xff, 0xff, 0xff]).is_err());
/// ```
///
/// # Errors
/// Any [`HdrError`] describing why the bytes are not a valid encoded histogram.
pub fn decode_any(bytes: &[u8]) -> Result<HdrCounts, HdrError> {
    HdrCounts::decode(bytes)
}

/// [`decode_any`] with explicit limits.
///
/// # Errors
/// Any [`HdrError`] describing why the bytes are not a valid encoded histogram.
pub fn decode_any_with_limits(bytes: &[u8], limits: &DecodeLimits) -> Result<HdrCounts, HdrError> {
    HdrCounts::decode_with_limits(bytes, limits)
}

fn read_u32(bytes: &[u8], at: usize) -> u32 {
    let mut b = [0u8; 4];
    b.copy_from_slice(&bytes[at..at + 4]);
    u32::from_be_bytes(b)
}

fn read_u64(bytes: &[u8], at: usize) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&bytes[at..at + 8]);
    u64::from_be_bytes(b)
}

/// The parsed and validated 40-byte V2 header.
struct Header {
    payload_len: usize,
    normalizing_offset: i32,
    significant_digits: u8,
    lowest: u64,
    highest: u64,
    ratio: f64,
    geometry: HdrGeometry,
}

fn check_cookie(cookie: u32, expect_base: u32) -> Result<(), HdrError> {
    if cookie_base(cookie) == expect_base {
        Ok(())
    } else {
        Err(cookie_error(cookie))
    }
}

/// The error for a cookie that is not the one expected at this point.
fn cookie_error(cookie: u32) -> HdrError {
    match cookie_base(cookie) {
        V2_BASE | V2_DEFLATE_BASE => HdrError::BadInnerCookie(cookie),
        V1_BASE | V1_DEFLATE_BASE | V0_BASE | V0_DEFLATE_BASE => {
            HdrError::UnsupportedEncoding(cookie)
        }
        _ => HdrError::UnknownCookie(cookie),
    }
}

/// Parses a header from `bytes[..40]` (the caller checked the length and the cookie).
fn parse_header(bytes: &[u8], limits: &DecodeLimits) -> Result<Header, HdrError> {
    let payload_len = read_u32(bytes, 4) as i32;
    let normalizing_offset = read_u32(bytes, 8) as i32;
    let significant_digits = read_u32(bytes, 12) as i32;
    let lowest = read_u64(bytes, 16) as i64;
    let highest = read_u64(bytes, 24) as i64;
    let ratio = f64::from_bits(read_u64(bytes, 32));

    let significant_digits = u8::try_from(significant_digits)
        .map_err(|_| HdrError::InvalidGeometry("significant digits must be between 0 and 5"))?;
    let lowest = u64::try_from(lowest)
        .map_err(|_| HdrError::InvalidGeometry("lowest discernible value must be >= 1"))?;
    let highest = u64::try_from(highest).map_err(|_| {
        HdrError::InvalidGeometry("highest trackable value must be >= 2 * lowest discernible value")
    })?;
    let geometry = HdrGeometry::new(lowest, highest, significant_digits)?;
    if geometry.counts_len() > limits.max_counts_len {
        return Err(HdrError::CountsTooLong {
            len: geometry.counts_len(),
            limit: limits.max_counts_len,
        });
    }
    let max_payload = geometry
        .counts_len()
        .saturating_mul(zigzag::MAX_ENCODED_LEN)
        .min(limits.max_payload_len);
    let payload_len = usize::try_from(payload_len)
        .ok()
        .filter(|&n| n <= max_payload)
        .ok_or(HdrError::BadPayloadLength {
            declared: i64::from(payload_len),
            max: max_payload,
        })?;
    Ok(Header {
        payload_len,
        normalizing_offset,
        significant_digits,
        lowest,
        highest,
        ratio,
        geometry,
    })
}

/// Decodes the zig-zag payload into counts, checking every index against the geometry.
fn decode_payload(payload: &[u8], counts_len: usize) -> Result<Vec<u64>, HdrError> {
    // Every word advances the destination index by at least one, and a word is at least one
    // byte: the loop is bounded by the payload length, the vector by `counts_len`.
    let mut counts: Vec<u64> = Vec::with_capacity(payload.len().min(counts_len));
    let mut dst: usize = 0;
    let mut pos: usize = 0;
    while let Some(rest) = payload.get(pos..).filter(|r| !r.is_empty()) {
        // Fast path: a run of one-byte words for counts 0 to 63 (an even byte below 0x80),
        // found with a tight scan and copied with one bounds check and one reservation.
        let n = rest
            .iter()
            .position(|&b| b & 0x81 != 0)
            .unwrap_or(rest.len());
        if n > 0 {
            // dst <= counts_len holds on every iteration (checked below and here).
            if n > counts_len - dst {
                return Err(HdrError::IndexOutOfRange {
                    index: counts_len,
                    counts_len,
                });
            }
            if counts.len() < dst {
                counts.resize(dst, 0);
            }
            counts.extend(rest[..n].iter().map(|&b| u64::from(b >> 1)));
            dst += n;
            pos += n;
            continue;
        }
        let (word, used) =
            zigzag::decode_i64(rest).ok_or(HdrError::TruncatedVarint { offset: pos })?;
        pos += used;
        if word < 0 {
            let run = word.unsigned_abs();
            if run > i32::MAX as u64 {
                return Err(HdrError::ZeroRunTooLong(word));
            }
            // run <= i32::MAX, dst <= counts_len: no overflow on 64-bit or 32-bit targets.
            dst = dst.saturating_add(run as usize);
            if dst > counts_len {
                return Err(HdrError::IndexOutOfRange {
                    index: dst - 1,
                    counts_len,
                });
            }
        } else {
            if dst >= counts_len {
                return Err(HdrError::IndexOutOfRange {
                    index: dst,
                    counts_len,
                });
            }
            if counts.len() < dst {
                counts.resize(dst, 0);
            }
            counts.push(word as u64);
            dst += 1;
        }
    }
    Ok(counts)
}

fn counts_from(header: &Header, payload: &[u8]) -> Result<HdrCounts, HdrError> {
    Ok(HdrCounts {
        lowest_discernible: header.lowest,
        highest_trackable: header.highest,
        significant_digits: header.significant_digits,
        normalizing_offset: header.normalizing_offset,
        int_to_double_ratio: header.ratio,
        counts: decode_payload(payload, header.geometry.counts_len())?,
    })
}

fn decode_plain(bytes: &[u8], limits: &DecodeLimits) -> Result<HdrCounts, HdrError> {
    if bytes.len() < V2_HEADER_LEN {
        return Err(HdrError::Truncated {
            what: "V2 header",
            needed: V2_HEADER_LEN,
            available: bytes.len(),
        });
    }
    check_cookie(read_u32(bytes, 0), V2_BASE)?;
    let header = parse_header(bytes, limits)?;
    let rest = &bytes[V2_HEADER_LEN..];
    if rest.len() < header.payload_len {
        return Err(HdrError::Truncated {
            what: "payload",
            needed: header.payload_len,
            available: rest.len(),
        });
    }
    if rest.len() > header.payload_len {
        return Err(HdrError::TrailingBytes(rest.len() - header.payload_len));
    }
    counts_from(&header, rest)
}

fn inflate_error(status: miniz_oxide::inflate::TINFLStatus) -> HdrError {
    use miniz_oxide::inflate::TINFLStatus as S;
    HdrError::Inflate(match status {
        S::Adler32Mismatch => "adler32 checksum mismatch",
        S::FailedCannotMakeProgress | S::NeedsMoreInput => "stream is truncated",
        S::BadParam => "bad parameter",
        _ => "corrupt deflate stream",
    })
}

fn decode_deflate(bytes: &[u8], limits: &DecodeLimits) -> Result<HdrCounts, HdrError> {
    use miniz_oxide::inflate::{decompress_slice_iter_to_slice, TINFLStatus};
    if bytes.len() < 8 {
        return Err(HdrError::Truncated {
            what: "compressed header",
            needed: 8,
            available: bytes.len(),
        });
    }
    let compressed_len = read_u32(bytes, 4) as i32;
    let compressed_len = usize::try_from(compressed_len)
        .map_err(|_| HdrError::BadCompressedLength(compressed_len))?;
    let rest = &bytes[8..];
    if rest.len() < compressed_len {
        return Err(HdrError::Truncated {
            what: "compressed contents",
            needed: compressed_len,
            available: rest.len(),
        });
    }
    if rest.len() > compressed_len {
        return Err(HdrError::TrailingBytes(rest.len() - compressed_len));
    }
    let zdata = rest;

    // Inflate the 40-byte inner header first, validate it, then inflate exactly the declared size.
    let mut head = [0u8; V2_HEADER_LEN];
    match decompress_slice_iter_to_slice(&mut head, core::iter::once(zdata), true, false) {
        Err(TINFLStatus::HasMoreOutput) => {}
        Ok(n) => {
            return Err(HdrError::Truncated {
                what: "V2 header (decompressed)",
                needed: V2_HEADER_LEN,
                available: n,
            })
        }
        Err(e) => return Err(inflate_error(e)),
    }
    check_cookie(read_u32(&head, 0), V2_BASE)?;
    let header = parse_header(&head, limits)?;
    let declared = V2_HEADER_LEN + header.payload_len;
    let mut blob = vec![0u8; declared];
    match decompress_slice_iter_to_slice(&mut blob, core::iter::once(zdata), true, false) {
        Ok(n) if n == declared => {}
        Ok(n) => {
            return Err(HdrError::DecompressedLengthMismatch {
                declared,
                actual: Some(n),
            })
        }
        Err(TINFLStatus::HasMoreOutput) => {
            return Err(HdrError::DecompressedLengthMismatch {
                declared,
                actual: None,
            })
        }
        Err(e) => return Err(inflate_error(e)),
    }
    counts_from(&header, &blob[V2_HEADER_LEN..])
}

impl HdrCounts {
    /// Decodes a V2 (`0x1C849313`) or V2+deflate (`0x1C849314`) blob with default limits.
    ///
    /// The whole input must be one encoded histogram: trailing bytes are an error.
    ///
    /// # Errors
    /// Any [`HdrError`] describing why the bytes are not a valid encoded histogram.
    pub fn decode(bytes: &[u8]) -> Result<Self, HdrError> {
        Self::decode_with_limits(bytes, &DecodeLimits::default())
    }

    /// [`decode`](Self::decode) with explicit [`DecodeLimits`].
    ///
    /// # Errors
    /// Any [`HdrError`] describing why the bytes are not a valid encoded histogram.
    pub fn decode_with_limits(bytes: &[u8], limits: &DecodeLimits) -> Result<Self, HdrError> {
        if bytes.len() < 4 {
            return Err(HdrError::Truncated {
                what: "cookie",
                needed: 4,
                available: bytes.len(),
            });
        }
        let cookie = read_u32(bytes, 0);
        match cookie_base(cookie) {
            V2_BASE => decode_plain(bytes, limits),
            V2_DEFLATE_BASE => decode_deflate(bytes, limits),
            _ => Err(cookie_error(cookie)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hdr::codec::format::DEFAULT_COMPRESSION;

    #[test]
    fn rejects_hostile_headers() {
        let mut h = HdrCounts::new(1, 1 << 20, 2).unwrap();
        h.counts = vec![3];
        let good = h.encode_v2().unwrap();

        let mut b = good.clone();
        b[4..8].copy_from_slice(&(-1i32).to_be_bytes());
        assert!(matches!(
            HdrCounts::decode(&b),
            Err(HdrError::BadPayloadLength { .. })
        ));

        let mut b = good.clone();
        b[4..8].copy_from_slice(&i32::MAX.to_be_bytes());
        assert!(matches!(
            HdrCounts::decode(&b),
            Err(HdrError::BadPayloadLength { .. })
        ));

        let mut b = good.clone();
        b.push(0);
        assert_eq!(HdrCounts::decode(&b), Err(HdrError::TrailingBytes(1)));

        let mut b = good.clone();
        b[0..4].copy_from_slice(&0x1c84_9301u32.to_be_bytes());
        assert!(matches!(
            HdrCounts::decode(&b),
            Err(HdrError::UnsupportedEncoding(_))
        ));

        // A zero run that jumps past the counts array.
        let mut b = good[..40].to_vec();
        let mut payload = Vec::new();
        zigzag::encode_i64(-(i32::MAX as i64), &mut payload);
        zigzag::encode_i64(1, &mut payload);
        b[4..8].copy_from_slice(&(payload.len() as u32).to_be_bytes());
        b.extend_from_slice(&payload);
        assert!(matches!(
            HdrCounts::decode(&b),
            Err(HdrError::IndexOutOfRange { .. })
        ));
    }

    #[test]
    fn deflate_length_checks() {
        let mut h = HdrCounts::new(1, 1 << 20, 2).unwrap();
        h.counts = vec![1, 2, 3];
        let z = h.encode_v2_deflate(DEFAULT_COMPRESSION).unwrap();
        for cut in 0..z.len() {
            assert!(HdrCounts::decode(&z[..cut]).is_err(), "cut at {cut}");
        }
        let mut bad = z.clone();
        let n = bad.len();
        bad[n - 1] ^= 0x55; // adler32
        assert!(matches!(HdrCounts::decode(&bad), Err(HdrError::Inflate(_))));
    }
}
