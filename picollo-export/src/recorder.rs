//! A [`metrics::Recorder`] (feature `metrics`) whose histograms are Picollo histograms
//! (atomic or thread-local), counters and gauges plain atomics, all with labels, in a
//! [`Registry`]: served to Prometheus as native histograms, pushed as OTLP, printed as the
//! summary tables of Picollo for .NET, logged as `.hlog` intervals.
//!
//! Memory follows what was recorded and is bounded whatever the record rate: by default each
//! series is an atomic histogram over sparse storage (`picollo_alloc::sparse`: pages of
//! buckets only for the octaves that were recorded into, a small table for cold buckets), never
//! a buffer of raw samples (the growth of `metrics-exporter-prometheus` between renders,
//! metrics-rs issue 339). A series that saw 20 values over 1 µs .. 1 s holds about a
//! kilobyte, one that saw thousands at most its window's cells
//! ([`RecorderBuilder::series_footprint`]).
//!
//! # Which kind
//!
//! The default is the atomic kind over sparse storage: one shared histogram per series, one
//! locked add per record (about 8 ns on the project's VM, against 60 for
//! `metrics-exporter-prometheus`'s handle; `benches/RESULTS.md`, `metrics-recorder`). The
//! thread-local kind ([`HistogramKind::ThreadLocal`]) records with a plain load and store
//! (about 3 ns) but keeps a shard per recording thread, so its memory multiplies by the
//! threads that record into a series. Measured per series (histogram bytes, values over
//! 1 µs .. 1 s; `cargo run --release -p picollo-export --features metrics --example
//! series_footprint`):
//!
//! | values per series and thread | atomic, 1 and 2 threads | thread-local, 1 thread | thread-local, 2 threads |
//! |---:|---:|---:|---:|
//! | 20 | 888 B | 2.1 KB | 2.5 KB |
//! | 200 | 4.6–5.6 KB | 5.6 KB | 11.6 KB |
//! | 2,000 | 26 KB | 27 KB | 55 KB |
//!
//! `metrics-exporter-prometheus` holds about 1.35 KB per series at 20 values and 7.9 KB at 200
//! (issue 30's measurement, two threads): the atomic kind stays within those budgets, the
//! thread-local kind does not, hence the default. Choose the thread-local kind for a few hot
//! series recorded from many threads. [`RecorderBuilder::dense`] gives every series dense
//! storage (the whole window from the start: the fewest instructions per record from the first
//! value on, at 59 KB per series and thread).
//!
//! A handle's `record` maps the scaled `f64` to its bucket straight from the float's bits (one
//! shift and one subtraction, no integer conversion: see `FloatBuckets` in the source) and
//! adds one to the cell: the calling thread's (thread-local kind), or the page of the bucket's
//! block (sparse atomic kind, which takes the block and offset from the bits too): about 15
//! instructions behind the `metrics` facade's dynamic call, where `metrics-exporter-prometheus`
//! appends each sample to a shared buffer (`cargo bench -p picollo-benches --bench
//! metrics_recorder`).
//!
//! # The faster path: keep the handle
//!
//! `metrics::histogram!(…)` asks the recorder for the histogram on every call. With the
//! `metrics` API no recorder can make that free: the facade looks up the current recorder,
//! and the `metrics::Histogram` it returns owns an `Arc` that is cloned and dropped on each
//! call, around a dynamic `record`. Picollo's recorder adds a per-thread cache lookup of the
//! key (pointer compares for a literal key) to that floor. Calling `histogram!` once and keeping
//! the handle skips all of it: the loop pays only the dynamic call and Picollo's record,
//! several times cheaper (`cargo bench -p picollo-benches --bench metrics_recorder` measures
//! both, and the facade's floor; `examples/metrics_handle.rs` shows where to keep handles).
//!
//! ```
//! use std::sync::Arc;
//! use picollo_export::recorder::RecorderBuilder;
//! use picollo_export::Registry;
//!
//! let recorder = RecorderBuilder::new().build(Arc::new(Registry::new()));
//! metrics::with_local_recorder(&recorder, || {
//!     // Per call: a lookup, an `Arc` clone and drop each time.
//!     for v in 0..1000u32 {
//!         metrics::histogram!("work.size").record(v);
//!     }
//!     // Kept handle: resolved once, then only the record.
//!     let size = metrics::histogram!("work.size");
//!     for v in 0..1000u32 {
//!         size.record(v);
//!     }
//! });
//! assert!(recorder.summaries().contains("work_size"));
//! ```
//!
//! Names and label keys are made valid for Prometheus (every other character becomes `_`, a
//! leading digit gets a `_` in front; a label called `le` on a histogram becomes `le_`). A key
//! the registry refuses (its name already holds another kind) gets a no-op handle and is
//! counted in `picollo_recorder_refused_registrations_total`.
//!
//! ```
//! use std::sync::Arc;
//! use picollo_export::recorder::RecorderBuilder;
//! use picollo_export::text::TextFormat;
//! use picollo_export::Registry;
//!
//! let registry = Arc::new(Registry::new());
//! let recorder = RecorderBuilder::new().scale(1e9).build(registry.clone());
//! metrics::with_local_recorder(&recorder, || {
//!     metrics::describe_histogram!("db.query", "query time in nanoseconds");
//!     let h = metrics::histogram!("db.query", "table" => "users");
//!     h.record(std::time::Duration::from_micros(250));
//!     metrics::counter!("db.queries").increment(1);
//! });
//! let text = registry.encode_text(TextFormat::Prometheus);
//! assert!(text.contains("db_query_count{table=\"users\"} 1"));
//! assert!(text.contains("db_queries 1"));
//! assert!(recorder.summaries().contains("db_query{table=\"users\"}"));
//! ```

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

