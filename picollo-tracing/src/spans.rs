//! The layer's live spans: span id → span state, found from any thread without a lock, an
//! allocation or the span's extensions.
//!
//! Storing a span's state in its `tracing-subscriber` extensions costs, per span, a lookup of
//! the span in the registry, a write lock, a hash-map insert and two allocations (the state and
//! its box), then their drops at close: more than everything else the layer does. Instead the
//! layer keeps its live spans in open-addressed tables of states that it owns:
//!
//! - **Insert** (`on_new_span`): hash the span id (Fibonacci hashing), claim the first free
//!   state of a window of [`WINDOW`] states from there with one compare-and-swap of its `id`
//!   (0 → [`CLAIMED`]), a release fence, fill it in, then publish the span's id (a release
//!   store). A span id is published only after the state it names is complete; and the
//!   fence orders the claim before every field stored for the new span, so a reader that
//!   read the state's previous id, then one of the new span's fields, and re-reads the id
//!   after an acquire fence (the listing of live spans does) sees that the state changed
//!   hands (`tests/loom.rs` models it, with the fence planted out).
//! - **Find** (`on_exit`, `on_close`, on any thread): scan the same window for the id (an
//!   acquire load: a find that sees the id sees the filled-in state). A span sits at its home
//!   state unless its window was crowded.
//! - **Release** (`on_close`): store 0 into `id`. States are reused, never freed while the
//!   layer lives (type-stable memory), so a find scanning past a state that is being released
//!   or claimed reads an atomic of a live object, never freed memory.
//! - **Growth**: when the window of a new span is full in the newest table, a table twice as
//!   large is added (rare, under a mutex) and new spans go there; finds look in every table,
//!   newest first; old tables drain as their spans close. Tables are freed with the layer.
//!   After [`MAX_TABLES`] tables (about a million live spans), a span that finds no free
//!   state is not timed and is counted (`LiveSpans::untracked`).
//!
//! So a find never reads a state half filled in, whatever other thread runs it and however
//! it learnt the id. (`tracing` returns a span's id only after `on_new_span` returned, so a
//! thread could not look the id up earlier anyway; the order above does not rely on it.)
//! The one id that cannot be published is [`CLAIMED`] itself (`u64::MAX`): such a span is
//! not timed and is counted as untracked.
//!
//! Why a state is never written by two spans at once: `tracing` gives each live span a
//! distinct id and calls `on_close` once, when the last handle to the span is dropped, so no
//! enter, exit or close of that span can still be running (each needs a handle); the state is
//! released after everything was read from it, and the next span that claims it (acquire,
//! after the release store) starts from fresh values.

use std::sync::atomic::Ordering;
use std::sync::PoisonError;

use crate::callsite::CallsiteStats;
use crate::sync::{fence, ptr_mut, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Mutex};
use picollo_core::plant;

/// States scanned from a span's home state: a claim looks for a free one among them, a find
/// for the span's id. (Two in a loom model, whose tables are of two states.)
pub(crate) const WINDOW: usize = if cfg!(loom) { 2 } else { 16 };
/// States of the first table (more come when it crowds). (Two in a loom model: a span that
/// starts while two are live reuses a released state.)
const FIRST_TABLE: usize = if cfg!(loom) { 2 } else { 1024 };
/// Tables at most: `FIRST_TABLE · (2^MAX_TABLES - 1)` states in all.
pub(crate) const MAX_TABLES: usize = 10;
/// The `id` of a state being filled in: claimed, not yet findable.
pub(crate) const CLAIMED: u64 = u64::MAX;

/// The state of one live span.
pub(crate) struct SpanState {
    /// The span's id while it is live (published after the other fields are filled in);
    /// [`CLAIMED`] while it is being filled in; 0 when the state is free.
    id: AtomicU64,
    /// The span's callsite statistics (owned by the layer's callsite table, which lives as
    /// long as the layer).
    stats: AtomicPtr<CallsiteStats>,
    /// Span clock at `on_new_span`.
    pub(crate) created: AtomicU64,
    /// The span's busy time (the sum of its enter → exit intervals, span clock ticks) in two
    /// parts, so that an interval adds to one word only: `outer`, the intervals that were
    /// outermost on their thread (nothing else open there), the whole that the table's `%`
    /// divides, so nested spans are not counted twice; and `nested`, the others.
    pub(crate) outer: AtomicU64,
    /// The intervals that were nested in another (see `outer`).
    pub(crate) nested: AtomicU64,
    /// The cycles of the outermost intervals, when the layer counts cycles.
    pub(crate) outer_cycles: AtomicU64,
    /// Bit `i`: counter `i` was counted in every interval so far; [`NOT_ENTERED`] until an
    /// interval ended (counters mode). Bits are only ever cleared.
    pub(crate) counted: AtomicU32,
    /// Per counter of the layer, the sum of its deltas over the span's intervals (its own
    /// allocation, made with the table: a found state is all the hooks need).
    sums: Box<[AtomicU64]>,
}

