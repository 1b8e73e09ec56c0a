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
//! let recorder = RecorderBuilder::new().build(Arc::new(Registry::new()))?;
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
//! # Ok::<(), picollo_alloc::BuildError>(())
//! ```
//!
//! Names and label keys are made valid for Prometheus (every other character becomes `_`, a
//! leading digit gets a `_` in front; a label called `le` on a histogram becomes `le_`). A
//! counter or gauge key the registry refuses (its name already holds another kind) gets a
//! no-op handle; the key is remembered (later calls cost one lookup) and counted once in
//! `picollo_recorder_refused_registrations_total`. A histogram's clash is found when the
//! registry registers it (below): it is counted there, once, and leaves the recorder's
//! exports; its handles still take records, into a histogram nothing reads.
//!
//! # Creating a series
//!
//! A new key's first `histogram!` makes the histogram (sparse storage allocates nothing until
//! its first record) and puts it in the recorder's list. Its name and labels (made valid, as
//! above) and its registry insert wait for the registry's next read or change (a scrape, an
//! OTLP push, a counter's registration, [`PicolloRecorder::summaries`]), which registers every
//! series made since, in order, as `metrics-exporter-prometheus` formats names when it
//! renders: the record path's first call pays for a histogram, not for the exposition. The
//! registry reads nothing until those are in, so a scrape serves every series whose
//! `histogram!` returned before it started. A recorder that is dropped registers what it
//! held back, so a registry kept by its owner still serves its series (from the first scrape
//! after the drop; one that overlaps the drop may not).
//!
//! # Concurrency
//!
//! No lock shared by all threads is on a record path: a key registered before is found in an
//! index sharded by the key's hash (a read lock on one of 32 shards, after the thread's own
//! handle cache). A new key is made with no lock of the index held (the series keeps the one
//! copy of its key, in its handle's allocation) and put in under its shard's write lock (a
//! hash insert), unless another thread put the key in meanwhile: threads asking for the same
//! new key at once each make it, and all get the series of the first to put it in (the
//! others' are dropped before anything is recorded into them). Nobody waits for another
//! thread's making, and the shard's other keys are never held up. Listing a series takes no
//! lock of the registry: it is pushed onto the recorder's list (a lock held by its readers
//! only for a pointer copy) and the registry's pending count bumped, once, by the first
//! thread to find it unlisted (the one that put it in, or a thread handed it before that one
//! got to it), so that every thread's `histogram!` returns a series the next scrape serves.
//! Exports ([`PicolloRecorder::summaries`], [`PicolloRecorder::write_hlog_interval`], the
//! registry's scrapes) take the list of series shared (a pointer copy; the registry's after a
//! change a copy of its `Arc`s, once for all the scrapes that wait on it) and read every
//! histogram with no lock held, so a scrape delays no record.
//!
//! # Value units
//!
//! A layout with a lowest discernible value ([`Layout::with_lowest_discernible`]) is recorded
//! with its unit by the atomic kinds (sparse or dense: values in units of the largest power of
//! two not above it, as HdrHistogram does). The thread-local kind records no unit, and
//! [`RecorderBuilder::build`] refuses that combination with
//! [`BuildError::NeedsUnitLayout`].
//!
//! ```
//! use std::sync::Arc;
//! use picollo_export::recorder::RecorderBuilder;
//! use picollo_export::text::TextFormat;
//! use picollo_export::Registry;
//!
//! let registry = Arc::new(Registry::new());
//! let recorder = RecorderBuilder::new().scale(1e9).build(registry.clone())?;
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
//! # Ok::<(), picollo_alloc::BuildError>(())
//! ```

use std::collections::HashMap;
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

mod handle_cache;
mod hlog;
mod index;
mod kinded;
mod names;
#[cfg(test)]
mod tests;

use metrics::{Key, KeyName, Metadata, SharedString, Unit};
use picollo_alloc::hdr::interop::{self, ExportOptions as HdrOptions};
use picollo_alloc::hdr::{LogError, LogWriter};
use picollo_alloc::{BuildError, Summary};
use picollo_core::Layout;
#[cfg(test)]
use picollo_core::Window;

