//! Where another histogram's counts land in a target ([`for_each_landing`], the re-bucketing
//! rule of [`Histogram::add`]), and [`Histogram::subtract`], which takes them away again.

use super::{rebucketing, Histogram, Rebucketing};
use crate::layout::LayoutSpec;
use crate::read::HistogramRead;
use crate::storage::{CellsMut, Counter};
use crate::window::WindowSpec;
use crate::{Layout, Window};
use core::fmt;

/// Where counts of a source histogram land in a target: a bucket of the target's window (by
/// storage index), or its underflow or overflow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Landing {
    /// The bucket at this storage index of the target.
    Slot(usize),
    /// Below the target's window.
    Underflow,
    /// Above the target's window.
    Overflow,
}

/// Calls `f(landing, count)` for the counts of `source` as a target of `layout` and `window`
/// receives them, by the rule of [`Histogram::add`]: a source bucket goes to the target bucket
/// holding its lowest value, or to the target's underflow or overflow when that is outside
/// the window; the source's own underflow and overflow go to the target's.
///
/// Buckets that land in the same place are merged (counts saturating), so each
/// [`Landing::Slot`] comes at most once, in increasing order; [`Landing::Underflow`] and
/// [`Landing::Overflow`] may come twice (mapped buckets, then the source's own count).
/// Empty landings are left out.
///
/// ```
/// use picollo_core::histogram::{for_each_landing, Landing};
/// use picollo_core::{storage_len, Histogram, Layout, Window};
///
/// const FINE: Layout = Layout::from_block_scale(9).unwrap();
/// let coarse = Layout::from_block_scale(4).unwrap();
/// let mut h = Histogram::<[u32; storage_len(FINE, 0, 100_000)]>::new(FINE, 0, 100_000);
/// h.record(1000);
/// h.record(1001); // another fine bucket, the same coarse one
/// h.record(200_000); // overflow
/// let target = Window::new(coarse, 0, 10_000).unwrap();
/// let mut landed = Vec::new();
/// for_each_landing(&h, coarse, target, |l, n| landed.push((l, n)));
/// let slot = target.storage_index(coarse.index_of(1000)).unwrap();
/// assert_eq!(landed, [(Landing::Slot(slot), 2), (Landing::Overflow, 1)]);
/// ```
pub fn for_each_landing<R: HistogramRead + ?Sized>(
    source: &R,
    layout: Layout,
    window: Window,
    mut f: impl FnMut(Landing, u64),
) {
    let source_layout = source.layout();
    let source_window = source.window();
    let mut pending: Option<(Landing, u64)> = None;
    source.recorded_runs(&mut |start, counts| {
        for (i, &n) in counts.iter().enumerate() {
            if n == 0 {
                continue;
            }
            let logical = source_window.first() + start + i;
            let target = if source_layout == layout {
                logical
            } else {
                layout.index_of(source_layout.lo(logical))
            };
            let landing = match window.storage_index(target) {
                Some(slot) => Landing::Slot(slot),
                None if target < window.first() => Landing::Underflow,
                None => Landing::Overflow,
            };
            match &mut pending {
                Some((at, sum)) if *at == landing => *sum = sum.saturating_add(n),
                _ => {
                    if let Some((at, sum)) = pending.replace((landing, n)) {
                        f(at, sum);
                    }
                }
            }
        }
    });
    if let Some((at, sum)) = pending {
        f(at, sum);
    }
    for (landing, n) in [
        (Landing::Underflow, source.underflow()),
        (Landing::Overflow, source.overflow()),
    ] {
        if n != 0 {
            f(landing, n);
        }
    }
}

/// Why [`Histogram::subtract`] (or a snapshot's or `HdrCounts`'s) refused: the subtrahend holds
/// more values somewhere than the histogram. Nothing was subtracted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum SubtractError {
    /// A bucket of the histogram (`lo..=highest`) holds fewer values than the subtrahend
    /// puts there.
    Bucket {
        /// The lowest value of the bucket.
        lo: u64,
        /// The highest value of the bucket.
        highest: u64,
        /// Values the histogram holds there.
        have: u64,
        /// Values the subtrahend holds there.
        subtract: u64,
    },
    /// The histogram's underflow is smaller than what the subtrahend puts below its window.
    Underflow {
        /// The histogram's underflow.
        have: u64,
        /// What the subtrahend puts below the window.
        subtract: u64,
    },
    /// The histogram's overflow is smaller than what the subtrahend puts above its window
    /// (HdrHistogram refuses a subtrahend with values beyond its range; here they count
    /// against the overflow).
    Overflow {
        /// The histogram's overflow.
        have: u64,
        /// What the subtrahend puts above the window.
        subtract: u64,
    },
}

impl fmt::Display for SubtractError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Bucket {
                lo,
                highest,
                have,
                subtract,
            } => write!(
                f,
                "cannot subtract {subtract} values from the bucket {lo}..={highest}, which holds \
                 {have} (the subtrahend is larger there); nothing was subtracted"
            ),
            Self::Underflow { have, subtract } => write!(
                f,
                "cannot subtract {subtract} values below the window from an underflow of {have}; \
                 nothing was subtracted"
            ),
            Self::Overflow { have, subtract } => write!(
                f,
                "cannot subtract {subtract} values above the window from an overflow of {have}; \
                 nothing was subtracted"
            ),
        }
    }
}

