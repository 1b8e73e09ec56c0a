//! Counter sessions: a group of counters opened together and read together.
//!
//! [`CounterSession::builder`] mirrors the seed's `PerfEventCounterSession.Factory`:
//!
//! | seed | here |
//! |---|---|
//! | `WithTarget(pid, cpu)` | [`CounterSessionBuilder::target`] ([`Target::ThisThread`] by default) |
//! | `WithPinned(true)` | [`CounterSessionBuilder::pinned`] |
//! | `WithKernel(false)` | [`CounterSessionBuilder::exclude_kernel`]`(true)` (the default) |
//! | `WithEnabled(true)` | [`CounterSessionBuilder::enabled`] (the default) |
//! | `WithFixedCounters()` | [`CounterSessionBuilder::fixed_counters`] |
//! | `WithHardwareCounter(..)` | [`CounterSessionBuilder::hardware`] |
//! | `WithCacheCounter(..)` | [`CounterSessionBuilder::cache`] |
//! | `Create()` | [`CounterSessionBuilder::build`] |
//! | `Read(forceSyscallRead)` | [`CounterSession::read`] |
//! | `Reset()` | [`CounterSession::reset`] |
//!
//! All counters open as one group (the first is the leader) with
//! `PERF_FORMAT_GROUP | ID | TOTAL_TIME_ENABLED | TOTAL_TIME_RUNNING`, so one `read()` returns
//! every value with the group's times: `nr, time_enabled, time_running, nr × {value, id}`.
//!
//! ```
//! use picollo_linux::event::SoftwareEvent;
//! use picollo_linux::session::CounterSession;
//!
//! # fn main() -> Result<(), picollo_linux::PerfError> {
//! // Software events work everywhere, even without a hardware PMU.
//! let mut session = CounterSession::builder()
//!     .software(SoftwareEvent::TaskClock)
//!     .software(SoftwareEvent::PageFaults)
//!     .build()?;
//! session.read(false)?;
//! let v: Vec<u8> = vec![1; 1 << 20];
//! session.read(false)?;
//! if let Some(deltas) = session.deltas() {
//!     for (counter, delta) in deltas {
//!         println!("{}: {delta}", counter.name());
//!     }
//! }
//! # drop(v);
//! # Ok(())
//! # }
//! ```
//!
//! Put a clock event (`task-clock`, `cpu-clock`) first: the kernel brings clock events up to
//! date on a group read only when they lead the group (see [`SoftwareEvent::TaskClock`]).
//!
//! A session is not `Send`: with the rdpmc fast path it must be read on the thread it counts.
//!
//! ```compile_fail
//! fn assert_send<T: Send>() {}
//! assert_send::<picollo_linux::session::CounterSession>();
//! ```

use core::marker::PhantomData;
use std::os::fd::{AsFd, OwnedFd};

use picollo_alloc::HeapHistogram;
use picollo_core::source::{CounterSource, SourceError};

use crate::count::{Count, Reading};
pub use crate::error::DroppedEvent;
use crate::error::PerfError;
use crate::event::{
    CacheEvent, Event, EventConfig, EventSpec, HardwareEvent, Modifiers, SoftwareEvent,
};
use crate::page::{read_page, CounterInstructions, Fallback, NativeInstructions, PageRead};
use crate::pmu::Sysfs;
use crate::sys::{self, AttrFlags, Ioctl, Mapping};

/// What a session counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Target {
    /// The calling thread, on any CPU (`pid = 0, cpu = -1`). The only target that can use the
    /// rdpmc fast path.
    #[default]
    ThisThread,
    /// A process or thread id, on any CPU (`cpu = -1`).
    Pid(i32),
    /// Everything on one CPU (`pid = -1`); needs `perf_event_paranoid <= 0` or CAP_PERFMON.
    Cpu(i32),
    /// A process or thread, only while it runs on one CPU.
    PidOnCpu {
        /// The process or thread id.
        pid: i32,
        /// The CPU.
        cpu: i32,
    },
}

impl Target {
    /// The `(pid, cpu)` arguments of `perf_event_open`.
    pub const fn pid_cpu(self) -> (i32, i32) {
        match self {
            Self::ThisThread => (0, -1),
            Self::Pid(p) => (p, -1),
            Self::Cpu(c) => (-1, c),
            Self::PidOnCpu { pid, cpu } => (pid, cpu),
        }
    }
}

