//! Why a read failed: [`PercentileError`] and [`ResetInProgress`].

use core::fmt;

/// Why a percentile could not be computed.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum PercentileError {
    /// The rank is NaN, negative or above 100.
    InvalidRank(f64),
    /// Nothing was recorded inside the window.
    Empty,
    /// The output slice is shorter than the ranks.
    OutputTooShort {
        /// Ranks requested.
        ranks: usize,
        /// Room in the output.
        room: usize,
    },
    /// A [`try_read`](super::ReadExt::try_read) found a reset in progress (see
    /// [`ResetInProgress`]); nothing was lost, ask again later. What `?` turns a
    /// `ResetInProgress` into, so that `h.try_read(|r| r.fixed_percentile(rank, sel))??`
    /// gives one error type.
    ResetInProgress,
}

impl fmt::Display for PercentileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::InvalidRank(r) => write!(f, "percentile rank {r} is not a number in 0..=100"),
            Self::Empty => f.write_str("the histogram has no values inside its window"),
            Self::OutputTooShort { ranks, room } => {
                write!(f, "{ranks} ranks requested but the output holds {room}")
            }
            Self::ResetInProgress => ResetInProgress.fmt(f),
        }
    }
}

impl core::error::Error for PercentileError {}

impl From<ResetInProgress> for PercentileError {
    fn from(_: ResetInProgress) -> Self {
        PercentileError::ResetInProgress
    }
}

/// What [`ReadExt::try_read`](super::ReadExt::try_read) returns instead of waiting: a reset of
/// the histogram was in progress when it started, or resets overlapped all its 4 passes. Nothing was lost: the histogram is being
/// cleared, and a later read sees the result. An interrupt handler that gets it has landed inside a
/// reset it must not wait for (the reset cannot go on until the handler returns): it asks again at
/// its next interrupt.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ResetInProgress;

impl fmt::Display for ResetInProgress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a reset of the histogram is in progress: read again later")
    }
}

impl core::error::Error for ResetInProgress {}