use crate::registry::{Counter, Deferred};
use crate::sync::{AtomicBool, Mutex, MutexGuard, RwLock, RwLockReadGuard};
use crate::{Labels, Registry};
use handle_cache::{cached_handle, remember_handle};
use index::Index;
#[cfg(test)]
use kinded::{FloatBuckets, TWO_63};
use kinded::{Kinded, Resolved};
#[cfg(test)]
use names::{sanitize, sanitize_chars};
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
    ///
    /// # Errors
    /// As [`RecorderBuilder::build`].
    pub fn series_footprint(&self) -> Result<usize, BuildError> {
        // Measured, not built (a thread-local histogram registers with the fork handler).
        Kinded::footprint_of(self)
    }

    /// The histograms' layout. A layout with a lowest discernible value
    /// ([`Layout::with_lowest_discernible`]) is recorded with its unit by the atomic kind;
    /// the thread-local kind is refused with it (see [`RecorderBuilder::build`]).
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
    ///
    /// # Errors
    /// The configuration makes no histogram ([`HistogramBuilder`](picollo_alloc::HistogramBuilder)'s
    /// errors): [`BuildError::NeedsUnitLayout`] for a layout with a value unit and the
    /// thread-local kind, [`BuildError::Window`] for a `max_trackable` the layout cannot hold.
    pub fn build(self, registry: Arc<Registry>) -> Result<PicolloRecorder, BuildError> {
        // Every series is made from this configuration: refuse it here, not per series (and
        // without making a histogram to find out), and resolve it once.
        let resolved = Kinded::resolve(&self)?;
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
        let recorder = PicolloRecorder {
            inner: Arc::new(Inner {
                id: NEXT_RECORDER_ID.fetch_add(1, Ordering::Relaxed),
                registry,
                config: self,
                resolved,
                invalid,
                refused,
                help: RwLock::new(HashMap::new()),
                histograms: Index::default(),
                counters: Index::default(),
                gauges: Index::default(),
                entries: Mutex::new(Arc::new(Vec::new())),
                registered: Mutex::new(0),
            }),
        };
        let deferred: Arc<dyn Deferred> = recorder.inner.clone();
        recorder.inner.registry.defer(Arc::downgrade(&deferred));
        Ok(recorder)
    }

    /// Builds the recorder and installs it as the process-wide `metrics` recorder.
    ///
    /// # Errors
    /// As [`RecorderBuilder::build`], or [`InstallError::Installed`] when a global recorder is
    /// already installed.
    pub fn install(self, registry: Arc<Registry>) -> Result<PicolloRecorder, InstallError> {
        let recorder = self.build(registry).map_err(InstallError::Build)?;
        metrics::set_global_recorder(recorder.clone()).map_err(InstallError::Installed)?;
        Ok(recorder)
    }
}

/// Why [`RecorderBuilder::install`] failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum InstallError {
    /// The configuration makes no histogram ([`RecorderBuilder::build`]).
    Build(BuildError),
    /// A global `metrics` recorder was installed before.
    Installed(metrics::SetRecorderError<PicolloRecorder>),
}

impl core::fmt::Display for InstallError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Self::Build(e) => write!(f, "the recorder's configuration: {e}"),
            Self::Installed(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for InstallError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Build(e) => Some(e),
            Self::Installed(e) => Some(e),
        }
    }
}

/// What the recorder keeps of a histogram series beside its histogram, in the same
/// allocation as its handle ([`Kinded::series`]).
struct Series {
    /// The `metrics` key (the recorder's one copy of it: the index and the per-thread handle
    /// caches find the series by it), which the series' name and labels are made from by the
    /// registry's next read or the first export that needs them: not by the registration,
    /// which a record path pays for.
    key: Key,
    /// The sanitized name and labels (the labels shared with the registry's series).
    names: OnceLock<(String, Labels)>,
    /// Totals at the last `.hlog` interval (locked only by the `.hlog` writer).
    last: Mutex<hlog::Last>,
    /// Whether the series is on the recorder's list (set once, under the list's lock, after
    /// its push: [`PicolloRecorder::list`]).
    listed: AtomicBool,
}

impl Series {
    fn new(key: Key) -> Self {
        Series {
            key,
            names: OnceLock::new(),
            last: Mutex::new(hlog::Last::default()),
            listed: AtomicBool::new(false),
        }
    }

