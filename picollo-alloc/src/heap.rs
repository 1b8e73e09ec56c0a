//! Heap storage for the core histograms: one implementation of the core's storage traits, so
//! the core histogram types serve here unchanged (no copy of the histogram code).

use picollo_core::atomic::AtomicCounter;
use picollo_core::{
    AtomicHistogram, Counter, Histogram, Layout, Storage, StorageMut, UnitLayout, Window,
    WindowError,
};

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

/// A plain histogram on the heap.
pub type HeapHistogram<C = u64> = Histogram<HeapStorage<C>, Layout>;

/// An atomic histogram on the heap.
pub type HeapAtomicHistogram<A = portable_atomic::AtomicU64> =
    AtomicHistogram<HeapStorage<A>, Layout>;

/// A plain histogram on the heap recording a value unit ([`UnitLayout`]).
pub type HeapUnitHistogram<C = u64> = Histogram<HeapStorage<C>, UnitLayout>;

/// An atomic histogram on the heap recording a value unit ([`UnitLayout`]).
pub type HeapUnitAtomicHistogram<A = portable_atomic::AtomicU64> =
    AtomicHistogram<HeapStorage<A>, UnitLayout>;

/// `layout` and `window` for the plain [`Layout`] spec: a layout with a value unit gives
/// way to the same block scale without one, over the window of the same values.
pub(crate) fn without_unit(layout: Layout, window: Window) -> (Layout, Window) {
    if layout.unit_magnitude() == 0 {
        return (layout, window);
    }
    let plain = Layout::from_block_scale(layout.block_scale()).unwrap_or(layout);
    let (min, max) = (window.min_value(layout), window.max_value(layout));
    (plain, Window::new(plain, min, max).unwrap_or(window))
}

/// A plain heap histogram over `window`. A layout with a value unit is recorded without it
/// (the same block scale, over the same values): [`plain_with_unit`] keeps it.
pub fn plain<C: Counter>(layout: Layout, window: Window) -> HeapHistogram<C> {
    let (layout, window) = without_unit(layout, window);
    // The storage is made for the window, so the lengths always agree.
    match Histogram::with_storage(
        layout,
        HeapStorage::with_len(window.len(), C::default),
        window,
    ) {
        Ok(h) => h,
        Err(e) => unreachable_window(e),
    }
}

/// A plain heap histogram over `window` recording `layout`'s value unit, if any
/// ([`Layout::with_lowest_discernible`]).
pub fn plain_with_unit<C: Counter>(layout: Layout, window: Window) -> HeapUnitHistogram<C> {
    let cells = HeapStorage::with_len(window.len(), C::default);
    match Histogram::with_storage(UnitLayout::new(layout), cells, window) {
        Ok(h) => h,
        Err(e) => unreachable_window(e),
    }
}

/// An atomic heap histogram over `window` recording `layout`'s value unit, if any.
pub fn atomic_with_unit<A: AtomicCounter>(
    layout: Layout,
    window: Window,
) -> HeapUnitAtomicHistogram<A> {
    let cells = HeapStorage::with_len(window.len(), || A::ZERO);
    match AtomicHistogram::with_storage(UnitLayout::new(layout), cells, window) {
        Ok(h) => h,
        Err(e) => unreachable_window(e),
    }
}

/// An atomic heap histogram over `window`. A layout with a value unit is recorded without it,
/// as by [`plain`]: [`atomic_with_unit`] keeps it.
pub fn atomic<A: AtomicCounter>(layout: Layout, window: Window) -> HeapAtomicHistogram<A> {
    let (layout, window) = without_unit(layout, window);
    match AtomicHistogram::with_storage(
        layout,
        HeapStorage::with_len(window.len(), || A::ZERO),
        window,
    ) {
        Ok(h) => h,
        Err(e) => unreachable_window(e),
    }
}

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

#[cold]
fn unreachable_window(e: WindowError) -> ! {
    // Storage built from `window.len()` always matches the window, and the specs built here
    // record their layouts.
    unreachable!("heap storage sized from its own window: {e}")
}
