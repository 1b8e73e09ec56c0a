//! The vocabulary of a session: what it counts ([`Target`]), what it does with unsupported
//! events ([`OnUnsupported`]), which path a read took ([`ReadPath`]), and one [`Counter`] with
//! its readings and histogram.

use std::os::fd::OwnedFd;

use picollo_alloc::HeapHistogram;

use crate::count::{Count, Reading};
use crate::event::{Event, EventConfig, Modifiers};
use crate::sys::Mapping;

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
    pub(crate) const fn pid_cpu(self) -> (i32, i32) {
        match self {
            Self::ThisThread => (0, -1),
            Self::Pid(p) => (p, -1),
            Self::Cpu(c) => (-1, c),
            Self::PidOnCpu { pid, cpu } => (pid, cpu),
        }
    }
}

/// What [`CounterSessionBuilder::build`](crate::session::CounterSessionBuilder::build) does with events this machine does not support
/// (ENOENT, EOPNOTSUPP, ENODEV, EINVAL).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum OnUnsupported {
    /// Fail the build with the first unsupported event's error (the default).
    #[default]
    Fail,
    /// Leave the event out and report it in [`CounterSession::dropped`](crate::session::CounterSession::dropped).
    Drop,
}

/// Which path a [`CounterSession::read`](crate::session::CounterSession::read) took.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReadPath {
    /// One `read()` of the whole group.
    Syscall,
    /// RDPMC through each counter's mmap page.
    Rdpmc,
}

/// One counter of a session: its name, event, kernel id, the last two readings, and the
/// histogram that [`CounterSession::record`](crate::session::CounterSession::record) fills (Picollo for .NET's per-counter `Histogram`).
#[derive(Debug)]
pub struct Counter {
    pub(super) name: String,
    pub(super) event: Event,
    pub(super) modifiers: Modifiers,
    pub(super) config: EventConfig,
    pub(super) id: u64,
    pub(super) fd: OwnedFd,
    pub(super) page: Option<Mapping>,
    pub(super) last: Option<Reading>,
    pub(super) prev: Option<Reading>,
    pub(super) histogram: HeapHistogram<u64>,
    pub(super) not_counted: u64,
}

impl Counter {
    /// The histogram of recorded values: default layout (0.001 relative error), full `u64`
    /// range, `u64` counts. Summaries, tables and diffs come from `picollo_alloc::SummaryExt`.
    pub fn histogram(&self) -> &HeapHistogram<u64> {
        &self.histogram
    }

    /// Intervals [`CounterSession::record`](crate::session::CounterSession::record) could not record because the counter did not run
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
    /// ([`CounterSessionBuilder::exclude_kernel`](crate::session::CounterSessionBuilder::exclude_kernel), [`CounterSessionBuilder::exclude_hv`](crate::session::CounterSessionBuilder::exclude_hv)).
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
