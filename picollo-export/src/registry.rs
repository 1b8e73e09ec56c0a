//! The registry: named, labelled histograms, counters and gauges, encoded for a scrape.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};

use crate::classic::{ClassicBuckets, ClassicHistogram};
use crate::native::{Mapping, NativeHistogram};
use crate::proto::prometheus as pb;
use crate::proto::wire;
use crate::schema::Schema;
use crate::source::Exported;
use crate::sync::{AtomicUsize, Mutex, MutexGuard, RwLock};
use crate::text::{MetricKind, TextEncoder, TextFormat};
use crate::{check_metric_name, ExportError, Labels};
use picollo_core::plant;

mod families;
use families::Families;

/// The zero bucket's half-width in Prometheus expositions: `2^-128`, client_golang's default.
/// Picollo values are integers, so the zero bucket holds exactly the zeros; a positive
/// threshold makes Prometheus 2.x recognize even an empty histogram as native.
pub const ZERO_THRESHOLD: f64 = 1.0 / (1u128 << 127) as f64 / 2.0;

/// How histograms are exported.
///
/// ```
/// use picollo_export::{ClassicBuckets, ExportOptions, Schema};
/// let o = ExportOptions::new()
///     .schema(Schema::new(3).unwrap()) // coarser than the layouts: fewer buckets
///     .classic(ClassicBuckets::explicit(vec![1_000, 1_000_000]).unwrap())
///     .classic_in_protobuf(true);
/// assert_ne!(o, ExportOptions::new());
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ExportOptions {
    schema: Option<Schema>,
    classic: ClassicBuckets,
    classic_in_protobuf: bool,
}

impl ExportOptions {
    /// The defaults: each histogram at its layout's schema ([`Mapping::for_layout`]), classic
    /// buckets at powers of two in the text formats, native buckets only in protobuf.
    pub fn new() -> Self {
        Self::default()
    }

    /// One schema for every histogram instead of each layout's own.
    pub fn schema(mut self, schema: Schema) -> Self {
        self.schema = Some(schema);
        self
    }

    /// The schema set by [`ExportOptions::schema`], if any.
    pub(crate) fn schema_override(&self) -> Option<Schema> {
        self.schema
    }

    /// The classic buckets of the text formats (and of protobuf with
    /// [`ExportOptions::classic_in_protobuf`]).
    pub fn classic(mut self, buckets: ClassicBuckets) -> Self {
        self.classic = buckets;
        self
    }

    /// Also send classic buckets in protobuf, for servers that scrape protobuf but do not
    /// ingest native histograms.
    pub fn classic_in_protobuf(mut self, on: bool) -> Self {
        self.classic_in_protobuf = on;
        self
    }

    /// The mapping for a histogram with `layout`.
    pub fn mapping(&self, layout: picollo_core::Layout) -> Mapping {
        match self.schema {
            Some(s) => Mapping::new(layout, s),
            None => Mapping::for_layout(layout),
        }
    }
}

/// A counter in a [`Registry`]: a shared `u64`. Cloning gives another handle on the same value.
#[derive(Clone, Debug, Default)]
pub struct Counter(Arc<AtomicU64>);

impl Counter {
    /// Adds one.
    #[inline]
    pub fn inc(&self) {
        self.add(1);
    }

    /// Adds `n`.
    #[inline]
    pub fn add(&self, n: u64) {
        self.0.fetch_add(n, Ordering::Relaxed);
    }

    /// Sets the value (for counters mirrored from elsewhere; it should only grow).
    pub fn set(&self, n: u64) {
        self.0.store(n, Ordering::Relaxed);
    }

    /// The value.
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// A gauge in a [`Registry`]: a shared `f64`. Cloning gives another handle on the same value.
#[derive(Clone, Debug, Default)]
pub struct Gauge(Arc<AtomicU64>);

impl Gauge {
    /// Sets the value.
    #[inline]
    pub fn set(&self, v: f64) {
        self.0.store(v.to_bits(), Ordering::Relaxed);
    }

    /// Adds `d` (negative to subtract).
    pub fn add(&self, d: f64) {
        let _ = self
            .0
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |b| {
                Some((f64::from_bits(b) + d).to_bits())
            });
    }