mod handle_cache;
#[cfg(test)]
mod tests;

use metrics::{Key, KeyName, Metadata, SharedString, Unit};
use picollo_alloc::hdr::interop::{self, ExportOptions as HdrOptions};
use picollo_alloc::hdr::{LogError, LogWriter};
use picollo_alloc::sparse::SparseStorage;
use picollo_alloc::{
    heap, Dense, HeapAtomicHistogram, Snapshot, SparseAtomicHistogram, Summary,
    ThreadLocalHistogram,
};
use picollo_core::{AtomicHistogram, BucketPos, HistogramRead, Layout, Window};

use crate::registry::{Counter, Gauge};
use crate::source::Exported;
use crate::{Labels, Registry};
use handle_cache::{cached_handle, remember_handle};

/// Which Picollo kind the recorder's histograms are (see the [module docs](self), "Which
/// kind").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum HistogramKind {
    /// One shard per recording thread, written with a relaxed load and store (the fastest
    /// record; memory multiplies by the threads that record into a series).
    ThreadLocal,
    /// One shared histogram, one `fetch_add` per record (the default; over sparse storage
    /// unless [`RecorderBuilder::dense`], memory follows what was recorded; slower under
    /// contention).
    #[default]
    Atomic,
}

/// Configures a [`PicolloRecorder`].
#[derive(Clone, Copy, Debug)]
pub struct RecorderBuilder {
    layout: Layout,
    max_trackable: u64,
    kind: HistogramKind,
    dense: bool,
    scale: f64,
}

impl Default for RecorderBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl RecorderBuilder {
    /// Defaults: atomic histograms over sparse storage, block scale 7 (0.39% relative error,
    /// native schema 7, and an exact HdrHistogram twin at 2 significant digits for `.hlog`),
    /// the full `u64` range, scale 1.
    pub fn new() -> Self {
        RecorderBuilder {
            layout: Layout::from_block_scale(7).unwrap_or(Layout::DEFAULT),
            max_trackable: u64::MAX,
            kind: HistogramKind::Atomic,
            dense: false,
            scale: 1.0,
        }
    }

    /// Dense storage: every bucket of the window has its cell from the start (the whole
    /// window's memory per series, and per recording thread for the thread-local kind).
    pub fn dense(mut self) -> Self {
        self.dense = true;
        self
    }