    /// The series' name and labels, made from its key on first use.
    fn names(&self) -> &(String, Labels) {
        self.names.get_or_init(|| {
            let key = &self.key;
            (names::sanitize(key.name(), true), names::labels(key, true))
        })
    }

    /// `name{labels}`.
    fn title(&self) -> String {
        let (name, labels) = self.names();
        format!("{name}{labels}")
    }
}

/// A counter or gauge as the recorder's index holds it: its key (shared with nobody, in an
/// `Arc` so that a lookup's copy is cheap) and what the registry made of it (`None`: refused,
/// remembered so that it is counted once).
#[derive(Clone)]
struct Number<T> {
    key: Arc<Key>,
    made: Option<T>,
}

impl<T: Clone> index::Keyed for Number<T> {
    fn key(&self) -> &Key {
        &self.key
    }
}

struct Inner {
    /// Unique per recorder (never reused): tags this recorder's entries in the per-thread
    /// handle caches.
    id: u64,
    registry: Arc<Registry>,
    config: RecorderBuilder,
    /// The layout and window of every series, resolved from `config` when the recorder was
    /// built.
    resolved: Resolved,
    invalid: Counter,
    refused: Counter,
    /// Descriptions by sanitized name (read when a series is registered, under the read
    /// lock, so a description set meanwhile reaches the registry exactly once).
    help: RwLock<HashMap<String, String>>,
    histograms: Index<Kinded>,
    counters: Index<Number<metrics::Counter>>,
    gauges: Index<Number<metrics::Gauge>>,
    /// The histogram series in registration order, for the recorder's own exports: a
    /// copy-on-write list, so that a reader takes it with a pointer copy under the lock (never
    /// a copy of the list that a registration would wait for) and reads it with none held.
    entries: Mutex<Arc<Vec<Kinded>>>,
    /// How many of `entries` (from the front) the registry has been asked to register: the
    /// rest wait for its next read ([`Deferred`]).
    registered: Mutex<usize>,
}

impl Inner {
    /// Registers the series made since the last call (in order), each with its description
    /// as it is now; a series the registry refuses (its name holds another kind) is counted
    /// once in `refused` and leaves the list (its handles record into a histogram nobody
    /// reads). Called by the registry under its flush lock, and when the recorder goes.
    fn register_held_back(&self, registry: &Registry) {
        let mut registered = lock(&self.registered);
        let entries = Arc::clone(&lock(&self.entries));
        let Some(new) = entries.get(*registered..).filter(|new| !new.is_empty()) else {
            return;
        };
        let help = read(&self.help);
        let mut refused = Vec::new();
        for histogram in new {
            let (name, labels) = histogram.series().names();
            let description = help.get(name).map_or("", String::as_str);
            if registry
                .register_dyn_now(name, description, labels, histogram.exported())
                .is_err()
            {
                self.refused.inc();
                refused.push(histogram.series() as *const Series);
            }
        }
        drop(help);
        let mut list = lock(&self.entries);
        if !refused.is_empty() {
            let is_refused = |h: &Kinded| refused.contains(&(h.series() as *const Series));
            Arc::make_mut(&mut list).retain(|h| !is_refused(h));
        }
        // Those made meanwhile stay behind the mark (they follow the ones registered here).
        *registered = entries.len() - refused.len();
    }
}

impl Deferred for Inner {
    fn register_deferred(&self, registry: &Registry) {
        self.register_held_back(registry);
    }
}

impl Drop for Inner {
    /// The series made since the registry's last read are registered now: the registry
    /// outlives the recorder (and serves them) when its owner keeps it.
    fn drop(&mut self) {
        let registry = Arc::clone(&self.registry);
        // Under the registry's flush lock, as when the registry asks: a read that overlaps
        // this waits for it.
        let _flush = registry.flush_lock();
        self.register_held_back(&registry);
    }
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

impl PicolloRecorder {
    /// The registry the recorder registers into.
    pub fn registry(&self) -> &Arc<Registry> {
        &self.inner.registry
    }

    /// The histogram series now, each registered or refused (the registry asked first; the
    /// list shared, a pointer copy; no lock is held after).
    fn entries(&self) -> Arc<Vec<Kinded>> {
        self.inner.registry.register_deferred();
        Arc::clone(&lock(&self.inner.entries))
    }

