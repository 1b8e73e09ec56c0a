//! [`CounterSessionBuilder`]: the events, target and options of a session, and `build`, which
//! opens the group (dropping or refusing unsupported events) and maps each counter's page.

use core::marker::PhantomData;
use std::os::fd::{AsFd, OwnedFd};

use picollo_alloc::HistogramBuilder;

use crate::count::Reading;
use crate::error::{DroppedEvent, PerfError};
use crate::event::{Event, EventConfig, EventSpec, HardwareEvent, Modifiers};
use crate::page::{CounterInstructions, NativeInstructions};
use crate::pmu::Sysfs;
use crate::sys::{self, AttrFlags, Mapping};

use super::counter::{Counter, OnUnsupported, Target};
use super::CounterSession;

impl CounterSession {
    /// A builder with the defaults: this thread, not pinned, kernel and hypervisor excluded,
    /// enabled, no inherit, rdpmc allowed, fail on unsupported events.
    pub fn builder() -> CounterSessionBuilder {
        CounterSessionBuilder::default()
    }
}

/// Builds a [`CounterSession`]; see the [module docs](crate::session).
#[derive(Clone, Debug)]
#[must_use]
pub struct CounterSessionBuilder {
    target: Target,
    pinned: bool,
    exclude_kernel: bool,
    exclude_hv: bool,
    enabled: bool,
    inherit: bool,
    enable_on_exec: bool,
    rdpmc: bool,
    hybrid_pmu: Option<u32>,
    on_unsupported: OnUnsupported,
    sysfs: Sysfs,
    events: Vec<Event>,
    /// Per event, the modifiers it was added with (`None`: the session's exclusions).
    modifiers: Vec<Option<Modifiers>>,
}

impl Default for CounterSessionBuilder {
    fn default() -> Self {
        Self {
            target: Target::ThisThread,
            pinned: false,
            exclude_kernel: true,
            exclude_hv: true,
            enabled: true,
            inherit: false,
            enable_on_exec: false,
            rdpmc: true,
            hybrid_pmu: None,
            on_unsupported: OnUnsupported::Fail,
            sysfs: Sysfs::system(),
            events: Vec::new(),
            modifiers: Vec::new(),
        }
    }
}

impl CounterSessionBuilder {
    /// What to count (default [`Target::ThisThread`]).
    pub fn target(mut self, target: Target) -> Self {
        self.target = target;
        self
    }

    /// Pin the group: it is on the PMU all the time or not at all (default false). A pinned
    /// group that does not fit makes reads fail with [`PerfError::PinnedGroupEvicted`].
    pub fn pinned(mut self, pinned: bool) -> Self {
        self.pinned = pinned;
        self
    }

    /// Exclude events in the kernel (default true; `perf_event_paranoid = 2` requires it
    /// for unprivileged users).
    pub fn exclude_kernel(mut self, exclude: bool) -> Self {
        self.exclude_kernel = exclude;
        self
    }

    /// Exclude events in the hypervisor (default true).
    pub fn exclude_hv(mut self, exclude: bool) -> Self {
        self.exclude_hv = exclude;
        self
    }

    /// Start counting at once (default true). Otherwise call [`CounterSession::enable`], or
    /// use [`CounterSessionBuilder::enable_on_exec`].
    pub fn enabled(mut self, enabled: bool) -> Self {
        self.enabled = enabled;
        self
    }

    /// Count the target's future children too (default false). Disables the rdpmc fast path.
    pub fn inherit(mut self, inherit: bool) -> Self {
        self.inherit = inherit;
        self
    }

    /// Start counting when the target calls `exec` (default false); combine with
    /// `enabled(false)` and a [`Target::Pid`] to count a child process from its first
    /// instruction, as `perf stat` does.
    pub fn enable_on_exec(mut self, on_exec: bool) -> Self {
        self.enable_on_exec = on_exec;
        self
    }

    /// Allow the rdpmc fast path (default true). It is used only for [`Target::ThisThread`]
    /// without `inherit`, and only when the kernel advertises it per counter.
    pub fn rdpmc(mut self, allow: bool) -> Self {
        self.rdpmc = allow;
        self
    }

    /// On hybrid CPUs, open generic hardware and cache events on this core PMU type (the
    /// `type` of `cpu_core` or `cpu_atom`, see
    /// [`Capabilities::core_pmus`](crate::caps::Capabilities::core_pmus)), placed in
    /// `config` bits 32..63 as the kernel expects.
    pub fn hybrid_pmu(mut self, pmu_type: u32) -> Self {
        self.hybrid_pmu = Some(pmu_type);
        self
    }