/// [`SpanState::counted`]'s bit for a span no interval of which has ended yet (above the
/// counters' bits: a layer has at most 8 counters).
pub(crate) const NOT_ENTERED: u32 = 1 << 31;

impl SpanState {
    /// A free state, for spans with `counters` counter sums.
    fn free(counters: usize) -> Self {
        SpanState {
            id: AtomicU64::new(0),
            stats: AtomicPtr::new(core::ptr::null_mut()),
            created: AtomicU64::new(0),
            outer: AtomicU64::new(0),
            nested: AtomicU64::new(0),
            outer_cycles: AtomicU64::new(0),
            counted: AtomicU32::new(0),
            sums: (0..counters).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    /// The span's busy time so far, span clock ticks.
    #[cfg(test)]
    fn busy(&self) -> u64 {
        self.outer
            .load(Ordering::Relaxed)
            .wrapping_add(self.nested.load(Ordering::Relaxed))
    }

    /// The counters counted in every interval of the span (none before one ended).
    pub(crate) fn counted(&self) -> u32 {
        let counted = self.counted.load(Ordering::Relaxed);
        if counted & NOT_ENTERED != 0 {
            0
        } else {
            counted
        }
    }

    /// The span's callsite statistics.
    pub(crate) fn stats(&self) -> &CallsiteStats {
        // SAFETY: `self` was found by its id (`Table::find`, an acquire load of the id that
        // `LiveSpan::start` published with a release store after storing `stats`), so the load
        // below sees the pointer `LiveSpan::start` stored: statistics that the layer's callsite
        // table keeps until the layer, which owns this table, drops; `self` is borrowed from
        // the table, so the layer has not dropped.
        unsafe { &*self.stats.load(Ordering::Relaxed) }
    }
}

/// A live span: its state (one word, so it is passed in a register).
#[derive(Clone, Copy)]
pub(crate) struct LiveSpan<'a> {
    state: &'a SpanState,
}

impl<'a> LiveSpan<'a> {
    /// The span's state.
    #[inline(always)]
    pub(crate) fn state(&self) -> &'a SpanState {
        self.state
    }

    /// Per counter of the layer, the sum of its deltas over the span's intervals.
    #[inline(always)]
    pub(crate) fn sums(&self) -> &'a [AtomicU64] {
        &self.state.sums
    }

    /// Fills a just-claimed state, then publishes it under `id`.
    fn start(&self, id: u64, stats: &CallsiteStats, created: u64, all_counters: u32) {
        let s = self.state();
        // The claim (the compare-and-swap that made `id` CLAIMED) before every store below:
        // a reader of the live spans that reads one of them and, after its acquire fence,
        // the id again sees the claim, so it never counts the state's previous span with
        // this one's fields (`LiveSpans::for_each_live`).
        plant!(SpansNoClaimFence, fence(Ordering::Release), ());
        s.stats.store(
            (stats as *const CallsiteStats).cast_mut(),
            Ordering::Relaxed,
        );
        s.created.store(created, Ordering::Relaxed);
        s.outer.store(0, Ordering::Relaxed);
        s.nested.store(0, Ordering::Relaxed);
        s.outer_cycles.store(0, Ordering::Relaxed);
        s.counted
            .store(all_counters | NOT_ENTERED, Ordering::Relaxed);
        for sum in self.sums() {
            sum.store(0, Ordering::Relaxed);
        }
        // Last: a find that sees the id (acquire) sees every store above.
        s.id.store(id, Ordering::Release);
    }

    /// Frees the state, once everything was read from it.
    pub(crate) fn release(&self) {
        self.state().id.store(0, Ordering::Release);
    }
}

