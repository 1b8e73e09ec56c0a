//! Encoding V2 (byte-identical to HdrHistogram's) and V2+deflate: the header, the zig-zag
//! payload written from counts given in slices ([`CountsSource`], [`PayloadWriter`]), and the
//! zlib wrapper.

use super::format::{V2_COOKIE, V2_DEFLATE_COOKIE, V2_HEADER_LEN};
use crate::hdr::error::HdrError;
use crate::hdr::zigzag;
use crate::hdr::HdrCounts;

/// Output the encoder makes room for at a time at most, in bytes (zero-filled in these steps,
/// so a sparse histogram with a huge counts array does not reserve 9 bytes for every entry).
const GROW_CHUNK: usize = 32 * 1024;

/// The first step beyond what `out` holds, in bytes; each later step doubles the output, up to
/// [`GROW_CHUNK`]. Mostly-empty counts arrays (a 1-digit full range: 960 entries, a few words
/// of output) zero-filled 9 bytes for every entry before: a memset natively, but the longest
/// part of encoding under miri, which zero-fills byte by byte.
const FIRST_GROW: usize = 256;

/// Makes `out` at least `pos + 9` bytes long (zero-filled, by up to its own length beyond that,
/// between [`FIRST_GROW`] and [`GROW_CHUNK`] bytes). `words_left` bounds what the rest of the
/// payload can need.
#[cold]
#[inline(never)]
fn grow(out: &mut Vec<u8>, pos: usize, words_left: usize) {
    let step = out.len().clamp(FIRST_GROW, GROW_CHUNK);
    let want = words_left
        .saturating_mul(zigzag::MAX_ENCODED_LEN)
        .clamp(zigzag::MAX_ENCODED_LEN, step);
    if out.len() < pos + want {
        out.resize(pos + want, 0);
    }
}

/// The header fields of a V2 blob (everything but the payload length).
#[derive(Clone, Copy)]
pub(in crate::hdr) struct V2Fields {
    pub(in crate::hdr) normalizing_offset: i32,
    pub(in crate::hdr) significant_digits: u8,
    pub(in crate::hdr) lowest_discernible: u64,
    pub(in crate::hdr) highest_trackable: u64,
    pub(in crate::hdr) int_to_double_ratio: f64,
}

impl V2Fields {
    fn of(h: &HdrCounts) -> Self {
        Self {
            normalizing_offset: h.normalizing_offset,
            significant_digits: h.significant_digits,
            lowest_discernible: h.lowest_discernible,
            highest_trackable: h.highest_trackable,
            int_to_double_ratio: h.int_to_double_ratio,
        }
    }
}

/// Counts by HdrHistogram counts index, as the encoder reads them: `leading()` zero entries,
/// then `len()` entries that the source hands to a [`PayloadWriter`] in slices (the codec's own
/// array in one piece, or a Picollo histogram's counts copied a cache-sized chunk at a time, so
/// no full intermediate array is built). The last entry is non-zero, or there is none.
pub(in crate::hdr) trait CountsSource {
    /// Zero entries before the first one given to the writer.
    fn leading(&self) -> usize;
    /// Entries given to the writer.
    fn len(&self) -> usize;
    /// Entry `index` (`< len()`), to name a count that cannot be encoded.
    fn get(&self, index: usize) -> u64;
    /// Gives entries `0..len()` to `writer`, in order, in one or more slices.
    fn write_to(&self, writer: &mut PayloadWriter<'_>);
}

/// A slice of counts, in one piece.
struct SliceSource<'a>(&'a [u64]);

impl CountsSource for SliceSource<'_> {
    fn leading(&self) -> usize {
        0
    }
    fn len(&self) -> usize {
        self.0.len()
    }
    fn get(&self, index: usize) -> u64 {
        self.0[index]
    }
    fn write_to(&self, writer: &mut PayloadWriter<'_>) {
        writer.counts(self.0);
    }
}