    /// The counter or gauge of `key` (`make` is `Registry::counter_now` or `gauge_now`),
    /// registered when a thread first asks (with no lock of the index held: see
    /// [`Index::get_or_make`]); `None`, counted once, when the registry refused it.
    fn register_number<T: Clone>(
        &self,
        key: &Key,
        index: &Index<Number<T>>,
        make: impl FnOnce(&Registry, &str, &str, &Labels) -> Result<T, crate::ExportError>,
    ) -> Option<T> {
        // Registered in the registry by every thread that makes it: the registry returns an
        // existing counter or gauge for the same name and labels, so the threads racing for a
        // new key get one series; the refusal is counted once, by the thread whose answer
        // the index keeps.
        let refusal_per_racer = picollo_core::plant!(RecorderRefusalPerRacer, false, true);
        let made = || {
            let name = names::sanitize(key.name(), true);
            let labels = names::labels(key, false);
            // The histograms made before it first, so that a name clash goes to the series
            // made first, as it would with no deferral; then `make` registers without asking
            // again (a deferred source reads `help`, which is held here).
            self.inner.registry.register_deferred();
            let help = read(&self.inner.help);
            let description = help.get(&name).map_or("", String::as_str);
            let made = make(&self.inner.registry, &name, description, &labels).ok();
            drop(help);
            if made.is_none() && refusal_per_racer {
                self.inner.refused.inc();
            }
            Some(Number {
                key: Arc::new(key.clone()),
                made,
            })
        };
        let (number, put_in_here) = index.get_or_make(key, made)?;
        if number.made.is_none() && put_in_here && !refusal_per_racer {
            self.inner.refused.inc();
        }
        number.made
    }

    /// The histogram series of `key`: the index's, or a new one made and listed
    /// ([`Index::get_or_make`]). A new series costs its histogram and a place in the list,
    /// and leaves its registration to the registry's next read ([`Deferred`]): its name,
    /// labels and registry insert are paid by the scrape that first serves it. `None` only
    /// when the configuration makes no histogram, which `build` refused already.
    fn histogram_of(&self, key: &Key) -> Option<Kinded> {
        let inner = &self.inner;
        let make = || Kinded::new(&inner.config, inner.resolved, &inner.invalid, key).ok();
        let (histogram, put_in_here) = inner.histograms.get_or_make(key, make)?;
        // A thread handed the series by another may get here before that thread listed it.
        if put_in_here || !picollo_core::plant!(RecorderUnlistedHandOut, false, true) {
            self.list(&histogram);
        }
        Some(histogram)
    }

    /// Puts `histogram` on the recorder's list and leaves its registration to the registry's
    /// next read, unless it is listed already: once per series, by whichever thread comes
    /// first (so no thread waits for another to do it). No lock but the list's (a push) is
    /// taken, so nothing a scrape holds delays it; a listed series costs one load.
    fn list(&self, histogram: &Kinded) {
        let listed = &histogram.series().listed;
        if listed.load(Ordering::Acquire) {
            return;
        }
        let mut entries = lock(&self.inner.entries);
        if listed.load(Ordering::Relaxed) {
            return;
        }
        // Copied only when a reader holds the list now (copy-on-write).
        Arc::make_mut(&mut entries).push(histogram.clone());
        self.inner.registry.note_deferred();
        listed.store(true, Ordering::Release);
    }

    fn describe(&self, key: KeyName, description: SharedString) {
        let name = names::sanitize(key.as_str(), true);
        let description = description.into_owned();
        // Under the write lock: a series registered meanwhile reads the new text, or is
        // registered before and gets it from `set_help`.
        let mut help = self.inner.help.write().unwrap_or_else(|e| e.into_inner());
        // Not `set_help`, which asks this recorder to register its held-back series, and
        // they read `help`.
        self.inner.registry.set_help_now(&name, &description);
        help.insert(name, description);
    }

    /// Bytes the recorder's histograms hold now, all series together (their cells, pages,
    /// tables and shards: [`AtomicHistogram::footprint`](picollo_core::AtomicHistogram::footprint),
    /// [`ThreadLocalHistogram::footprint`](picollo_alloc::ThreadLocalHistogram::footprint)),
    /// and the number of series.
    pub fn histogram_footprint(&self) -> (usize, usize) {
        let entries = self.entries();
        let bytes = entries.iter().map(Kinded::footprint).sum();
        (bytes, entries.len())
    }