    /// The value.
    pub fn get(&self) -> f64 {
        f64::from_bits(self.0.load(Ordering::Relaxed))
    }
}

/// One series' value.
#[derive(Clone)]
pub(crate) enum Value {
    Histogram(Arc<dyn Exported>),
    Counter(Counter),
    Gauge(Gauge),
}

/// One labelled series.
#[derive(Clone)]
pub(crate) struct Series {
    /// Unique in the registry, for per-series state kept elsewhere (OTLP deltas).
    pub(crate) id: u64,
    pub(crate) labels: Labels,
    pub(crate) value: Value,
}

/// One metric family.
#[derive(Clone)]
pub(crate) struct Family {
    pub(crate) name: String,
    pub(crate) help: String,
    pub(crate) kind: MetricKind,
    pub(crate) series: Vec<Series>,
}

impl Family {
    /// The sample names the family writes (to catch clashes between families).
    fn sample_names(&self) -> Vec<String> {
        let n = &self.name;
        match self.kind {
            MetricKind::Histogram => vec![
                n.clone(),
                format!("{n}_bucket"),
                format!("{n}_sum"),
                format!("{n}_count"),
            ],
            MetricKind::Counter => vec![
                n.clone(),
                n.strip_suffix("_total").unwrap_or(n).to_owned(),
                format!("{}_total", n.strip_suffix("_total").unwrap_or(n)),
            ],
            MetricKind::Gauge => vec![n.clone()],
        }
    }
}

/// Named, labelled metrics, encoded for a scrape (protobuf or text) or an OTLP export.
///
/// A family (one name) has one kind and one help text, and any number of label sets.
/// Registration checks names and labels against Prometheus' rules and refuses clashes, so
/// every exposition it writes is valid.
///
/// ```
/// use std::sync::Arc;
/// use picollo_alloc::HistogramBuilder;
/// use picollo_export::{Labels, Registry};
/// use picollo_export::text::TextFormat;
///
/// let registry = Registry::new();
/// let latency = HistogramBuilder::new().relative_error(0.01).thread_local();
/// let latency = Arc::new(latency.expect("a valid configuration"));
/// let labels = Labels::new([("route", "/api")])?;
/// registry.register("api_latency_nanoseconds", "API latency", &labels, latency.clone())?;
/// let requests = registry.counter("api_requests_total", "API requests", &labels)?;
///
/// latency.record(1_500);
/// requests.inc();
///
/// let mut protobuf = Vec::new();
/// registry.encode_protobuf(&mut protobuf); // what Prometheus scrapes for native histograms
/// let text = registry.encode_text(TextFormat::Prometheus);
/// assert!(text.contains("api_requests_total{route=\"/api\"} 1"));
/// assert!(text.contains("api_latency_nanoseconds_count{route=\"/api\"} 1"));
/// # Ok::<(), picollo_export::ExportError>(())
/// ```
pub struct Registry {
    /// What registration, removal and help texts change (each under this lock for a few hash
    /// operations, never while a series is read or encoded).
    families: Mutex<Families>,
    /// The families as the last scrape saw them, shared by every scrape until a change:
    /// cleared under `families`' lock by each change, rebuilt under it by the next scrape
    /// (so a snapshot stored is never older than a change that completed). Lock order:
    /// `families`, then `snapshot`.
    snapshot: RwLock<Option<FamilyList>>,
    options: ExportOptions,
    next_id: AtomicU64,
    /// Sources of series registered on demand ([`Deferred`]), asked before every read or
    /// change of the families.
    deferred: Deferrals,
}

/// A source of series whose registration waits for the registry to need them: a `metrics`
/// recorder makes a new series' histogram at once and leaves its name, labels and registry
/// insert (most of what creating a series costs) to the next scrape, as
/// `metrics-exporter-prometheus` does.
pub(crate) trait Deferred: Send + Sync {
    /// Registers the series held back since the last call, with
    /// [`Registry::register_dyn_now`] (never a method that asks the deferred sources again).
    fn register_deferred(&self, registry: &Registry);
}

