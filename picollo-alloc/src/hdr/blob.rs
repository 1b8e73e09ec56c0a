//! Single encoded histograms as files (`.hist`, `.histz`): the V2 encoding as raw bytes, or
//! as base64 text (what HdrHistogram's `encodeIntoCompressedByteBuffer` plus a base64 step,
//! and interval-log payloads, look like), told apart by content, not by file name.

use base64::Engine as _;

use super::codec::{V2_COOKIE, V2_DEFLATE_COOKIE};
use super::{HdrCounts, HdrError};

/// The HdrHistogram cookies of the V0 and V1 encodings (plain and compressed): recognized, so
/// they get [`HdrError::UnsupportedEncoding`] rather than "not a histogram".
const OLD_COOKIES: [u32; 4] = [0x1c84_9308, 0x1c84_9309, 0x1c84_9301, 0x1c84_9302];

fn starts_with_cookie(bytes: &[u8]) -> bool {
    let Some(c) = bytes.get(..4) else {
        return false;
    };
    let cookie = u32::from_be_bytes([c[0], c[1], c[2], c[3]]);
    cookie == V2_COOKIE || cookie == V2_DEFLATE_COOKIE || OLD_COOKIES.contains(&cookie)
}

/// How an encoded histogram was stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlobForm {
    /// The encoding's bytes as they are.
    Binary,
    /// Base64 text of the encoding (whitespace and line breaks allowed).
    Base64,
}

/// Decodes `bytes` as one encoded histogram, binary or base64: `Ok(None)` when they are
/// neither (so the caller can try other formats), the histogram and its form when they are,
/// and an error when they start like one but do not decode (corrupt, truncated, or a V0/V1
/// encoding).
///
/// ```
/// use picollo_alloc::hdr::{decode_blob, BlobForm, HdrCounts};
///
/// let mut h = HdrCounts::new(1, 1 << 40, 3)?;
/// h.record(1234, 5)?;
/// let bytes = h.encode_v2_deflate(6)?;
/// let (back, form) = decode_blob(&bytes)?.expect("a blob");
/// assert_eq!((back.total_count(), form), (5, BlobForm::Binary));
/// assert!(decode_blob(b"Value Percentile TotalCount")?.is_none());
/// # Ok::<(), picollo_alloc::hdr::HdrError>(())
/// ```
///
/// # Errors
/// The [`HdrError`] of the decoder, for input that is an encoded histogram by its cookie.
pub fn decode_blob(bytes: &[u8]) -> Result<Option<(HdrCounts, BlobForm)>, HdrError> {
    if starts_with_cookie(bytes) {
        return HdrCounts::decode(bytes).map(|h| Some((h, BlobForm::Binary)));
    }
    let text: Vec<u8> = bytes
        .iter()
        .copied()
        .filter(|b| !b.is_ascii_whitespace())
        .collect();
    let base64_alphabet = |b: &u8| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'=');
    if text.len() < 8 || !text.iter().all(base64_alphabet) {
        return Ok(None);
    }
    let engine = base64::engine::general_purpose::STANDARD_PAD_INDIFFERENT;
    let Ok(decoded) = engine.decode(&text) else {
        return Ok(None);
    };
    if !starts_with_cookie(&decoded) {
        return Ok(None);
    }
    HdrCounts::decode(&decoded).map(|h| Some((h, BlobForm::Base64)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> HdrCounts {
        let mut h = HdrCounts::new(1, 1 << 40, 2).unwrap();
        for v in 1..=1000u64 {
            h.record(v * 13, 1).unwrap();
        }
        h
    }

    #[test]
    fn binary_and_base64_forms() {
        let h = sample();
        for bytes in [h.encode_v2().unwrap(), h.encode_v2_deflate(6).unwrap()] {
            let (b, form) = decode_blob(&bytes).unwrap().unwrap();
            assert!(b.same_content(&h));
            assert_eq!(form, BlobForm::Binary);
            let text = base64::engine::general_purpose::STANDARD.encode(&bytes);
            // Line-wrapped, with a trailing newline, as tools write it.
            let wrapped: String = text
                .as_bytes()
                .chunks(76)
                .map(|c| format!("{}\n", std::str::from_utf8(c).unwrap()))
                .collect();
            let (b, form) = decode_blob(wrapped.as_bytes()).unwrap().unwrap();
            assert!(b.same_content(&h));
            assert_eq!(form, BlobForm::Base64);
        }
    }

    #[test]
    fn other_content_is_not_a_blob() {
        for text in [
            &b""[..],
            b"#[Histogram log format version 1.3]\n",
            b"       Value     Percentile TotalCount 1/(1-Percentile)\n",
            b"0.127,1.007,2.769,HISTFAAAAEV42pNpmSzMwMCgyAABTBDKT4GBgYWZgWEBWIKZiYHFTRjPHRLPDlDu",
            b"abcdefgh", // base64, but not of an encoding
        ] {
            assert!(decode_blob(text).unwrap().is_none(), "{text:?}");
        }
    }

    #[test]
    fn damaged_blobs_are_errors() {
        let bytes = sample().encode_v2_deflate(6).unwrap();
        assert!(decode_blob(&bytes[..bytes.len() / 2]).is_err());
        let text = base64::engine::general_purpose::STANDARD.encode(&bytes[..20]);
        assert!(decode_blob(text.as_bytes()).is_err());
        // A V0 cookie: recognized and refused.
        let mut v0 = bytes.clone();
        v0[..4].copy_from_slice(&0x1c84_9308u32.to_be_bytes());
        assert!(matches!(
            decode_blob(&v0),
            Err(HdrError::UnsupportedEncoding(_)) | Err(HdrError::UnknownCookie(_))
        ));
    }
}
