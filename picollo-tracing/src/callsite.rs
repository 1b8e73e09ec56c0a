//! Per-callsite statistics, and the lock-free table that finds them from a span's
//! `Metadata` address.
//!
//! `register_callsite` (once per callsite, rare) creates or finds the statistics of the
//! callsite's `(name, target)` under a mutex and publishes `metadata address → statistics` in
//! an open-addressed table of atomic pointers. `on_new_span` finds them with a few relaxed
//! loads and no lock, so threads creating spans at high rates never contend on a lock.
//! Entries are never removed; the table is freed with the layer.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use picollo_alloc::{Dense, HistogramBuilder, ThreadLocalHistogram};
use picollo_core::Layout;
use picollo_spans::SpanName;
use tracing_core::{Level, Metadata};

/// The layout of every span histogram: 128 buckets per power of two (0.4% relative error),
/// the layout of [`picollo_spans::SpanAggregator`] and of HdrHistogram with 2
/// significant digits, so `.hlog` export is bucket for bucket.
pub(crate) const LAYOUT: Layout = Layout::from_block_scale(7).unwrap();
/// Busy and wall time in nanoseconds up to 2^45 ns (9.8 hours); longer spans count as
/// overflow.
pub(crate) const MAX_TIME_NS: u64 = 1 << 45;
/// Counter deltas up to 2^48 per span.
pub(crate) const MAX_COUNTER: u64 = 1 << 48;
/// Instructions per cycle times 10^6, up to 2^24 (IPC 16.7).
pub(crate) const MAX_IPC_MICRO: u64 = 1 << 24;
/// Slots of the lock-free table; callsites beyond it are found under a lock.
const TABLE_SLOTS: usize = 4096;

/// A thread-local histogram with `u32` shard cells (half the memory of `u64`; a shard's
/// bucket saturates at 4·10^9 spans, the accumulator of exited threads is 64-bit), in dense
/// storage: a layer has few series (one set per callsite that closed a span), recorded at
/// every close, where sparse storage's page lookup cost a close about 45 instructions
/// (`tracing_iai`); dense storage takes the memory the crate docs give.
pub(crate) type SpanHistogram = ThreadLocalHistogram<u32, Dense>;

fn histogram(max: u64) -> SpanHistogram {
    let builder = HistogramBuilder::new().layout(LAYOUT).max_trackable(max);
    match builder.u32_storage().dense().thread_local() {
        Ok(h) => h,
        // LAYOUT has no value unit, and every max is at least the window's minimum, 0.
        Err(e) => unreachable!("the span histograms build: {e}"),
    }
}

/// Everything recorded for the spans of one `(name, target)`.
pub(crate) struct CallsiteStats {
    pub(crate) name: &'static str,
    pub(crate) target: &'static str,
    /// The callsite's level (what a filter ahead of the layer compares).
    pub(crate) level: Level,
    /// The callsite's one name in every tool (the table's rows, `.hlog` tags, the frames
    /// `picollo attach` and `top` read): the span's name, or, once another target has a span
    /// so named, the name qualified by the fewest last parts of the target that tell them
    /// apart (`get::apply`, `set::apply` for `mini_redis::cmd::get` and `…::set`). Renamed
    /// only under the callsite registry's lock.
    label: Mutex<String>,
    /// The label as frames carry it (cut to 24 bytes): a pointer into `frame_names`, so a
    /// hook reads a whole name whatever a rename does meanwhile.
    frame_name: AtomicPtr<SpanName>,
    /// Every frame name the callsite had (renames are rare: at most one per callsite of the
    /// same name), kept so that a pointer read before a rename stays valid: in `Arc`s, whose
    /// contents stay where they are (and keep their pointers valid) when the vector grows.
    frame_names: Mutex<Vec<Arc<SpanName>>>,
    /// A span of this callsite was created (else a filter ahead of the layer disabled it).
    seen: AtomicBool,
    /// Counters of the layer, and whether it counts IPC.
    counters: usize,
    ipc: bool,
    /// Made when the first span of the callsite closes: an application registers many
    /// span callsites (its libraries' too) that never close a span, and each set of
    /// histograms holds tens of kilobytes.
    histograms: OnceLock<Histograms>,
}

