//! Loom models of sparse storage's lock-free installation (`src/sparse/install.rs`): threads
//! that race to give a block its page, or the cold tier its first table, while a reader reads.
//! They run the real storage code: in a loom build (`RUSTFLAGS="--cfg loom"`) its atomics are
//! loom's, so loom runs every interleaving of the model's threads and every value a load may
//! read under the C++ memory model (within the preemption bound CI sets, see
//! `.ci/check.d/33-loom.sh`).
//!
//! The cells are the model's own [`ModelCell`] (a loom atomic; the real cells are invisible to
//! loom): sparse storage makes them in each new page (`PageCell::init_page`, loom builds
//! only), so loom reports a thread that may read a page's cells without the page's
//! initialization happening before it (the release of the installing compare-and-swap). These
//! models record as the atomic kind does (`AtomicHistogram::record_n`: the cell if the storage
//! has one, else `Cells::absent`), and read through the storage's own reads; one more model
//! races through the atomic kind itself, over its real cells. The pages live
//! are counted by this binary's allocator ([`CountPages`]): the loser of a race must free its
//! page, and the storage the winner's when it drops. (Not loom's own leak tracking,
//! `loom::alloc`: a model that fails while an allocation it tracks is live aborts the test
//! binary, so a twin with a leak planted could not expect its panic.)
//!
//! Each model has twins with a bug planted (`picollo_core::planted`): each twin must fail with
//! the model's own assertion or loom's own check, which shows the model can fail at all.
//!
//! Run: `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 cargo test -p picollo-alloc --test
//! loom`.
#![cfg(loom)]

use loom::sync::atomic::{AtomicU64, Ordering};
use loom::sync::Arc;
use loom::thread;
use picollo_alloc::sparse::{PageCell, SparseStorage, HOT};
use picollo_core::planted::{self, Bug};
use picollo_core::{Absent, AtomicHistogram, CellCount, Cells, Lookup, ReadExt, Window};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::ops::RangeInclusive;

/// A page cell loom sees: a loom atomic, made by [`PageCell::init_page`] in every new page.
/// Aligned to [`PAGE_ALIGN`], so that [`CountPages`] tells pages from other allocations.
#[repr(C, align(256))]
struct ModelCell(AtomicU64);

/// The alignment of [`ModelCell`], and so of the pages: no other allocation here asks for it.
const PAGE_ALIGN: usize = 256;

std::thread_local! {
    /// Pages allocated and not freed on this thread: loom runs a model's threads as
    /// coroutines on the thread that called it, so parallel tests do not see each other's.
    static LIVE_PAGES: Cell<isize> = const { Cell::new(0) };
}

/// The system allocator, counting the live allocations of [`PAGE_ALIGN`] ([`LIVE_PAGES`]).
struct CountPages;

impl CountPages {
    fn count(layout: Layout, change: isize) {
        if layout.align() == PAGE_ALIGN {
            // Not during this thread's TLS destruction (no page is allocated then).
            let _ = LIVE_PAGES.try_with(|n| n.set(n.get() + change));
        }
    }

    fn live() -> isize {
        LIVE_PAGES.with(Cell::get)
    }
}

