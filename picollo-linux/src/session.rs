//! Counter sessions: a group of counters opened together and read together.
//!
//! [`CounterSession::builder`] mirrors `PerfEventCounterSession.Factory` of Picollo for .NET
//! (the C# library this crate ports):
//!
//! | Picollo for .NET | here |
//! |---|---|
//! | `WithTarget(pid, cpu)` | [`CounterSessionBuilder::target`] ([`Target::ThisThread`] by default) |
//! | `WithPinned(true)` | [`CounterSessionBuilder::pinned`] |
//! | `WithKernel(false)` | [`CounterSessionBuilder::exclude_kernel`]`(true)` (the default) |
//! | `WithEnabled(true)` | [`CounterSessionBuilder::enabled`] (the default) |
//! | `WithFixedCounters()` | [`CounterSessionBuilder::fixed_counters`] |
//! | `WithHardwareCounter(..)` | [`CounterSessionBuilder::event`]`(HardwareEvent::…)` |
//! | `WithCacheCounter(..)` | [`CounterSessionBuilder::event`]`(CacheEvent::…)` |
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
//!     .event(SoftwareEvent::TaskClock)
//!     .event(SoftwareEvent::PageFaults)
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
//! Put a clock event (`task-clock`, `cpu-clock`) first: the kernel brings clock events up to date
//! on a group read only when they lead the group (see
//! [`SoftwareEvent::TaskClock`](crate::event::SoftwareEvent::TaskClock)).
//!
//! A session is not `Send`: with the rdpmc fast path it must be read on the thread it counts.
//!
//! ```compile_fail
//! fn assert_send<T: Send>() {}
//! assert_send::<picollo_linux::session::CounterSession>();
//! ```
//!
//! # Modules
//!
//! - `counter`: [`Target`], [`OnUnsupported`], [`ReadPath`] and [`Counter`];
//! - `group`: [`CounterSession`], the open group and its reads;
//! - `builder`: [`CounterSessionBuilder`], which opens a group.
//!
//! The session itself is defined here, its methods in `group` and `builder`. Imports run one
//! way: `counter` ← `group` ← `builder`.

mod builder;
mod counter;
mod group;

pub use crate::error::DroppedEvent;
pub use builder::CounterSessionBuilder;
pub(crate) use builder::ARM64_USER_READ;
pub use counter::{Counter, OnUnsupported, ReadPath, Target};

use core::marker::PhantomData;

use crate::count::Reading;
use crate::page::Fallback;

// Defined here, its methods in the children (`group`: the reads, `builder`: the opening),
// which see its private fields.
/// An open group of counters; see the [module docs](crate::session).
#[derive(Debug)]
pub struct CounterSession {
    counters: Vec<Counter>,
    dropped: Vec<DroppedEvent>,
    buf: Vec<u64>,
    scratch: Vec<Reading>,
    ids: Vec<u64>,
    fast_path: bool,
    last_fallback: Option<Fallback>,
    /// Not `Send`: the rdpmc path reads the counters of the thread it runs on.
    _not_send: PhantomData<*const ()>,
}
