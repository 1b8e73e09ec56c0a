//! HdrHistogram counts into Picollo: [`add_hdr`] into any histogram, [`to_picollo`] and
//! [`to_picollo_in`] into a new heap histogram, and [`view`], which reads them in place.

use picollo_core::{HistogramRead, Layout, Record, Window};

use super::error::InteropError;
use super::mapping::{indexes_alike, layout_for, BucketMapping};
use crate::hdr::counts::HdrGeometry;
use crate::hdr::error::HdrError;
use crate::hdr::HdrCounts;
use crate::heap::{self, HeapHistogram};

/// What [`add_hdr`] (and [`to_picollo_in`]) did.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Import {
    /// Counts added (saturating), inside and outside the target window.
    pub total: u64,
    /// How the HdrHistogram buckets landed in the Picollo buckets.
    pub mapping: BucketMapping,
    /// Counts whose bucket fell below the target window: the target counted them as underflow.
    pub underflow: u64,
    /// Counts whose bucket fell above the target window: the target counted them as overflow.
    pub overflow: u64,
}

impl Import {
    /// `true` when the import was exact ([`BucketMapping::is_exact`]) and everything landed
    /// inside the target window.
    pub fn is_exact(&self) -> bool {
        self.mapping.is_exact() && self.underflow == 0 && self.overflow == 0
    }

    /// Combines the report of another import (for example the next interval of a log).
    pub fn merge(&mut self, other: &Import) {
        self.total = self.total.saturating_add(other.total);
        self.mapping.merge(&other.mapping);
        self.underflow = self.underflow.saturating_add(other.underflow);
        self.overflow = self.overflow.saturating_add(other.overflow);
    }
}

/// Checks `source` completely before anything is recorded, so a failed import changes nothing.
fn validated_geometry(source: &HdrCounts) -> Result<HdrGeometry, InteropError> {
    let g = source.geometry()?;
    if let Some(index) = source.max_index() {
        if index >= g.counts_len() {
            return Err(HdrError::IndexOutOfRange {
                index,
                counts_len: g.counts_len(),
            }
            .into());
        }
    }
    Ok(g)
}

/// Adds HdrHistogram counts into any Picollo histogram (any layout, window and kind), with
/// the re-bucketing rule of the [module docs](super): each source bucket's count is recorded at
/// its lowest equivalent value. Counts landing outside the target's window are counted there
/// as underflow or overflow, and reported.
///
/// The source is checked completely first: on error, nothing was recorded. Values are
/// HdrHistogram's integer values: for a `DoubleHistogram`'s internal histogram
/// (`int_to_double_ratio != 1.0`) multiply by the ratio to get real values. The normalizing
/// offset plays no part (`counts` is in logical order).
///
/// ```
/// use picollo_alloc::hdr::{interop, HdrCounts};
/// use picollo_alloc::HistogramBuilder;
/// use picollo_core::{Layout, ReadExt};
///
/// let mut hdr = HdrCounts::new(20_000, 3_600_000_000_000, 2)?; // unit magnitude 14
/// hdr.record(2_768_895, 5)?;
/// let layout = Layout::from_block_scale(10).unwrap();
/// let mut h = HistogramBuilder::new().layout(layout).dense().plain()?;
/// let import = interop::add_hdr(&mut h, &hdr)?;
/// assert_eq!(h.total(), 5);
/// assert!(!import.is_exact()); // a 16 384-wide source bucket, finer target buckets
/// assert_eq!(import.mapping.max_abs_error, 16_383);
/// assert_eq!(h.max(), Some(2_754_559)); // inside the source bucket [2 752 512, 2 768 895]
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// [`InteropError::Hdr`] when `source` has an invalid geometry or a non-zero count beyond its
/// counts array.
pub fn add_hdr<H>(target: &mut H, source: &HdrCounts) -> Result<Import, InteropError>
where
    H: Record + HistogramRead + ?Sized,
{
    let g = validated_geometry(source)?;
    let layout = target.layout();
    let window = target.window();
    let half = g.sub_bucket_half_count();
    let mut import = Import {
        mapping: BucketMapping::new(indexes_alike(&g, layout)),
        ..Import::default()
    };
    let outside = |t: usize, count: u64, import: &mut Import| {
        if t < window.first() {
            import.underflow = import.underflow.saturating_add(count);
        } else if t > window.last() {
            import.overflow = import.overflow.saturating_add(count);
        }
    };
    if import.mapping.index_for_index {
        // Counts index `i` is Picollo logical index `i`: no bucket can split.
        for (index, &count) in source.counts.iter().enumerate() {
            if count == 0 {
                continue;
            }
            import.mapping.buckets += 1;
            import.total = import.total.saturating_add(count);
            outside(index, count, &mut import);
            target.record_n(layout.lo(index), count);
        }
        return Ok(import);
    }
    for (index, &count) in source.counts.iter().enumerate() {
        if count == 0 {
            continue;
        }
        // Validated above: every non-zero index is inside the counts array.
        let (Some(lo), Some(hi)) = (g.lowest_equivalent(index), g.highest_equivalent(index)) else {
            continue;
        };
        let t = layout.index_of(lo);
        import.mapping.note(lo, hi, layout.index_of(hi) != t, half);
        import.total = import.total.saturating_add(count);
        outside(t, count, &mut import);
        target.record_n(lo, count);
    }
    Ok(import)
}