/// What [`CounterSessionBuilder::build`] does with events this machine does not support
/// (ENOENT, EOPNOTSUPP, ENODEV, EINVAL).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum OnUnsupported {
    /// Fail the build with the first unsupported event's error (the default).
    #[default]
    Fail,
    /// Leave the event out and report it in [`CounterSession::dropped`].
    Drop,
}

/// Which path a [`CounterSession::read`] took.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReadPath {
    /// One `read()` of the whole group.
    Syscall,
    /// RDPMC through each counter's mmap page.
    Rdpmc,
}

/// One counter of a session: its name, event, kernel id, the last two readings, and the
/// histogram that [`CounterSession::record`] fills (the seed's per-counter `Histogram`).
#[derive(Debug)]
pub struct Counter {
    name: String,
    event: Event,
    modifiers: Modifiers,
    config: EventConfig,
    id: u64,
    fd: OwnedFd,
    page: Option<Mapping>,
    last: Option<Reading>,
    prev: Option<Reading>,
    histogram: HeapHistogram<u64>,
    not_counted: u64,
}

impl Counter {
    /// The histogram of recorded values: default layout (0.001 relative error), full `u64`
    /// range, `u64` counts. Summaries, tables and diffs come from `picollo_alloc::SummaryExt`.
    pub fn histogram(&self) -> &HeapHistogram<u64> {
        &self.histogram
    }

    /// Intervals [`CounterSession::record`] could not record because the counter did not run
    /// in them (`time_running == 0`): reported here rather than recorded as zeros.
    pub fn not_counted(&self) -> u64 {
        self.not_counted
    }

    /// The event's perf name (`cycles`, `task-clock`, …), with the modifiers it was added
    /// with (`page-faults:u`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// What it counts: the modifiers it was added with, or the session's exclusions
    /// ([`CounterSessionBuilder::exclude_kernel`], [`CounterSessionBuilder::exclude_hv`]).
    pub fn modifiers(&self) -> Modifiers {
        self.modifiers
    }

    /// The event.
    pub fn event(&self) -> &Event {
        &self.event
    }

    /// The `perf_event_attr` type and config it was opened with.
    pub fn config(&self) -> &EventConfig {
        &self.config
    }

    /// The kernel's id for this event (`PERF_EVENT_IOC_ID`).
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Whether the counter's mmap page is mapped (for the rdpmc fast path).
    pub fn has_mmap_page(&self) -> bool {
        self.page.is_some()
    }

    /// The last reading (raw value and times), if any since the last reset.
    pub fn last_reading(&self) -> Option<Reading> {
        self.last
    }

    /// The count since the counter was enabled, as of the last read (scaled if multiplexed);
    /// `None` before the first read.
    pub fn value(&self) -> Option<Count> {
        self.last.map(|r| r.count())
    }

    /// The count between the last two reads, scaled by that interval's multiplexing ratio;
    /// `None` until two reads were taken since the last reset.
    pub fn delta(&self) -> Option<Count> {
        Some(self.last?.delta_since(&self.prev?))
    }
}