    /// Sparse storage (the default): memory follows what was recorded.
    pub fn sparse(mut self) -> Self {
        self.dense = false;
        self
    }

    /// The bytes one series of this configuration holds right after it was created, before
    /// anything is recorded (a thread-local series then adds a shard per recording thread).
    pub fn series_footprint(&self) -> usize {
        let window = self.window();
        match (self.kind, self.dense) {
            (HistogramKind::Atomic, false) => {
                let cells = SparseStorage::<picollo_core::AtomicU64>::new(self.layout, window);
                let window = cells.window();
                AtomicHistogram::with_storage(self.layout, cells, window)
                    .map_or(0, |h| h.footprint())
            }
            (HistogramKind::Atomic, true) => {
                heap::atomic::<picollo_core::AtomicU64>(self.layout, window).footprint()
            }
            (HistogramKind::ThreadLocal, true) => {
                ThreadLocalHistogram::<u64, Dense>::new(self.layout, window).footprint()
            }
            (HistogramKind::ThreadLocal, false) => {
                ThreadLocalHistogram::<u64>::new(self.layout, window).footprint()
            }
        }
    }

    /// The window of every series: `0..=max_trackable` under the layout.
    fn window(&self) -> Window {
        Window::new(self.layout, 0, self.max_trackable).unwrap_or(Window::full(self.layout))
    }

    /// The histograms' layout.
    pub fn layout(mut self, layout: Layout) -> Self {
        self.layout = layout;
        self
    }

    /// Values above this count as overflow (smaller windows use less memory).
    pub fn max_trackable(mut self, max: u64) -> Self {
        self.max_trackable = max;
        self
    }

    /// The histogram kind.
    pub fn kind(mut self, kind: HistogramKind) -> Self {
        self.kind = kind;
        self
    }

    /// What each recorded `f64` is multiplied by before it is counted (`1e9`: seconds to
    /// nanoseconds).
    pub fn scale(mut self, scale: f64) -> Self {
        self.scale = scale;
        self
    }

    /// A recorder registering into `registry`.
    pub fn build(self, registry: Arc<Registry>) -> PicolloRecorder {
        let invalid = registry
            .counter(
                "picollo_recorder_invalid_values_total",
                "Values recorded into a histogram that could not be counted (NaN)",
                &Labels::empty(),
            )
            .unwrap_or_default();
        let refused = registry
            .counter(
                "picollo_recorder_refused_registrations_total",
                "metrics keys the registry refused (a name already used by another kind)",
                &Labels::empty(),
            )
            .unwrap_or_default();
        PicolloRecorder {
            inner: Arc::new(Inner {
                id: NEXT_RECORDER_ID.fetch_add(1, Ordering::Relaxed),
                registry,
                config: self,
                invalid,
                refused,
                state: Mutex::new(State::default()),
            }),
        }
    }

    /// Builds the recorder and installs it as the process-wide `metrics` recorder.
    ///
    /// # Errors
    /// When a global recorder is already installed.
    pub fn install(
        self,
        registry: Arc<Registry>,
    ) -> Result<PicolloRecorder, metrics::SetRecorderError<PicolloRecorder>> {
        let recorder = self.build(registry);
        metrics::set_global_recorder(recorder.clone())?;
        Ok(recorder)
    }
}

/// One histogram of the recorder, of the kind it was built with: the handle `metrics` calls
/// holds the histogram itself (one indirection from the call to the cells), and the
/// registry serves the same `Arc`.
#[derive(Clone)]
enum Kinded {
    ThreadLocal(Arc<Handle<ThreadLocalHistogram<u64, Dense>>>),
    SparseThreadLocal(Arc<Handle<ThreadLocalHistogram<u64>>>),
    Atomic(Arc<Handle<HeapAtomicHistogram>>),
    SparseAtomic(Arc<Handle<SparseAtomicHistogram>>),
}

