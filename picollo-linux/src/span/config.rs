//! Span configuration: what spans sample ([`SpanCounters`], the process-wide [`SpanConfig`])
//! and how large their rings are.

use std::fmt;
use std::sync::{Mutex, OnceLock, PoisonError};

use picollo_ring::MAX_COUNTERS;

use crate::event::{parse_list, Event, EventSpec, ParseEventError};

use picollo_spans::{SpanAggregator, COUNTERS_ENV};

/// Span rings are named `span-<tid>`.
pub(crate) const RING_PREFIX: &str = "span-";
/// Slots of a thread's span ring unless configured (16,384 frames, 1.9 MiB with 4 counter
/// slots).
pub const DEFAULT_SLOTS: u32 = 1 << 14;
/// Counter slots of a span ring unless configured (or more counters are configured): room
/// for counters chosen at attach time.
pub(crate) const DEFAULT_COUNTER_SLOTS: usize = 4;

// ---------------------------------------------------------------------------------------------
// Configuration
// ---------------------------------------------------------------------------------------------

/// What spans sample and how large their rings are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpanConfig {
    counters: SpanCounters,
    slots: u32,
    counter_slots: usize,
}

impl Default for SpanConfig {
    fn default() -> Self {
        Self {
            counters: SpanCounters::new(),
            slots: DEFAULT_SLOTS,
            counter_slots: DEFAULT_COUNTER_SLOTS,
        }
    }
}

impl SpanConfig {
    /// Time only, [`DEFAULT_SLOTS`] slots.
    pub fn new() -> Self {
        Self::default()
    }

    /// The counters named in [`COUNTERS_ENV`] (none when unset).
    ///
    /// # Errors
    /// The first name in it that is not an event.
    pub fn from_env() -> Result<Self, ParseEventError> {
        Ok(Self::new().with_counters(SpanCounters::from_env()?))
    }

    /// With these counters.
    pub fn with_counters(mut self, counters: SpanCounters) -> Self {
        self.counters = counters;
        self
    }

    /// With `slots` slots per thread ring (rounded up to a power of two, at least 2).
    pub fn with_slots(mut self, slots: u32) -> Self {
        self.slots = slots.max(2).checked_next_power_of_two().unwrap_or(1 << 31);
        self
    }

    /// The counters spans sample.
    pub fn counters(&self) -> &SpanCounters {
        &self.counters
    }

    /// Slots per thread ring.
    pub fn slots(&self) -> u32 {
        self.slots
    }

    /// With `n` counter slots per frame (at most [`MAX_COUNTERS`]; 0 makes frames time-only
    /// and refuses counters chosen at attach time). Each slot costs two words per frame.
    pub fn with_counter_slots(mut self, n: usize) -> Self {
        self.counter_slots = n.min(MAX_COUNTERS);
        self
    }

    /// Counter slots per frame: the configured number, or more if more counters are
    /// configured (at most [`MAX_COUNTERS`]).
    pub fn counter_slots(&self) -> usize {
        self.counter_slots
            .max(self.counters.len())
            .min(MAX_COUNTERS)
    }
}

/// The counters spans sample, as typed perf events: what a span layer's builder takes
/// (`picollo_tracing::Builder::counters`), so that the layer knows each counter by its event
/// rather than matching names back.
///
/// ```
/// use picollo_linux::event::{HardwareEvent, SoftwareEvent};
/// use picollo_linux::span::SpanCounters;
///
/// let typed = SpanCounters::new()
///     .with(HardwareEvent::Cycles)
///     .with(SoftwareEvent::PageFaults);
/// let parsed = SpanCounters::parse("cycles, page-faults").unwrap();
/// assert_eq!(typed, parsed);
/// assert_eq!(typed.names(), ["cycles", "page-faults"]);
/// assert_eq!(typed.to_string(), "cycles,page-faults");
/// assert!(SpanCounters::parse("cycles,no-such-counter").is_err());
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SpanCounters {
    events: Vec<EventSpec>,
}

impl fmt::Display for SpanCounters {
    /// The list as [`SpanCounters::parse`] reads it back: the names joined by commas (what a
    /// consumer sends a writer, [`super::SpanConsumer::request_counters`]).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, spec) in self.events.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{spec}")?;
        }
        Ok(())
    }
}

impl SpanCounters {
    /// No counters: time only.
    pub fn new() -> Self {
        Self::default()
    }

