//! Loom models of sparse storage's lock-free installation (`src/sparse/install.rs`): threads
//! that race to give a block its page, or the cold tier its first table, while a reader reads;
//! of the walk cache that keeps the cold tier's entries between a walk's calls
//! (`src/sparse/runs.rs`) beside a record and a clear; and of the thread-local kind's shard
//! life (claim, record, thread-exit fold, release) beside a reader (`src/thread_local/`,
//! below). Where the model's own thread reads beside spawned threads, it first loads their
//! start flags ([`spawn_started`]): without them loom ran some models' reads before every
//! spawned thread.
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
//! Each model has twins with one of this crate's bugs planted (`picollo_alloc::planted`): each twin must fail with
//! the model's own assertion or loom's own check, which shows the model can fail at all.
//!
//! Run: `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 cargo test -p picollo-alloc --test
//! loom`.
#![cfg(loom)]

use loom::sync::atomic::{AtomicU64, Ordering};
use loom::sync::Arc;
use loom::thread;
use picollo_alloc::planted::Bug;
use picollo_alloc::sparse::{PageCell, SparseStorage, HOT};
use picollo_alloc::{Dense, HistogramBuilder, ThreadLocalHistogram};
use picollo_core::planted;
use picollo_core::{
    Absent, AtomicHistogram, CellCount, Cells, HistogramRead, Lookup, ReadExt, Window,
};
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

/// Spawns `f` on a model thread that first raises a flag, which the model's thread loads
/// before it reads ([`Started::yield_point`]): a store and a load of one object, where loom's
/// search tries the new thread ahead of the model's. Loom tries a thread ahead only at an
/// access that conflicts with that thread's next operation, and a thread whose first
/// operations are loads (a record first looks at the storage) conflicts with none of the
/// model thread's loads. Without the flags the model's reads ran before every recorder had
/// started: `page_race`'s reads saw 0 records in all of its 896 executions (with them, 53,821
/// of 110,072 saw 8 or 16), and a model of one recorder ran once.
///
/// The flag is shared through the standard library's `Arc`, as the thread-local models share
/// their histogram ([`LeakOnPanic`]): loom drops the closures of threads not yet started after
/// a failing execution, and its own `Arc`'s drop would then touch its state (an abort, not
/// the failure a twin with a planted bug expects).
fn spawn_started(f: impl FnOnce() + Send + 'static) -> (thread::JoinHandle<()>, Started) {
    let started = std::sync::Arc::new(AtomicU64::new(0));
    let flag = started.clone();
    let handle = thread::spawn(move || {
        flag.store(1, Ordering::Relaxed);
        f()
    });
    (handle, Started(started))
}

/// A model thread's start flag ([`spawn_started`]).
struct Started(std::sync::Arc<AtomicU64>);

impl Started {
    /// Loads the flag, whatever it holds: a point where loom may run the thread first.
    fn yield_point(&self) {
        self.0.load(Ordering::Relaxed);
    }
}