// SAFETY: every call goes to `System` unchanged; the count is a thread-local `Cell` with a
// `const` initializer and no destructor, which allocates nothing.
unsafe impl GlobalAlloc for CountPages {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        Self::count(layout, 1);
        // SAFETY: the caller's guarantees, passed on.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        Self::count(layout, 1);
        // SAFETY: as above.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        Self::count(layout, -1);
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: CountPages = CountPages;

impl CellCount for ModelCell {
    const MAX: u64 = u64::MAX;
    fn count(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// [`ModelCell`]s with the cold tier (records below [`HOT`] go to its tables first).
#[repr(transparent)]
struct WithColdTier(ModelCell);

/// [`ModelCell`]s without the cold tier (every record goes to a page), like the approximate
/// kind's cells.
#[repr(transparent)]
struct PagesOnly(ModelCell);

/// Makes `len` model cells at `page`.
///
/// # Safety
///
/// `page` is `len` cells of memory that no other thread can reach yet.
unsafe fn make_cells(page: *mut ModelCell, len: usize) {
    for i in 0..len {
        // SAFETY: inside the page, which is ours alone (the caller's guarantee); the zero
        // bytes there are no value, so nothing is dropped.
        unsafe { page.add(i).write(ModelCell(AtomicU64::new(0))) };
    }
}

// SAFETY: sparse storage calls `init_page` on every page it allocates (loom builds, the only
// ones this file is compiled in), which makes every cell a loom atomic holding zero; loom's
// atomics need no drop (loom frees its objects when the execution ends).
unsafe impl PageCell for WithColdTier {
    unsafe fn init_page(page: *mut Self, len: usize) {
        // SAFETY: the caller's guarantee, for a transparent wrapper of `ModelCell`.
        unsafe { make_cells(page.cast(), len) }
    }
}

// SAFETY: as above.
unsafe impl PageCell for PagesOnly {
    const COLD_TIER: bool = false;
    unsafe fn init_page(page: *mut Self, len: usize) {
        // SAFETY: as above.
        unsafe { make_cells(page.cast(), len) }
    }
}

impl CellCount for WithColdTier {
    const MAX: u64 = u64::MAX;
    fn count(&self) -> u64 {
        self.0.count()
    }
}

impl CellCount for PagesOnly {
    const MAX: u64 = u64::MAX;
    fn count(&self) -> u64 {
        self.0.count()
    }
}

/// The smallest layout (two buckets per half block), so that pages are a few cells.
fn layout() -> picollo_core::Layout {
    picollo_core::Layout::from_block_scale(1).unwrap()
}

/// The value every thread records: one block, one bucket.
const VALUE: u64 = 5;

/// Records `n` occurrences of `value` as the atomic kind does (`AtomicHistogram::record_n`):
/// into the storage's cell if it has one, else as `Cells::absent` says.
fn record<T: PageCell + AsRef<ModelCell>>(s: &SparseStorage<T>, value: u64, n: u64) {
    let layout = layout();
    let pos = layout.position(value);
    let (k, first) = (
        layout.block_scale(),
        s.window().first() - layout.first_index(),
    );
    // SAFETY: `pos` is a position under `layout`, the storage's layout.
    match unsafe { s.cell(pos, k, first) } {
        Lookup::Found(cell) => add(cell.as_ref(), n),
        // SAFETY: as above.
        Lookup::Missing => match unsafe { s.absent(pos, k, first, n) } {
            Absent::Cell(cell) => add(cell.as_ref(), n),
            Absent::Counted => {}
            Absent::Outside(_) => panic!("{value} is inside the window"),
        },
    }
}

fn add(cell: &ModelCell, n: u64) {
    cell.0.fetch_add(n, Ordering::Relaxed);
}

impl AsRef<ModelCell> for WithColdTier {
    fn as_ref(&self) -> &ModelCell {
        &self.0
    }
}

impl AsRef<ModelCell> for PagesOnly {
    fn as_ref(&self) -> &ModelCell {
        &self.0
    }
}

/// The count of [`VALUE`]'s bucket (its page cell plus its cold entries).
fn count<T: PageCell>(s: &SparseStorage<T>) -> u64 {
    s.count_at(layout().index_of(VALUE) - s.window().first())
}

/// `threads` threads record `n` occurrences each of [`VALUE`] into empty storage (so they race
/// to install its page, or its cold table, and the losers must use the winner's) while the
/// model's own thread reads the bucket twice: every read sees each thread's records whole or
/// not at all (one atomic add each), never fewer later than earlier, and at the end exactly
/// all of them, in the bucket and in the whole storage's sum. Loom checks besides that no read
/// touches a cell before its page was made. `pages`: how many pages the storage may then hold
/// (the losers' were freed); it frees them when it drops.
///
/// The concurrent reads are bucket reads: a sum over the cold tier scans every word of its
/// tables, each load a point where loom tries the other threads, which multiplies the
/// interleavings past what CI can run.
fn race<T: PageCell + AsRef<ModelCell>>(threads: u64, n: u64, pages: RangeInclusive<isize>) {
    let live = CountPages::live();
    let layout = layout();
    let storage = Arc::new(SparseStorage::<T>::new(
        layout,
        Window::new(layout, 0, 15).unwrap(),
    ));
    let recorders: Vec<_> = (0..threads)
        .map(|_| {
            let s = storage.clone();
            thread::spawn(move || record(&s, VALUE, n))
        })
        .collect();
    let mut last = 0;
    for _ in 0..2 {
        let now = count(&storage);
        assert!(
            now % n == 0 && now >= last && now <= threads * n,
            "count lost or torn: read {now} after {last}"
        );
        last = now;
    }
    for r in recorders {
        r.join().unwrap();
    }
    let all = threads * n;
    assert_eq!(count(&storage), all, "count lost");
    assert_eq!(
        storage.sum_range(0, storage.window().len()),
        all,
        "count lost"
    );
    let held = CountPages::live() - live;
    assert!(
        pages.contains(&held),
        "page leaked or freed twice: {held} held"
    );
    drop(storage);
    assert_eq!(CountPages::live(), live, "page leaked or freed twice");
}

/// The same race through the atomic kind's own record and read paths
/// (`AtomicHistogram::record_n`, `ReadExt::total` and `count_at_value`), over sparse storage
/// of its real cells: two threads record [`HOT`] occurrences each (a page at once) while the
/// model's thread reads. Those cells are invisible to loom, so this model checks counts, not
/// the cells' initialization (the models above do).
fn atomic_histogram_race() {
    let layout = layout();
    let window = Window::new(layout, 0, 15).unwrap();
    let storage = SparseStorage::<picollo_core::cell::AtomicU64>::new(layout, window);
    let window = storage.window();
    let h = Arc::new(AtomicHistogram::with_storage(layout, storage, window).unwrap());
    let recorders: Vec<_> = (0..2)
        .map(|_| {
            let h = h.clone();
            thread::spawn(move || h.record_n(VALUE, HOT))
        })
        .collect();
    let mut last = 0;
    for _ in 0..2 {
        let (total, at) = (h.total(), h.count_at_value(VALUE));
        assert!(
            total % HOT == 0 && total >= last && at >= total && at <= 2 * HOT,
            "count lost or torn: read {total} then {at} after {last}"
        );
        last = at;
    }
    for r in recorders {
        r.join().unwrap();
    }
    assert_eq!(
        (h.total(), h.count_at_value(VALUE)),
        (2 * HOT, 2 * HOT),
        "count lost"
    );
}

fn model(f: fn()) {
    let mut builder = loom::model::Builder::new();
    builder.max_branches = 100_000;
    builder.check(f);
}

/// Two threads race to install a page (records of [`HOT`] go to a page at once).
fn page_race() {
    race::<WithColdTier>(2, HOT, 1..=1);
}

/// Three threads race to install a page of cells without a cold tier, one record each.
fn pages_only_race() {
    race::<PagesOnly>(3, 1, 1..=1);
}

/// Two threads race to install the cold tier's first table (records below [`HOT`]). The
/// block may get a page all the same: a thread that saw no table yet while the other installed
/// the first one finds the tier's word limit reached (`ColdTier::grow` counts the winner's
/// table, and it was the only one allowed) and records into a page instead; no count is lost.
fn cold_table_race() {
    race::<WithColdTier>(2, 1, 0..=1);
}

#[test]
fn sparse_page_race() {
    model(page_race);
}

#[test]
#[should_panic(expected = "Causality violation")]
fn sparse_page_race_finds_a_relaxed_install() {
    planted::with(Bug::SparseInstallRelaxed, || model(page_race));
}

#[test]
#[should_panic(expected = "count lost")]
fn sparse_page_race_finds_a_store_for_the_compare_and_swap() {
    planted::with(Bug::SparseInstallStore, || model(page_race));
}

#[test]
#[should_panic(expected = "page leaked")]
fn sparse_page_race_finds_a_leaked_losing_page() {
    planted::with(Bug::SparseLoserLeaks, || model(page_race));
}

#[test]
fn sparse_pages_only_race() {
    model(pages_only_race);
}

#[test]
fn sparse_cold_table_race() {
    model(cold_table_race);
}

#[test]
#[should_panic(expected = "Causality violation")]
fn sparse_cold_table_race_finds_a_relaxed_install() {
    planted::with(Bug::SparseInstallRelaxed, || model(cold_table_race));
}

#[test]
fn sparse_atomic_histogram_race() {
    model(atomic_histogram_race);
}

#[test]
#[should_panic(expected = "count lost")]
fn sparse_atomic_histogram_race_finds_a_store_for_the_compare_and_swap() {
    planted::with(Bug::SparseInstallStore, || model(atomic_histogram_race));
}