/// Appends a V2 blob: the header of `fields`, then the zig-zag LEB128 payload of `counts`.
/// Returns the number of non-zero entries. On error `out` is left as it was.
///
/// # Errors
/// [`HdrError::CountTooLarge`] for an entry above `i64::MAX` (V2 words are signed).
pub(in crate::hdr) fn encode_v2<S: CountsSource + ?Sized>(
    fields: &V2Fields,
    counts: &S,
    out: &mut Vec<u8>,
) -> Result<usize, HdrError> {
    let start = out.len();
    let len = counts.len();
    out.reserve(V2_HEADER_LEN + len.clamp(1, GROW_CHUNK));
    out.extend_from_slice(&V2_COOKIE.to_be_bytes());
    out.extend_from_slice(&0u32.to_be_bytes()); // payload length, patched below
    out.extend_from_slice(&fields.normalizing_offset.to_be_bytes());
    out.extend_from_slice(&u32::from(fields.significant_digits).to_be_bytes());
    out.extend_from_slice(&fields.lowest_discernible.to_be_bytes());
    out.extend_from_slice(&fields.highest_trackable.to_be_bytes());
    out.extend_from_slice(&fields.int_to_double_ratio.to_bits().to_be_bytes());
    let payload_start = out.len();
    let (end, non_zero) = if len == 0 {
        out.push(0); // an empty histogram: one zero word
        (out.len(), 0)
    } else {
        let mut writer = PayloadWriter {
            out: &mut *out,
            end: payload_start,
            pending_zeros: counts.leading(),
            zeros: 0,
            all_counts: 0,
        };
        counts.write_to(&mut writer);
        let all_counts = writer.all_counts;
        let zeros = writer.zeros;
        let end = writer.finish();
        if all_counts > i64::MAX as u64 {
            // Rare: find the culprit after the fact rather than test every word on the way.
            out.truncate(start);
            let index = (0..len).find(|&i| counts.get(i) > i64::MAX as u64);
            return Err(match index {
                Some(index) => HdrError::CountTooLarge {
                    index: counts.leading() + index,
                    count: counts.get(index),
                },
                // The source changed under us (a concurrent writer): as large as it was.
                None => HdrError::CountTooLarge {
                    index: counts.leading(),
                    count: all_counts,
                },
            });
        }
        (end, len - zeros)
    };
    out.truncate(end);
    // At most MAX_GEOMETRY_COUNTS_LEN entries, so the payload is < 56 MB: fits in an i32.
    let payload_len = (end - payload_start) as u32;
    out[start + 4..start + 8].copy_from_slice(&payload_len.to_be_bytes());
    Ok(non_zero)
}

/// Length of the run of zeros at the start of `counts`.
#[inline(always)]
fn zero_run(counts: &[u64]) -> usize {
    // Most runs are short: look at a few entries one by one first.
    let head = counts.len().min(4);
    if let Some(n) = counts[..head].iter().position(|&c| c != 0) {
        return n;
    }
    let mut n = head;
    // Then eight entries per step, OR-ed together (no early exit inside the block).
    for block in counts[head..].chunks_exact(8) {
        if block.iter().fold(0, |acc, &c| acc | c) != 0 {
            break;
        }
        n += 8;
    }
    n + counts[n..]
        .iter()
        .position(|&c| c != 0)
        .unwrap_or(counts.len() - n)
}

/// The zig-zag form of the word for a run of `run >= 1` zeros: a single zero is written as 0,
/// a run of n > 1 zeros as -n, i.e. 2n - 1.
#[inline(always)]
fn zero_run_word(run: usize) -> u64 {
    if run == 1 {
        0
    } else {
        (run as u64) * 2 - 1
    }
}

/// Writes a V2 payload from counts given in slices: a run of zeros may continue from one slice
/// into the next (it is written when the next non-zero count, or the end, comes).
pub(in crate::hdr) struct PayloadWriter<'o> {
    out: &'o mut Vec<u8>,
    /// Next byte to write in `out`; bytes past it are scratch, truncated by the caller.
    end: usize,
    /// Zeros seen and not written yet.
    pending_zeros: usize,
    /// Zero entries given so far (not counting the leading ones).
    zeros: usize,
    /// Every count given so far, OR-ed: above `i64::MAX` when one of them is (such a count is
    /// written wrapped; [`encode_v2`] then reports it and drops the bytes).
    all_counts: u64,
}

