//! Span configuration: what spans sample ([`SpanCounters`], the process-wide [`SpanConfig`])
//! and how large their rings are.

use std::sync::OnceLock;

use picollo_core::ring::MAX_COUNTERS;

use crate::event::{Event, EventSpec, ParseEventError};

use picollo_alloc::span::{SpanAggregator, COUNTERS_ENV};

/// Span rings are named `span-<tid>`.
pub const RING_PREFIX: &str = "span-";
/// Slots of a thread's span ring unless configured (16,384 frames, 1.9 MiB with 4 counter
/// slots).
pub const DEFAULT_SLOTS: u32 = 1 << 14;
/// Counter slots of a span ring unless configured (or more counters are configured): room
/// for counters chosen at attach time.
pub const DEFAULT_COUNTER_SLOTS: usize = 4;

// ---------------------------------------------------------------------------------------------
// Configuration
// ---------------------------------------------------------------------------------------------

/// What spans sample and how large their rings are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpanConfig {
    counters: Vec<String>,
    slots: u32,
    counter_slots: usize,
}

impl Default for SpanConfig {
    fn default() -> Self {
        Self {
            counters: Vec::new(),
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
    pub fn from_env() -> Self {
        let counters = std::env::var(COUNTERS_ENV)
            .map(|v| Self::parse_counters(&v))
            .unwrap_or_default();
        Self {
            counters,
            ..Self::default()
        }
    }

    /// Splits `cycles, instructions,LLC-load-misses` into names (commas inside `pmu/…/`
    /// events are kept: `cpu/event=0x3c,umask=0x00/`).
    pub fn parse_counters(list: &str) -> Vec<String> {
        let mut out = Vec::new();
        let mut cur = String::new();
        let mut in_pmu = false;
        for c in list.chars() {
            match c {
                '/' => {
                    in_pmu = !in_pmu;
                    cur.push(c);
                }
                ',' if !in_pmu => {
                    if !cur.trim().is_empty() {
                        out.push(cur.trim().to_owned());
                    }
                    cur.clear();
                }
                _ => cur.push(c),
            }
        }
        if !cur.trim().is_empty() {
            out.push(cur.trim().to_owned());
        }
        out
    }

    /// With these counters (typed).
    pub fn with_span_counters(self, counters: &SpanCounters) -> Self {
        self.with_counters(counters.names())
    }

    /// With these counters (perf names).
    pub fn with_counters<S: AsRef<str>>(mut self, names: impl IntoIterator<Item = S>) -> Self {
        self.counters = names.into_iter().map(|s| s.as_ref().to_owned()).collect();
        self
    }

    /// With `slots` slots per thread ring (rounded up to a power of two, at least 2).
    pub fn with_slots(mut self, slots: u32) -> Self {
        self.slots = slots.max(2).checked_next_power_of_two().unwrap_or(1 << 31);
        self
    }

    /// The counter names.
    pub fn counters(&self) -> &[String] {
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
/// assert!(SpanCounters::parse("cycles,no-such-counter").is_err());
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SpanCounters {
    events: Vec<EventSpec>,
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
    pub fn with_spec(mut self, spec: EventSpec) -> Self {
        self.events.push(spec);
        self
    }

    /// The counters of a comma-separated list of perf names (`cycles,instructions`, raw
    /// `r00c0`, `pmu/…/` events, modifiers: the names [`COUNTERS_ENV`] takes); the first
    /// name that is not an event is the error.
    pub fn parse(list: &str) -> Result<Self, ParseEventError> {
        let events = SpanConfig::parse_counters(list)
            .iter()
            .map(|n| n.parse::<EventSpec>())
            .collect::<Result<_, _>>()?;
        Ok(Self { events })
    }

    /// The counters named in [`COUNTERS_ENV`] (none when unset).
    pub fn from_env() -> Result<Self, ParseEventError> {
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

static CONFIG: OnceLock<SpanConfig> = OnceLock::new();

/// Sets the process's span configuration; only before the first span opens a ring (else the
/// configuration given is handed back as the error, and [`config`] says what is in force).
/// Without it, [`SpanConfig::from_env`].
pub fn configure(config: SpanConfig) -> Result<(), SpanConfig> {
    CONFIG.set(config)?;
    Ok(())
}

/// The configuration in force.
pub fn config() -> &'static SpanConfig {
    CONFIG.get_or_init(SpanConfig::from_env)
}

/// An empty [`SpanAggregator`] whose table notes describe this machine's PMU (what
/// `SpanAggregator::new` cannot know off Linux): use it for tables read on this machine.
pub fn new_aggregator() -> SpanAggregator {
    let mut agg = SpanAggregator::new();
    agg.set_pmu_description(crate::Capabilities::detect().pmu.to_string());
    agg
}
