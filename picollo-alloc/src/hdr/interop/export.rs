//! Picollo histograms out as HdrHistogram: [`from_picollo`] (exact or an error), [`export`]
//! with [`ExportOptions`] (re-bucketing; what V2 cannot hold is dropped only when allowed, and
//! counted in [`HdrExport`]), and the fused encoders [`export_v2_into`] and
//! [`export_v2_deflate`], which read any kind in place.

use picollo_core::read::consistent;
use picollo_core::HistogramRead;

use super::error::InteropError;
use super::mapping::{
    clamp_highest, finer_significant_digits, indexes_alike, significant_digits_for, BucketMapping,
};
use crate::hdr::codec::{deflate_v2, encode_v2, CountsSource, PayloadWriter, V2Fields};
use crate::hdr::counts::HdrGeometry;
use crate::hdr::error::HdrError;
use crate::hdr::HdrCounts;

/// Options of [`export`]. The default is strict: the layout's own significant digits (exact),
/// a highest trackable value covering the window, and an error for anything V2 cannot hold.
///
/// ```
/// use picollo_alloc::hdr::interop::ExportOptions;
///
/// let lossy = ExportOptions::new().significant_digits(3).allow_dropping(true);
/// assert_ne!(lossy, ExportOptions::new());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ExportOptions {
    significant_digits: Option<u8>,
    highest_trackable: Option<u64>,
    allow_dropping: bool,
}

impl ExportOptions {
    /// The strict defaults (see the type's docs).
    pub fn new() -> Self {
        Self::default()
    }

    /// Exports with `d` significant digits (0 to 5), re-bucketing when `d` does not match the
    /// layout: each Picollo bucket's count goes into the HdrHistogram bucket holding the
    /// Picollo bucket's lowest value. With [`finer_significant_digits`] every count stays
    /// inside its Picollo bucket.
    pub fn significant_digits(mut self, d: u8) -> Self {
        self.significant_digits = Some(d);
        self
    }

    /// Sets the header's highest trackable value (clamped to `2..=i64::MAX`) instead of the
    /// window's highest value. Buckets above the geometry's counts array count as overflow.
    pub fn highest_trackable(mut self, highest: u64) -> Self {
        self.highest_trackable = Some(highest);
        self
    }

    /// `true`: export without the counts V2 cannot represent, reporting them in
    /// [`HdrExport::dropped_underflow`] and [`HdrExport::dropped_overflow`]. `false` (the
    /// default): fail with [`InteropError::OutsideCounts`] when there are any.
    pub fn allow_dropping(mut self, allow: bool) -> Self {
        self.allow_dropping = allow;
        self
    }
}

/// The result of [`export`]: the counts and what could not be carried over.
#[derive(Debug, Clone, PartialEq)]
pub struct HdrExport {
    /// The HdrHistogram counts, ready for [`HdrCounts::encode_v2`] or a
    /// [`LogWriter`](crate::hdr::LogWriter).
    pub counts: HdrCounts,
    /// How the Picollo buckets landed in the HdrHistogram buckets.
    pub mapping: BucketMapping,
    /// The Picollo histogram's underflow: values below its window, not in `counts`.
    pub dropped_underflow: u64,
    /// The Picollo histogram's overflow plus the counts of buckets above the HdrHistogram
    /// range: not in `counts`.
    pub dropped_overflow: u64,
}

impl HdrExport {
    /// `true` when every count was carried over, each in the bucket recording the original
    /// value would have chosen.
    pub fn is_exact(&self) -> bool {
        self.report().is_exact()
    }

    /// Everything but the counts: how the buckets landed and what was dropped.
    pub fn report(&self) -> ExportReport {
        ExportReport {
            mapping: self.mapping,
            dropped_underflow: self.dropped_underflow,
            dropped_overflow: self.dropped_overflow,
        }
    }
}

