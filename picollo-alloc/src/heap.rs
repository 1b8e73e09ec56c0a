//! Heap storage for the core histograms: one implementation of the core's storage traits, so
//! the core histogram types serve here unchanged (no copy of the histogram code).

use picollo_core::{AtomicHistogram, Histogram, Layout, Storage, StorageMut};

/// Cells on the heap, sized at run time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeapStorage<T>(Box<[T]>);

impl<T> HeapStorage<T> {
    /// `len` cells made by `make`.
    pub fn with_len(len: usize, make: impl FnMut() -> T) -> Self {
        let mut cells = Vec::with_capacity(len);
        cells.resize_with(len, make);
        HeapStorage(cells.into_boxed_slice())
    }

    /// `len` cells of all-zero bytes from one zeroed allocation (`calloc`), not a
    /// cell-by-cell fill: under miri, filling a full-range window (28,672 cells) that way took
    /// 7 s of the 14 s its histogram took to make.
    ///
    /// # Safety
    ///
    /// All-zero bytes must be a valid `T`.
    pub(crate) unsafe fn zeroed(len: usize) -> Self {
        let Ok(layout) = std::alloc::Layout::array::<T>(len) else {
            // As `Vec::with_capacity` does for a length whose bytes overflow `isize`.
            panic!("capacity overflow: {len} heap cells");
        };
        if layout.size() == 0 {
            return HeapStorage(Vec::new().into_boxed_slice());
        }
        // SAFETY: the layout's size is not zero (checked above).
        let cells = unsafe { std::alloc::alloc_zeroed(layout) }.cast::<T>();
        if cells.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        // SAFETY: `cells` is a live allocation from the global allocator with the layout of
        // `[T; len]` (what `Box<[T]>` frees it with), and its `len` elements are all-zero
        // bytes, which the caller promises are valid `T`s.
        HeapStorage(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(cells, len)) })
    }

    /// The cells.
    pub fn cells(&self) -> &[T] {
        &self.0
    }
}

impl<T> Storage for HeapStorage<T> {
    type Item = T;
    #[inline(always)]
    fn as_slice(&self) -> &[T] {
        &self.0
    }
}

impl<T> StorageMut for HeapStorage<T> {
    #[inline(always)]
    fn as_mut_slice(&mut self) -> &mut [T] {
        &mut self.0
    }
}

/// A plain histogram on the heap ([`HistogramBuilder::dense`](crate::HistogramBuilder::dense));
/// `L` is [`UnitLayout`](picollo_core::UnitLayout) for one that records a value unit.
pub type HeapHistogram<C = u64, L = Layout> = Histogram<HeapStorage<C>, L>;

/// An atomic histogram on the heap; `L` as for [`HeapHistogram`].
pub type HeapAtomicHistogram<A = portable_atomic::AtomicU64, L = Layout> =
    AtomicHistogram<HeapStorage<A>, L>;

/// The sum of `counts[start..end]` (the range clamped to the slice), saturating at
/// `u64::MAX`: the `sum_range` of the kinds that hold plain `u64` counts (snapshots,
/// HdrHistogram counts read in place).
#[inline]
pub(crate) fn sum_counts(counts: &[u64], start: usize, end: usize) -> u64 {
    let end = end.min(counts.len());
    // Low and high halves apart: no overflow below 2^32 cells, and the loop vectorizes.
    let (mut low, mut high) = (0u64, 0u64);
    for &c in &counts[start.min(end)..end] {
        low += c & 0xFFFF_FFFF;
        high += c >> 32;
    }
    let sum = ((high as u128) << 32) + low as u128;
    sum.min(u64::MAX as u128) as u64
}