impl PayloadWriter<'_> {
    /// Encodes the next entries.
    pub(in crate::hdr) fn counts(&mut self, counts: &[u64]) {
        let mut rest = counts;
        while !rest.is_empty() {
            grow(self.out, self.end, rest.len() + 1);
            rest = self.encode_words(rest);
        }
    }

    /// Encodes words from the start of `rest` while a whole word (9 bytes) fits in `out`;
    /// returns the counts not yet taken. Trailing zeros of `rest` stay pending.
    #[inline(always)]
    fn encode_words<'a>(&mut self, mut rest: &'a [u64]) -> &'a [u64] {
        // The state in locals: the output bytes written below could alias `self` as far as the
        // compiler knows, and fields would be reloaded after every word.
        let (mut pos, mut all, mut pending, mut zeros) =
            (self.end, self.all_counts, self.pending_zeros, self.zeros);
        let buf = &mut self.out[..];
        while let Some((&count, tail)) = rest.split_first() {
            // One bounds check per word; the 9-byte window is what `write_u64` may touch.
            let Some(Ok(slot)) = buf
                .get_mut(pos..pos + zigzag::MAX_ENCODED_LEN)
                .map(<&mut [u8; zigzag::MAX_ENCODED_LEN]>::try_from)
            else {
                break;
            };
            let word = if count != 0 && pending == 0 {
                rest = tail;
                all |= count;
                // count <= i64::MAX (checked at the end): its zig-zag form is `2 * count`.
                count << 1
            } else if count != 0 {
                // The run before this count ends here; the count goes in the next word.
                zero_run_word(core::mem::take(&mut pending))
            } else {
                let run = zero_run(rest);
                rest = &rest[run..];
                zeros += run;
                pending += run;
                continue;
            };
            pos += zigzag::write_u64(word, slot);
        }
        (self.end, self.all_counts, self.pending_zeros, self.zeros) = (pos, all, pending, zeros);
        rest
    }

    /// Writes the zeros still pending (a source whose last entry is zero) and returns the end
    /// of the payload.
    fn finish(self) -> usize {
        let mut end = self.end;
        if self.pending_zeros != 0 {
            grow(self.out, end, 1);
            if let Some(Ok(slot)) = self
                .out
                .get_mut(end..end + zigzag::MAX_ENCODED_LEN)
                .map(<&mut [u8; zigzag::MAX_ENCODED_LEN]>::try_from)
            {
                end += zigzag::write_u64(zero_run_word(self.pending_zeros), slot);
            }
        }
        end
    }
}

impl HdrCounts {
    /// Encodes as plain V2, byte-identical to HdrHistogram's `encodeIntoByteBuffer`.
    ///
    /// The payload covers indices up to the last non-zero count (one zero word for an empty
    /// histogram); a single zero is written as `0`, longer zero runs as `-run`.
    ///
    /// # Errors
    /// An invalid geometry, a non-zero count beyond the geometry's counts array
    /// ([`HdrError::IndexOutOfRange`]), or a count above `i64::MAX` ([`HdrError::CountTooLarge`]).
    pub fn encode_v2(&self) -> Result<Vec<u8>, HdrError> {
        let mut out = Vec::new();
        self.encode_v2_into(&mut out)?;
        Ok(out)
    }

    /// [`encode_v2`](Self::encode_v2), appending to `out` (which is left unchanged on error).
    ///
    /// # Errors
    /// As [`encode_v2`](Self::encode_v2).
    pub fn encode_v2_into(&self, out: &mut Vec<u8>) -> Result<(), HdrError> {
        let geometry = self.geometry()?;
        // Indices up to the last non-zero count; empty when there is none.
        let counts = &self.counts[..self.max_index().map_or(0, |i| i + 1)];
        if counts.len() > geometry.counts_len() {
            return Err(HdrError::IndexOutOfRange {
                index: counts.len() - 1,
                counts_len: geometry.counts_len(),
            });
        }
        encode_v2(&V2Fields::of(self), &SliceSource(counts), out).map(|_| ())
    }

    /// Encodes as V2+deflate: cookie `0x1C849314`, the compressed length, then a zlib stream
    /// of the whole [`encode_v2`](Self::encode_v2) blob, compressed at `level` (0 to 10; see
    /// [`BEST_COMPRESSION`](crate::hdr::BEST_COMPRESSION) and
    /// [`DEFAULT_COMPRESSION`](crate::hdr::DEFAULT_COMPRESSION)).
    ///
    /// The zlib bytes differ from Java's `Deflater` output, but decode to the same blob.
    ///
    /// # Errors
    /// As [`encode_v2`](Self::encode_v2).
    pub fn encode_v2_deflate(&self, level: u8) -> Result<Vec<u8>, HdrError> {
        Ok(deflate_v2(&self.encode_v2()?, level))
    }
}

