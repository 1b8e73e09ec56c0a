//! Where a built histogram keeps its counts ([`StorageChoice`]: [`Sparse`] or [`Dense`]),
//! apart from the builder that offers the choice, so that the kinds built over either
//! storage (the thread-local kind's shards among them) and the builder import it one way.

use crate::heap::HeapStorage;
use crate::sparse::{PageCell, SparseStorage};
use core::fmt;
use picollo_core::{AtomicHistogram, BucketPos, CellsMut, Layout, Lookup, Window};

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::Sparse {}
    impl Sealed for super::Dense {}
}

/// Where the builder's histograms keep their counts: [`Sparse`] (the default) or [`Dense`]
/// (sealed).
pub trait StorageChoice:
    sealed::Sealed + Copy + Default + fmt::Debug + Send + Sync + 'static
{
    /// The storage of cells of type `T`.
    type Cells<T: PageCell>: CellsMut<Item = T> + Send + Sync;
    /// Storage for `window` and the window it serves (sparse storage widens it to whole
    /// blocks).
    fn cells<T: PageCell>(layout: Layout, window: Window) -> (Self::Cells<T>, Window);
    /// Empty storage for the window `like` serves, without working it out again from the
    /// layout (a thread-local histogram's new shard, made like its accumulator).
    #[doc(hidden)]
    fn cells_like<T: PageCell, U: PageCell>(like: &Self::Cells<T>) -> Self::Cells<U>;

    /// The pointer the thread-local kind's record path caches: the cells (dense) or the
    /// directory of pages (sparse: an empty one until its first page, whose directory the
    /// record path that installs it then caches).
    #[doc(hidden)]
    fn hot_ptr<T: PageCell>(cells: &Self::Cells<T>) -> *const ();
    /// The bound the thread-local kind's record path checks: cells (dense) or directory
    /// entries (sparse).
    #[doc(hidden)]
    fn hot_len<T: PageCell>(cells: &Self::Cells<T>) -> usize;
    /// The cell of `pos` through a cached [`StorageChoice::hot_ptr`].
    ///
    /// # Safety
    ///
    /// `ptr` and `len` are [`StorageChoice::hot_ptr`] and [`StorageChoice::hot_len`] of a live
    /// storage of this choice for the window starting at `first`, under block scale `k`; `pos`
    /// is a position under that block scale.
    #[doc(hidden)]
    unsafe fn hot_cell<'a, T: PageCell>(
        ptr: *const (),
        len: usize,
        pos: BucketPos,
        k: u32,
        first: usize,
    ) -> Lookup<&'a T>;
    /// The cells as one slice, when the storage is dense.
    #[doc(hidden)]
    fn dense_cells<T: PageCell>(cells: &Self::Cells<T>) -> Option<&[T]>;
    /// Makes `to`'s counts those of `from` (same window), with no other writer: `set` stores a
    /// count into a cell.
    #[doc(hidden)]
    fn copy_counts<T: PageCell>(to: &Self::Cells<T>, from: &Self::Cells<T>, set: impl Fn(&T, u64));
}

/// Storage whose memory follows what was recorded ([`SparseStorage`]): the builder's
/// default.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sparse;

/// A cell for every bucket of the window from the start ([`HeapStorage`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Dense;

impl StorageChoice for Sparse {
    type Cells<T: PageCell> = SparseStorage<T>;
    fn cells<T: PageCell>(layout: Layout, window: Window) -> (SparseStorage<T>, Window) {
        let cells = SparseStorage::new(layout, window);
        let window = cells.window();
        (cells, window)
    }
    fn cells_like<T: PageCell, U: PageCell>(like: &SparseStorage<T>) -> SparseStorage<U> {
        like.empty_like()
    }
    fn hot_ptr<T: PageCell>(cells: &SparseStorage<T>) -> *const () {
        cells.dir_ptr().cast()
    }
    fn hot_len<T: PageCell>(cells: &SparseStorage<T>) -> usize {
        cells.dir_len()
    }
    #[inline(always)]
    unsafe fn hot_cell<'a, T: PageCell>(
        ptr: *const (),
        _len: usize,
        pos: BucketPos,
        _k: u32,
        _first: usize,
    ) -> Lookup<&'a T> {
        // SAFETY: the caller's guarantee: `ptr` is a live storage's directory head, and `pos`
        // a position under its block scale, whose block every directory at that scale has an
        // entry for (`len` is for dense storage).
        unsafe { SparseStorage::cached_cell(ptr.cast(), pos) }
    }
    fn dense_cells<T: PageCell>(_cells: &SparseStorage<T>) -> Option<&[T]> {
        None
    }
    fn copy_counts<T: PageCell>(
        to: &SparseStorage<T>,
        from: &SparseStorage<T>,
        set: impl Fn(&T, u64),
    ) {
        to.copy_counts_from(from, set)
    }
}

impl StorageChoice for Dense {
    type Cells<T: PageCell> = HeapStorage<T>;
    fn cells<T: PageCell>(_layout: Layout, window: Window) -> (HeapStorage<T>, Window) {
        // SAFETY: all-zero bytes are a valid, empty `T` (`PageCell`).
        let cells = unsafe { HeapStorage::zeroed(window.len()) };
        (cells, window)
    }
    fn cells_like<T: PageCell, U: PageCell>(like: &HeapStorage<T>) -> HeapStorage<U> {
        // SAFETY: as in `cells`.
        unsafe { HeapStorage::zeroed(like.cells().len()) }
    }
    fn hot_ptr<T: PageCell>(cells: &HeapStorage<T>) -> *const () {
        cells.cells().as_ptr().cast()
    }
    fn hot_len<T: PageCell>(cells: &HeapStorage<T>) -> usize {
        cells.cells().len()
    }
    #[inline(always)]
    unsafe fn hot_cell<'a, T: PageCell>(
        ptr: *const (),
        len: usize,
        pos: BucketPos,
        k: u32,
        first: usize,
    ) -> Lookup<&'a T> {
        let slot = pos.logical(k).wrapping_sub(first);
        if slot < len {
            // SAFETY: `ptr` points to `len` live cells (the caller's guarantee), `slot < len`.
            Lookup::Found(unsafe { &*ptr.cast::<T>().add(slot) })
        } else {
            Lookup::Missing
        }
    }
    fn dense_cells<T: PageCell>(cells: &HeapStorage<T>) -> Option<&[T]> {
        Some(cells.cells())
    }
    fn copy_counts<T: PageCell>(to: &HeapStorage<T>, from: &HeapStorage<T>, set: impl Fn(&T, u64)) {
        for (t, c) in to.cells().iter().zip(from.cells()) {
            set(t, c.count());
        }
    }
}

/// An atomic histogram over the storage a builder chose.
pub(crate) type BuiltAtomicHistogram<A, S> =
    AtomicHistogram<<S as StorageChoice>::Cells<A>, Layout>;