impl Kinded {
    fn read(&self) -> &dyn HistogramRead {
        match self {
            Self::ThreadLocal(h) => &h.histogram,
            Self::SparseThreadLocal(h) => &h.histogram,
            Self::Atomic(h) => &h.histogram,
            Self::SparseAtomic(h) => &h.histogram,
        }
    }

    fn exported(&self) -> Arc<dyn Exported> {
        match self {
            Self::ThreadLocal(h) => h.clone(),
            Self::SparseThreadLocal(h) => h.clone(),
            Self::Atomic(h) => h.clone(),
            Self::SparseAtomic(h) => h.clone(),
        }
    }

    /// The handle `metrics` calls: typed, so a record is the conversion plus the kind's own
    /// record, with no dynamic dispatch inside.
    fn handle(&self) -> metrics::Histogram {
        match self {
            Self::ThreadLocal(h) => metrics::Histogram::from_arc(h.clone()),
            Self::SparseThreadLocal(h) => metrics::Histogram::from_arc(h.clone()),
            Self::Atomic(h) => metrics::Histogram::from_arc(h.clone()),
            Self::SparseAtomic(h) => metrics::Histogram::from_arc(h.clone()),
        }
    }

    /// Bytes the series' histogram holds now.
    fn footprint(&self) -> usize {
        match self {
            Self::ThreadLocal(h) => h.histogram.footprint(),
            Self::SparseThreadLocal(h) => h.histogram.footprint(),
            Self::Atomic(h) => h.histogram.footprint(),
            Self::SparseAtomic(h) => h.histogram.footprint(),
        }
    }
}

/// One histogram series of the recorder.
struct Entry {
    /// The series' name and labels: its title is made when asked for (not per registration).
    series: (String, Labels),
    histogram: Kinded,
    /// What `register_histogram` hands out for the key (a clone of one `Arc`).
    handle: metrics::Histogram,
    /// Totals at the last `.hlog` interval.
    last: Option<Snapshot>,
}

impl Entry {
    /// `name{labels}`.
    fn title(&self) -> String {
        format!("{}{}", self.series.0, self.series.1)
    }
}

#[derive(Default)]
struct State {
    help: HashMap<String, String>,
    histograms: HashMap<Key, usize, BuildHasherDefault<KeyHash>>,
    entries: Vec<Entry>,
}

/// Hashes a [`Key`] by the hash it already carries (`Key` writes exactly one `u64`).
#[derive(Default)]
struct KeyHash(u64);

impl Hasher for KeyHash {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        // Not used by `Key`; fold anything else in rather than ignore it.
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ b as u64).wrapping_mul(0x100_0000_01b3);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 ^= n;
    }
}

struct Inner {
    /// Unique per recorder (never reused): tags this recorder's entries in the per-thread
    /// handle caches.
    id: u64,
    registry: Arc<Registry>,
    config: RecorderBuilder,
    invalid: Counter,
    refused: Counter,
    state: Mutex<State>,
}

/// The `metrics` recorder. Cheap to clone (one `Arc`); see the [module docs](self).
#[derive(Clone)]
pub struct PicolloRecorder {
    inner: Arc<Inner>,
}

impl core::fmt::Debug for PicolloRecorder {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("PicolloRecorder")
            .field("config", &self.inner.config)
            .finish_non_exhaustive()
    }
}

/// A histogram kind the recorder can hand to `metrics`.
trait RecorderHistogram: Send + Sync + 'static {
    fn record_value(&self, value: u64);
}

impl<S: picollo_alloc::StorageChoice> RecorderHistogram for ThreadLocalHistogram<u64, S> {
    #[inline]
    fn record_value(&self, value: u64) {
        self.record(value)
    }
}

impl RecorderHistogram for HeapAtomicHistogram {
    #[inline]
    fn record_value(&self, value: u64) {
        self.record(value)
    }
}

impl RecorderHistogram for SparseAtomicHistogram {
    #[inline]
    fn record_value(&self, value: u64) {
        self.record(value)
    }
}

