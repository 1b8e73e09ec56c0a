//! Into Picollo: the counts as a `picollo-core` histogram, without copying them.
//!
//! `hdrhistogram`'s counts array and Picollo's cells are the same index space when the
//! precision and the unit match: `2^k` sub-buckets per half bucket are Picollo's block of
//! `B = 2^k` buckets, the unit `2^u` its value unit, and counts index `i` is Picollo's logical
//! index `u·B + i` (picollo-alloc's `hdr` module documents the mapping). So the counts need no
//! rebucketing: [`Histogram::as_picollo`] lends them to a read-only Picollo histogram,
//! [`Histogram::into_picollo`] moves them into a recording one. From there every Picollo read
//! applies, and `picollo-export` sends them on (Prometheus native histograms, OTLP):
//!
//! ```
//! use picollo_core::ReadExt;
//! use picollo_hdrhistogram::Histogram;
//!
//! let mut h = Histogram::<u64>::new_with_bounds(1, 3_600_000_000, 3).unwrap();
//! for v in [1_000, 2_000, 2_000, 150_000] {
//!     h.record(v).unwrap();
//! }
//! let p = h.as_picollo().unwrap();
//! assert_eq!(p.total(), 4);
//! assert_eq!(p.max(), Some(150_015)); // the highest value of 150000's bucket
//! ```
//!
//! `u8` counts have no Picollo cell type (Picollo's cells are `u16`, `u32` and `u64`), and
//! two configurations have no Picollo layout: 0 significant digits (one sub-bucket per half
//! bucket; Picollo's blocks hold at least two buckets) and a lowest discernible value of
//! `2^32` or more ([`NotPicolloLayout`]).

use alloc::vec::Vec;
use core::fmt;

use picollo_core::{Layout, Storage, StorageMut, UnitLayout, Window};

use crate::{Counter, Histogram};

/// Why a histogram's buckets have no Picollo layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotPicolloLayout {
    /// 0 significant digits: one sub-bucket per half bucket, below Picollo's smallest block
    /// of two buckets.
    ZeroSignificantDigits,
    /// A lowest discernible value of `2^32` or more: a unit above Picollo's `2^31`.
    LowestDiscernibleTooLarge(u64),
}

impl fmt::Display for NotPicolloLayout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NotPicolloLayout::ZeroSignificantDigits => f.write_str(
                "0 significant digits have no Picollo layout (its blocks hold at least 2 buckets)",
            ),
            NotPicolloLayout::LowestDiscernibleTooLarge(low) => write!(
                f,
                "a lowest discernible value of {low} has no Picollo layout (units up to 2^31)"
            ),
        }
    }
}

impl core::error::Error for NotPicolloLayout {}

/// The counts of a [`Histogram`] as Picollo storage: what [`Histogram::into_picollo`] moves
/// them into, one cell per counts-array index.
#[derive(Debug, Clone)]
pub struct PicolloCounts<T>(Vec<T>);

impl<T> PicolloCounts<T> {
    /// The counts back, by counts-array index.
    pub fn into_inner(self) -> Vec<T> {
        self.0
    }
}

impl<T> Storage for PicolloCounts<T> {
    type Item = T;
    fn as_slice(&self) -> &[T] {
        &self.0
    }
}

impl<T> StorageMut for PicolloCounts<T> {
    fn as_mut_slice(&mut self) -> &mut [T] {
        &mut self.0
    }
}

/// A read-only Picollo histogram lending a [`Histogram`]'s counts.
pub type PicolloView<'a, T> = picollo_core::Histogram<&'a [T], UnitLayout>;

/// A Picollo histogram owning a [`Histogram`]'s counts.
pub type PicolloOwned<T> = picollo_core::Histogram<PicolloCounts<T>, UnitLayout>;

impl<T: Counter> Histogram<T> {
    /// The Picollo layout and window of these buckets: the block scale is `k`, the unit
    /// `2^u`, and the window the counts array, from Picollo's first index on.
    pub fn picollo_layout(&self) -> Result<(Layout, Window), NotPicolloLayout> {
        let layout = Layout::from_block_scale(self.sub_bucket_half_count_magnitude)
            .ok_or(NotPicolloLayout::ZeroSignificantDigits)?
            .with_lowest_discernible(self.lowest_discernible_value)
            .map_err(|_| {
                NotPicolloLayout::LowestDiscernibleTooLarge(self.lowest_discernible_value)
            })?;
        // The unit `hdrhistogram` takes (through the float logarithm) and Picollo's (the
        // integer one) agree below 2^53, so within Picollo's range of units.
        debug_assert_eq!(layout.unit_magnitude(), self.unit_magnitude);
        let window = Window::from_indices(layout, layout.first_index(), self.counts.len());
        // The counts never reach past the last bucket of `u64`, which Picollo's layout covers.
        debug_assert_eq!(window.len(), self.counts.len());
        Ok((layout, window))
    }
}

impl<T: Counter + picollo_core::Counter> Histogram<T> {
    /// A read-only Picollo histogram over these counts, lent, not copied: Picollo's reads
    /// (its percentiles, summaries, tables) and `picollo-export`'s encoders take it. Its
    /// total is the sum of the counts (a count that saturated stays at its maximum there,
    /// where [`Histogram::len`] counts on).
    pub fn as_picollo(&self) -> Result<PicolloView<'_, T>, NotPicolloLayout> {
        let (layout, window) = self.picollo_layout()?;
        Ok(
            picollo_core::Histogram::with_counts(UnitLayout::new(layout), &self.counts[..], window)
                .expect(WINDOW_FITS),
        )
    }

    /// These counts moved into a Picollo histogram that records on (Picollo's rules from
    /// then on: values outside the counts array are counted as overflow, not refused), with
    /// no copy. On a configuration without a Picollo layout the histogram comes back with
    /// the reason.
    #[allow(clippy::result_large_err)] // the histogram itself comes back, as `TryFrom` would
    pub fn into_picollo(self) -> Result<PicolloOwned<T>, (Self, NotPicolloLayout)> {
        let (layout, window) = match self.picollo_layout() {
            Ok(lw) => lw,
            Err(e) => return Err((self, e)),
        };
        Ok(picollo_core::Histogram::with_counts(
            UnitLayout::new(layout),
            PicolloCounts(self.counts),
            window,
        )
        .expect(WINDOW_FITS))
    }
}

/// Why `with_counts` cannot refuse what `picollo_layout` gives: the window is the counts
/// array's length (HdrHistogram's last bucket ends at `u64::MAX`, as Picollo's layout does, so
/// `(65 - k - u) · 2^k` counts at most, exactly Picollo's indices from its first), and a
/// `UnitLayout` records any unit.
const WINDOW_FITS: &str = "the window is the counts array, within the layout";
