//! Counter sources: anything that ticks (clocks, cycle counters, PMU counter groups) and feeds
//! deltas into histograms.

/// Why a source could not produce a sample.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum SourceError {
    /// The source does not exist on this machine, or is not enabled.
    Unavailable,
    /// The output slice is shorter than [`CounterSource::values`].
    BufferTooShort,
    /// The source exists but did not count during the interval (for example a multiplexed PMU
    /// counter whose `time_running` is 0). Never report this as a zero.
    NotCounted,
    /// An operating-system error number.
    Os(i32),
}

/// Anything that yields samples of one or several monotonic `u64` counters.
///
/// The deltas between two samples are what histograms record. A counter that is narrower than
/// 64 bits (Cortex-M `CYCCNT` is 32 bits) says so in [`CounterSource::value_bits`], and
/// [`delta`] computes the wrapped difference.
pub trait CounterSource {
    /// How many values one sample holds (1 for a clock).
    fn values(&self) -> usize;

    /// Width in bits of each value; deltas wrap at this width. 64 unless the hardware is narrower.
    fn value_bits(&self) -> u32 {
        64
    }

    /// Takes one sample into `out[..self.values()]`.
    fn sample_into(&mut self, out: &mut [u64]) -> Result<(), SourceError>;

    /// Takes one sample and returns its first value: the fast path scopes use.
    fn sample_first(&mut self) -> Result<u64, SourceError>;
}

/// The difference `later - earlier` of a counter that wraps at `bits` bits (1..=64).
///
/// A `bits` of 0 or above 64 is treated as 64.
#[inline]
pub const fn delta(earlier: u64, later: u64, bits: u32) -> u64 {
    let d = later.wrapping_sub(earlier);
    if bits == 0 || bits >= 64 {
        d
    } else {
        d & ((1u64 << bits) - 1)
    }
}