/// The handle `metrics::histogram!` returns, holding the histogram: converts and records.
struct Handle<H> {
    histogram: H,
    scale: f64,
    /// The bucket of a scaled value from its bits (the thread-local kind's fast path).
    buckets: FloatBuckets,
    invalid: Counter,
}

impl<H: RecorderHistogram + HistogramRead> Handle<H> {
    fn new(histogram: H, scale: f64, invalid: Counter) -> Self {
        Handle {
            buckets: FloatBuckets::new(histogram.layout(), histogram.window()),
            histogram,
            scale,
            invalid,
        }
    }
}

/// `2^63` as an `f64`: values below it convert with one signed conversion.
const TWO_63: f64 = 9_223_372_036_854_775_808.0;

/// The storage slot of a (scaled) `f64` value, read from its bits without converting it to
/// an integer first.
///
/// For a value `v >= 2^k` (`k` the layout's block scale, `B = 2^k`) with binary exponent `m`,
/// Picollo's bucket is `(m - k + 1)·B + j`, where `j` is the top `k` bits of the mantissa
/// below the leading one (`Layout::index_of`). An `f64`'s bits shifted right by `52 - k`
/// are `(m + 1023)·B + j`: the same number plus the constant `(1022 + k)·B`. The bucket of a
/// real `v` is that of its integer part (bucket edges at and above `B` are integers), which
/// is what converting first would record. So one shift and one subtraction give the slot,
/// and one unsigned comparison keeps the path to values in `[2^k, 2^64)` that fall inside
/// the window: everything else (values below `B`, whose buckets are not spaced this way;
/// outside the window; negative; infinite; NaN, whose bits all land far above the window)
/// takes [`Handle::record_converted`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct FloatBuckets {
    shift: u32,
    /// The shifted bits of the first value of the fast range.
    base: u64,
    /// Buckets in the fast range.
    limit: u64,
    /// The slot of the fast range's first bucket.
    offset: usize,
}

impl FloatBuckets {
    fn new(layout: Layout, window: Window) -> Self {
        let k = layout.block_scale();
        let b = 1usize << k;
        let (first, end) = (window.first(), window.first() + window.len());
        // The fast range: buckets at or above B's, inside the window; with a value unit, the
        // buckets above its two coarse blocks (the plain layout's from there on).
        let lo = first.max(b + layout.first_index());
        FloatBuckets {
            shift: 52 - k,
            base: ((1022 + u64::from(k)) << k) + lo as u64,
            limit: end.saturating_sub(lo) as u64,
            offset: lo - first,
        }
    }

    /// The storage slot of `v`, when `v` is in the fast range; then `slot < window.len()`
    /// (`limit + offset` is the window's length).
    #[inline(always)]
    fn slot(&self, v: f64) -> Option<usize> {
        let t = (v.to_bits() >> self.shift).wrapping_sub(self.base);
        (t < self.limit).then(|| t as usize + self.offset)
    }

    /// The [`BucketPos`] of `v` for `v` in `[B, 2^64)` (any window: the storage sorts out
    /// what falls outside its own): the same shifted bits, less `(1023 + k)·B`, are
    /// `(m - k)·B + j`, block `m - k` and offset `B + j` (`Layout::position`).
    #[inline(always)]
    fn position(&self, v: f64) -> Option<BucketPos> {
        let k = 52 - self.shift;
        let u = (v.to_bits() >> self.shift).wrapping_sub((1023 + u64::from(k)) << k);
        (u < (64 - u64::from(k)) << k).then(|| BucketPos {
            block: (u >> k) as usize,
            offset: ((1u64 << k) | (u & ((1u64 << k) - 1))) as usize,
        })
    }
}

impl metrics::HistogramFn for Handle<ThreadLocalHistogram<u64>> {
    #[inline]
    fn record(&self, value: f64) {
        let v = value * self.scale;
        match self.buckets.position(v) {
            // SAFETY: `FloatBuckets::position` returns positions of values under this
            // histogram's layout (the buckets were made from it).
            Some(pos) => unsafe { self.histogram.record_position(pos) },
            None => self.record_converted(v),
        }
    }
}

