//! The histogram builder (seed 000's `Factory`) and the default histogram.
//!
//! ```
//! use picollo_alloc::HistogramBuilder;
//! use picollo_core::{HistogramRead, ReadExt};
//!
//! let mut h = HistogramBuilder::new()
//!     .relative_error(0.01)
//!     .u32_storage()
//!     .min_trackable(10_000)
//!     .max_trackable(30_000)
//!     .plain()
//!     .unwrap();
//! h.record(20_000);
//! h.record(40_000); // above the window: overflow
//! assert_eq!((h.total(), h.overflow()), (1, 1));
//! ```

use crate::heap::{self, HeapAtomicHistogram, HeapHistogram, HeapStorage};
use crate::thread_local::{LocalCounter, ThreadLocalHistogram};
use core::fmt;
use core::marker::PhantomData;
use picollo_core::approx::ApproxHistogram;
use picollo_core::atomic::AtomicCounter;
use picollo_core::scalable::{ScalableCell, ScalableConfig};
use picollo_core::{Counter, Layout, LayoutError, Window, WindowError};
use portable_atomic::{AtomicU32, AtomicU64};

/// A counter width the builder can store: `u32` or `u64`, with its atomic twin.
pub trait StorageWidth: Counter + LocalCounter {
    /// The atomic counter of the same width.
    type Atomic: AtomicCounter;
}

impl StorageWidth for u32 {
    type Atomic = AtomicU32;
}

impl StorageWidth for u64 {
    type Atomic = AtomicU64;
}

/// Why the builder could not build.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum BuildError {
    /// The relative error or block scale is not acceptable.
    Layout(LayoutError),
    /// The min and max trackable values do not form a window.
    Window(WindowError),
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Layout(e) => write!(f, "histogram layout: {e}"),
            Self::Window(e) => write!(f, "histogram window: {e}"),
        }
    }
}

impl std::error::Error for BuildError {}

impl From<LayoutError> for BuildError {
    fn from(e: LayoutError) -> Self {
        Self::Layout(e)
    }
}

impl From<WindowError> for BuildError {
    fn from(e: WindowError) -> Self {
        Self::Window(e)
    }
}

/// Configures a histogram: precision, counter width, trackable range, then the kind.
///
/// Defaults: relative error 0.001 (block size 512), `u64` counters, the full `u64` range.
/// Invalid settings are reported by the final `plain`/`atomic`/… call, not silently clamped.
#[derive(Clone, Copy, Debug)]
pub struct HistogramBuilder<C = u64> {
    layout: Result<Layout, LayoutError>,
    min: u64,
    max: u64,
    width: PhantomData<C>,
}

impl Default for HistogramBuilder<u64> {
    fn default() -> Self {
        Self::new()
    }
}

impl HistogramBuilder<u64> {
    /// A builder with the defaults.
    pub fn new() -> Self {
        HistogramBuilder {
            layout: Ok(Layout::DEFAULT),
            min: 0,
            max: u64::MAX,
            width: PhantomData,
        }
    }
}

impl<C: StorageWidth> HistogramBuilder<C> {
    /// The largest acceptable relative error (see [`Layout::try_from_relative_error`]).
    pub fn relative_error(mut self, relative_error: f64) -> Self {
        self.layout = Layout::try_from_relative_error(relative_error);
        self
    }

    /// An explicit layout.
    pub fn layout(mut self, layout: Layout) -> Self {
        self.layout = Ok(layout);
        self
    }

    /// `u32` bucket counters: half the memory; a bucket saturates at `u32::MAX`.
    pub fn u32_storage(self) -> HistogramBuilder<u32> {
        self.with_width()
    }

    /// `u64` bucket counters (the default).
    pub fn u64_storage(self) -> HistogramBuilder<u64> {
        self.with_width()
    }

    fn with_width<D>(self) -> HistogramBuilder<D> {
        HistogramBuilder {
            layout: self.layout,
            min: self.min,
            max: self.max,
            width: PhantomData,
        }
    }

    /// The smallest value stored in buckets; smaller values count as underflow.
    pub fn min_trackable(mut self, min: u64) -> Self {
        self.min = min;
        self
    }