/// Wraps a plain V2 blob as V2+deflate: cookie `0x1C849314`, the compressed length, then a
/// zlib stream of `plain` at `level` (0 to 10).
pub(in crate::hdr) fn deflate_v2(plain: &[u8], level: u8) -> Vec<u8> {
    use miniz_oxide::deflate::core::{
        compress_to_output, create_comp_flags_from_zip_params, CompressorOxide, TDEFLFlush,
        TDEFLStatus,
    };
    let mut out = Vec::with_capacity(8 + plain.len() / 2);
    out.extend_from_slice(&V2_DEFLATE_COOKIE.to_be_bytes());
    // The compressed length, patched below.
    out.extend_from_slice(&0u32.to_be_bytes());
    // zlib wrapper (window bits > 0), default strategy; the stream goes straight into `out`.
    let flags = create_comp_flags_from_zip_params(i32::from(level), 1, 0);
    let mut compressor = CompressorOxide::new(flags);
    let (status, _) = compress_to_output(&mut compressor, plain, TDEFLFlush::Finish, |z| {
        out.extend_from_slice(z);
        true
    });
    if status != TDEFLStatus::Done {
        // Not expected with an in-memory sink; miniz_oxide's one-shot helper as a fallback.
        out.truncate(8);
        out.extend_from_slice(&miniz_oxide::deflate::compress_to_vec_zlib(plain, level));
    }
    // The stream is the plain blob (< 56 MB) plus zlib overhead: fits in an i32.
    let z_len = (out.len() - 8) as u32;
    out[4..8].copy_from_slice(&z_len.to_be_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hdr::codec::format::{BEST_COMPRESSION, V2_HEADER_LEN};

    #[test]
    fn empty_histogram_encodes_one_zero_word() {
        let h = HdrCounts::new(1, 1000, 2).unwrap();
        let b = h.encode_v2().unwrap();
        assert_eq!(b.len(), 41);
        assert_eq!(&b[4..8], &[0, 0, 0, 1]);
        assert_eq!(b[40], 0);
        let back = HdrCounts::decode(&b).unwrap();
        assert!(back.same_content(&h));
        assert_eq!(back.counts, vec![0]);
    }

    #[test]
    fn zero_runs() {
        let mut h = HdrCounts::new(1, 1 << 20, 2).unwrap();
        h.counts = vec![0, 5, 0, 0, 0, 7, 0, 1, 0, 0];
        let b = h.encode_v2().unwrap();
        // 0 | 5 | -3 | 7 | 0 | 1 (trailing zeros dropped)
        assert_eq!(&b[40..], &[0, 10, 5, 14, 0, 2]);
        let back = HdrCounts::decode(&b).unwrap();
        assert_eq!(back.counts, vec![0, 5, 0, 0, 0, 7, 0, 1]);
        let z = h.encode_v2_deflate(BEST_COMPRESSION).unwrap();
        assert!(HdrCounts::decode(&z).unwrap().same_content(&h));
    }

    /// The decoder's one-byte fast path checks the counts array bound like the general path,
    /// and the encoder's output grows correctly past its first chunk.
    #[test]
    fn fast_paths_keep_bounds_and_bytes() {
        let h = HdrCounts::new(1, 2, 0).unwrap();
        let counts_len = h.geometry().unwrap().counts_len();
        assert_eq!(counts_len, 3);
        let header = h.encode_v2().unwrap()[..V2_HEADER_LEN].to_vec();
        for (payload, ok) in [
            (vec![2u8; counts_len], true),
            (vec![2u8; counts_len + 1], false),
            (vec![0x03, 2, 2], false), // -2 zeros, then 2 counts: one past the end
            (vec![0x03, 2], true),
            (vec![2, 0x80], false), // truncated two-byte word
        ] {
            let mut b = header.clone();
            b[4..8].copy_from_slice(&(payload.len() as u32).to_be_bytes());
            b.extend_from_slice(&payload);
            let r = HdrCounts::decode(&b);
            assert_eq!(r.is_ok(), ok, "{payload:?}: {r:?}");
            if let Ok(back) = r {
                assert_eq!(back.encode_v2().unwrap(), b);
            }
        }

        // Every word length, and more output than one growth step, against the byte-at-a-time
        // encoder.
        let mut h = HdrCounts::new(1, i64::MAX as u64, 4).unwrap();
        let n = h.geometry().unwrap().counts_len();
        h.counts = (0..n as u64)
            .map(|i| match i % 11 {
                0 | 1 => 0,
                k => (1u64 << (7 * (k - 2) + (i % 7))).min(i64::MAX as u64),
            })
            .collect();
        let fast = h.encode_v2().unwrap();
        let mut slow = fast[..V2_HEADER_LEN].to_vec();
        let mut i = 0;
        while i < n {
            let c = h.counts[i];
            i += 1;
            if c == 0 {
                let mut run = 1i64;
                while i < n && h.counts[i] == 0 {
                    run += 1;
                    i += 1;
                }
                zigzag::encode_i64(if run > 1 { -run } else { 0 }, &mut slow);
            } else {
                zigzag::encode_i64(c as i64, &mut slow);
            }
        }
        assert!(fast.len() > GROW_CHUNK);
        assert_eq!(fast[V2_HEADER_LEN..], slow[V2_HEADER_LEN..]);
        assert!(HdrCounts::decode(&fast).unwrap().same_content(&h));
    }

    /// A count V2 cannot hold is an error naming it, and leaves the output as it was; counts
    /// just below the limit encode as 9-byte words.
    #[test]
    fn count_above_i64_max_is_refused() {
        let mut h = HdrCounts::new(1, 1 << 20, 2).unwrap();
        h.counts = vec![0, 0, 3, 0, i64::MAX as u64, 1];
        let mut out = vec![9u8; 3];
        h.encode_v2_into(&mut out).unwrap();
        assert_eq!(HdrCounts::decode(&out[3..]).unwrap().counts, h.counts);
        h.counts[4] = i64::MAX as u64 + 1;
        let mut out = vec![9u8; 3];
        assert_eq!(
            h.encode_v2_into(&mut out),
            Err(HdrError::CountTooLarge {
                index: 4,
                count: i64::MAX as u64 + 1
            })
        );
        assert_eq!(out, [9, 9, 9]);
    }

    /// Counts given in pieces encode as the whole array would: leading zeros and zero runs that
    /// span pieces merge into one run.
    #[test]
    fn pieces_encode_like_the_whole() {
        struct Pieces {
            leading: usize,
            counts: Vec<u64>,
            piece: usize,
        }
        impl CountsSource for Pieces {
            fn leading(&self) -> usize {
                self.leading
            }
            fn len(&self) -> usize {
                self.counts.len()
            }
            fn get(&self, index: usize) -> u64 {
                self.counts[index]
            }
            fn write_to(&self, writer: &mut PayloadWriter<'_>) {
                for piece in self.counts.chunks(self.piece) {
                    writer.counts(piece);
                }
            }
        }
        let fields = V2Fields::of(&HdrCounts::new(1, 1 << 20, 2).unwrap());
        for (leading, counts) in [
            (1usize, vec![0u64, 0, 5]),
            (3, vec![7]),
            (0, vec![4]),
            (2, vec![0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 2]),
            (0, vec![1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 9, 0, 1]),
        ] {
            let mut whole = vec![0u64; leading];
            whole.extend_from_slice(&counts);
            let mut h = HdrCounts::new(1, 1 << 20, 2).unwrap();
            h.counts = whole;
            let expected = h.encode_v2().unwrap();
            for piece in 1..=counts.len() {
                let source = Pieces {
                    leading,
                    counts: counts.clone(),
                    piece,
                };
                let mut bytes = Vec::new();
                let non_zero = encode_v2(&fields, &source, &mut bytes).unwrap();
                assert_eq!(
                    bytes, expected,
                    "{leading} + {counts:?} in pieces of {piece}"
                );
                assert_eq!(non_zero, counts.iter().filter(|&&c| c != 0).count());
            }
        }
    }
}
