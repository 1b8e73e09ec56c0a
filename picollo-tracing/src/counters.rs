//! Counters and span rings on Linux (`picollo-linux`, the default-on `counters` feature):
//! the process's span counters, the thread's ring and its counter samples, and the mapping
//! of the thread's counter slots to the layer's counters, by event.

use picollo_linux::event::{Event, EventSpec, HardwareEvent};
use picollo_linux::session::CounterSession;
use picollo_linux::span::{self, SpanConfig};
use picollo_ring::MAX_COUNTERS;
use picollo_spans::SpanAggregator;

pub(crate) use picollo_linux::span::raw::{with_thread, Interval, ThreadSpans};
pub use picollo_linux::span::SpanCounters;
pub(crate) use picollo_linux::Reading;

use picollo_spans::stack::SlotMap;

/// One counter the layer samples: the event as configured (typed from the builder or
/// `PICOLLO_COUNTERS` to here; never a name parsed back).
#[derive(Clone, Debug)]
pub(crate) struct CounterSpec {
    spec: EventSpec,
    /// Its perf name (with modifiers), as reports show it.
    name: String,
}

impl CounterSpec {
    fn new(spec: &EventSpec) -> Self {
        Self {
            name: spec.to_string(),
            spec: spec.clone(),
        }
    }

    /// The perf name, with modifiers.
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// The name the per-phase table uses: the event's perf name.
    pub(crate) fn canonical(&self) -> String {
        self.spec.event.to_string()
    }
}

/// `end - start` of one counter less `read_cost` (what reading the counter itself adds to a
/// window: see `ThreadSpans::read_cost`), at least 0; `None` when it was not counted in
/// between.
#[inline(always)]
pub(crate) fn delta(end: &Reading, start: &Reading, read_cost: u64) -> Option<u64> {
    end.delta_since(start)
        .value()
        .map(|v| v.saturating_sub(read_cost))
}

/// The layer's counters: `wanted` (else the process's span counters, `PICOLLO_COUNTERS`
/// unless configured), made the process's span counters when nothing configured them yet;
/// and the problem to report once, if any.
pub(crate) fn configure(wanted: Option<&SpanCounters>) -> (Vec<CounterSpec>, Option<String>) {
    let mut problem = None;
    if let Some(wanted) = wanted {
        if let Err(cfg) = span::configure(SpanConfig::new().with_counters(wanted.clone())) {
            let in_force = span::config().counters();
            if in_force != cfg.counters() {
                problem = Some(format!(
                    "span counters were configured before this layer as {:?}; counting \
                     those instead of {:?}",
                    in_force.names(),
                    wanted.names()
                ));
            }
        }
    } else if let Some(e) = span::env_error() {
        problem = Some(format!("{}: {e}", picollo_spans::COUNTERS_ENV));
    }
    let events = span::config().counters().events();
    if events.len() > MAX_COUNTERS {
        problem = Some(format!(
            "at most {MAX_COUNTERS} counters; counting the first {MAX_COUNTERS} of {:?}",
            span::config().counters().names()
        ));
    }
    let specs = events
        .iter()
        .take(MAX_COUNTERS)
        .map(CounterSpec::new)
        .collect();
    (specs, problem)
}

/// The index of `cycles` among `counters`.
pub(crate) fn cycles_index(counters: &[CounterSpec]) -> Option<usize> {
    counters
        .iter()
        .position(|c| c.spec.event == Event::Hardware(HardwareEvent::Cycles))
}

/// Indices of `cycles` and `instructions` among `counters`, when both are there.
pub(crate) fn ipc_pair(counters: &[CounterSpec]) -> Option<(usize, usize)> {
    let find = |e: HardwareEvent| {
        counters
            .iter()
            .position(|c| c.spec.event == Event::Hardware(e))
    };
    find(HardwareEvent::Cycles).zip(find(HardwareEvent::Instructions))
}

/// Maps the thread's counter slots to the `counters` of layer `layer` by event, and (with
/// `warn`) says which counters are not measured here, and why.
#[cold]
pub(crate) fn map_thread_counters(
    t: &mut ThreadSpans,
    layer: u64,
    counters: &[CounterSpec],
    warn: bool,
) -> (SlotMap, Option<String>) {
    let mut problem = None;
    let mut tc = SlotMap {
        owner: layer,
        ..SlotMap::NONE
    };
    match t.counter_events() {
        Ok(events) => {
            tc.slots = events.len().min(MAX_COUNTERS);
            for (slot, event) in events.iter().take(MAX_COUNTERS).enumerate() {
                let found = counters.iter().position(|c| c.spec.event == *event);
                if let Some(i) = found {
                    tc.slot_to_counter[slot] = i as u8;
                    tc.mask |= 1 << i;
                }
            }
            let all = (1u32 << counters.len()) - 1;
            if warn && tc.mask != all {
                let missing: Vec<&CounterSpec> = counters
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| tc.mask & (1 << i) == 0)
                    .map(|(_, c)| c)
                    .collect();
                let names: Vec<&str> = missing.iter().map(|c| c.name()).collect();
                problem = Some(format!(
                    "counters not counted here: {} ({}); their columns read n/a",
                    names.join(", "),
                    why_not_counted(missing.first().copied())
                ));
            }
        }
        Err(e) => {
            tc.slots = 0;
            problem = Some(format!(
                "this thread's counters and span ring could not be opened ({e}); its spans are \
                 not counted"
            ));
        }
    }
    (tc, problem)
}

/// Why `counter` does not count on this thread: the error of opening it alone (which says
/// what to do about it), or the PMU's state.
#[cold]
fn why_not_counted(counter: Option<&CounterSpec>) -> String {
    let Some(counter) = counter else {
        return String::new();
    };
    let opened = CounterSession::builder()
        .event_spec(counter.spec.clone())
        .build();
    match opened {
        Err(e) => e.to_string(),
        Ok(_) => format!(
            "it opens alone but not in the group; {}",
            picollo_linux::Capabilities::detect().pmu
        ),
    }
}

/// An empty aggregator whose notes describe this machine's PMU.
pub(crate) fn new_aggregator() -> SpanAggregator {
    span::new_aggregator()
}