    /// The largest value stored in buckets; larger values count as overflow.
    pub fn max_trackable(mut self, max: u64) -> Self {
        self.max = max;
        self
    }

    /// The layout and window this builder describes.
    pub fn resolve(&self) -> Result<(Layout, Window), BuildError> {
        let layout = self.layout?;
        Ok((layout, Window::new(layout, self.min, self.max)?))
    }

    /// A plain, single-writer histogram.
    pub fn plain(self) -> Result<HeapHistogram<C>, BuildError> {
        let (layout, window) = self.resolve()?;
        Ok(heap::plain(layout, window))
    }

    /// An atomic histogram: many writers, one `fetch_add` per record.
    pub fn atomic(self) -> Result<HeapAtomicHistogram<C::Atomic>, BuildError> {
        let (layout, window) = self.resolve()?;
        Ok(heap::atomic(layout, window))
    }

    /// A thread-local histogram: each thread writes its own shard, readers sum them.
    pub fn thread_local(self) -> Result<ThreadLocalHistogram<C>, BuildError> {
        let (layout, window) = self.resolve()?;
        Ok(ThreadLocalHistogram::new(layout, window))
    }

    /// An approximate histogram: shared buckets that count with the scalable scheme of
    /// seed 003 (default threshold 13), for hot shared histograms where contention dominates.
    /// The counter width does not apply (scalable cells are 64-bit).
    pub fn approximate(self) -> Result<HeapApproxHistogram, BuildError> {
        let (layout, window) = self.resolve()?;
        let cells = HeapStorage::with_len(window.len(), ScalableCell::new);
        Ok(ApproxHistogram::with_storage(
            layout,
            cells,
            window,
            ScalableConfig::new(),
        )?)
    }
}

/// An approximate histogram on the heap.
pub type HeapApproxHistogram = ApproxHistogram<HeapStorage<ScalableCell>, Layout>;

/// The default histogram: `u64` counters, 0.001 relative error, the full `u64` range.
pub fn default_histogram() -> HeapHistogram<u64> {
    heap::plain(Layout::DEFAULT, Window::full(Layout::DEFAULT))
}

#[cfg(test)]
mod tests {
    use super::*;
    use picollo_core::{HistogramRead, ReadExt};

    #[test]
    fn errors_are_reported_not_clamped() {
        let e = HistogramBuilder::new().relative_error(f64::NAN).plain();
        assert!(matches!(e, Err(BuildError::Layout(LayoutError::NotFinite))));
        let e = HistogramBuilder::new().relative_error(-1.0).atomic();
        assert!(matches!(
            e,
            Err(BuildError::Layout(LayoutError::NotPositive))
        ));
        let e = HistogramBuilder::new()
            .min_trackable(10)
            .max_trackable(5)
            .plain();
        assert!(matches!(e, Err(BuildError::Window(_))));
        assert!(e.unwrap_err().to_string().contains("above max"));
    }

    #[test]
    fn kinds_and_widths() {
        let b = HistogramBuilder::new()
            .relative_error(0.01)
            .min_trackable(10_000)
            .max_trackable(30_000);
        let mut p32 = b.u32_storage().plain().unwrap();
        let a64 = b.atomic().unwrap();
        let a32 = b.u32_storage().atomic().unwrap();
        let t32 = b.u32_storage().thread_local().unwrap();
        let approx = b.approximate().unwrap();
        let mut rng = picollo_core::scalable::XorShift::new(3);
        for v in [5, 20_000, 20_001, 50_000] {
            p32.record(v);
            a64.record(v);
            a32.record(v);
            t32.record(v);
            approx.record(v, &mut rng);
        }
        for h in [&p32 as &dyn HistogramRead, &a64, &a32, &t32, &approx] {
            assert_eq!((h.total(), h.underflow(), h.overflow()), (2, 1, 1));
            assert_eq!(h.layout().block_size(), 64);
        }
        let d = default_histogram();
        assert_eq!(d.window().len(), Layout::DEFAULT.logical_len());
        assert_eq!(d.layout().relative_error(), 0.5 / 512.0);
    }
}
