//! What selects an event in `perf_event_attr` ([`EventConfig`]: the type and config words),
//! and the `ResolvePmu` seam through which `pmu/…/` events get theirs: the event model
//! never reads sysfs itself; [`crate::pmu::Sysfs`] is the resolver a session uses, and tests
//! pass their own (a fixture tree, or a closure).

use perf_event_open_sys::bindings as sys;

use super::kind::PmuEvent;
use super::Event;

/// `perf_event_attr.type` of generic hardware events.
pub(crate) const TYPE_HARDWARE: u32 = sys::PERF_TYPE_HARDWARE;
/// `perf_event_attr.type` of software events.
pub(crate) const TYPE_SOFTWARE: u32 = sys::PERF_TYPE_SOFTWARE;
/// `perf_event_attr.type` of generic cache events.
pub(crate) const TYPE_HW_CACHE: u32 = sys::PERF_TYPE_HW_CACHE;
/// `perf_event_attr.type` of raw, CPU-specific events.
pub(crate) const TYPE_RAW: u32 = sys::PERF_TYPE_RAW;

/// The `perf_event_attr` fields that select an event.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct EventConfig {
    /// `type`: `PERF_TYPE_HARDWARE`, `PERF_TYPE_SOFTWARE`, `PERF_TYPE_HW_CACHE`,
    /// `PERF_TYPE_RAW`, or a dynamic PMU's type from sysfs.
    pub type_: u32,
    /// `config`.
    pub config: u64,
    /// `config1` (`bp_addr`, `kprobe_func`, …).
    pub config1: u64,
    /// `config2`.
    pub config2: u64,
    /// `config3`.
    pub config3: u64,
}

/// Turns a dynamic PMU event (`pmu/…/`) into its `perf_event_attr` selection, for
/// `Event::config_with`. [`crate::pmu::Sysfs`] resolves through
/// `/sys/bus/event_source/devices`; a closure `Fn(&PmuEvent) -> Result<EventConfig, E>` is a
/// resolver too (a fixed table, a test's fake).
pub(crate) trait ResolvePmu {
    /// Why an event could not be resolved.
    type Error;

    /// The type and config words of `event`.
    fn resolve_pmu(&self, event: &PmuEvent) -> Result<EventConfig, Self::Error>;
}

impl<F, E> ResolvePmu for F
where
    F: Fn(&PmuEvent) -> Result<EventConfig, E>,
{
    type Error = E;

    fn resolve_pmu(&self, event: &PmuEvent) -> Result<EventConfig, E> {
        self(event)
    }
}

impl Event {
    /// The `perf_event_attr` selection for this event. Hardware, software, cache and raw
    /// events need nothing else; `pmu/…/` events are resolved by `resolver` (a session uses
    /// the system's sysfs, [`crate::pmu::Sysfs::system`]).
    pub(crate) fn config_with<R: ResolvePmu + ?Sized>(
        &self,
        resolver: &R,
    ) -> Result<EventConfig, R::Error> {
        let simple = |type_, config| EventConfig {
            type_,
            config,
            ..EventConfig::default()
        };
        Ok(match self {
            Self::Hardware(e) => simple(TYPE_HARDWARE, e.config()),
            Self::Software(e) => simple(TYPE_SOFTWARE, e.config()),
            Self::Cache(e) => simple(TYPE_HW_CACHE, e.config()),
            Self::Raw(c) => simple(TYPE_RAW, *c),
            Self::Pmu(p) => return resolver.resolve_pmu(p),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generic_events_need_no_resolver_and_pmu_events_ask_it() {
        let no_pmus = |p: &PmuEvent| Err::<EventConfig, String>(format!("no PMU {}", p.pmu()));
        let cycles: Event = "cycles".parse().unwrap();
        assert_eq!(cycles.config_with(&no_pmus).unwrap().type_, TYPE_HARDWARE);
        let pmu: Event = "cpu/event=0x3c/".parse().unwrap();
        assert_eq!(pmu.config_with(&no_pmus), Err("no PMU cpu".to_owned()));
    }
}