/// The window [`to_picollo`] uses: `[0, highest_recordable]` under [`layout_for`], so every
/// count of the geometry lands inside it.
pub fn window_for(geometry: &HdrGeometry) -> Window {
    let layout = layout_for(geometry);
    Window::new(layout, 0, geometry.highest_recordable()).unwrap_or(Window::full(layout))
}

/// Converts HdrHistogram counts into a Picollo heap histogram at the matching layout
/// ([`layout_for`]) over [`window_for`]: index for index when the unit magnitude is 0,
/// otherwise re-bucketed with every reported value inside its HdrHistogram bucket (see the
/// [module docs](super)). Nothing lands outside the window.
///
/// ```
/// use picollo_alloc::hdr::{interop, HdrCounts};
/// use picollo_core::{EquivalentValue, ReadExt};
///
/// let mut hdr = HdrCounts::new(1, 3_600_000_000_000, 2)?;
/// hdr.record(1_000, 3)?;
/// hdr.record(2_768_895, 1)?;
/// let h = interop::to_picollo(&hdr)?;
/// assert_eq!(h.total(), 4);
/// assert_eq!(h.max(), Some(hdr.max()));
/// assert_eq!(h.percentile(50.0, EquivalentValue::Upper)?.value, 1_003);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// As [`add_hdr`].
pub fn to_picollo(source: &HdrCounts) -> Result<HeapHistogram<u64>, InteropError> {
    let g = validated_geometry(source)?;
    let (h, _) = to_picollo_in(source, layout_for(&g), window_for(&g))?;
    Ok(h)
}

/// Converts HdrHistogram counts into a new Picollo heap histogram with a caller-chosen layout
/// and window, returning what the conversion did ([`add_hdr`]). The histogram is
/// [`HistogramBuilder`](crate::HistogramBuilder)'s dense plain kind of that layout and window.
///
/// # Errors
/// As [`add_hdr`], and [`InteropError::Target`] for a layout and window the builder refuses
/// (a layout with a value unit).
pub fn to_picollo_in(
    source: &HdrCounts,
    layout: Layout,
    window: Window,
) -> Result<(HeapHistogram<u64>, Import), InteropError> {
    let g = validated_geometry(source)?;
    let builder = crate::HistogramBuilder::new().layout(layout).window(window);
    let mut h = builder.dense().plain().map_err(InteropError::Target)?;
    let import = if indexes_alike(&g, layout) {
        // A straight copy, through the core's same-layout `add`.
        h.add(&HdrView {
            counts: &source.counts,
            layout,
        });
        import_alike(&source.counts, window)
    } else {
        add_hdr(&mut h, source)?
    };
    Ok((h, import))
}

/// The [`Import`] of counts copied index for index into `window`.
fn import_alike(counts: &[u64], window: Window) -> Import {
    let sum = |c: &[u64]| c.iter().fold(0u64, |a, &n| a.saturating_add(n));
    let below = window.first().min(counts.len());
    let above = window.last().saturating_add(1).clamp(below, counts.len());
    Import {
        total: sum(counts),
        mapping: BucketMapping {
            buckets: counts.iter().filter(|&&n| n != 0).count(),
            ..BucketMapping::new(true)
        },
        underflow: sum(&counts[..below]),
        overflow: sum(&counts[above..]),
    }
}

/// HdrHistogram counts read in place as a Picollo histogram, without copying: every
/// [`ReadExt`](picollo_core::ReadExt) percentile, statistic and iterator works on it. Only for
/// geometries that index like a Picollo layout (`indexes_alike`: lowest discernible value 1,
/// 1 to 5 significant digits); see [`view`].
#[derive(Debug, Clone, Copy)]
pub struct HdrView<'a> {
    counts: &'a [u64],
    layout: Layout,
}

/// Reads HdrHistogram counts in place as a Picollo histogram at [`layout_for`] its geometry.
///
/// ```
/// use picollo_alloc::hdr::{interop, HdrCounts};
/// use picollo_core::{EquivalentValue, ReadExt};
///
/// let mut hdr = HdrCounts::new(1, 3_600_000_000_000, 3)?;
/// for v in 1..=1000u64 {
///     hdr.record(v * 1000, 1)?;
/// }
/// let view = interop::view(&hdr)?;
/// assert_eq!(view.total(), 1000);
/// assert_eq!(
///     Some(view.percentile(99.0, EquivalentValue::Upper)?.value),
///     hdr.value_at_percentile(99.0)
/// );
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// [`InteropError::NotIndexForIndex`] for a geometry that indexes differently, and
/// [`InteropError::Hdr`] for an invalid one or a non-zero count beyond its counts array.
pub fn view(counts: &HdrCounts) -> Result<HdrView<'_>, InteropError> {
    let g = validated_geometry(counts)?;
    let layout = layout_for(&g);
    if !indexes_alike(&g, layout) {
        return Err(InteropError::NotIndexForIndex {
            significant_digits: g.significant_digits(),
            unit_magnitude: g.unit_magnitude(),
        });
    }
    Ok(HdrView {
        counts: &counts.counts,
        layout,
    })
}