/// Builds a [`CounterSession`]; see the [module docs](self).
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
    pub fn default_modifiers(&self) -> Modifiers {
        let letters = match (self.exclude_kernel, self.exclude_hv) {
            (true, true) => "u",
            (true, false) => "uh",
            (false, true) => "uk",
            (false, false) => "ukh",
        };
        Modifiers::parse(letters).unwrap_or_default()
    }

    /// Adds a generic hardware event.
    pub fn hardware(self, e: HardwareEvent) -> Self {
        self.event(e)
    }

    /// Adds a generic cache event.
    pub fn cache(self, e: CacheEvent) -> Self {
        self.event(e)
    }

    /// Adds a software event.
    pub fn software(self, e: SoftwareEvent) -> Self {
        self.event(e)
    }

    /// Adds a raw event (`rNNNN`).
    pub fn raw(self, config: u64) -> Self {
        self.event(Event::Raw(config))
    }

    /// Adds cycles, instructions and ref-cycles: on Intel these use the fixed counters and
    /// leave the programmable ones free.
    pub fn fixed_counters(self) -> Self {
        self.hardware(HardwareEvent::Cycles)
            .hardware(HardwareEvent::Instructions)
            .hardware(HardwareEvent::RefCycles)
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
                        histogram: picollo_alloc::default_histogram(),
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
            last_path: None,
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

/// Parses a group read, `nr, time_enabled, time_running, nr × {value, id}`, into one
/// [`Reading`] per counter, matching values to counters by id.
///
/// ```
/// use picollo_linux::count::Reading;
/// use picollo_linux::session::parse_group_read;
///
/// let words = [2, 1000, 500, 11, 70, 22, 71];
/// let mut out = [Reading::default(); 2];
/// parse_group_read(&words, &[71, 70], &mut out)?;
/// assert_eq!(out[0], Reading { value: 22, time_enabled: 1000, time_running: 500 });
/// assert_eq!(out[1].value, 11);
/// # Ok::<(), picollo_linux::PerfError>(())
/// ```
pub fn parse_group_read(words: &[u64], ids: &[u64], out: &mut [Reading]) -> Result<(), PerfError> {
    let n = ids.len();
    let expected = 3 + 2 * n;
    let malformed = || PerfError::MalformedRead {
        bytes: words.len() * 8,
        expected: expected * 8,
    };
    if words.len() != expected || out.len() != n || words[0] != n as u64 {
        return Err(malformed());
    }
    let (time_enabled, time_running) = (words[1], words[2]);
    for (i, pair) in words[3..].chunks_exact(2).enumerate() {
        let (value, id) = (pair[0], pair[1]);
        // The kernel reports in opening order, so the id usually sits at `i`.
        let j = if ids.get(i) == Some(&id) {
            i
        } else {
            ids.iter().position(|&x| x == id).ok_or_else(malformed)?
        };
        out[j] = Reading {
            value,
            time_enabled,
            time_running,
        };
    }
    Ok(())
}

/// An open group of counters; see the [module docs](self).
#[derive(Debug)]
pub struct CounterSession {
    counters: Vec<Counter>,
    dropped: Vec<DroppedEvent>,
    buf: Vec<u64>,
    scratch: Vec<Reading>,
    ids: Vec<u64>,
    fast_path: bool,
    last_path: Option<ReadPath>,
    last_fallback: Option<Fallback>,
    /// Not `Send`: the rdpmc path reads the counters of the thread it runs on.
    _not_send: PhantomData<*const ()>,
}

impl CounterSession {
    /// A builder with the defaults: this thread, not pinned, kernel and hypervisor excluded,
    /// enabled, no inherit, rdpmc allowed, fail on unsupported events.
    pub fn builder() -> CounterSessionBuilder {
        CounterSessionBuilder::default()
    }

    fn with_ids(mut self) -> Self {
        self.ids = self.counters.iter().map(|c| c.id).collect();
        self
    }

    /// The counters, in the order added (minus dropped ones).
    pub fn counters(&self) -> &[Counter] {
        &self.counters
    }

    /// The counter for `event`, if the session has it.
    pub fn counter(&self, event: &Event) -> Option<&Counter> {
        self.counters.iter().find(|c| &c.event == event)
    }

    /// The counter with this perf name (`cycles`, `task-clock`), if the session has it.
    pub fn counter_by_name(&self, name: &str) -> Option<&Counter> {
        self.counters.iter().find(|c| c.name == name)
    }

    /// Events left out under [`OnUnsupported::Drop`], with their errors.
    pub fn dropped(&self) -> &[DroppedEvent] {
        &self.dropped
    }

    /// Whether reads may try the rdpmc fast path (this thread, no inherit, x86_64, allowed by
    /// the builder). Each read still falls back when a page says so.
    pub fn fast_path_allowed(&self) -> bool {
        self.fast_path
    }

    /// The path the last read took, if any.
    pub fn last_read_path(&self) -> Option<ReadPath> {
        self.last_path
    }

    /// Why the last fast-path attempt fell back to `read()`, if it did.
    pub fn last_fallback(&self) -> Option<Fallback> {
        self.last_fallback
    }

    /// Reads every counter and keeps the previous reading for [`CounterSession::deltas`].
    ///
    /// With `force_syscall` false, and the fast path allowed, each counter is read through its
    /// mmap page with RDPMC (no system call, but not atomic across the group); if any page
    /// cannot give its count (software events, `index == 0`, no `cap_user_rdpmc`), the whole
    /// group is read with one `read()` instead. With `force_syscall` true, always one
    /// `read()`: slower, but atomic for the group.
    pub fn read(&mut self, force_syscall: bool) -> Result<ReadPath, PerfError> {
        let path = if !force_syscall && self.fast_path && self.read_pages() {
            ReadPath::Rdpmc
        } else {
            self.read_group()?;
            ReadPath::Syscall
        };
        for (c, r) in self.counters.iter_mut().zip(&self.scratch) {
            c.prev = c.last;
            c.last = Some(*r);
        }
        self.last_path = Some(path);
        Ok(path)
    }

    /// Reads every page into `scratch`; false (with `last_fallback` set) if any cannot.
    fn read_pages(&mut self) -> bool {
        for (c, out) in self.counters.iter().zip(self.scratch.iter_mut()) {
            let Some(m) = &c.page else {
                self.last_fallback = Some(Fallback::NoUserRdpmc);
                return false;
            };
            // SAFETY: `m` is a live read-write mapping of this counter's page, written only by
            // the kernel. The fast path is enabled only for `Target::ThisThread` without
            // inherit, and the session is not `Send`, so the page describes a counter of the
            // calling thread and RDPMC (when the page allows it) reads that counter.
            match unsafe { read_page(m.page(), &NativeInstructions) } {
                PageRead::Counted(p) => {
                    *out = Reading {
                        value: p.value,
                        time_enabled: p.time_enabled,
                        time_running: p.time_running,
                    };
                }
                PageRead::Fallback(why) => {
                    self.last_fallback = Some(why);
                    return false;
                }
            }
        }
        true
    }

    fn read_group(&mut self) -> Result<(), PerfError> {
        let leader = &self.counters[0];
        let bytes =
            sys::read_u64s(leader.fd.as_fd(), &mut self.buf).map_err(|errno| PerfError::Os {
                op: "read",
                event: Some(leader.name.clone()),
                errno,
            })?;
        if bytes == 0 {
            return Err(PerfError::PinnedGroupEvicted);
        }
        if bytes % 8 != 0 {
            return Err(PerfError::MalformedRead {
                bytes,
                expected: self.buf.len() * 8,
            });
        }
        parse_group_read(&self.buf[..bytes / 8], &self.ids, &mut self.scratch)
    }

    /// The counts between the last two reads, per counter, scaled by each interval's own
    /// multiplexing ratio ([`Count::NotCounted`] for a counter that did not run); `None` until
    /// two reads were taken since the last reset.
    pub fn deltas(&self) -> Option<impl ExactSizeIterator<Item = (&Counter, Count)> + '_> {
        if self.counters.iter().any(|c| c.prev.is_none()) {
            return None;
        }
        Some(
            self.counters
                .iter()
                .map(|c| (c, c.delta().unwrap_or(Count::NotCounted))),
        )
    }

    /// Records into each counter's histogram (the seed's `Record(deltas)`): with `deltas`, the
    /// counts between the last two reads (scaled when multiplexed); otherwise the totals of the
    /// last read. A counter that did not run is not recorded as a zero: its
    /// [`Counter::not_counted`] goes up instead. Returns how many counters were recorded, or
    /// `None` when the reads needed (two for deltas, one for totals) have not been taken.
    pub fn record(&mut self, deltas: bool) -> Option<usize> {
        let needed_missing = |c: &Counter| c.last.is_none() || (deltas && c.prev.is_none());
        if self.counters.iter().any(needed_missing) {
            return None;
        }
        let mut recorded = 0;
        for c in &mut self.counters {
            let count = if deltas { c.delta() } else { c.value() };
            match count.and_then(|n| n.value()) {
                Some(value) => {
                    c.histogram.record(value);
                    recorded += 1;
                }
                None => c.not_counted += 1,
            }
        }
        Some(recorded)
    }

    /// Forgets the readings and clears the histograms (the seed's warm-up `Reset()`): the next
    /// two reads start a fresh delta. The kernel's counts are untouched; see
    /// [`CounterSession::reset_counts`].
    pub fn reset(&mut self) {
        for c in &mut self.counters {
            c.last = None;
            c.prev = None;
            c.histogram.reset();
            c.not_counted = 0;
        }
    }

    fn ioctl(&self, which: Ioctl, op: &'static str) -> Result<(), PerfError> {
        let leader = &self.counters[0];
        sys::group_ioctl(leader.fd.as_fd(), which).map_err(|errno| PerfError::Os {
            op,
            event: Some(leader.name.clone()),
            errno,
        })
    }

    /// Starts the whole group counting (`PERF_EVENT_IOC_ENABLE`).
    pub fn enable(&self) -> Result<(), PerfError> {
        self.ioctl(Ioctl::Enable, "ioctl(PERF_EVENT_IOC_ENABLE)")
    }

    /// Stops the whole group (`PERF_EVENT_IOC_DISABLE`).
    pub fn disable(&self) -> Result<(), PerfError> {
        self.ioctl(Ioctl::Disable, "ioctl(PERF_EVENT_IOC_DISABLE)")
    }

    /// Zeroes the kernel's counts (`PERF_EVENT_IOC_RESET`; times keep running) and forgets the
    /// readings.
    pub fn reset_counts(&mut self) -> Result<(), PerfError> {
        self.ioctl(Ioctl::Reset, "ioctl(PERF_EVENT_IOC_RESET)")?;
        self.reset();
        Ok(())
    }
}

