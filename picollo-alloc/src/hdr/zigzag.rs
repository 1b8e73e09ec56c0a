//! Zig-zag LEB128 words as HdrHistogram's `ZigZagEncoding` writes them ("LEB128-64b9B").
//!
//! A signed value is first zig-zag mapped (`(v << 1) ^ (v >> 63)`, so small magnitudes of either
//! sign become small unsigned numbers), then written 7 bits at a time, least significant group
//! first, with the high bit of each byte set when more bytes follow. Unlike plain LEB128 a word
//! is at most 9 bytes: after 8 groups of 7 bits (56 bits) the 9th byte carries the remaining
//! 8 bits whole, with no continuation bit. The V2 codec's own: users read and write V2
//! through `HdrCounts` and the interop functions.

/// Longest encoded word, in bytes.
pub(crate) const MAX_ENCODED_LEN: usize = 9;

/// Zig-zag maps a signed value to an unsigned one: `0, -1, 1, -2, …` → `0, 1, 2, 3, …`.
#[cfg(test)] // the encoder writes words with `write_u64`
#[inline]
pub(crate) fn zigzag(value: i64) -> u64 {
    ((value << 1) ^ (value >> 63)) as u64
}

/// Appends the zig-zag LEB128 encoding of `value` to `out` (1 to 9 bytes).
#[cfg(test)] // the encoder writes words with `write_u64`
pub(crate) fn encode_i64(value: i64, out: &mut Vec<u8>) {
    let mut word = [0u8; MAX_ENCODED_LEN];
    let len = write_u64(zigzag(value), &mut word);
    out.extend_from_slice(&word[..len]);
}

/// Writes the LEB128-64b9B encoding of an already zig-zag mapped `v` at the start of `dst` and
/// returns its length (1 to 9).
///
/// The bytes of `dst` after the returned length may be overwritten (with zeros): the encoder
/// stores a whole 8-byte group at once rather than looping over bytes. Callers that write a
/// stream keep at least [`MAX_ENCODED_LEN`] bytes of room ahead of the write position.
/// (`tests::matches_reference_at_every_length_boundary` checks it against HdrHistogram's
/// byte-at-a-time encoder.)
#[inline(always)]
pub(crate) fn write_u64(v: u64, dst: &mut [u8; MAX_ENCODED_LEN]) -> usize {
    if v < 0x80 {
        dst[0] = v as u8;
        return 1;
    }
    if v < 0x4000 {
        dst[0] = v as u8 | 0x80;
        dst[1] = (v >> 7) as u8;
        return 2;
    }
    // Spread the low 56 bits into eight 7-bit groups, one per byte (least significant first).
    let groups = (v & 0x7f)
        | ((v << 1) & (0x7f << 8))
        | ((v << 2) & (0x7f << 16))
        | ((v << 3) & (0x7f << 24))
        | ((v << 4) & (0x7f << 32))
        | ((v << 5) & (0x7f << 40))
        | ((v << 6) & (0x7f << 48))
        | ((v << 7) & (0x7f << 56));
    let bits = 64 - v.leading_zeros() as usize; // 15..=64 here
    if bits > 56 {
        // Eight groups with continuation bits, then the top 8 bits whole.
        let (head, tail) = dst.split_at_mut(8);
        head.copy_from_slice(&(groups | 0x8080_8080_8080_8080).to_le_bytes());
        tail[0] = (v >> 56) as u8;
        return MAX_ENCODED_LEN;
    }
    let len = bits.div_ceil(7); // 3..=8
                                // Continuation bits on bytes 0..len-1: the last byte of the word has none.
    let more = 0x0080_8080_8080_8080u64 >> (8 * (8 - len));
    dst[..8].copy_from_slice(&(groups | more).to_le_bytes());
    len
}

/// Number of bytes [`encode_i64`] writes for `value`.
#[cfg(test)] // the encoder writes words with `write_u64`
pub(crate) fn encoded_len(value: i64) -> usize {
    let v = zigzag(value);
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
#[inline]
pub(crate) fn decode_i64(bytes: &[u8]) -> Option<(i64, usize)> {
    // One- and two-byte words (counts below 8192, zero runs below 8193) first.
    match *bytes {
        [b0, ..] if b0 < 0x80 => return Some((unzigzag(u64::from(b0)), 1)),
        [b0, b1, ..] if b1 < 0x80 => {
            return Some((unzigzag(u64::from(b0 & 0x7f) | u64::from(b1) << 7), 2))
        }
        _ => {}
    }
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

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(
            if cfg!(miri) { 8 } else { 256 }
        ))]

        /// Every value decodes to itself from its encoding, whatever follows it.
        #[test]
        fn round_trip(v in proptest::prelude::any::<i64>()) {
            let mut buf = Vec::new();
            encode_i64(v, &mut buf);
            proptest::prop_assert_eq!(buf.len(), encoded_len(v));
            proptest::prop_assert!(buf.len() <= MAX_ENCODED_LEN);
            proptest::prop_assert_eq!(decode_i64(&buf), Some((v, buf.len())));
            buf.push(0xAA);
            proptest::prop_assert_eq!(decode_i64(&buf), Some((v, buf.len() - 1)));
        }
    }

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

    /// The byte-at-a-time reference encoder (HdrHistogram's `ZigZagEncoding.putLong`).
    fn reference(value: i64) -> Vec<u8> {
        let mut v = zigzag(value);
        let mut out = Vec::new();
        for _ in 0..8 {
            if v >> 7 == 0 {
                out.push(v as u8);
                return out;
            }
            out.push((v as u8 & 0x7f) | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
        out
    }

    #[test]
    fn matches_reference_at_every_length_boundary() {
        let mut values = vec![0i64, 1, -1, i64::MAX, i64::MIN, i64::MAX - 1, i64::MIN + 1];
        for shift in 0..64u32 {
            let p = 1u64 << shift;
            for u in [p - 1, p, p + 1, p.wrapping_mul(3) / 2] {
                values.push(u as i64);
                values.push((u as i64).wrapping_neg());
                values.push((u >> 1) as i64);
            }
        }
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..10_000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            values.push((state >> (state % 64)) as i64);
        }
        for v in values {
            let want = reference(v);
            let mut buf = vec![0xaa];
            encode_i64(v, &mut buf);
            assert_eq!(&buf[1..], &want[..], "encoding {v}");
            let mut dst = [0xffu8; MAX_ENCODED_LEN];
            let len = write_u64(zigzag(v), &mut dst);
            assert_eq!(&dst[..len], &want[..], "write_u64 {v}");
            assert_eq!(encoded_len(v), want.len());
            assert_eq!(decode_i64(&want), Some((v, want.len())));
        }
    }

    #[test]
    fn truncated_word() {
        assert_eq!(decode_i64(&[]), None);
        assert_eq!(decode_i64(&[0x80]), None);
        assert_eq!(decode_i64(&[0xff; 8]), None);
    }
}