impl core::error::Error for SubtractError {}

/// Checks that a target holding `count(slot)` in its cells and `under`, `over` outside can
/// give up `source`'s counts as they land in it (`layout`, `window`): the first shortfall, or
/// `Ok`. The check every `subtract` makes before it changes anything.
///
/// ```
/// use picollo_core::histogram::{check_subtract, SubtractError};
/// use picollo_core::{storage_len, Histogram, HistogramRead, Layout};
///
/// const L: Layout = Layout::DEFAULT;
/// let mut a = Histogram::<[u32; storage_len(L, 0, 1000)]>::new(L, 0, 1000);
/// let mut b = a.clone();
/// a.record(5);
/// b.record_n(5, 2);
/// let refused = check_subtract(&b, L, a.window(), |s| a.count_at(s), 0, 0);
/// assert!(matches!(refused, Err(SubtractError::Bucket { have: 1, subtract: 2, .. })));
/// ```
pub fn check_subtract<R: HistogramRead + ?Sized>(
    source: &R,
    layout: Layout,
    window: Window,
    count: impl Fn(usize) -> u64,
    under: u64,
    over: u64,
) -> Result<(), SubtractError> {
    let (mut below, mut above, mut short) = (0u64, 0u64, None);
    for_each_landing(source, layout, window, |landing, n| match landing {
        Landing::Slot(slot) => {
            let have = count(slot);
            if have < n && short.is_none() {
                let logical = window.first() + slot;
                short = Some(SubtractError::Bucket {
                    lo: layout.lo(logical),
                    highest: layout.highest(logical),
                    have,
                    subtract: n,
                });
            }
        }
        Landing::Underflow => below = below.saturating_add(n),
        Landing::Overflow => above = above.saturating_add(n),
    });
    if let Some(e) = short {
        return Err(e);
    }
    if below > under {
        return Err(SubtractError::Underflow {
            have: under,
            subtract: below,
        });
    }
    if above > over {
        return Err(SubtractError::Overflow {
            have: over,
            subtract: above,
        });
    }
    Ok(())
}

impl<S, L, W> Histogram<S, L, W>
where
    S: CellsMut,
    S::Item: Counter,
    L: LayoutSpec,
    W: WindowSpec,
{
    /// Takes every count of `other` (any kind, any layout or window) away from `self`:
    /// HdrHistogram's `subtract`, the counterpart of [`Histogram::add`] with the same
    /// re-bucketing rule ([`for_each_landing`]) and the same [`Rebucketing`] report. The use:
    /// the values of one interval, from two cumulative snapshots.
    ///
    /// Refused, with nothing changed, when `other` holds more than `self` anywhere: in a bucket
    /// ([`SubtractError::Bucket`]), below the window or above it (its underflow and overflow,
    /// and its buckets that land there, count against `self`'s). HdrHistogram refuses a
    /// subtrahend with values beyond its range, and leaves the buckets it had already
    /// subtracted when it refuses; here values beyond the window are subtracted from the
    /// overflow, and a refusal changes nothing.
    ///
    /// `other` is read twice (a check, then the subtraction): subtract from a snapshot, not
    /// from a histogram other threads are recording into, for a consistent result (a bucket
    /// that grew between the two reads is emptied, never wrapped).
    ///
    /// ```
    /// use picollo_core::prelude::*;
    ///
    /// const L: Layout = Layout::DEFAULT;
    /// let mut total = Histogram::<[u64; storage_len(L, 0, 100_000)]>::new(L, 0, 100_000);
    /// total.record_n(100, 3);
    /// let earlier = total.clone(); // the cumulative counts at the start of an interval
    /// total.record_n(4_000, 2);
    /// total.record(500_000); // overflow
    ///
    /// let mut interval = total.clone();
    /// interval.subtract(&earlier).unwrap();
    /// assert_eq!((interval.total(), interval.overflow()), (2, 1));
    ///
    /// // A subtrahend larger than the histogram: refused, nothing changed.
    /// let mut small = earlier.clone();
    /// assert!(small.subtract(&total).is_err());
    /// assert_eq!(small.total(), 3);
    /// ```
    pub fn subtract<R: HistogramRead + ?Sized>(
        &mut self,
        other: &R,
    ) -> Result<Rebucketing, SubtractError> {
        let layout = self.base.spec.layout();
        let window = self.window();
        let cells = &self.base.storage;
        check_subtract(
            other,
            layout,
            window,
            |s| cells.count_at(s),
            self.base.tallies.underflow,
            self.base.tallies.overflow,
        )?;
        let (storage, underflow, overflow) = (
            &mut self.base.storage,
            &mut self.base.tallies.underflow,
            &mut self.base.tallies.overflow,
        );
        for_each_landing(other, layout, window, |landing, n| match landing {
            Landing::Slot(slot) => storage.take_at(slot, n, |cell, left| {
                *cell = Counter::ZERO;
                cell.add(left);
            }),
            Landing::Underflow => *underflow = underflow.saturating_sub(n),
            Landing::Overflow => *overflow = overflow.saturating_sub(n),
        });
        Ok(rebucketing(other.layout(), layout))
    }
}