/// [`Histograms::kinds`]: a span all of whose intervals were outermost on their thread.
pub(crate) const OUTER: u8 = 1;
/// A span none of whose intervals was outermost.
pub(crate) const NESTED: u8 = 2;
/// A span some of whose intervals were outermost.
pub(crate) const MIXED: u8 = 4;

/// The part of a callsite's busy time that `%` divides by ([`Histograms::outermost`]).
pub(crate) enum Outermost<'a> {
    /// All of it.
    All,
    /// None of it.
    None,
    /// As recorded (spans of both kinds).
    Recorded(Option<&'a SpanHistogram>),
}

impl Histograms {
    /// Notes a closing span's kind ([`OUTER`], [`NESTED`] or [`MIXED`]) and, once the
    /// callsite has spans of both, records `outer_ns`, its outermost busy time. One load
    /// while every span of the callsite is of one kind.
    #[inline(always)]
    pub(crate) fn note_outer(&self, kind: u8, outer_ns: u64) {
        let kinds = self.kinds.load(Ordering::Relaxed);
        if kinds != kind {
            self.note_outer_slow(kinds, kind, outer_ns);
        }
    }

    #[inline(never)]
    fn note_outer_slow(&self, mut kinds: u8, kind: u8, outer_ns: u64) {
        if kinds & kind == 0 {
            kinds = self.kinds.fetch_or(kind, Ordering::Relaxed) | kind;
        }
        if kinds != OUTER && kinds != NESTED && outer_ns > 0 {
            self.outer
                .get_or_init(|| histogram(MAX_TIME_NS))
                .record(outer_ns);
        }
    }

    /// The part of the busy time that `%` divides by.
    pub(crate) fn outermost(&self) -> Outermost<'_> {
        match self.kinds.load(Ordering::Relaxed) {
            OUTER => Outermost::All,
            0 | NESTED => Outermost::None,
            _ => Outermost::Recorded(self.outer.get()),
        }
    }
}

/// The histograms of one callsite.
pub(crate) struct Histograms {
    /// Busy time per span (sum of enter → exit), nanoseconds.
    pub(crate) busy: SpanHistogram,
    /// Wall time per span (new → close), nanoseconds.
    pub(crate) wall: SpanHistogram,
    /// Per layer counter: the deltas over each span's busy time (spans whose every busy
    /// interval counted it).
    pub(crate) counters: Box<[SpanHistogram]>,
    /// Per layer counter: spans for which it was not counted in some busy interval.
    pub(crate) not_counted: Box<[AtomicU64]>,
    /// IPC × 10^6 per span, when the layer counts cycles and instructions.
    pub(crate) ipc_micro: Option<SpanHistogram>,
    /// What the closed spans' intervals were: [`OUTER`] (every interval of a span outermost
    /// on its thread), [`NESTED`] (none), [`MIXED`] (some). A callsite whose spans were all
    /// outermost counts its whole busy time in the whole that `%` divides, one whose spans
    /// were all nested none of it: neither costs a close anything but a load. Only when a
    /// callsite has both is `outer` recorded, from then on.
    kinds: AtomicU8,
    /// The outermost part of each span's busy time (ns), recorded once `kinds` is mixed: a
    /// thread-local histogram like `busy`, so no close writes a shared word.
    outer: OnceLock<SpanHistogram>,
    /// The cycles of the outermost intervals, when the layer counts cycles.
    pub(crate) outer_cycles: AtomicU64,
}

impl CallsiteStats {
    pub(crate) fn new(meta: &'static Metadata<'static>, counters: usize, ipc: bool) -> Self {
        let first = Arc::new(SpanName::new(meta.name()));
        Self {
            name: meta.name(),
            target: meta.target(),
            level: *meta.level(),
            label: Mutex::new(meta.name().to_owned()),
            frame_name: AtomicPtr::new(Arc::as_ptr(&first).cast_mut()),
            frame_names: Mutex::new(vec![first]),
            seen: AtomicBool::new(false),
            counters,
            ipc,
            histograms: OnceLock::new(),
        }
    }