/// `threads` threads record `n` occurrences each of [`VALUE`] into empty storage (so they race
/// to install its page, or its cold table, and the losers must use the winner's) while the
/// model's own thread reads the bucket twice: every read sees each thread's records whole or
/// not at all (one atomic add each), never fewer later than earlier, and at the end exactly
/// all of them, in the bucket and in the whole storage's sum. Loom checks besides that no read
/// touches a cell before its page was made. `pages`: how many pages the storage may then hold
/// (the losers' were freed); it frees them when it drops. `yield_to`: whether the reads wait
/// at the recorders' start flags ([`spawn_started`]), so that loom tries the recorders ahead
/// of them.
///
/// The concurrent reads are bucket reads: a sum over the cold tier scans every word of its
/// tables, each load a point where loom tries the other threads, which multiplies the
/// interleavings past what CI can run.
fn race<T: PageCell + AsRef<ModelCell>>(
    threads: u64,
    n: u64,
    pages: RangeInclusive<isize>,
    yield_to: bool,
) {
    let live = CountPages::live();
    let layout = layout();
    let storage = Arc::new(SparseStorage::<T>::new(
        layout,
        Window::new(layout, 0, 15).unwrap(),
    ));
    let recorders: Vec<_> = (0..threads)
        .map(|_| {
            let s = storage.clone();
            spawn_started(move || record(&s, VALUE, n))
        })
        .collect();
    if yield_to {
        recorders
            .iter()
            .for_each(|(_, started)| started.yield_point());
    }
    let mut last = 0;
    for _ in 0..2 {
        let now = count(&storage);
        assert!(
            now.is_multiple_of(n) && now >= last && now <= threads * n,
            "count lost or torn: read {now} after {last}"
        );
        last = now;
    }
    for (r, _) in recorders {
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

/// A value of another block than [`VALUE`]'s (block 2 of the small layout, [`VALUE`]'s is 1).
const OTHER_VALUE: u64 = 12;

/// Two threads record [`HOT`] occurrences each into different blocks of empty storage, so each
/// installs a page of its own, and both race to install the directory that the first page
/// brings (`SparseStorage::installed_dir`): the loser must free its directory and put its
/// page in the winner's. The model's own thread reads both buckets meanwhile (never more than
/// was recorded, never less later) and, after the joins, finds both counts and both pages.
fn directory_race() {
    let live = CountPages::live();
    let layout = layout();
    let storage = Arc::new(SparseStorage::<WithColdTier>::new(
        layout,
        Window::new(layout, 0, 15).unwrap(),
    ));
    let at = |s: &SparseStorage<WithColdTier>, v: u64| {
        s.count_at(layout.index_of(v) - s.window().first())
    };
    let recorders: Vec<_> = [VALUE, OTHER_VALUE]
        .into_iter()
        .map(|v| {
            let s = storage.clone();
            spawn_started(move || record(&s, v, HOT))
        })
        .collect();
    recorders
        .iter()
        .for_each(|(_, started)| started.yield_point());
    let (a, b) = (at(&storage, VALUE), at(&storage, OTHER_VALUE));
    assert!(
        a.is_multiple_of(HOT) && b.is_multiple_of(HOT),
        "count lost or torn: {a}, {b}"
    );
    for (r, _) in recorders {
        r.join().unwrap();
    }
    assert_eq!(
        (at(&storage, VALUE), at(&storage, OTHER_VALUE)),
        (HOT, HOT),
        "count lost"
    );
    assert_eq!(storage.pages(), 2, "count lost: a page is missing");
    assert_eq!(CountPages::live() - live, 2, "page leaked or freed twice");
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
            spawn_started(move || h.record_n(VALUE, HOT))
        })
        .collect();
    recorders
        .iter()
        .for_each(|(_, started)| started.yield_point());
    let mut last = 0;
    for _ in 0..2 {
        let (total, at) = (h.total(), h.count_at_value(VALUE));
        assert!(
            total.is_multiple_of(HOT) && total >= last && at >= total && at <= 2 * HOT,
            "count lost or torn: read {total} then {at} after {last}"
        );
        last = at;
    }
    for (r, _) in recorders {
        r.join().unwrap();
    }
    assert_eq!(
        (h.total(), h.count_at_value(VALUE)),
        (2 * HOT, 2 * HOT),
        "count lost"
    );
}

/// [`VALUE`]'s and [`OTHER_VALUE`]'s counts in one walk from the start
/// (`Cells::recorded_runs_from`, a percentile iteration's read), which keeps the cold tier's
/// entry positions in this thread's walk cache for the next walk of the same storage; the
/// walk must see no count in any other bucket.
fn walk_counts(s: &SparseStorage<WithColdTier>) -> (u64, u64) {
    let layout = layout();
    let slot = |v: u64| layout.index_of(v) - s.window().first();
    let (mut at_value, mut at_other) = (0, 0);
    s.recorded_runs_from(0, &mut |start, counts| {
        for (slot_here, &n) in (start..).zip(counts) {
            if slot_here == slot(VALUE) {
                at_value = n;
            } else if slot_here == slot(OTHER_VALUE) {
                at_other = n;
            } else {
                assert_eq!(n, 0, "a count in bucket {slot_here}, never recorded into");
            }
        }
        std::ops::ControlFlow::Continue(())
    });
    (at_value, at_other)
}

/// A walk of the cold tier beside a record that adds a new entry to it: the model's thread
/// walks while another thread records [`VALUE`] once (the cold table is there already, with
/// [`OTHER_VALUE`]'s entry), then walks again after the join. The first walk keeps what it
/// gathered in the walk cache under the tier's stamp (its table, entry count and generation);
/// the second must find the new entry, whether the first walk's stamp is stale or it saw the
/// entry (a walk that counts an entry must see its word).
fn cold_walk_race() {
    let layout = layout();
    let storage = Arc::new(SparseStorage::<WithColdTier>::new(
        layout,
        Window::new(layout, 0, 15).unwrap(),
    ));
    record(&storage, OTHER_VALUE, 1);
    let s = storage.clone();
    let (recorder, started) = spawn_started(move || record(&s, VALUE, 1));
    started.yield_point();
    let (value, other) = walk_counts(&storage);
    assert!(
        value <= 1 && other == 1,
        "count lost or torn: {value}, {other}"
    );
    recorder.join().unwrap();
    assert_eq!(walk_counts(&storage), (1, 1), "count lost by a kept walk");
}