impl metrics::HistogramFn for Handle<ThreadLocalHistogram<u64, Dense>> {
    #[inline]
    fn record(&self, value: f64) {
        let v = value * self.scale;
        match self.buckets.slot(v) {
            // SAFETY: `FloatBuckets::slot` returns slots below the window's length (the
            // buckets were made from this histogram's layout and window).
            Some(slot) => unsafe { self.histogram.record_slot_unchecked(slot) },
            None => self.record_converted(v),
        }
    }
}

impl metrics::HistogramFn for Handle<HeapAtomicHistogram> {
    #[inline]
    fn record(&self, value: f64) {
        let v = value * self.scale;
        // The range check also turns away NaN (every comparison with it is false).
        if (0.0..TWO_63).contains(&v) {
            // SAFETY: `v` is finite and in [0, 2^63), so truncating it fits an i64.
            self.histogram
                .record_value(unsafe { v.to_int_unchecked::<i64>() } as u64);
        } else {
            self.record_converted(v);
        }
    }
}

impl metrics::HistogramFn for Handle<SparseAtomicHistogram> {
    #[inline]
    fn record(&self, value: f64) {
        let v = value * self.scale;
        match self.buckets.position(v) {
            // SAFETY: `FloatBuckets::position` returns positions of values under this
            // histogram's layout (the buckets were made from it).
            Some(pos) => unsafe { self.histogram.record_position(pos) },
            None => self.record_converted(v),
        }
    }
}

impl<H: RecorderHistogram> Handle<H> {
    /// Converts and records: NaN counts as invalid; negative values as 0; `2^64` and above
    /// saturate at `u64::MAX`.
    #[cold]
    #[inline(never)]
    fn record_converted(&self, v: f64) {
        if v.is_nan() {
            self.invalid.inc();
        } else {
            self.histogram.record_value(v as u64);
        }
    }
}

impl<H: Exported> Exported for Handle<H> {
    fn fill_native(&self, out: &mut crate::NativeHistogram, schema: Option<crate::Schema>) {
        self.histogram.fill_native(out, schema)
    }
    fn fill_classic(&self, out: &mut crate::ClassicHistogram, buckets: &crate::ClassicBuckets) {
        self.histogram.fill_classic(out, buckets)
    }
    fn fill_snapshot(&self, snapshot: &mut Snapshot, deltas: bool) -> Option<u128> {
        self.histogram.fill_snapshot(snapshot, deltas)
    }
}

impl metrics::CounterFn for Counter {
    fn increment(&self, value: u64) {
        self.add(value);
    }
    fn absolute(&self, value: u64) {
        self.set(value.max(self.get()));
    }
}

impl metrics::GaugeFn for Gauge {
    fn increment(&self, value: f64) {
        self.add(value);
    }
    fn decrement(&self, value: f64) {
        self.add(-value);
    }
    fn set(&self, value: f64) {
        Gauge::set(self, value);
    }
}

/// `name` with every character Prometheus does not allow replaced by `_` (and `_` in front
/// of a leading digit); `colon` allows `:` (metric names) or not (label names).
fn sanitize(name: &str, colon: bool) -> String {
    // Most names are valid as they are: one copy (a series' registration sanitizes several).
    if name.chars().all(|c| allowed(c, colon))
        && name.starts_with(|c: char| !c.is_ascii_digit())
        && (colon || !name.starts_with("__"))
    {
        return name.to_owned();
    }
    sanitize_chars(name, colon)
}

/// Whether Prometheus allows `c` in a name; `colon` as in [`sanitize`].
fn allowed(c: char, colon: bool) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || (colon && c == ':')
}

/// [`sanitize`] character by character.
fn sanitize_chars(name: &str, colon: bool) -> String {
    let mut out: String = name
        .chars()
        .map(|c| if allowed(c, colon) { c } else { '_' })
        .collect();
    if out.is_empty() || out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, '_');
    }
    if !colon {
        while out.starts_with("__") {
            out.remove(0);
        }
    }
    out
}