    /// With `event` too (counted as the session's exclusions say).
    pub fn with(self, event: impl Into<Event>) -> Self {
        self.with_spec(EventSpec::from(event.into()))
    }

    /// With `spec` too (an event with its own modifiers, `page-faults:u`).
    pub(crate) fn with_spec(mut self, spec: EventSpec) -> Self {
        self.events.push(spec);
        self
    }

    /// The counters of a comma-separated list of perf names (`cycles,instructions`, raw
    /// `r00c0`, `pmu/…/` events, modifiers: the names [`COUNTERS_ENV`] takes; split by
    /// [`crate::event::split_list`]); the first name that is not an event is the error.
    pub fn parse(list: &str) -> Result<Self, ParseEventError> {
        Ok(Self {
            events: parse_list(list)?,
        })
    }

    /// The counters named in [`COUNTERS_ENV`] (none when unset).
    ///
    /// # Errors
    /// The first name in it that is not an event.
    pub(crate) fn from_env() -> Result<Self, ParseEventError> {
        std::env::var(COUNTERS_ENV).map_or_else(|_| Ok(Self::new()), |v| Self::parse(&v))
    }

    /// The events, in order.
    pub fn events(&self) -> &[EventSpec] {
        &self.events
    }

    /// Their perf names, in order (as the span rings' headers list them).
    pub fn names(&self) -> Vec<String> {
        self.events.iter().map(ToString::to_string).collect()
    }

    /// How many.
    pub fn len(&self) -> usize {
        self.events.len()
    }

    /// Whether there are none (time only).
    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }
}

/// The process's span state: the configuration (set once) and the counters a consumer asked
/// for at attach time (the latest request a thread applied), which rings opened later count
/// too. One place, typed: nothing here is a name to parse again.
struct Process {
    config: SpanConfig,
    /// Why [`COUNTERS_ENV`] could not be used, when it named something that is not an event.
    env_error: Option<ParseEventError>,
    requested: Mutex<Option<SpanCounters>>,
}

static PROCESS: OnceLock<Process> = OnceLock::new();

fn process() -> &'static Process {
    PROCESS.get_or_init(|| match SpanConfig::from_env() {
        Ok(config) => Process::new(config, None),
        Err(e) => {
            eprintln!(
                "picollo: {COUNTERS_ENV}: {e}; spans count time only (see `picollo counters` \
                 for the events available here)"
            );
            Process::new(SpanConfig::new(), Some(e))
        }
    })
}

impl Process {
    fn new(config: SpanConfig, env_error: Option<ParseEventError>) -> Self {
        Self {
            config,
            env_error,
            requested: Mutex::new(None),
        }
    }
}

/// Sets the process's span configuration; only before the first span opens a ring (else the
/// configuration given is handed back as the error, and [`config`] says what is in force).
/// Without it, [`SpanConfig::from_env`].
pub fn configure(config: SpanConfig) -> Result<(), SpanConfig> {
    let mut given = Some(config);
    let _ = PROCESS.get_or_init(|| Process::new(given.take().unwrap_or_default(), None));
    match given {
        None => Ok(()),
        Some(config) => Err(config),
    }
}

/// The configuration in force.
pub fn config() -> &'static SpanConfig {
    &process().config
}

/// Why [`COUNTERS_ENV`] was not used (a name in it that is not an event), if so: the span
/// configuration then counts time only.
pub fn env_error() -> Option<&'static ParseEventError> {
    process().env_error.as_ref()
}

/// The counters a ring opened now counts: the latest attach-time request a thread applied,
/// else the configuration's.
pub(crate) fn counters_in_force() -> SpanCounters {
    let p = process();
    let requested = p.requested.lock().unwrap_or_else(PoisonError::into_inner);
    requested
        .clone()
        .unwrap_or_else(|| p.config.counters.clone())
}

/// Records the counters a thread switched to at a consumer's request, for rings opened later.
pub(crate) fn set_requested(counters: SpanCounters) {
    *process()
        .requested
        .lock()
        .unwrap_or_else(PoisonError::into_inner) = Some(counters);
}

/// An empty [`SpanAggregator`] whose table notes describe this machine's PMU (what
/// `SpanAggregator::new` cannot know off Linux): use it for tables read on this machine.
pub fn new_aggregator() -> SpanAggregator {
    let mut agg = SpanAggregator::new();
    agg.set_pmu_description(crate::Capabilities::detect().pmu.to_string());
    agg
}