/// One table: `states.len()` (a power of two) states.
struct Table {
    states: Box<[SpanState]>,
    /// `states.len() - 1`.
    mask: usize,
    /// `64 - log2(states.len())`: the home state is the top bits of the hash.
    shift: u32,
}

impl Table {
    fn new(len: usize, counters: usize) -> Self {
        debug_assert!(len.is_power_of_two());
        Table {
            states: (0..len).map(|_| SpanState::free(counters)).collect(),
            mask: len - 1,
            shift: 64 - len.trailing_zeros(),
        }
    }

    /// The index of `id`'s home state (Fibonacci hashing: span ids that differ in any bits
    /// spread over the table).
    #[inline(always)]
    fn home(&self, id: u64) -> usize {
        (id.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> self.shift) as usize
    }

    /// The first state of `id`'s window for which `hit` holds, and its index.
    #[inline(always)]
    fn scan(&self, id: u64, mut hit: impl FnMut(&SpanState) -> bool) -> Option<LiveSpan<'_>> {
        let mut at = self.home(id);
        for _ in 0..WINDOW {
            let state = &self.states[at];
            if hit(state) {
                return Some(LiveSpan { state });
            }
            at = (at + 1) & self.mask;
        }
        None
    }

    #[inline(always)]
    fn find(&self, id: u64) -> Option<LiveSpan<'_>> {
        self.scan(id, |s| s.id.load(Ordering::Acquire) == id)
    }

    /// Claims a free state of `id`'s window (its `id` becomes [`CLAIMED`]: not findable
    /// until [`LiveSpan::start`] publishes it).
    #[inline(always)]
    fn claim(&self, id: u64) -> Option<LiveSpan<'_>> {
        self.scan(id, |s| {
            s.id.load(Ordering::Relaxed) == 0
                && s.id
                    .compare_exchange(0, CLAIMED, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
        })
    }
}

/// The live spans of one layer.
pub(crate) struct LiveSpans {
    /// The newest table; null before the first span.
    newest: AtomicPtr<Table>,
    /// The tables made so far, oldest first (`tables[made - 1]` is `newest`), each from
    /// `Box::into_raw`, freed when `self` drops.
    tables: [AtomicPtr<Table>; MAX_TABLES],
    made: AtomicUsize,
    /// Serializes growth.
    grow: Mutex<()>,
    counters: usize,
    /// Spans that found no free state (not timed).
    untracked: AtomicU64,
}

impl LiveSpans {
    /// An empty table for spans with `counters` counter sums each (no memory until the first
    /// span).
    pub(crate) fn new(counters: usize) -> Self {
        LiveSpans {
            newest: AtomicPtr::new(core::ptr::null_mut()),
            tables: core::array::from_fn(|_| AtomicPtr::new(core::ptr::null_mut())),
            made: AtomicUsize::new(0),
            grow: Mutex::new(()),
            counters,
            untracked: AtomicU64::new(0),
        }
    }

    /// Table `i` (below `made`), or the newest.
    #[inline(always)]
    fn table(p: &AtomicPtr<Table>) -> Option<&Table> {
        // SAFETY: null or a table published (release) by `start_slow` from `Box::into_raw`
        // and freed only when `self` drops, so it lives as long as the borrow of `self`.
        unsafe { p.load(Ordering::Acquire).as_ref() }
    }

    /// Starts span `id` (a span id is never 0): claims a free state, fills it and publishes
    /// it. `None` when no state is free, or for the id [`CLAIMED`] (both counted in
    /// [`LiveSpans::untracked`]).
    #[inline]
    pub(crate) fn start(
        &self,
        id: u64,
        stats: &CallsiteStats,
        created: u64,
        all_counters: u32,
    ) -> Option<LiveSpan<'_>> {
        if id == CLAIMED {
            self.untracked.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        let span = match Self::table(&self.newest).and_then(|t| t.claim(id)) {
            Some(span) => span,
            None => self.start_slow(id)?,
        };
        span.start(id, stats, created, all_counters);
        Some(span)
    }