impl PicolloRecorder {
    /// The registry the recorder registers into.
    pub fn registry(&self) -> &Arc<Registry> {
        &self.inner.registry
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.inner.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn labels(key: &Key, histogram: bool) -> Labels {
        let mut pairs: Vec<(String, String)> = Vec::new();
        for l in key.labels() {
            let mut k = sanitize(l.key(), false);
            if histogram && k == "le" {
                k.push('_');
            }
            // A later label with the same (sanitized) key replaces the earlier one.
            pairs.retain(|(existing, _)| *existing != k);
            pairs.push((k, l.value().to_owned()));
        }
        // Sanitized keys are valid and distinct.
        Labels::new(pairs).unwrap_or_default()
    }

    /// A counter or gauge of the registry for `key` (`make` is [`Registry::counter`] or
    /// [`Registry::gauge`]); `None`, counted as refused, when the registry refuses it (its
    /// name already holds another kind).
    fn register_number<T>(
        &self,
        key: &Key,
        make: impl FnOnce(&Registry, &str, &str, &Labels) -> Result<T, crate::ExportError>,
    ) -> Option<T> {
        let name = sanitize(key.name(), true);
        let state = self.state();
        let help = state.help.get(&name).map_or("", String::as_str);
        let made = make(&self.inner.registry, &name, help, &Self::labels(key, false));
        if made.is_err() {
            self.inner.refused.inc();
        }
        made.ok()
    }

    fn describe(&self, key: KeyName, description: SharedString) {
        let name = sanitize(key.as_str(), true);
        let mut state = self.state();
        state.help.insert(name.clone(), description.into_owned());
        self.inner.registry.set_help(&name, &state.help[&name]);
    }

    /// Bytes the recorder's histograms hold now, all series together (their cells, pages,
    /// tables and shards: [`AtomicHistogram::footprint`],
    /// [`ThreadLocalHistogram::footprint`]), and the number of series.
    pub fn histogram_footprint(&self) -> (usize, usize) {
        let state = self.state();
        let bytes = state.entries.iter().map(|e| e.histogram.footprint()).sum();
        (bytes, state.entries.len())
    }

    /// The histograms as Picollo for .NET's summary tables, one per series, titled
    /// `name{labels}`.
    pub fn summaries(&self) -> String {
        let state = self.state();
        let mut out = String::new();
        for e in &state.entries {
            let table = Summary::from_histogram(e.histogram.read());
            out.push_str(&table.table(&e.title()).to_string());
            out.push('\n');
        }
        out
    }

    /// Writes one `.hlog` interval line per histogram: what was recorded since the previous
    /// call (since registration for the first), tagged with the series (`name{labels}` with
    /// commas and spaces as `_`). Layouts with an HdrHistogram twin (block scales 4, 7, 10,
    /// 14, 17; the default 7 is one) convert exactly; others at the next finer precision.
    /// Returns the values HdrHistogram V2 cannot hold (outside the window), which are left
    /// out of the log and counted here.
    ///
    /// # Errors
    /// An I/O error of the writer.
    pub fn write_hlog_interval<W: Write>(
        &self,
        log: &mut LogWriter<W>,
        start_sec: f64,
        end_sec: f64,
    ) -> Result<u64, LogError> {
        let mut state = self.state();
        let mut dropped = 0u64;
        for e in &mut state.entries {
            let h = e.histogram.read();
            let snapshot = e
                .last
                .get_or_insert_with(|| Snapshot::empty(h.layout(), h.window()));
            snapshot.update(h, true);
            let layout = h.layout();
            let digits = interop::significant_digits_for(layout)
                .or_else(|| interop::finer_significant_digits(layout))
                .unwrap_or(5);
            let export = interop::export(
                &*snapshot,
                &HdrOptions::new()
                    .significant_digits(digits)
                    .allow_dropping(true),
            )
            .map_err(|e| LogError::Io(std::io::Error::other(e.to_string())))?;
            dropped = dropped
                .saturating_add(export.dropped_underflow)
                .saturating_add(export.dropped_overflow);
            let tag = picollo_alloc::hdr::sanitize_tag(&e.title());
            log.write_interval(Some(&tag), start_sec, end_sec, &export.counts)?;
        }
        Ok(dropped)
    }
}

impl metrics::Recorder for PicolloRecorder {
    fn describe_counter(&self, key: KeyName, _unit: Option<Unit>, description: SharedString) {
        self.describe(key, description)
    }