    /// Fail or drop when an event is unsupported here (default [`OnUnsupported::Fail`]).
    pub fn on_unsupported(mut self, policy: OnUnsupported) -> Self {
        self.on_unsupported = policy;
        self
    }

    /// Resolve `pmu/…/` events through another sysfs tree (for tests).
    pub fn sysfs(mut self, sysfs: Sysfs) -> Self {
        self.sysfs = sysfs;
        self
    }

    /// Adds an event, counted as the session's exclusions say.
    pub fn event(mut self, event: impl Into<Event>) -> Self {
        self.events.push(event.into());
        self.modifiers.push(None);
        self
    }

    /// Adds an event with its own modifiers when it has any (`page-faults:u` counts user space
    /// whatever [`Self::exclude_kernel`] says), else counted as the session's exclusions say.
    pub fn event_spec(mut self, spec: EventSpec) -> Self {
        self.events.push(spec.event);
        self.modifiers.push(spec.modifiers);
        self
    }

    /// Adds an event by perf's name (`cycles`, `L1-dcache-load-misses`, `r00c0`,
    /// `cpu/event=0x3c,umask=0x00/`), with perf's modifiers if written (`page-faults:uk`,
    /// `cycles:u`, `cpu/event=0x3c/k`; see [`Modifiers`]).
    pub fn event_name(self, name: &str) -> Result<Self, PerfError> {
        let spec: EventSpec = name.parse()?;
        Ok(self.event_spec(spec))
    }

    /// What an event added without modifiers counts: the session's exclusions as
    /// [`Modifiers`].
    pub(crate) fn default_modifiers(&self) -> Modifiers {
        let letters = match (self.exclude_kernel, self.exclude_hv) {
            (true, true) => "u",
            (true, false) => "uh",
            (false, true) => "uk",
            (false, false) => "ukh",
        };
        Modifiers::parse(letters).unwrap_or_default()
    }

    /// Adds cycles, instructions and ref-cycles: on Intel these use the fixed counters and
    /// leave the programmable ones free.
    pub fn fixed_counters(self) -> Self {
        self.event(HardwareEvent::Cycles)
            .event(HardwareEvent::Instructions)
            .event(HardwareEvent::RefCycles)
    }

    /// The events added so far.
    pub fn events(&self) -> &[Event] {
        &self.events
    }

    fn config_for(&self, event: &Event) -> Result<EventConfig, PerfError> {
        let mut c = event.config_with(&self.sysfs)?;
        if let (Some(t), Event::Hardware(_) | Event::Cache(_)) = (self.hybrid_pmu, event) {
            c.config |= u64::from(t) << 32;
        }
        Ok(c)
    }

    /// Opens the group.
    pub fn build(self) -> Result<CounterSession, PerfError> {
        if self.events.is_empty() {
            return Err(PerfError::NoEvents);
        }
        let (pid, cpu) = self.target.pid_cpu();
        let fast_path = self.rdpmc
            && NativeInstructions::HAS_RDPMC
            && self.target == Target::ThisThread
            && !self.inherit;
        let mut counters: Vec<Counter> = Vec::with_capacity(self.events.len());
        let mut dropped = Vec::new();
        for (event, given) in self.events.iter().zip(&self.modifiers) {
            let name = EventSpec {
                event: event.clone(),
                modifiers: *given,
            }
            .to_string();
            let modifiers = given.unwrap_or_else(|| self.default_modifiers());
            let leader = counters.first().map(|c| &c.fd);
            match self.open_one(event, modifiers, &name, leader, pid, cpu, fast_path) {
                Ok((config, fd, id)) => {
                    let page = if fast_path {
                        Mapping::new(fd.as_fd()).ok()
                    } else {
                        None
                    };
                    counters.push(Counter {
                        name,
                        event: event.clone(),
                        modifiers,
                        config,
                        id,
                        fd,
                        page,
                        last: None,
                        prev: None,
                        histogram: match HistogramBuilder::new().dense().plain() {
                            Ok(h) => h,
                            Err(e) => unreachable!("the default configuration builds: {e}"),
                        },
                        not_counted: 0,
                    });
                }
                Err(error)
                    if self.on_unsupported == OnUnsupported::Drop && error.is_unsupported() =>
                {
                    dropped.push(DroppedEvent {
                        event: event.clone(),
                        error,
                    });
                }
                Err(error) => return Err(error),
            }
        }
        if counters.is_empty() {
            return Err(PerfError::AllEventsDropped(dropped));
        }
        let n = counters.len();
        Ok(CounterSession {
            counters,
            dropped,
            buf: vec![0; 3 + 2 * n],
            scratch: vec![Reading::default(); n],
            ids: Vec::new(),
            fast_path,
            last_fallback: None,
            _not_send: PhantomData,
        }
        .with_ids())
    }