/// The registry's deferred sources and their pending registrations.
#[derive(Default)]
struct Deferrals {
    /// The sources (weak: a source owns its registry, and a dropped one registers what it
    /// held when it goes).
    sources: Mutex<Vec<Weak<dyn Deferred>>>,
    /// Registrations held back since the last flush ([`Registry::note_deferred`]): checked
    /// under `flush`, so that a reader finds nothing to do without asking any source.
    pending: AtomicUsize,
    /// Held while the sources register: a reader that finds a flush under way waits for it,
    /// so no read after a registration returned misses that series.
    flush: Mutex<()>,
}

/// The families of one scrape, shared: the series' labels and values are `Arc`s, so a
/// snapshot costs a few allocations per family, none per series.
pub(crate) type FamilyList = Arc<Vec<Family>>;

impl Default for Registry {
    fn default() -> Self {
        Self::new()
    }
}

impl core::fmt::Debug for Registry {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let families = self.families();
        f.debug_struct("Registry")
            .field("families", &families.len())
            .field(
                "series",
                &families.iter().map(|f| f.series.len()).sum::<usize>(),
            )
            .field("options", &self.options)
            .finish()
    }
}

impl Registry {
    /// An empty registry with the default [`ExportOptions`].
    pub fn new() -> Self {
        Self::with_options(ExportOptions::new())
    }

    /// An empty registry.
    pub fn with_options(options: ExportOptions) -> Self {
        Registry {
            families: Mutex::new(Families::default()),
            snapshot: RwLock::new(None),
            options,
            next_id: AtomicU64::new(0),
            deferred: Deferrals::default(),
        }
    }

    /// Adds a source of deferred registrations, asked before every later read or change.
    #[cfg_attr(not(feature = "metrics"), allow(dead_code))]
    pub(crate) fn defer(&self, source: Weak<dyn Deferred>) {
        self.deferred
            .sources
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(source);
    }

    /// The lock deferred registrations happen under: a source that registers on its own
    /// (when it goes) takes it too, so that no read overlaps a registration half done.
    pub(crate) fn flush_lock(&self) -> MutexGuard<'_, ()> {
        self.deferred
            .flush
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    /// Notes that a deferred source holds a registration back: the next read or change asks
    /// the sources for it. Never waits (a record path's first call makes a series).
    #[cfg_attr(not(feature = "metrics"), allow(dead_code))]
    pub(crate) fn note_deferred(&self) {
        self.deferred.pending.fetch_add(1, Ordering::Release);
    }

    /// Has every deferred source register what it held back. Cheap when nothing is pending
    /// (an uncontended lock and a load); waits for a flush another thread has under way.
    pub(crate) fn register_deferred(&self) {
        let mut flush = Some(self.flush_lock());
        // A load first: most calls find nothing, and need not write the shared word.
        if self.deferred.pending.load(Ordering::Acquire) == 0
            || self.deferred.pending.swap(0, Ordering::Acquire) == 0
        {
            return;
        }
        if plant!(RegistryUnlockedFlush, false, true) {
            flush = None;
        }
        let sources: Vec<Arc<dyn Deferred>> = {
            let mut list = self
                .deferred
                .sources
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            list.retain(|s| s.strong_count() > 0);
            list.iter().filter_map(Weak::upgrade).collect()
        };
        for source in &sources {
            source.register_deferred(self);
        }
        let sources = if plant!(RegistrySourceDroppedLocked, false, true) {
            drop(sources);
            Vec::new()
        } else {
            sources
        };
        drop(flush);
        // After the lock: the last reference to a source may be one of these, and a source
        // that goes registers what it held under the same lock.
        drop(sources);
    }

    /// The export options.
    pub fn options(&self) -> &ExportOptions {
        &self.options
    }

    fn lock(&self) -> MutexGuard<'_, Families> {
        // Registration never panics with the lock held; tolerate it anyway.
        self.families.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Runs `f` on the families; when it changed them, clears the snapshot before the lock is
    /// released, so that no scrape after this returns misses the change.
    fn change<R>(&self, f: impl FnOnce(&mut Families) -> R) -> R {
        let mut families = self.lock();
        let before = families.changes();
        let out = f(&mut families);
        let mut stale = None;
        if families.changes() != before {
            stale = self
                .snapshot
                .write()
                .unwrap_or_else(|e| e.into_inner())
                .take();
        }
        drop(families);
        // Freed (when no scrape holds it) after the lock: a copy of every series.
        drop(stale);
        out
    }