    /// Adds a table (the first one, or a larger one when the newest crowds) and claims there.
    #[cold]
    #[inline(never)]
    fn start_slow(&self, id: u64) -> Option<LiveSpan<'_>> {
        let _grow = self.grow.lock().unwrap_or_else(PoisonError::into_inner);
        // Another thread may have added a table since this one looked.
        if let Some(span) = Self::table(&self.newest).and_then(|t| t.claim(id)) {
            return Some(span);
        }
        let made = self.made.load(Ordering::Relaxed);
        if made == MAX_TABLES {
            self.untracked.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        let table = Box::into_raw(Box::new(Table::new(FIRST_TABLE << made, self.counters)));
        self.tables[made].store(table, Ordering::Release);
        self.made.store(made + 1, Ordering::Release);
        self.newest.store(table, Ordering::Release);
        Self::table(&self.newest).and_then(|t| t.claim(id))
    }

    /// The live span `id`, from any thread.
    #[inline(always)]
    pub(crate) fn find(&self, id: u64) -> Option<LiveSpan<'_>> {
        if id == CLAIMED {
            // Never started (untracked), and states being filled in carry this id.
            return None;
        }
        match Self::table(&self.newest)?.find(id) {
            Some(span) => Some(span),
            None => self.find_older(id),
        }
    }

    /// [`LiveSpans::find`] in the tables before the newest.
    #[cold]
    #[inline(never)]
    fn find_older(&self, id: u64) -> Option<LiveSpan<'_>> {
        let made = self.made.load(Ordering::Acquire);
        self.tables[..made.saturating_sub(1)]
            .iter()
            .rev()
            .find_map(|p| Self::table(p)?.find(id))
    }

    /// Calls `f` with each live span's callsite, its outermost busy time so far (ticks of the
    /// intervals that were outermost on their thread and have exited), its nested busy time
    /// so far, and the outermost intervals' cycles: what the per-phase table adds to the
    /// whole of `%` while spans are open. Reads
    /// race with the hooks: a state whose id changed while it was read (its span closed, or
    /// another took it) is skipped, so a span is never counted with another's values.
    pub(crate) fn for_each_live(&self, mut f: impl FnMut(&CallsiteStats, u64, u64, u64)) {
        let made = self.made.load(Ordering::Acquire);
        for table in self.tables[..made].iter().filter_map(Self::table) {
            for state in table.states.iter() {
                let id = state.id.load(Ordering::Acquire);
                if id == 0 || id == CLAIMED {
                    continue;
                }
                let outer = state.outer.load(Ordering::Relaxed);
                let nested = state.nested.load(Ordering::Relaxed);
                let cycles = state.outer_cycles.load(Ordering::Relaxed);
                // The acquire load above saw the id published after `stats` was stored, so
                // `stats()` is the span's (a valid pointer in any case: states only ever
                // point to the layer's callsite statistics).
                let stats = state.stats();
                // Pairs with the release fence after the claim (`LiveSpan::start`): if any
                // load above read a field stored for a span that claimed the state since,
                // the load below sees that claim, and the state is skipped.
                fence(Ordering::Acquire);
                if state.id.load(Ordering::Relaxed) == id {
                    f(stats, outer, nested, cycles);
                }
            }
        }
    }

    /// Spans that were not timed because no state was free.
    pub(crate) fn untracked(&self) -> u64 {
        self.untracked.load(Ordering::Relaxed)
    }

    /// States in all tables (memory: each is 72 bytes, plus 8 per counter when the layer has
    /// counters).
    #[cfg(test)]
    fn capacity(&self) -> usize {
        self.tables
            .iter()
            .filter_map(Self::table)
            .map(|t| t.states.len())
            .sum()
    }
}