/// A walk beside the thread-local kind's baseline copy (`copy_counts_from`: the cold tier
/// emptied, then the copied counts' entries added again), as a reader reads a shard's
/// baseline while a reset takes it; the version lock throws that read away, and the walk after
/// the copy (here after the join) must find the copied counts, not what the first walk kept
/// from mid-copy under a stamp that the copy brought back.
fn cold_copy_race() {
    let layout = layout();
    let window = Window::new(layout, 0, 15).unwrap();
    let from = SparseStorage::<WithColdTier>::new(layout, window);
    record(&from, VALUE, 1);
    record(&from, OTHER_VALUE, 1);
    let set = |c: &WithColdTier, n: u64| c.0 .0.store(n, Ordering::Relaxed);
    let storage = Arc::new(SparseStorage::<WithColdTier>::new(layout, window));
    storage.model_copy_counts_from(&from, set);
    let (s, from) = (storage.clone(), Arc::new(from));
    let (copier, started) = spawn_started(move || s.model_copy_counts_from(&from, set));
    started.yield_point();
    // What this walk sees is thrown away (a read the version lock makes again); what it
    // keeps in the walk cache must not spoil the next.
    walk_counts(&storage);
    copier.join().unwrap();
    assert_eq!(walk_counts(&storage), (1, 1), "count lost by a kept walk");
}

fn model(f: fn()) {
    let mut builder = loom::model::Builder::new();
    builder.max_branches = 100_000;
    builder.check(f);
}

/// Two threads race to install a page (records of [`HOT`] go to a page at once).
fn page_race() {
    race::<WithColdTier>(2, HOT, 1..=1, true);
}

/// Three threads race to install a page of cells without a cold tier, one record each.
fn pages_only_race() {
    // Without the start flags, so its reads run before the recorders start (see
    // `spawn_started`): with three recorders the flags made this model's run 6 minutes
    // instead of seconds (3.5 at a preemption bound of 2). The recorders' own races are what
    // it checks; `page_race` checks reads beside two.
    race::<PagesOnly>(3, 1, 1..=1, false);
}