    fn describe_gauge(&self, key: KeyName, _unit: Option<Unit>, description: SharedString) {
        self.describe(key, description)
    }

    fn describe_histogram(&self, key: KeyName, _unit: Option<Unit>, description: SharedString) {
        self.describe(key, description)
    }

    fn register_counter(&self, key: &Key, _metadata: &Metadata<'_>) -> metrics::Counter {
        self.register_number(key, Registry::counter)
            .map_or(metrics::Counter::noop(), |c| {
                metrics::Counter::from_arc(Arc::new(c))
            })
    }

    fn register_gauge(&self, key: &Key, _metadata: &Metadata<'_>) -> metrics::Gauge {
        self.register_number(key, Registry::gauge)
            .map_or(metrics::Gauge::noop(), |g| {
                metrics::Gauge::from_arc(Arc::new(g))
            })
    }

    fn register_histogram(&self, key: &Key, _metadata: &Metadata<'_>) -> metrics::Histogram {
        // `histogram!(…)` registers on every call: a handle this thread already got for the
        // key comes from its cache, without the recorder's lock.
        if let Some(handle) = cached_handle(self.inner.id, key) {
            return handle;
        }
        let mut state = self.state();
        let config = &self.inner.config;
        if let Some(&i) = state.histograms.get(key) {
            let handle = state.entries[i].handle.clone();
            drop(state);
            remember_handle(self.inner.id, key, &handle);
            return handle;
        }
        let name = sanitize(key.name(), true);
        let labels = Self::labels(key, true);
        let help = state.help.get(&name).cloned().unwrap_or_default();
        let window = config.window();
        let (scale, invalid) = (config.scale, self.inner.invalid.clone());
        let layout = config.layout;
        let histogram = match (config.kind, config.dense) {
            (HistogramKind::ThreadLocal, true) => Kinded::ThreadLocal(Arc::new(Handle::new(
                ThreadLocalHistogram::<u64, Dense>::new(layout, window),
                scale,
                invalid,
            ))),
            (HistogramKind::ThreadLocal, false) => {
                Kinded::SparseThreadLocal(Arc::new(Handle::new(
                    ThreadLocalHistogram::<u64>::new(layout, window),
                    scale,
                    invalid,
                )))
            }
            (HistogramKind::Atomic, true) => Kinded::Atomic(Arc::new(Handle::new(
                heap::atomic(layout, window),
                scale,
                invalid,
            ))),
            (HistogramKind::Atomic, false) => {
                let cells = SparseStorage::new(layout, window);
                let window = cells.window();
                match AtomicHistogram::with_storage(layout, cells, window) {
                    Ok(h) => Kinded::SparseAtomic(Arc::new(Handle::new(h, scale, invalid))),
                    // The storage was made for this layout and window.
                    Err(_) => return metrics::Histogram::noop(),
                }
            }
        };
        let registered =
            self.inner
                .registry
                .register_dyn(&name, &help, &labels, histogram.exported());
        if registered.is_err() {
            self.inner.refused.inc();
            return metrics::Histogram::noop();
        }
        let handle = histogram.handle();
        let index = state.entries.len();
        state.histograms.insert(key.clone(), index);
        state.entries.push(Entry {
            series: (name, labels),
            histogram,
            handle: handle.clone(),
            last: None,
        });
        drop(state);
        remember_handle(self.inner.id, key, &handle);
        handle
    }
}

/// Source of [`Inner::id`].
static NEXT_RECORDER_ID: AtomicU64 = AtomicU64::new(1);
