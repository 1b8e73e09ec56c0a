//! Consistent reads under concurrent resets (seqlock retry): [`consistent`] waits out a reset,
//! [`try_consistent`] gives up after [`TRY_READ_ATTEMPTS`](super::TRY_READ_ATTEMPTS) passes.

use super::error::ResetInProgress;
use super::histogram_read::HistogramRead;

/// Runs `f` until it completes without a concurrent structural change (seqlock retry).
/// **Blocking** while a reset is in progress (see [`ReadExt`](super::ReadExt)'s "Progress");
/// [`try_consistent`] never waits.
pub fn consistent<H: HistogramRead + ?Sized, R>(h: &H, mut f: impl FnMut(&H) -> R) -> R {
    loop {
        let token = h.read_begin();
        let r = f(h);
        if !h.read_retry(token) {
            return r;
        }
        core::hint::spin_loop();
    }
}

/// Passes a `try_` read makes before it reports [`ResetInProgress`]: a pass is redone only
/// when a reset started or ended during it, so four passes fail only when resets keep
/// overlapping the read (a resetting thread in a loop, or an interrupt that resets at every
/// tick while the read runs in thread mode).
pub(crate) const TRY_READ_ATTEMPTS: usize = 4;

/// Runs `f` without waiting: [`ResetInProgress`] when a reset is in progress as it starts, or when
/// resets overlapped each of 4 passes (seqlock,
/// optimistic retry, bounded). **Wait-free**: at most that many calls of `f`. What the `try_` reads
/// of [`ReadExt`](super::ReadExt) are built on; use it for a consistent read of your own.
///
/// ```
/// use picollo_core::prelude::*;
/// use picollo_core::read::try_consistent;
/// let h = AtomicHistogram::<[AtomicU32; storage_len(Layout::DEFAULT, 1, 1000)]>::new(
///     Layout::DEFAULT, 1, 1000);
/// h.record(7);
/// h.record(2000);
/// let both = try_consistent(&h, |h| (h.count_at(0), h.overflow()));
/// assert_eq!(both, Ok((0, 1)));
/// ```
pub fn try_consistent<H: HistogramRead + ?Sized, R>(
    h: &H,
    mut f: impl FnMut(&H) -> R,
) -> Result<R, ResetInProgress> {
    for _ in 0..TRY_READ_ATTEMPTS {
        let token = h.try_read_begin().ok_or(ResetInProgress)?;
        let r = f(h);
        if !h.read_retry(token) {
            return Ok(r);
        }
    }
    Err(ResetInProgress)
}