impl CounterSource for CounterSession {
    fn values(&self) -> usize {
        self.counters.len()
    }

    /// Reads the group (fast path allowed) and writes each counter's count since it was
    /// enabled, scaled if multiplexed. A counter with `time_running == 0` is left unwritten
    /// and the call returns [`SourceError::NotCounted`] (after writing the others).
    ///
    /// A scaled estimate can move backwards between samples when the multiplexing ratio
    /// changes; with multiplexed counters prefer [`CounterSession::deltas`], which scales each
    /// interval by its own ratio.
    fn sample_into(&mut self, out: &mut [u64]) -> Result<(), SourceError> {
        let n = self.counters.len();
        let out = out.get_mut(..n).ok_or(SourceError::BufferTooShort)?;
        self.read(false)?;
        let mut result = Ok(());
        for (o, c) in out.iter_mut().zip(&self.counters) {
            match c.value().and_then(Count::value) {
                Some(v) => *o = v,
                None => result = Err(SourceError::NotCounted),
            }
        }
        result
    }

    fn sample_first(&mut self) -> Result<u64, SourceError> {
        self.read(false)?;
        self.counters[0]
            .value()
            .and_then(Count::value)
            .ok_or(SourceError::NotCounted)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn group_read_layout() {
        let mut out = [Reading::default(); 3];
        // nr, ena, run, {value, id} × nr, in opening order.
        let words = [3, 900, 300, 10, 5, 20, 6, 30, 7];
        parse_group_read(&words, &[5, 6, 7], &mut out).unwrap();
        assert_eq!(out.map(|r| r.value), [10, 20, 30]);
        assert!(out
            .iter()
            .all(|r| (r.time_enabled, r.time_running) == (900, 300)));
        assert_eq!(out[0].count().value(), Some(30));
        // Matched by id, whatever the order.
        parse_group_read(&words, &[7, 5, 6], &mut out).unwrap();
        assert_eq!(out.map(|r| r.value), [30, 10, 20]);
        // Malformed: wrong nr, short buffer, unknown id, wrong output length.
        for (w, ids) in [
            (
                &[2u64, 900, 300, 10, 5, 20, 6, 30, 7][..],
                &[5u64, 6, 7][..],
            ),
            (&words[..7], &[5, 6, 7]),
            (&words[..], &[5, 6, 8]),
        ] {
            let e = parse_group_read(w, ids, &mut out).unwrap_err();
            assert!(matches!(e, PerfError::MalformedRead { .. }), "{e}");
        }
        assert!(parse_group_read(&words, &[5, 6, 7], &mut out[..2]).is_err());
        assert!(parse_group_read(&[], &[], &mut []).is_err());
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
            .raw(0xc0);
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