/// What [`export_v2_into`] and [`export_v2_deflate`] did: how the Picollo buckets landed in the
/// HdrHistogram buckets, and the counts V2 could not hold (the fields of [`HdrExport`] but the
/// counts, which went straight into the bytes).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ExportReport {
    /// How the Picollo buckets landed in the HdrHistogram buckets.
    pub mapping: BucketMapping,
    /// The Picollo histogram's underflow: values below its window, not encoded.
    pub dropped_underflow: u64,
    /// The Picollo histogram's overflow plus the counts of buckets above the HdrHistogram
    /// range: not encoded.
    pub dropped_overflow: u64,
}

impl ExportReport {
    /// `true` when every count was carried over, each in the bucket recording the original
    /// value would have chosen.
    pub fn is_exact(&self) -> bool {
        self.mapping.is_exact() && self.dropped_underflow == 0 && self.dropped_overflow == 0
    }
}

/// Converts a Picollo histogram into HdrHistogram counts, exactly: the layout must have
/// matching significant digits ([`significant_digits_for`]) and every count must be
/// representable. The header has lowest discernible value 1 and the highest trackable value
/// of the window (capped at `i64::MAX`); the counts are copied index for index, so
/// [`HdrCounts::encode_v2`] of the result is byte-identical to what HdrHistogram (Java) writes
/// for the same values. For anything else use [`export`].
///
/// ```
/// use picollo_alloc::hdr::interop::{from_picollo, InteropError};
/// use picollo_alloc::HistogramBuilder;
/// use picollo_core::Layout;
///
/// let mut h = HistogramBuilder::new().layout(Layout::from_block_scale(7).unwrap()).plain()?;
/// h.record(42);
/// let hdr = from_picollo(&h)?;
/// assert_eq!((hdr.significant_digits, hdr.lowest_discernible), (2, 1));
/// assert_eq!(hdr.highest_trackable, i64::MAX as u64);
/// assert_eq!(hdr.total_count(), 1);
///
/// let default = HistogramBuilder::new().plain()?; // B = 512: no HdrHistogram twin
/// assert!(matches!(from_picollo(&default), Err(InteropError::NoMatchingSignificantDigits { .. })));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// [`InteropError::NoMatchingSignificantDigits`]; [`InteropError::OutsideCounts`] when the
/// histogram has underflow, overflow or non-empty buckets above `i64::MAX`; and
/// [`InteropError::Hdr`] for a count above `i64::MAX`.
pub fn from_picollo<H: HistogramRead + ?Sized>(h: &H) -> Result<HdrCounts, InteropError> {
    export(h, &ExportOptions::default()).map(|e| e.counts)
}

/// Converts a Picollo histogram into HdrHistogram counts with [`ExportOptions`]: re-bucketing
/// into any precision and, when allowed, dropping (and reporting) what V2 cannot hold.
///
/// The read is consistent: if the histogram is reset while being read, it is read again.
///
/// ```
/// use picollo_alloc::hdr::interop::{export, ExportOptions};
/// use picollo_alloc::HistogramBuilder;
///
/// let mut h = HistogramBuilder::new().max_trackable(1_000_000).plain()?; // B = 512
/// h.record(20_000);
/// h.record(5_000_000); // overflow
/// let e = export(&h, &ExportOptions::new().significant_digits(3).allow_dropping(true))?;
/// assert_eq!(e.counts.total_count(), 1);
/// assert_eq!(e.dropped_overflow, 1);
/// // Split into finer HdrHistogram buckets: still inside the Picollo bucket [20 000, 20 031].
/// assert_eq!(e.mapping.max_abs_error, 31);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// [`InteropError::NoMatchingSignificantDigits`] without
/// [`ExportOptions::significant_digits`] for a layout without a match;
/// [`InteropError::Hdr`] for significant digits above 5 or a count above `i64::MAX`;
/// [`InteropError::OutsideCounts`] when counts would be dropped and that is not allowed.
pub fn export<H: HistogramRead + ?Sized>(
    h: &H,
    options: &ExportOptions,
) -> Result<HdrExport, InteropError> {
    let g = export_geometry(h, options)?;
    let alike = indexes_alike(&g, h.layout());

    let (counts, mapping, underflow, overflow) = consistent(h, |h| {
        let (counts, mapping, beyond) = if alike {
            export_alike(h, &g)
        } else {
            export_rebucketed(h, &g)
        };
        (
            counts,
            mapping,
            h.underflow(),
            h.overflow().saturating_add(beyond),
        )
    });

    check_dropping(options, underflow, overflow)?;
    if let Some((index, &count)) = counts
        .iter()
        .enumerate()
        .find(|&(_, &c)| c > i64::MAX as u64)
    {
        return Err(HdrError::CountTooLarge { index, count }.into());
    }
    Ok(HdrExport {
        counts: HdrCounts {
            lowest_discernible: g.lowest_discernible(),
            highest_trackable: g.highest_trackable(),
            significant_digits: g.significant_digits(),
            normalizing_offset: 0,
            int_to_double_ratio: 1.0,
            counts,
        },
        mapping,
        dropped_underflow: underflow,
        dropped_overflow: overflow,
    })
}