impl HistogramRead for HdrView<'_> {
    fn layout(&self) -> Layout {
        self.layout
    }

    /// Logical buckets `0..counts.len()` (at least one).
    fn window(&self) -> Window {
        Window::from_indices(self.layout, 0, self.counts.len())
    }

    fn count_at(&self, storage_index: usize) -> u64 {
        self.counts.get(storage_index).copied().unwrap_or(0)
    }

    /// Always 0: HdrHistogram has no underflow.
    fn underflow(&self) -> u64 {
        0
    }

    /// Always 0: HdrHistogram counts only what its counts array holds.
    fn overflow(&self) -> u64 {
        0
    }

    fn sum_range(&self, start: usize, end: usize) -> u64 {
        heap::sum_counts(self.counts, start, end)
    }

    /// The counts as a slice ([`picollo_core::storage::count_runs`]), as a snapshot's.
    fn recorded_runs(&self, f: &mut dyn FnMut(usize, &[u64])) {
        picollo_core::storage::count_runs(self.counts, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::HistogramBuilder;
    use picollo_core::{EquivalentValue, ReadExt};

    #[test]
    fn invalid_sources_change_nothing() {
        let layout = Layout::from_block_scale(10).unwrap();
        let mut h = HistogramBuilder::new()
            .layout(layout)
            .dense()
            .plain()
            .unwrap();
        let mut bad = HdrCounts::new(1, 1000, 3).unwrap();
        bad.counts = vec![1; 5000]; // beyond the 3072-entry counts array
        assert!(matches!(
            add_hdr(&mut h, &bad),
            Err(InteropError::Hdr(HdrError::IndexOutOfRange { .. }))
        ));
        bad.counts.clear();
        bad.significant_digits = 9;
        assert!(matches!(
            add_hdr(&mut h, &bad),
            Err(InteropError::Hdr(HdrError::InvalidGeometry(_)))
        ));
        assert_eq!(h.total_with_outside(), 0);
    }

    /// The copying path of `to_picollo_in` reports and counts exactly what `add_hdr` does.
    #[test]
    fn copy_and_record_paths_agree() {
        let mut hdr = HdrCounts::new(1, 1 << 40, 2).unwrap();
        for v in [0u64, 3, 99, 1000, 5000, 70_000, 1 << 39] {
            hdr.record(v, v % 7 + 1).unwrap();
        }
        let layout = Layout::from_block_scale(7).unwrap();
        for (min, max) in [
            (0, u64::MAX),
            (50, 60_000),
            (2000, 3000),
            (1 << 41, 1 << 42),
        ] {
            let window = Window::new(layout, min, max).unwrap();
            let (copied, import) = to_picollo_in(&hdr, layout, window).unwrap();
            let mut recorded = HistogramBuilder::new()
                .layout(layout)
                .window(window)
                .dense()
                .plain()
                .unwrap();
            let expected = add_hdr(&mut recorded, &hdr).unwrap();
            assert_eq!(import, expected, "[{min}, {max}]");
            assert_eq!(copied.storage(), recorded.storage());
            assert_eq!(
                (copied.underflow(), copied.overflow()),
                (import.underflow, import.overflow)
            );
            assert_eq!(import.total, hdr.total_count());
        }
    }

    #[test]
    fn view_reads_in_place() {
        let mut hdr = HdrCounts::new(1, 1 << 40, 3).unwrap();
        for v in (0..1_000_000u64).step_by(37) {
            hdr.record(v, 2).unwrap();
        }
        let v = view(&hdr).unwrap();
        let h = to_picollo(&hdr).unwrap();
        assert_eq!(v.total(), h.total());
        assert_eq!(v.stats(), h.stats());
        for rank in [0.0, 50.0, 99.0, 99.99, 100.0] {
            assert_eq!(
                v.percentile(rank, EquivalentValue::Midpoint),
                h.percentile(rank, EquivalentValue::Midpoint)
            );
        }
        let coarse = HdrCounts::new(1000, 1 << 40, 3).unwrap();
        assert!(matches!(
            view(&coarse),
            Err(InteropError::NotIndexForIndex {
                significant_digits: 3,
                unit_magnitude: 9
            })
        ));
        let zero_digits = HdrCounts::new(1, 1 << 40, 0).unwrap();
        assert!(view(&zero_digits).is_err());
    }
}