    /// Registers histogram `source` (any kind: see [`crate::source`]) as series `labels` of
    /// family `name`.
    ///
    /// # Errors
    /// An invalid name or label, a label called `le` (reserved for classic buckets), a family
    /// of that name with another kind or help text or a clashing sample name, or a series with
    /// the same labels.
    pub fn register<H: Exported + 'static>(
        &self,
        name: &str,
        help: &str,
        labels: &Labels,
        source: Arc<H>,
    ) -> Result<(), ExportError> {
        self.register_dyn(name, help, labels, source)
    }

    /// [`Registry::register`] for a source already behind `dyn` (a mix of kinds).
    ///
    /// # Errors
    /// As [`Registry::register`].
    pub fn register_dyn(
        &self,
        name: &str,
        help: &str,
        labels: &Labels,
        source: Arc<dyn Exported>,
    ) -> Result<(), ExportError> {
        self.register_deferred();
        self.register_dyn_now(name, help, labels, source)
    }

    /// [`Registry::register_dyn`] without asking the deferred sources first (what they call).
    pub(crate) fn register_dyn_now(
        &self,
        name: &str,
        help: &str,
        labels: &Labels,
        source: Arc<dyn Exported>,
    ) -> Result<(), ExportError> {
        if labels.contains("le") {
            return Err(ExportError::InvalidLabelName {
                name: "le".into(),
                reason: "histograms use it for their classic bucket boundaries",
            });
        }
        self.insert(
            name,
            help,
            MetricKind::Histogram,
            labels,
            Value::Histogram(source),
        )
        .map(|_| ())
    }

    /// The counter series `labels` of family `name`, registered on first use (later calls
    /// with the same name, help and labels return the same counter).
    ///
    /// # Errors
    /// As [`Registry::register`], except that an existing counter series is returned.
    pub fn counter(&self, name: &str, help: &str, labels: &Labels) -> Result<Counter, ExportError> {
        self.register_deferred();
        self.counter_now(name, help, labels)
    }

    /// [`Registry::counter`] without asking the deferred sources first.
    pub(crate) fn counter_now(
        &self,
        name: &str,
        help: &str,
        labels: &Labels,
    ) -> Result<Counter, ExportError> {
        match self.insert(
            name,
            help,
            MetricKind::Counter,
            labels,
            Value::Counter(Counter::default()),
        )? {
            Value::Counter(c) => Ok(c),
            _ => unreachable_kind(),
        }
    }

    /// The gauge series `labels` of family `name`, registered on first use.
    ///
    /// # Errors
    /// As [`Registry::counter`].
    pub fn gauge(&self, name: &str, help: &str, labels: &Labels) -> Result<Gauge, ExportError> {
        self.register_deferred();
        self.gauge_now(name, help, labels)
    }

    /// [`Registry::gauge`] without asking the deferred sources first.
    pub(crate) fn gauge_now(
        &self,
        name: &str,
        help: &str,
        labels: &Labels,
    ) -> Result<Gauge, ExportError> {
        match self.insert(
            name,
            help,
            MetricKind::Gauge,
            labels,
            Value::Gauge(Gauge::default()),
        )? {
            Value::Gauge(g) => Ok(g),
            _ => unreachable_kind(),
        }
    }

    /// Replaces the help text of family `name`, if registered (for descriptions that arrive
    /// after the first series, as `metrics::describe_*!` may).
    pub fn set_help(&self, name: &str, help: &str) {
        self.register_deferred();
        self.set_help_now(name, help);
    }

    /// [`Registry::set_help`] without asking the deferred sources first.
    pub(crate) fn set_help_now(&self, name: &str, help: &str) {
        self.change(|families| families.set_help(name, help))
    }

    /// Removes series `labels` of family `name` (the family goes with its last series).
    /// Returns whether it was registered.
    pub fn remove(&self, name: &str, labels: &Labels) -> bool {
        self.register_deferred();
        let key = labels.sorted();
        self.change(|families| families.remove(name, &key))
    }

    /// Inserts a series; for counters and gauges, returns the existing value instead of a
    /// duplicate error.
    fn insert(
        &self,
        name: &str,
        help: &str,
        kind: MetricKind,
        labels: &Labels,
        value: Value,
    ) -> Result<Value, ExportError> {
        check_metric_name(name)?;
        let key = labels.sorted();
        self.change(|families| {
            families.insert((name, help, kind), labels, key, value, || {
                self.next_id.fetch_add(1, Ordering::Relaxed)
            })
        })
    }

    /// The families now, shared (copy-on-write), after the deferred sources registered what
    /// they held back: the last snapshot when nothing changed since it was taken, else a new
    /// one. Encoding holds no lock while it reads histograms, and
    /// registration is never blocked by a scrape for longer than a snapshot's copy of the
    /// series' `Arc`s (after a change).
    pub(crate) fn families(&self) -> FamilyList {
        self.register_deferred();
        let cached = self.snapshot.read().unwrap_or_else(|e| e.into_inner());
        if let Some(list) = cached.as_ref() {
            return list.clone();
        }
        drop(cached);
        let families = self.lock();
        // Scrapes that missed the snapshot together copy the list once: the first to get
        // the lock stores its copy, the others find it here (lock order: `families`, then
        // `snapshot`).
        if let Some(list) = self
            .snapshot
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
        {
            return list.clone();
        }
        let list: FamilyList = Arc::new(families.list().to_vec());
        if plant!(RegistryStaleSnapshot, false, true) {
            drop(families);
        }
        // Stored under `families`' lock: no change can come between the copy and the store
        // (a change clears the snapshot while holding that lock).
        *self.snapshot.write().unwrap_or_else(|e| e.into_inner()) = Some(list.clone());
        list
    }

    /// Appends the Prometheus protobuf exposition (`application/vnd.google.protobuf;
    /// proto=io.prometheus.client.MetricFamily; encoding=delimited`) to `out`: one
    /// length-delimited `MetricFamily` per family, histograms as native histograms (plus
    /// classic buckets with [`ExportOptions::classic_in_protobuf`]).
    pub fn encode_protobuf(&self, out: &mut Vec<u8>) {
        let mut scratch = Scratch::default();
        for family in self.families().iter() {
            let kind = match family.kind {
                MetricKind::Counter => pb::MetricType::Counter,
                MetricKind::Gauge => pb::MetricType::Gauge,
                MetricKind::Histogram => pb::MetricType::Histogram,
            };
            // `MetricFamily` (fields in tag order, as prost writes them).
            wire::delimited(out, |out| {
                wire::string(out, 1, &family.name);
                wire::string(out, 2, &family.help);
                wire::uint64(out, 3, kind as u64);
                for series in &family.series {
                    self.write_metric(out, series, &mut scratch);
                }
            });
        }
    }

    /// One series as a `Metric` message (field 4 of `MetricFamily`).
    fn write_metric(&self, out: &mut Vec<u8>, series: &Series, scratch: &mut Scratch) {
        let label_len =
            |name: &str, value: &str| wire::string_len(1, name) + wire::string_len(2, value);
        let labels: usize = series
            .labels
            .iter()
            .map(|(n, v)| wire::message_len(1, label_len(n, v)))
            .sum();
        // The value's field and body length; a histogram is read into `scratch` first.
        let (field, value_len) = match &series.value {
            Value::Gauge(g) => (2, wire::double_len(1, g.get())),
            Value::Counter(c) => (3, wire::double_len(1, c.get() as f64)),
            Value::Histogram(h) => (7, self.read_histogram(&**h, scratch)),
        };
        let value = match &series.value {
            Value::Gauge(g) => g.get(),
            Value::Counter(c) => c.get() as f64,
            Value::Histogram(_) => 0.0,
        };
        wire::message_header(out, 4, labels + wire::message_len(field, value_len));
        for (name, v) in series.labels.iter() {
            wire::message_header(out, 1, label_len(name, v));
            wire::string(out, 1, name);
            wire::string(out, 2, v);
        }
        wire::message_header(out, field, value_len);
        match &series.value {
            Value::Gauge(_) | Value::Counter(_) => wire::double(out, 1, value),
            Value::Histogram(_) => self.write_histogram(out, scratch),
        }
    }

    /// Reads `source` into `scratch` (native buckets, spans and deltas, classic buckets when
    /// asked for) and returns the length of its `Histogram` message.
    fn read_histogram(&self, source: &dyn Exported, scratch: &mut Scratch) -> usize {
        let options = &self.options;
        let Scratch {
            native,
            classic,
            span_bytes,
            deltas,
        } = scratch;
        source.fill_native(native, options.schema);
        if options.classic_in_protobuf {
            // A second read: the classic buckets may hold values recorded since the first.
            source.fill_classic(classic, &options.classic);
        }
        // The `BucketSpan` messages (field 12) and packed deltas, written once here (a
        // sparse histogram has nearly a span per bucket) and copied into the output.
        native.encode_spans_and_deltas(12, span_bytes, deltas);
        let mut len = wire::uint64_len(1, native.count())
            + wire::double_len(2, native.sum())
            + wire::uint64_len(5, wire::zigzag(i64::from(native.schema().get())))
            + wire::double_len(6, ZERO_THRESHOLD)
            + wire::uint64_len(7, native.zero_count());
        if options.classic_in_protobuf {
            len += classic
                .buckets()
                .map(|(le, n)| wire::message_len(3, classic_bucket_len(le, n)))
                .sum::<usize>();
        }
        len += span_bytes.len();
        if !deltas.is_empty() {
            len += wire::message_len(13, deltas.len());
        }
        len
    }

    /// Writes the `Histogram` message read by [`Registry::read_histogram`].
    fn write_histogram(&self, out: &mut Vec<u8>, scratch: &Scratch) {
        let Scratch {
            native,
            classic,
            span_bytes,
            deltas,
            ..
        } = scratch;
        wire::uint64(out, 1, native.count());
        wire::double(out, 2, native.sum());
        if self.options.classic_in_protobuf {
            for (le, n) in classic.buckets() {
                wire::message_header(out, 3, classic_bucket_len(le, n));
                wire::uint64(out, 1, n);
                wire::double(out, 2, le as f64);
            }
        }
        wire::sint(out, 5, i64::from(native.schema().get()));
        wire::double(out, 6, ZERO_THRESHOLD);
        wire::uint64(out, 7, native.zero_count());
        out.extend_from_slice(span_bytes);
        if !deltas.is_empty() {
            wire::message_header(out, 13, deltas.len());
            out.extend_from_slice(deltas);
        }
    }

    /// The text exposition in `format`, histograms as classic histograms
    /// ([`ExportOptions::classic`]).
    pub fn encode_text(&self, format: TextFormat) -> String {
        let mut text = TextEncoder::new(format);
        let mut classic = ClassicHistogram::default();
        for family in self.families().iter() {
            // Names were checked at registration.
            if text
                .family(&family.name, &family.help, family.kind)
                .is_err()
            {
                continue;
            }
            for s in &family.series {
                match &s.value {
                    Value::Counter(c) => text.counter(&s.labels, c.get(), None),
                    Value::Gauge(g) => text.gauge(&s.labels, g.get(), None),
                    Value::Histogram(h) => {
                        h.fill_classic(&mut classic, &self.options.classic);
                        text.histogram(&s.labels, &classic, None);
                    }
                }
            }
        }
        text.finish()
    }
}

/// Buffers reused across the series of one scrape.
#[derive(Default)]
struct Scratch {
    native: NativeHistogram,
    classic: ClassicHistogram,
    /// The spans as encoded `BucketSpan` fields.
    span_bytes: Vec<u8>,
    /// The deltas as packed `sint64` bytes.
    deltas: Vec<u8>,
}

/// Bytes of a classic `Bucket` message.
fn classic_bucket_len(le: u64, n: u64) -> usize {
    wire::uint64_len(1, n) + wire::double_len(2, le as f64)
}

#[cold]
fn unreachable_kind() -> ! {
    // `insert` returns a value of the kind it was asked for (families have one kind).
    unreachable!("a family holds one kind of value")
}