/// Two threads race to install the cold tier's first table (records below [`HOT`]). The
/// block may get a page all the same: a thread that saw no table yet while the other installed
/// the first one finds the tier's word limit reached (`ColdTier::grow` counts the winner's
/// table, and it was the only one allowed) and records into a page instead; no count is lost.
fn cold_table_race() {
    race::<WithColdTier>(2, 1, 0..=1, true);
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
fn sparse_directory_race() {
    model(directory_race);
}

#[test]
#[should_panic(expected = "count lost")]
fn sparse_directory_race_finds_a_store_for_the_compare_and_swap() {
    planted::with(Bug::SparseInstallStore, || model(directory_race));
}

#[test]
#[should_panic(expected = "Causality violation")]
fn sparse_directory_race_finds_a_relaxed_install() {
    planted::with(Bug::SparseInstallRelaxed, || model(directory_race));
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

#[test]
fn sparse_cold_walk_race() {
    model(cold_walk_race);
}

#[test]
#[should_panic(expected = "count lost by a kept walk")]
fn sparse_cold_walk_race_finds_a_relaxed_entry_count() {
    planted::with(Bug::ColdCountRelaxed, || model(cold_walk_race));
}

#[test]
fn sparse_cold_copy_race() {
    model(cold_copy_race);
}

#[test]
#[should_panic(expected = "count lost by a kept walk")]
fn sparse_cold_copy_race_finds_a_generation_forgotten_first() {
    planted::with(Bug::ColdGenerationForgottenFirst, || model(cold_copy_race));
}

// The thread-local kind's shard life (`src/thread_local/`): a thread claims a shard (a free one
// by compare-and-swap from `FREE`, else a new node on the list), records into it as its owner,
// and at its exit folds it into the accumulator under the version lock (counts added, shard
// cleared, then released to `FREE`), while a reader reads with the kind's public reads, which
// check the version and read again what a fold overlapped. The model drives the real claim,
// record and fold (`picollo_alloc::thread_local::model`; the per-thread list and cache are the
// standard library's thread-locals, which loom's threads would share); the shard list, the
// shards' states and owners and the accumulator's flag are loom's atomics in a loom build
// (`src/thread_local/sync.rs`), the cells and the version word are not (see there).

/// A thread-local histogram over dense cells of the small layout: no page installation, so
/// loom's interleavings are those of the shard life. One bucket, [`VALUE`]'s: every cell read
/// is a point where loom tries the other threads (`cells_read`), and more cells would
/// multiply the interleavings without adding an order of events.
fn local_histogram() -> ThreadLocalHistogram<u64, Dense> {
    let layout = layout();
    let h = HistogramBuilder::new()
        .layout(layout)
        .window(Window::new(layout, VALUE, VALUE).unwrap())
        .dense()
        .thread_local()
        .unwrap();
    assert_eq!(h.window().len(), 1);
    h
}

/// Keeps a reference to the model's histogram, and leaks it when the model fails: dropping
/// the histogram touches loom's atomics, which loom refuses once a failing execution unwinds
/// (a panic in a destructor, which would abort the test binary, twins with planted bugs
/// included). The models share the histogram through the standard library's `Arc`, not
/// loom's, for the same reason: loom drops the closures of threads not yet started after a
/// failing execution, and its `Arc`'s drop touches its state.
struct LeakOnPanic(Option<std::sync::Arc<ThreadLocalHistogram<u64, Dense>>>);

impl Drop for LeakOnPanic {
    fn drop(&mut self) {
        if std::thread::panicking() {
            std::mem::forget(self.0.take());
        }
    }
}

/// The storage index of [`VALUE`]'s bucket.
fn slot(h: &ThreadLocalHistogram<u64, Dense>) -> usize {
    h.window()
        .storage_index(h.layout().index_of(VALUE))
        .unwrap()
}

/// [`VALUE`]'s count in one bulk read (`HistogramRead::recorded_runs`, unbracketed), which
/// must see no count in any other bucket.
fn bulk_count(h: &ThreadLocalHistogram<u64, Dense>) -> u64 {
    let (slot, mut n) = (slot(h), 0);
    h.recorded_runs(&mut |start, counts| {
        for (s, &c) in (start..).zip(counts) {
            if s == slot {
                n = c;
            } else {
                assert_eq!(
                    c, 0,
                    "counted twice: a count in bucket {s}, never recorded into"
                );
            }
        }
    });
    n
}

/// A model thread: claims a shard as thread `token`, records [`VALUE`] once, exits.
fn record_and_exit(h: &ThreadLocalHistogram<u64, Dense>, token: u64) {
    let shard = h.model_claim(token);
    shard.record_n(VALUE, 1);
    shard.exit();
}

/// A thread that recorded and exited earlier (its count in the accumulator, its shard free),
/// then another thread that claims (the freed shard, by compare-and-swap), records and exits
/// while the model's thread reads once, by the bulk read (`bulk`) or by `count_at`. The read
/// sees the earlier count and at most the later one (2 records in all: above that a count was
/// seen twice, in the shard and in the accumulator); at the end both records, and no shard
/// owned.
fn fold_race(bulk: bool) {
    let h = std::sync::Arc::new(local_histogram());
    let _leak = LeakOnPanic(Some(h.clone()));
    record_and_exit(&h, 1);
    let (exiting, started) = {
        let h = h.clone();
        spawn_started(move || record_and_exit(&h, 2))
    };
    started.yield_point();
    let n = if bulk {
        bulk_count(&h)
    } else {
        h.count_at(slot(&h))
    };
    assert!(n <= 2, "counted twice: read {n} of 2 records");
    assert!(n >= 1, "count lost: read {n}, after an exit that folded 1");
    exiting.join().unwrap();
    assert_eq!((bulk_count(&h), h.count_at(slot(&h))), (2, 2), "count lost");
    assert_eq!(h.live_shard_count(), 0, "a shard left owned");
}

/// Two threads claim, record and exit at the same time: the later claim may take the shard
/// the earlier exit freed, or a new node. At the end both records, in no more than two
/// shards, none owned.
fn reuse_race() {
    let h = std::sync::Arc::new(local_histogram());
    let _leak = LeakOnPanic(Some(h.clone()));
    let threads: Vec<_> = (1..=2)
        .map(|token| {
            let h = h.clone();
            thread::spawn(move || record_and_exit(&h, token))
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(h.count_at(slot(&h)), 2, "count lost");
    assert_eq!(bulk_count(&h), 2, "count lost");
    assert!(h.shard_count() <= 2 && h.live_shard_count() == 0);
}

#[test]
fn local_fold_race_bulk_read() {
    model(|| fold_race(true));
}

#[test]
fn local_fold_race_bucket_read() {
    model(|| fold_race(false));
}

#[test]
#[should_panic(expected = "counted twice")]
fn local_fold_race_finds_a_reader_without_the_version_check() {
    planted::with(Bug::LocalReadUnchecked, || model(|| fold_race(true)));
}

#[test]
#[should_panic(expected = "count lost")]
fn local_fold_race_finds_a_clear_before_the_add() {
    planted::with(Bug::LocalClearBeforeAdd, || model(|| fold_race(false)));
}

#[test]
fn local_reuse_race() {
    model(reuse_race);
}

#[test]
#[should_panic(expected = "count lost")]
fn local_reuse_race_finds_a_release_before_the_clear() {
    planted::with(Bug::LocalReleaseBeforeClear, || model(reuse_race));
}
