//! [`ScalableCounter`]: one [`ScalableCell`] bundled with its [`ScalableConfig`], the shared
//! approximate counter most users want.

use super::{RandomSource, ScalableCell, ScalableConfig};
use crate::cell::{AtomicWord, RmwAtomic, Word};
use core::fmt;

/// A shared approximate counter: exact below `2^threshold`, then probabilistic with a bounded
/// relative error (σ at most 0.96 % with the defaults), and cheap under contention.
///
/// Const-constructible, so it can live in a `static`; all methods take `&self`. Each thread
/// passes its own [`RandomSource`]. See the [module documentation](crate::scalable) for the update rule,
/// the estimator and the error.
///
/// ```
/// use picollo_core::scalable::{ScalableConfig, ScalableCounter, XorShift};
///
/// static REQUESTS: ScalableCounter = ScalableCounter::new();
/// static COARSE: ScalableCounter = ScalableCounter::with_config(
///     ScalableConfig::new().with_threshold(8).with_exact_while_uncontended(false),
/// );
///
/// let mut rng = XorShift::from_seed_and_thread(42, 0);
/// for _ in 0..20_000 {
///     REQUESTS.inc(&mut rng);
///     COARSE.inc(&mut rng);
/// }
/// // One writer, exact-while-uncontended: exact.
/// assert_eq!(REQUESTS.get(), 20_000);
/// assert!(!REQUESTS.is_contended());
/// // Probabilistic above 2^8 = 256: close, not exact (σ about 5.3 % here).
/// let err = (COARSE.get() as f64 - 20_000.0) / 20_000.0;
/// assert!(err.abs() < 0.25);
///
/// REQUESTS.add(5, &mut rng);
/// assert_eq!(REQUESTS.take(), 20_005);
/// assert_eq!(REQUESTS.get(), 0);
/// ```
#[derive(Default)]
pub struct ScalableCounter {
    cell: ScalableCell,
    config: ScalableConfig,
}

impl ScalableCounter {
    /// A zero counter with the default configuration ([`ScalableConfig::new`]): threshold 13,
    /// shift capped at 10, exact while uncontended.
    pub const fn new() -> Self {
        Self::with_config(ScalableConfig::new())
    }

    /// A zero counter, exact below `2^threshold` (clamped to
    /// [`ScalableConfig::MAX_THRESHOLD`]), otherwise with the default configuration.
    pub const fn with_threshold(threshold: u32) -> Self {
        Self::with_config(ScalableConfig::new().with_threshold(threshold))
    }

    /// A zero counter with the given configuration.
    pub const fn with_config(config: ScalableConfig) -> Self {
        Self {
            cell: ScalableCell::new(),
            config,
        }
    }

    /// This counter's configuration.
    pub const fn config(&self) -> ScalableConfig {
        self.config
    }

    /// Counts one event. Most calls above the threshold only load the counter and draw from
    /// `rng`.
    #[inline]
    pub fn inc<R: RandomSource + ?Sized>(&self, rng: &mut R)
    where
        for<'a> AtomicWord: RmwAtomic<Word>,
    {
        self.cell.inc_with(&self.config, rng);
    }

    /// Counts `n` events at once, unbiased, with at most one write (see [`ScalableCell::add`]).
    #[inline]
    pub fn add<R: RandomSource + ?Sized>(&self, n: u64, rng: &mut R)
    where
        for<'a> AtomicWord: RmwAtomic<Word>,
    {
        self.cell.add(self.config, n, rng);
    }

    /// The estimate of the number of events since the last reset: the stored value, unbiased,
    /// exact below `2^threshold`. One relaxed load.
    #[inline]
    pub fn get(&self) -> u64 {
        self.cell.get()
    }

    /// Whether the counter has switched to probabilistic updates because an exact-mode CAS
    /// failed (see [`ScalableCell::is_contended`]).
    #[inline]
    pub fn is_contended(&self) -> bool {
        self.cell.is_contended()
    }

    /// Sets the counter to 0 and back to exact mode.
    pub fn reset(&self) {
        self.cell.reset();
    }

    /// Returns the estimate and resets the counter atomically.
    pub fn take(&self) -> u64
    where
        for<'a> AtomicWord: RmwAtomic<Word>,
    {
        self.cell.take()
    }
}

#[cfg(feature = "defmt")]
#[cfg_attr(docsrs, doc(cfg(feature = "defmt")))]
impl defmt::Format for ScalableCounter {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(
            f,
            "ScalableCounter {{ estimate: {=u64}, contended: {=bool}, config: {} }}",
            self.get(),
            self.is_contended(),
            self.config
        )
    }
}

impl fmt::Debug for ScalableCounter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScalableCounter")
            .field("estimate", &self.get())
            .field("contended", &self.is_contended())
            .field("config", &self.config)
            .finish()
    }
}