/// The HdrHistogram geometry [`export`] writes `h` into: lowest discernible value 1, the
/// significant digits of `options` (or the layout's own), and the highest trackable value of
/// `options` (or the window's highest value).
fn export_geometry<H: HistogramRead + ?Sized>(
    h: &H,
    options: &ExportOptions,
) -> Result<HdrGeometry, InteropError> {
    let layout = h.layout();
    let d = match options.significant_digits {
        Some(d) => d,
        None => {
            significant_digits_for(layout).ok_or(InteropError::NoMatchingSignificantDigits {
                block_scale: layout.block_scale(),
                finer: finer_significant_digits(layout),
            })?
        }
    };
    let highest = options
        .highest_trackable
        .unwrap_or_else(|| h.window().max_value(layout));
    Ok(HdrGeometry::new(1, clamp_highest(highest), d)?)
}

/// The error for counts V2 cannot hold, unless `options` allows dropping them.
fn check_dropping(
    options: &ExportOptions,
    underflow: u64,
    overflow: u64,
) -> Result<(), InteropError> {
    if !options.allow_dropping && (underflow != 0 || overflow != 0) {
        return Err(InteropError::OutsideCounts {
            underflow,
            overflow,
        });
    }
    Ok(())
}

/// Storage indices of `h` whose logical index is inside `g`'s counts array (a prefix of the
/// window, when Picollo logical index `i` is HdrHistogram counts index `i`), and the sum of
/// the counts beyond it.
fn alike_prefix<H: HistogramRead + ?Sized>(h: &H, g: &HdrGeometry) -> (usize, u64) {
    let window = h.window();
    let inside = g
        .counts_len()
        .saturating_sub(window.first())
        .min(window.len());
    (inside, h.sum_range(inside, window.len()))
}