    /// The histograms, made on first use.
    #[inline]
    pub(crate) fn histograms(&self) -> &Histograms {
        self.histograms.get_or_init(|| Histograms {
            busy: histogram(MAX_TIME_NS),
            wall: histogram(MAX_TIME_NS),
            counters: (0..self.counters).map(|_| histogram(MAX_COUNTER)).collect(),
            not_counted: (0..self.counters).map(|_| AtomicU64::new(0)).collect(),
            ipc_micro: self.ipc.then(|| histogram(MAX_IPC_MICRO)),
            kinds: AtomicU8::new(0),
            outer: OnceLock::new(),
            outer_cycles: AtomicU64::new(0),
        })
    }

    /// The name frames carry: [`CallsiteStats::label`], cut to 24 bytes.
    #[inline]
    pub(crate) fn frame_name(&self) -> SpanName {
        // SAFETY: the pointer is to the contents of an `Arc` of `frame_names` (stored with
        // release after the name was written), which keeps every name the callsite had until
        // the statistics drop; `self` is borrowed, so they have not. Nothing writes a name
        // after it is shared.
        unsafe { *self.frame_name.load(Ordering::Acquire) }
    }

    /// The callsite's name in the per-phase table, `.hlog` tags and frames: the span's name,
    /// or `module::name` where another target has a span of that name (see `label`).
    pub(crate) fn label(&self) -> String {
        self.label
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Renames the callsite (the registry's lock held): its label and frame name.
    fn rename(&self, label: String) {
        let mut current = self.label.lock().unwrap_or_else(PoisonError::into_inner);
        if *current == label {
            return;
        }
        let name = Arc::new(SpanName::new(&label));
        self.frame_name
            .store(Arc::as_ptr(&name).cast_mut(), Ordering::Release);
        self.frame_names
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(name);
        *current = label;
    }

    /// Notes that a span of the callsite was created (one load once it has been).
    #[inline(always)]
    pub(crate) fn note_seen(&self) {
        if !self.seen.load(Ordering::Relaxed) {
            self.seen.store(true, Ordering::Relaxed);
        }
    }

    /// Whether a span of the callsite was ever created.
    pub(crate) fn seen(&self) -> bool {
        self.seen.load(Ordering::Relaxed)
    }

    /// The histograms, if a span of the callsite closed.
    pub(crate) fn recorded(&self) -> Option<&Histograms> {
        self.histograms.get()
    }
}

/// One published `metadata address → statistics` pair.
struct Slot {
    meta: usize,
    stats: Arc<CallsiteStats>,
}

/// The callsite table of one layer.
pub(crate) struct Callsites {
    slots: Box<[AtomicPtr<Slot>]>,
    /// Statistics by `(name, target)`, in registration order, and the callsites that did not
    /// fit the table. Taken only when a callsite registers (and for reports).
    registry: Mutex<Registry>,
}

#[derive(Default)]
struct Registry {
    by_key: HashMap<(&'static str, &'static str), Arc<CallsiteStats>>,
    order: Vec<Arc<CallsiteStats>>,
    overflow: Vec<(usize, Arc<CallsiteStats>)>,
}

fn slot_of(meta: usize) -> usize {
    // Fibonacci hashing of the address (metadata are statics, 8-byte aligned at least).
    ((meta as u64 >> 3).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 52) as usize % TABLE_SLOTS
}

impl Callsites {
    pub(crate) fn new() -> Self {
        Self {
            slots: (0..TABLE_SLOTS)
                .map(|_| AtomicPtr::new(core::ptr::null_mut()))
                .collect(),
            registry: Mutex::new(Registry::default()),
        }
    }

    fn registry(&self) -> std::sync::MutexGuard<'_, Registry> {
        self.registry.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The statistics of `meta`, without a lock when the table holds it.
    #[inline]
    pub(crate) fn get(&self, meta: &'static Metadata<'static>) -> Option<&CallsiteStats> {
        let key = meta as *const Metadata<'static> as usize;
        let start = slot_of(key);
        for i in 0..TABLE_SLOTS {
            let p = self.slots[(start + i) % TABLE_SLOTS].load(Ordering::Acquire);
            if p.is_null() {
                break;
            }
            // SAFETY: non-null slots point to `Slot`s published with release ordering by
            // `insert` and freed only when `self` drops.
            let slot = unsafe { &*p };
            if slot.meta == key {
                return Some(&slot.stats);
            }
        }
        self.get_slow(key)
    }

    #[cold]
    fn get_slow(&self, key: usize) -> Option<&CallsiteStats> {
        let reg = self.registry();
        let stats = reg.overflow.iter().find(|(m, _)| *m == key)?;
        let ptr: *const CallsiteStats = Arc::as_ptr(&stats.1);
        // SAFETY: the registry keeps every `Arc` until `self` drops, so the statistics
        // outlive the returned borrow of `self`.
        Some(unsafe { &*ptr })
    }

    /// Registers `meta` (idempotent): its `(name, target)` statistics, created if new, and
    /// the table entry for its address.
    pub(crate) fn register(
        &self,
        meta: &'static Metadata<'static>,
        counters: usize,
        ipc: bool,
    ) -> &CallsiteStats {
        if let Some(s) = self.get(meta) {
            return s;
        }
        let key = meta as *const Metadata<'static> as usize;
        let mut reg = self.registry();
        let stats = reg
            .by_key
            .entry((meta.name(), meta.target()))
            .or_insert_with(|| Arc::new(CallsiteStats::new(meta, counters, ipc)))
            .clone();
        if !reg.order.iter().any(|s| Arc::ptr_eq(s, &stats)) {
            reg.order.push(stats.clone());
            // Other targets with a span of this name: all of them are qualified from now on.
            let same_name: Vec<&Arc<CallsiteStats>> =
                reg.order.iter().filter(|o| o.name == stats.name).collect();
            if same_name.len() > 1 {
                let targets: Vec<&str> = same_name.iter().map(|s| s.target).collect();
                for (s, label) in same_name.iter().zip(qualified_labels(&targets, stats.name)) {
                    s.rename(label);
                }
            }
        }
        let ptr: *const CallsiteStats = Arc::as_ptr(&stats);
        // Insertions are serialized by the registry lock; readers probe without it.
        let start = slot_of(key);
        let mut placed = false;
        for i in 0..TABLE_SLOTS {
            let slot = &self.slots[(start + i) % TABLE_SLOTS];
            let p = slot.load(Ordering::Acquire);
            if p.is_null() {
                let boxed = Box::into_raw(Box::new(Slot {
                    meta: key,
                    stats: stats.clone(),
                }));
                slot.store(boxed, Ordering::Release);
                placed = true;
                break;
            }
            // SAFETY: as in `get`.
            if unsafe { &*p }.meta == key {
                placed = true;
                break;
            }
        }
        if !placed && !reg.overflow.iter().any(|(m, _)| *m == key) {
            reg.overflow.push((key, stats));
        }
        drop(reg);
        // SAFETY: `ptr` is kept alive by the registry until `self` drops.
        unsafe { &*ptr }
    }

    /// Every `(name, target)` registered, in registration order.
    pub(crate) fn all(&self) -> Vec<Arc<CallsiteStats>> {
        self.registry().order.clone()
    }
}

/// The last `parts` `::`-separated parts of `target` (all of it when it has fewer).
fn target_suffix(target: &str, parts: usize) -> &str {
    let mut at = target.len();
    for _ in 0..parts {
        match target[..at].rfind("::") {
            Some(i) => at = i,
            None => return target,
        }
    }
    &target[at + 2..]
}

/// `suffix::name` for each of `targets` (distinct targets of spans named `name`), with the
/// fewest last parts of the targets that make the labels distinct.
fn qualified_labels(targets: &[&str], name: &str) -> Vec<String> {
    let most = targets
        .iter()
        .map(|t| t.split("::").count())
        .max()
        .unwrap_or(1);
    let mut parts = 1;
    loop {
        let suffixes: Vec<&str> = targets.iter().map(|t| target_suffix(t, parts)).collect();
        let distinct = suffixes
            .iter()
            .enumerate()
            .all(|(i, s)| !suffixes[..i].contains(s));
        if distinct || parts >= most {
            return suffixes.iter().map(|s| format!("{s}::{name}")).collect();
        }
        parts += 1;
    }
}

impl Drop for Callsites {
    fn drop(&mut self) {
        for slot in self.slots.iter_mut() {
            let p = *slot.get_mut();
            if !p.is_null() {
                // SAFETY: non-null slots hold pointers from `Box::into_raw` in `register`,
                // freed only here, once.
                drop(unsafe { Box::from_raw(p) });
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

    struct TestCallsite(&'static Metadata<'static>);

    impl Callsite for TestCallsite {
        fn set_interest(&self, _: Interest) {}
        fn metadata(&self) -> &Metadata<'_> {
            self.0
        }
    }

    macro_rules! test_metadata {
        ($cs:ident, $meta:ident, $name:literal, $target:literal) => {
            static $cs: TestCallsite = TestCallsite(&$meta);
            static $meta: Metadata<'static> = Metadata::new(
                $name,
                $target,
                Level::INFO,
                None,
                None,
                None,
                FieldSet::new(&[], Identifier(&$cs)),
                Kind::SPAN,
            );
        };
    }

    test_metadata!(CS_A, META_A, "a", "t1");
    test_metadata!(CS_B, META_B, "b", "t1");
    test_metadata!(CS_A2, META_A2, "a", "t1"); // same name and target as META_A
    test_metadata!(CS_A3, META_A3, "a", "t2"); // same name, another target

    fn metas() -> [&'static Metadata<'static>; 4] {
        [&META_A, &META_B, &META_A2, &META_A3]
    }

    #[test]
    fn callsites_by_name_and_target_from_many_threads() {
        let table = Callsites::new();
        std::thread::scope(|s| {
            for t in 0..3 {
                let table = &table;
                s.spawn(move || {
                    for i in 0..4 {
                        let m = metas()[(i + t) % 4];
                        let registered: *const CallsiteStats = table.register(m, 1, false);
                        let found: *const CallsiteStats = table.get(m).unwrap();
                        assert_eq!(registered, found);
                    }
                });
            }
        });
        let ptr = |m| table.get(m).map(|s| s as *const CallsiteStats).unwrap();
        assert_eq!(
            ptr(&META_A),
            ptr(&META_A2),
            "one statistics per (name, target)"
        );
        assert_ne!(ptr(&META_A), ptr(&META_A3));
        assert_ne!(ptr(&META_A), ptr(&META_B));
        let all = table.all();
        assert_eq!(all.len(), 3);
        assert_eq!(all.iter().filter(|s| s.name == "a").count(), 2);
        // Two targets name a span `a`: frames, rows and tags say which.
        let a = table.get(&META_A).unwrap();
        assert_eq!(a.label(), "t1::a");
        assert_eq!(a.frame_name(), SpanName::new("t1::a"));
        assert_eq!(table.get(&META_B).unwrap().label(), "b");
        assert_eq!(all[0].histograms().counters.len(), 1);
    }

    test_metadata!(CS_G, META_G, "apply", "mini_redis::cmd::get");
    test_metadata!(CS_S, META_S, "apply", "mini_redis::cmd::set");
    test_metadata!(CS_OG, META_OG, "apply", "other::cmd::get");

    /// One name per callsite: the table's, the `.hlog`'s and the frames' (what `picollo
    /// attach` and `top` show) are the same, qualified by as few parts of the target as
    /// tell callsites of one name apart, and renamed when a new one needs more.
    #[test]
    fn one_name_per_callsite_everywhere() {
        let table = Callsites::new();
        let get = table.register(&META_G, 0, false);
        assert_eq!(get.label(), "apply");
        assert_eq!(get.frame_name(), SpanName::new("apply"));
        let set = table.register(&META_S, 0, false);
        for (s, name) in [(get, "get::apply"), (set, "set::apply")] {
            assert_eq!(s.label(), name);
            assert_eq!(s.frame_name(), SpanName::new(name));
        }
        let other = table.register(&META_OG, 0, false);
        // `cmd::get` is not enough to tell `mini_redis::cmd::get` from `other::cmd::get`.
        for (s, name) in [
            (get, "mini_redis::cmd::get::apply"),
            (set, "mini_redis::cmd::set::apply"),
            (other, "other::cmd::get::apply"),
        ] {
            assert_eq!(s.label(), name);
            // Frames carry 24 bytes: the label's first 24 here.
            assert_eq!(s.frame_name(), SpanName::new(name));
        }
        assert_eq!(target_suffix("a::b::c", 2), "b::c");
        assert_eq!(target_suffix("c", 2), "c");
    }

    #[test]
    fn unregistered_callsites_are_not_found() {
        let table = Callsites::new();
        assert!(table.get(&META_B).is_none());
        table.register(&META_A, 0, false);
        assert!(table.get(&META_B).is_none());
        assert_eq!(table.get(&META_A).unwrap().name, "a");
    }
}
