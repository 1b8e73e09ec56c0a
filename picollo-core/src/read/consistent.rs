//! Consistent reads under concurrent resets (seqlock retry): [`consistent`] waits out a reset;
//! `try_consistent` gives up after [`TRY_READ_ATTEMPTS`] passes, under
//! [`ReadExt::try_read`](super::ReadExt::try_read), whose closure reads a [`OnePass`].

use super::error::ResetInProgress;
use super::histogram_read::HistogramRead;

/// Runs `f` until it completes without a concurrent structural change (seqlock retry).
/// **Blocking** while a reset is in progress (see [`ReadExt`](super::ReadExt)'s "Progress");
/// [`ReadExt::try_read`](super::ReadExt::try_read) never waits.
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

/// Passes `try_read` makes before it reports [`ResetInProgress`]: a pass is redone only
/// when a reset started or ended during it, so four passes fail only when resets keep
/// overlapping the read (a resetting thread in a loop, or an interrupt that resets at every
/// tick while the read runs in thread mode).
pub(crate) const TRY_READ_ATTEMPTS: usize = 4;

/// Runs `f` without waiting: [`ResetInProgress`] when a reset is in progress as it starts, or
/// when resets overlapped each of 4 passes (seqlock, optimistic retry, bounded). **Wait-free**:
/// at most that many calls of `f`. What [`ReadExt::try_read`](super::ReadExt::try_read) is.
pub(crate) fn try_consistent<H: HistogramRead + ?Sized, R>(
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

/// A histogram read in one pass: what [`ReadExt::try_read`](super::ReadExt::try_read)'s closure
/// reads. Its reads are the histogram's, without a bracket of their own (the `try_read` around
/// them is the bracket, and checks the pass): every [`ReadExt`](super::ReadExt) read of it
/// makes one pass and waits for nothing.
pub struct OnePass<'a, H: ?Sized>(&'a H);

impl<'a, H: ?Sized> OnePass<'a, H> {
    /// The histogram read.
    pub(crate) fn new(histogram: &'a H) -> Self {
        OnePass(histogram)
    }
}

/// Every read forwarded but the bracket (`read_begin`, `try_read_begin`, `read_retry`), left
/// at the defaults that never wait and never retry.
impl<H: HistogramRead + ?Sized> HistogramRead for OnePass<'_, H> {
    crate::forward_histogram_read!(unbracketed: |p| *p.0);
}