/// Encodes a Picollo histogram as HdrHistogram V2, appending to `out`: the same bytes as
/// [`export`] followed by [`HdrCounts::encode_v2_into`], without the intermediate counts
/// array when the layouts index alike (the common case, [`significant_digits_for`]): the
/// encoder reads the histogram's counts in place. Other precisions go through [`export`].
///
/// The read is consistent: if the histogram is reset while being read, it is read again. On
/// error `out` is left as it was.
///
/// ```
/// use picollo_alloc::hdr::interop::{export, export_v2_into, ExportOptions};
/// use picollo_alloc::hdr::HdrCounts;
/// use picollo_alloc::HistogramBuilder;
/// use picollo_core::Layout;
///
/// let mut h = HistogramBuilder::new().layout(Layout::from_block_scale(10).unwrap()).plain()?;
/// for v in 1..=10_000u64 {
///     h.record(v * v);
/// }
/// let options = ExportOptions::new();
/// let mut bytes = Vec::new();
/// let report = export_v2_into(&h, &options, &mut bytes)?;
/// assert!(report.is_exact());
/// assert_eq!(bytes, export(&h, &options)?.counts.encode_v2()?);
/// assert_eq!(HdrCounts::decode(&bytes)?.total_count(), 10_000);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// As [`export`].
pub fn export_v2_into<H: HistogramRead + ?Sized>(
    h: &H,
    options: &ExportOptions,
    out: &mut Vec<u8>,
) -> Result<ExportReport, InteropError> {
    let g = export_geometry(h, options)?;
    if !indexes_alike(&g, h.layout()) {
        let e = export(h, options)?;
        e.counts.encode_v2_into(out)?;
        return Ok(e.report());
    }
    let fields = V2Fields {
        normalizing_offset: 0,
        significant_digits: g.significant_digits(),
        lowest_discernible: g.lowest_discernible(),
        highest_trackable: g.highest_trackable(),
        int_to_double_ratio: 1.0,
    };
    let start = out.len();
    consistent(h, |h| {
        // A read that overlapped a structural change runs again: from the bytes it found.
        out.truncate(start);
        let (inside, beyond) = alike_prefix(h, &g);
        let underflow = h.underflow();
        let overflow = h.overflow().saturating_add(beyond);
        check_dropping(options, underflow, overflow)?;
        // Counts index i is logical index i: the window's first index is a run of zeros.
        let (leading, len) = match last_recorded_below(h, inside) {
            Some(last) => (h.window().first(), last + 1),
            None => (0, 0),
        };
        let source = StorageSource { h, leading, len };
        let buckets = encode_v2(&fields, &source, out)?;
        Ok(ExportReport {
            mapping: BucketMapping {
                buckets,
                ..BucketMapping::new(true)
            },
            dropped_underflow: underflow,
            dropped_overflow: overflow,
        })
    })
}

/// Storage indices `0..len` of a histogram whose window starts at counts index `leading`, for
/// the encoder: copied a chunk at a time into a buffer on the stack (the encoder then runs on a
/// slice, with nothing it writes able to alias what it reads).
struct StorageSource<'h, H: ?Sized> {
    h: &'h H,
    leading: usize,
    len: usize,
}

/// Counts copied per chunk: 2 KiB of stack, well inside L1.
const ENCODE_CHUNK: usize = 256;

impl<H: HistogramRead + ?Sized> CountsSource for StorageSource<'_, H> {
    fn leading(&self) -> usize {
        self.leading
    }

    fn len(&self) -> usize {
        self.len
    }

    fn get(&self, index: usize) -> u64 {
        self.h.count_at(index)
    }

    fn write_to(&self, writer: &mut PayloadWriter<'_>) {
        // A chunk of counts copied at a time, not the kind's bulk read (`recorded_runs`): the
        // V2 payload needs every count up to the last, zeros included, and histograms written
        // to V2 are mostly dense (the `hdr-codec` block: handing the encoder one short run at a
        // time made this 2.2× slower).
        let mut chunk = [0u64; ENCODE_CHUNK];
        let mut start = 0;
        while start < self.len {
            let n = (self.len - start).min(ENCODE_CHUNK);
            for (i, cell) in chunk[..n].iter_mut().enumerate() {
                *cell = self.h.count_at(start + i);
            }
            writer.counts(&chunk[..n]);
            start += n;
        }
    }
}

/// [`export_v2_into`], then compressed as V2+deflate at `level` (0 to 10; see
/// [`BEST_COMPRESSION`](crate::hdr::BEST_COMPRESSION) and
/// [`DEFAULT_COMPRESSION`](crate::hdr::DEFAULT_COMPRESSION)): the bytes
/// [`HdrCounts::encode_v2_deflate`] writes for the exported counts.
///
/// # Errors
/// As [`export`].
pub fn export_v2_deflate<H: HistogramRead + ?Sized>(
    h: &H,
    options: &ExportOptions,
    level: u8,
) -> Result<(Vec<u8>, ExportReport), InteropError> {
    let mut plain = Vec::new();
    let report = export_v2_into(h, options, &mut plain)?;
    Ok((deflate_v2(&plain, level), report))
}

