//! Zig-zag LEB128 words as HdrHistogram's `ZigZagEncoding` writes them ("LEB128-64b9B").
//!
//! A signed value is first zig-zag mapped (`(v << 1) ^ (v >> 63)`, so small magnitudes of either
//! sign become small unsigned numbers), then written 7 bits at a time, least significant group
//! first, with the high bit of each byte set when more bytes follow. Unlike plain LEB128 a word
//! is at most 9 bytes: after 8 groups of 7 bits (56 bits) the 9th byte carries the remaining
//! 8 bits whole, with no continuation bit.
//!
//! ```
//! use picollo_alloc::hdr::zigzag;
//!
//! let mut buf = Vec::new();
//! zigzag::encode_i64(-3, &mut buf);
//! assert_eq!(buf, [5]);
//! assert_eq!(zigzag::decode_i64(&buf), Some((-3, 1)));
//! ```

/// Longest encoded word, in bytes.
pub const MAX_ENCODED_LEN: usize = 9;

/// Appends the zig-zag LEB128 encoding of `value` to `out` (1 to 9 bytes).
pub fn encode_i64(value: i64, out: &mut Vec<u8>) {
    let mut v = ((value << 1) ^ (value >> 63)) as u64;
    for _ in 0..8 {
        if v >> 7 == 0 {
            out.push(v as u8);
            return;
        }
        out.push((v as u8 & 0x7f) | 0x80);
        v >>= 7;
    }
    // 56 bits written; the ninth byte holds the top 8 bits whole.
    out.push(v as u8);
}

/// Number of bytes [`encode_i64`] writes for `value`.
pub fn encoded_len(value: i64) -> usize {
    let v = ((value << 1) ^ (value >> 63)) as u64;
    let bits = 64 - v.leading_zeros() as usize;
    if bits > 56 {
        MAX_ENCODED_LEN
    } else {
        bits.div_ceil(7).max(1)
    }
}

/// Decodes one word from the start of `bytes`.
///
/// Returns the value and the number of bytes it used, or `None` if `bytes` ends inside the word.
/// Non-canonical encodings (redundant `0x80` groups) are accepted, as HdrHistogram accepts them.
pub fn decode_i64(bytes: &[u8]) -> Option<(i64, usize)> {
    let mut v: u64 = 0;
    for i in 0..8 {
        let b = *bytes.get(i)?;
        v |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Some((unzigzag(v), i + 1));
        }
    }
    let b = *bytes.get(8)?;
    v |= u64::from(b) << 56;
    Some((unzigzag(v), MAX_ENCODED_LEN))
}

fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_encodings() {
        let cases: &[(i64, &[u8])] = &[
            (0, &[0]),
            (1, &[2]),
            (-1, &[1]),
            (63, &[0x7e]),
            (64, &[0x80, 0x01]),
            (-65, &[0x81, 0x01]),
            (
                i64::MAX,
                &[0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff],
            ),
            (
                i64::MIN,
                &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff],
            ),
        ];
        for &(v, enc) in cases {
            let mut buf = Vec::new();
            encode_i64(v, &mut buf);
            assert_eq!(buf, enc, "encoding {v}");
            assert_eq!(encoded_len(v), enc.len());
            assert_eq!(decode_i64(enc), Some((v, enc.len())));
        }
    }

    #[test]
    fn truncated_word() {
        assert_eq!(decode_i64(&[]), None);
        assert_eq!(decode_i64(&[0x80]), None);
        assert_eq!(decode_i64(&[0xff; 8]), None);
    }
}