    /// The histograms as Picollo for .NET's summary tables, one per series, titled
    /// `name{labels}`.
    pub fn summaries(&self) -> String {
        let mut out = String::new();
        for e in self.entries().iter() {
            let table = Summary::from_histogram(e.read());
            out.push_str(&table.table(&e.series().title()).to_string());
            out.push('\n');
        }
        out
    }

    /// Writes one `.hlog` interval line per histogram: what was recorded since the previous
    /// call (since registration for the first), tagged with the series (`name{labels}` with
    /// commas and spaces as `_`). Layouts with an HdrHistogram twin (block scales 4, 7, 10,
    /// 14, 17; the default 7 is one) convert exactly; others at the next finer precision.
    /// Returns the values HdrHistogram V2 cannot hold (outside the window), which are left
    /// out of the log and counted here. Holds no lock shared with the record path.
    ///
    /// Nothing is lost when a write fails: a series' totals move on only after its line is
    /// written, so the series whose lines were not written carry this interval's counts into
    /// the next call's lines (stamped with that call's times). A reset of a series between
    /// calls is told by its reset count: the next line holds what was recorded since.
    ///
    /// # Errors
    /// An I/O error of the writer (the series from the failed one on keep their counts).
    pub fn write_hlog_interval<W: Write>(
        &self,
        log: &mut LogWriter<W>,
        start_sec: f64,
        end_sec: f64,
    ) -> Result<u64, LogError> {
        let mut dropped = 0u64;
        for e in self.entries().iter() {
            let h = e.read();
            let mut last = lock(&e.series().last);
            let (delta, next) = last.interval(h);
            let layout = h.layout();
            let digits = interop::significant_digits_for(layout)
                .or_else(|| interop::finer_significant_digits(layout))
                .unwrap_or(5);
            let export = interop::export(
                &delta,
                &HdrOptions::new()
                    .significant_digits(digits)
                    .allow_dropping(true),
            )
            .map_err(|e| LogError::Io(std::io::Error::other(e.to_string())))?;
            dropped = dropped
                .saturating_add(export.dropped_underflow)
                .saturating_add(export.dropped_overflow);
            let tag = picollo_alloc::hdr::sanitize_tag(&e.series().title());
            log.write_interval(Some(&tag), start_sec, end_sec, &export.counts)?;
            // Written: the next interval starts from these totals.
            *last = next;
        }
        Ok(dropped)
    }
}

/// Locks `m`, through a poisoned lock (nothing here panics while holding one).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Read-locks `l`, through a poisoned lock.
fn read<T>(l: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    l.read().unwrap_or_else(|e| e.into_inner())
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
        let make = |r: &Registry, name: &str, help: &str, labels: &Labels| {
            r.counter_now(name, help, labels)
                .map(|c| metrics::Counter::from_arc(Arc::new(c)))
        };
        self.register_number(key, &self.inner.counters, make)
            .unwrap_or_else(metrics::Counter::noop)
    }

    fn register_gauge(&self, key: &Key, _metadata: &Metadata<'_>) -> metrics::Gauge {
        let make = |r: &Registry, name: &str, help: &str, labels: &Labels| {
            r.gauge_now(name, help, labels)
                .map(|g| metrics::Gauge::from_arc(Arc::new(g)))
        };
        self.register_number(key, &self.inner.gauges, make)
            .unwrap_or_else(metrics::Gauge::noop)
    }

    fn register_histogram(&self, key: &Key, _metadata: &Metadata<'_>) -> metrics::Histogram {
        // `histogram!(…)` registers on every call: a handle this thread already got for the
        // key comes from its cache, without any lock.
        if let Some(handle) = cached_handle(self.inner.id, key) {
            return handle;
        }
        match self.histogram_of(key) {
            Some(histogram) => {
                remember_handle(self.inner.id, &histogram);
                histogram.handle()
            }
            None => metrics::Histogram::noop(),
        }
    }
}

/// Source of [`Inner::id`].
static NEXT_RECORDER_ID: AtomicU64 = AtomicU64::new(1);