/// Export when Picollo logical index `i` is HdrHistogram counts index `i`: a copy. Returns the
/// counts, the mapping and the count of buckets beyond the geometry's counts array.
fn export_alike<H: HistogramRead + ?Sized>(
    h: &H,
    g: &HdrGeometry,
) -> (Vec<u64>, BucketMapping, u64) {
    let first = h.window().first();
    let (inside, beyond) = alike_prefix(h, g);
    let mut mapping = BucketMapping::new(true);
    let Some(last) = last_recorded_below(h, inside) else {
        return (Vec::new(), mapping, beyond);
    };
    let mut counts = vec![0u64; first + last + 1];
    let inside_counts = &mut counts[first..];
    h.recorded_runs(&mut |start, run| {
        for (s, &n) in (start..).zip(run) {
            if let Some(cell) = inside_counts.get_mut(s) {
                mapping.buckets += usize::from(n != 0);
                *cell = n;
            }
        }
    });
    (counts, mapping, beyond)
}

/// The storage index of the last recorded bucket below `end`. Kinds that read in bulk
/// ([`HistogramRead::reads_in_bulk`]: sparse storage, where a search from the end costs a
/// lookup per empty bucket) go through [`HistogramRead::recorded_runs`]; cells in a slice are
/// searched from the end, which stops at once for the dense histograms V2 mostly carries.
fn last_recorded_below<H: HistogramRead + ?Sized>(h: &H, end: usize) -> Option<usize> {
    if !h.reads_in_bulk() {
        return (0..end).rev().find(|&s| h.count_at(s) != 0);
    }
    let mut last = None;
    h.recorded_runs(&mut |start, run| {
        for (s, &n) in (start..end).zip(run) {
            if n != 0 {
                last = Some(s);
            }
        }
    });
    last
}