    #[allow(clippy::too_many_arguments)] // one call site; a struct would only rename them
    fn open_one(
        &self,
        event: &Event,
        m: Modifiers,
        name: &str,
        leader: Option<&OwnedFd>,
        pid: i32,
        cpu: i32,
        user_read: bool,
    ) -> Result<(EventConfig, OwnedFd, u64), PerfError> {
        let mut config = self.config_for(event)?;
        if user_read {
            config.config1 |= user_read_config1(event, cfg!(target_arch = "aarch64"));
        }
        let is_leader = leader.is_none();
        let mut attr = sys::attr(
            &config,
            AttrFlags {
                disabled: is_leader && !self.enabled,
                pinned: is_leader && self.pinned,
                exclude_user: m.exclude_user(),
                exclude_kernel: m.exclude_kernel(),
                exclude_hv: m.exclude_hv(),
                exclude_host: m.exclude_host(),
                exclude_guest: m.exclude_guest(),
                inherit: self.inherit,
                enable_on_exec: is_leader && self.enable_on_exec,
            },
        );
        let fd = sys::open(&mut attr, pid, cpu, leader.map(AsFd::as_fd))
            .map_err(|errno| PerfError::from_open_errno(errno, name, m.exclude_kernel()))?;
        let id = sys::event_id(fd.as_fd()).map_err(|errno| PerfError::Os {
            op: "ioctl(PERF_EVENT_IOC_ID)",
            event: Some(name.to_owned()),
            errno,
        })?;
        Ok((config, fd, id))
    }
}

/// arm64's `config1` bit 1 (`rdpmc` in the PMU's `format/`): asks the kernel to let the
/// thread read the counter from user space (it must also allow it:
/// `sysctl kernel.perf_user_access=1`). Set for PMU events on arm64 when the fast path is
/// wanted; x86 needs no bit, and software events have no counter to read.
pub(crate) const ARM64_USER_READ: u64 = 1 << 1;

/// The `config1` bits that ask for user-space reads of `event` (`aarch64`: the target is
/// arm64): [`ARM64_USER_READ`] for PMU events on arm64, else none.
pub(crate) fn user_read_config1(event: &Event, aarch64: bool) -> u64 {
    if aarch64 && !matches!(event, Event::Software(_)) {
        ARM64_USER_READ
    } else {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::SoftwareEvent;

    #[test]
    fn arm64_events_ask_for_user_reads() {
        let cycles: Event = "cycles".parse().unwrap();
        let raw: Event = "r0011".parse().unwrap();
        let faults: Event = "page-faults".parse().unwrap();
        assert_eq!(user_read_config1(&cycles, true), 2);
        assert_eq!(user_read_config1(&raw, true), 2);
        assert_eq!(user_read_config1(&faults, true), 0, "software: no counter");
        assert_eq!(user_read_config1(&cycles, false), 0, "x86 needs no bit");
    }

    #[test]
    fn targets() {
        assert_eq!(Target::default().pid_cpu(), (0, -1));
        assert_eq!(Target::Pid(42).pid_cpu(), (42, -1));
        assert_eq!(Target::Cpu(1).pid_cpu(), (-1, 1));
        assert_eq!(Target::PidOnCpu { pid: 3, cpu: 2 }.pid_cpu(), (3, 2));
    }

    #[test]
    fn builder_options() {
        let b = CounterSession::builder()
            .fixed_counters()
            .event_name("page-faults")
            .unwrap()
            .event(Event::Raw(0xc0));
        let names: Vec<String> = b.events().iter().map(ToString::to_string).collect();
        assert_eq!(
            names,
            [
                "cycles",
                "instructions",
                "ref-cycles",
                "page-faults",
                "r00c0"
            ]
        );
        let hybrid = b.clone().hybrid_pmu(8);
        let c = hybrid
            .config_for(&Event::Hardware(HardwareEvent::Cycles))
            .unwrap();
        assert_eq!(c.config, 8 << 32);
        let c = hybrid
            .config_for(&Event::Software(SoftwareEvent::TaskClock))
            .unwrap();
        assert_eq!(c.config, 1, "software events are not redirected");
    }
}