impl Drop for LiveSpans {
    fn drop(&mut self) {
        for p in &mut self.tables {
            let t = ptr_mut(p);
            if !t.is_null() {
                // SAFETY: made by `Box::into_raw` in `start_slow`, stored once, freed only
                // here; with `&mut self` no span of the table can be borrowed.
                drop(unsafe { Box::from_raw(t) });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracing_core::callsite::{Callsite, Identifier};
    use tracing_core::field::FieldSet;
    use tracing_core::metadata::Kind;
    use tracing_core::subscriber::Interest;
    use tracing_core::{Level, Metadata};

    struct TestCallsite;
    impl Callsite for TestCallsite {
        fn set_interest(&self, _: Interest) {}
        fn metadata(&self) -> &Metadata<'_> {
            &META
        }
    }
    static CS: TestCallsite = TestCallsite;
    static META: Metadata<'static> = Metadata::new(
        "s",
        "t",
        Level::INFO,
        None,
        None,
        None,
        FieldSet::new(&[], Identifier(&CS)),
        Kind::SPAN,
    );

    fn stats() -> CallsiteStats {
        CallsiteStats::new(&META, 2, false)
    }

    #[test]
    fn start_find_release_reuse() {
        let stats = stats();
        let table = LiveSpans::new(2);
        assert!(table.find(1).is_none());
        let ids: Vec<u64> = (1..=500).map(|i| i * 7919).collect();
        for (n, &id) in ids.iter().enumerate() {
            let s = table.start(id, &stats, n as u64, 0b11).unwrap();
            s.state().nested.fetch_add(id, Ordering::Relaxed);
            s.sums()[1].fetch_add(id, Ordering::Relaxed);
        }
        for (n, &id) in ids.iter().enumerate() {
            let s = table.find(id).unwrap();
            assert_eq!(s.state().created.load(Ordering::Relaxed), n as u64);
            assert_eq!(s.state().busy(), id);
            assert_eq!(
                (
                    s.sums()[0].load(Ordering::Relaxed),
                    s.sums()[1].load(Ordering::Relaxed)
                ),
                (0, id)
            );
            assert!(core::ptr::eq(s.state().stats(), &stats));
        }
        for &id in &ids[..250] {
            table.find(id).unwrap().release();
            assert!(table.find(id).is_none());
        }
        // A reused state starts from fresh values.
        for &id in &ids[..250] {
            let s = table.start(id + 1, &stats, 0, 0b11).unwrap();
            assert_eq!(s.state().busy(), 0);
            assert_eq!(s.sums()[1].load(Ordering::Relaxed), 0);
        }
        assert_eq!(table.capacity(), FIRST_TABLE);
        assert_eq!(table.untracked(), 0);
    }

    /// The live spans a table adds to the whole of `%`: every live span once, with its
    /// outermost time, in every table; released spans no more.
    #[test]
    fn live_spans_are_listed_once() {
        let stats = stats();
        let table = LiveSpans::new(0);
        let n = if cfg!(miri) {
            40
        } else {
            3 * FIRST_TABLE as u64
        };
        for id in 1..=n {
            let s = table.start(id, &stats, 0, 0).unwrap();
            s.state().outer.fetch_add(id, Ordering::Relaxed);
            s.state().outer_cycles.fetch_add(1, Ordering::Relaxed);
        }
        let sum = |table: &LiveSpans| {
            let (mut spans, mut outer, mut cycles) = (0, 0, 0);
            table.for_each_live(|s, o, _, c| {
                assert!(core::ptr::eq(s, &stats));
                spans += 1;
                outer += o;
                cycles += c;
            });
            (spans, outer, cycles)
        };
        assert_eq!(sum(&table), (n, n * (n + 1) / 2, n));
        for id in (1..=n).filter(|id| id % 2 == 0) {
            table.find(id).unwrap().release();
        }
        let odd = n.div_ceil(2);
        assert_eq!(sum(&table), (odd, odd * odd, odd));
    }

    /// More live spans than the first table holds: tables are added, every span is found.
    #[test]
    fn crowded_tables_grow() {
        let stats = stats();
        let table = LiveSpans::new(0);
        // CI's miri step: half a table past the first, enough to add a second one (about half
        // the interpreted time of three tables' worth, which `.ci/miri-full` still runs).
        let n = picollo_testkit::miri_size(
            20 * FIRST_TABLE,
            3 * FIRST_TABLE,
            FIRST_TABLE + FIRST_TABLE / 2,
        ) as u64;
        for id in 1..=n {
            table.start(id, &stats, id, 0).unwrap();
        }
        assert!(table.capacity() > FIRST_TABLE);
        for id in 1..=n {
            assert_eq!(
                table
                    .find(id)
                    .unwrap()
                    .state()
                    .created
                    .load(Ordering::Relaxed),
                id
            );
        }
        assert_eq!(table.untracked(), 0);
    }

    /// Threads starting spans and handing them to the next thread, which finds, updates and
    /// releases them, all at once (ids unique per thread).
    #[test]
    fn concurrent_spans_across_threads() {
        use std::sync::mpsc;
        let stats = stats();
        let table = LiveSpans::new(1);
        // Under miri 60 a thread (17 s there at 150; `crowded_tables_grow` covers growth).
        let per_thread = if cfg!(miri) { 60 } else { 20_000u64 };
        let threads = 4usize;
        let (senders, receivers): (Vec<_>, Vec<_>) =
            (0..threads).map(|_| mpsc::channel::<u64>()).unzip();
        std::thread::scope(|s| {
            for (t, rx) in receivers.into_iter().enumerate() {
                let (table, stats) = (&table, &stats);
                let next = senders[(t + 1) % threads].clone();
                s.spawn(move || {
                    let mut received = 0;
                    for i in 0..per_thread {
                        let id = (i << 8) | (t as u64 + 1);
                        let span = table.start(id, stats, id, 1).unwrap();
                        span.sums()[0].store(id, Ordering::Relaxed);
                        next.send(id).unwrap();
                        // Take what the previous thread handed over.
                        while let Ok(theirs) = rx.try_recv() {
                            let span = table.find(theirs).unwrap();
                            assert_eq!(span.state().created.load(Ordering::Relaxed), theirs);
                            assert_eq!(span.sums()[0].load(Ordering::Relaxed), theirs);
                            span.state().outer.fetch_add(1, Ordering::Relaxed);
                            span.release();
                            received += 1;
                        }
                    }
                    drop(next);
                    for theirs in rx.iter().take((per_thread - received) as usize) {
                        table.find(theirs).unwrap().release();
                    }
                });
            }
            drop(senders);
        });
        assert_eq!(table.untracked(), 0);
    }

    /// The publication order under stress: a writer thread starts spans and hands each id to
    /// reader threads through a *relaxed* atomic (no synchronisation of its own), while
    /// another thread claims, fills and releases states of its own spans in the same table.
    /// A reader that finds an id must see the whole state the writer filled in (its
    /// statistics pointer, its creation time, its counter mask): the id is published last,
    /// with release. Run under miri (`cargo +nightly miri test -p picollo-tracing --lib
    /// spans`, a CI step), which explores weak-memory outcomes and reports a read of a
    /// half-filled state as a null dereference or a failed assertion.
    #[test]
    fn readers_never_see_a_half_filled_state() {
        use picollo_testkit::StopFlag;
        let stats = stats();
        let other = CallsiteStats::new(&META, 2, false);
        let table = LiveSpans::new(2);
        let rounds: u64 = if cfg!(miri) { 40 } else { 20_000 };
        let latest = AtomicU64::new(0);
        // Raised when the writer ends, by a panic too: the readers wait for it.
        let done = StopFlag::new();
        std::thread::scope(|s| {
            let (table, stats, latest, done) = (&table, &stats, &latest, &done);
            s.spawn(move || {
                let _done = done.raise_on_drop();
                for id in 1..=rounds {
                    table.start(id, stats, id, 0b11).unwrap();
                    latest.store(id, Ordering::Relaxed);
                }
            });
            for _ in 0..2 {
                s.spawn(move || {
                    let mut seen = 0u64;
                    while !done.is_raised() || seen < rounds {
                        let id = latest.load(Ordering::Relaxed);
                        if id == 0 {
                            if done.is_raised() {
                                break; // the writer ended (failed) before its first span
                            }
                            std::hint::spin_loop();
                            continue;
                        }
                        if let Some(span) = table.find(id) {
                            let state = span.state();
                            assert!(core::ptr::eq(state.stats(), stats));
                            assert_eq!(state.created.load(Ordering::Relaxed), id);
                            assert_eq!(state.counted.load(Ordering::Relaxed), 0b11 | NOT_ENTERED);
                        }
                        seen = seen.max(id);
                        if done.is_raised() {
                            break;
                        }
                    }
                });
            }
            // A second callsite starting and closing spans of its own meanwhile.
            s.spawn(move || {
                for i in 1..=rounds / 4 {
                    let id = (1 << 40) + i;
                    let span = table.start(id, &other, id, 0).unwrap();
                    assert!(core::ptr::eq(span.state().stats(), &other));
                    span.release();
                }
            });
        });
        assert_eq!(table.untracked(), 0);
        for id in 1..=rounds {
            table.find(id).unwrap().release();
        }
        // The sentinel id is never tracked, never found.
        assert!(table.start(CLAIMED, &stats, 0, 0).is_none());
        assert!(table.find(CLAIMED).is_none());
        assert_eq!(table.untracked(), 1);
    }
}