/// Export into another precision: each Picollo bucket's count goes into the HdrHistogram
/// bucket holding the Picollo bucket's lowest value.
fn export_rebucketed<H: HistogramRead + ?Sized>(
    h: &H,
    g: &HdrGeometry,
) -> (Vec<u64>, BucketMapping, u64) {
    let layout = h.layout();
    let window = h.window();
    let mut counts: Vec<u64> = Vec::new();
    let mut mapping = BucketMapping::new(false);
    let mut beyond = 0u64;
    h.recorded_runs(&mut |start, run| {
        for (s, &n) in (start..).zip(run) {
            if n == 0 {
                continue;
            }
            let i = window.first() + s;
            let (lo, hi) = (layout.lo(i), layout.highest(i));
            let Some(j) = g.index_of(lo) else {
                beyond = beyond.saturating_add(n);
                continue;
            };
            mapping.note(lo, hi, g.index_of(hi) != Some(j), layout.block_size());
            // `j` never decreases along the window, so `counts` grows to the last index used.
            if counts.len() <= j {
                counts.resize(j + 1, 0);
            }
            counts[j] = counts[j].saturating_add(n);
        }
    });
    (counts, mapping, beyond)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::HistogramBuilder;
    use picollo_core::{Layout, Window};

    #[test]
    fn export_refuses_or_reports_outside_counts() {
        let layout = Layout::from_block_scale(10).unwrap();
        let mut h = HistogramBuilder::new()
            .layout(layout)
            .window(Window::new(layout, 100, 10_000).unwrap())
            .dense()
            .plain()
            .unwrap();
        h.record(5);
        h.record(500);
        h.record(50_000);
        h.record(50_000);
        assert_eq!(
            from_picollo(&h),
            Err(InteropError::OutsideCounts {
                underflow: 1,
                overflow: 2
            })
        );
        let e = export(&h, &ExportOptions::new().allow_dropping(true)).unwrap();
        assert_eq!((e.dropped_underflow, e.dropped_overflow), (1, 2));
        assert_eq!(e.counts.total_count(), 1);
        assert!(!e.is_exact());
        assert!(e.mapping.is_exact());

        // Buckets above i64::MAX are beyond any HdrHistogram.
        let mut full = HistogramBuilder::new()
            .layout(layout)
            .dense()
            .plain()
            .unwrap();
        full.record(u64::MAX);
        full.record(7);
        assert_eq!(
            from_picollo(&full),
            Err(InteropError::OutsideCounts {
                underflow: 0,
                overflow: 1
            })
        );
        // A caller-chosen highest trackable value moves the limit.
        let e = export(
            &full,
            &ExportOptions::new()
                .highest_trackable(2_000)
                .allow_dropping(true),
        )
        .unwrap();
        assert_eq!(e.counts.highest_trackable, 2_000);
        assert_eq!((e.counts.total_count(), e.dropped_overflow), (1, 1));
    }

    #[test]
    fn export_rejects_bad_digits_and_huge_counts() {
        let layout = Layout::from_block_scale(4).unwrap();
        let mut h = HistogramBuilder::new()
            .layout(layout)
            .window(Window::new(layout, 0, 1000).unwrap())
            .dense()
            .plain()
            .unwrap();
        h.record(3);
        assert!(matches!(
            export(&h, &ExportOptions::new().significant_digits(6)),
            Err(InteropError::Hdr(HdrError::InvalidGeometry(_)))
        ));
        // Two saturated Picollo buckets merging into one coarse HdrHistogram bucket.
        h.record_n(600, u64::MAX);
        h.record_n(700, u64::MAX);
        assert!(matches!(
            export(&h, &ExportOptions::new().significant_digits(0)),
            Err(InteropError::Hdr(HdrError::CountTooLarge { .. }))
        ));
    }

    /// The fused encoder reads any kind in place (here the atomic one) and, on error, leaves
    /// what `out` already held.
    #[test]
    fn export_v2_into_reads_any_kind() {
        let layout = Layout::from_block_scale(7).unwrap();
        let window = Window::new(layout, 300, 1 << 30).unwrap();
        let atomic = HistogramBuilder::new()
            .layout(layout)
            .window(window)
            .dense()
            .atomic()
            .unwrap();
        let mut plain = HistogramBuilder::new()
            .layout(layout)
            .window(window)
            .dense()
            .plain()
            .unwrap();
        for v in (300..1_000_000u64).step_by(997) {
            atomic.record(v);
            plain.record(v);
        }
        let options = ExportOptions::new();
        let mut bytes = vec![7u8];
        let report = export_v2_into(&atomic, &options, &mut bytes).unwrap();
        assert!(report.is_exact());
        assert_eq!(
            report.mapping.buckets,
            export(&plain, &options).unwrap().mapping.buckets
        );
        assert_eq!(bytes[0], 7);
        assert_eq!(
            bytes[1..],
            from_picollo(&plain).unwrap().encode_v2().unwrap()
        );

        atomic.record(5); // underflow: refused without allow_dropping
        let mut kept = vec![1u8, 2, 3];
        assert_eq!(
            export_v2_into(&atomic, &options, &mut kept),
            Err(InteropError::OutsideCounts {
                underflow: 1,
                overflow: 0
            })
        );
        assert_eq!(kept, [1, 2, 3]);

        // Nothing recorded: one zero word, like the codec's empty histogram.
        let empty = HistogramBuilder::new()
            .layout(layout)
            .window(window)
            .dense()
            .plain()
            .unwrap();
        let mut bytes = Vec::new();
        export_v2_into(&empty, &options, &mut bytes).unwrap();
        assert_eq!(bytes, from_picollo(&empty).unwrap().encode_v2().unwrap());
        assert_eq!(bytes.len(), 41);
    }
}
