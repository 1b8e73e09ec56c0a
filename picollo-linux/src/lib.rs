//! Picollo on Linux: `perf_event_open` counters with the rdpmc fast path, shared-memory
//! frame rings and spans with counters.
//!
//! # Counters
//!
//! - [`event`]: the event model (hardware, cache, software, raw `rNNNN`, dynamic
//!   `pmu/event=0x3c,umask=0x00/`) and perf's spellings of names.
//! - [`caps`]: what the PMU offers (counter counts, rdpmc, `perf_event_paranoid`, hybrid core
//!   PMUs), with a clear "no hardware PMU" state on VMs.
//! - [`session`]: a builder matching Picollo for .NET's `PerfEventCounterSession.Factory`, and a
//!   session that reads the group with one `read()` or through the rdpmc fast path, scales
//!   multiplexed counts and reports "not counted" instead of zeros. It is a
//!   [`picollo_core::source::CounterSource`].
//! - [`page`]: the mmap-page seqlock read with RDPMC (x86_64) or MRS of the PMU registers
//!   (arm64), behind a trait so tests drive synthetic pages.
//! - [`error`]: one error type with the errno and what to do about it.
//! - `skip` (feature `testing`): how a hardware test that cannot run here says so (printed,
//!   and counted by CI).
//! - `workload` (feature `testing`): known work for checking counters without a PMU (fresh
//!   pages: one page fault each).
//!
//! # Rings and spans
//!
//! - [`shm`]: frame rings in sealed shared memory (`memfd`), found through `/proc/PID/fd`, with
//!   the `flock` attach protocol.
//! - [`span`](mod@span): spans with counters (`span!`) and user counter events (`counter!`) into each
//!   thread's ring; counters chosen at start or at attach time; the consumer that turns the
//!   frames into the per-phase and counter-event tables. The span frame codec, clock,
//!   decoder, aggregator and tables are `picollo-spans`; the rings themselves `picollo-ring`.
//!   Capture files of drained frames are the `picollo` command's (`picollo-cli`).
//!
//! # What needs a hardware PMU
//!
//! Hardware (`cycles`, `instructions`, …), cache (`L1-dcache-load-misses`, …), raw (`rNNNN`)
//! and CPU PMU events need a PMU that the kernel exposes. Many VMs expose none: then
//! `perf_event_open` fails with ENOENT, [`caps::Capabilities::detect`] reports
//! [`caps::PmuStatus::NoHardwarePmu`], and only software events (`task-clock`, `page-faults`,
//! …) work. Check with `Capabilities::detect()` (or the `counters` example), and look at
//! `/proc/sys/kernel/perf_event_paranoid`: at 2 (the usual default) unprivileged users may
//! count only user space (`exclude_kernel`, this crate's default); at 3 or more, nothing.
//!
//! ```
//! use picollo_linux::caps::Capabilities;
//! use picollo_linux::event::{HardwareEvent, SoftwareEvent};
//! use picollo_linux::session::{CounterSession, OnUnsupported};
//!
//! # fn main() -> Result<(), picollo_linux::PerfError> {
//! let caps = Capabilities::detect();
//! let mut builder = CounterSession::builder().event(SoftwareEvent::TaskClock);
//! if caps.has_hardware_pmu() {
//!     builder = builder.event(HardwareEvent::Instructions);
//! } else {
//!     println!("falling back to software events: {}", caps.pmu);
//! }
//! let mut session = builder.on_unsupported(OnUnsupported::Drop).build()?;
//! session.read(false)?;
//! session.read(false)?;
//! for (counter, delta) in session.deltas().into_iter().flatten() {
//!     println!("{}: {delta}", counter.name());
//! }
//! # Ok(())
//! # }
//! ```
#![doc(test(attr(deny(warnings))))]
// Library crates: an item is `pub` only where a user can reach it (the public surface is
// what users call; `missing_docs` is on for the workspace).
#![warn(unreachable_pub)]
// docs.rs (`--cfg docsrs`, nightly) marks the items that need a feature or a target.
#![cfg_attr(docsrs, feature(doc_cfg))]

#[cfg(not(any(target_os = "linux", target_os = "android")))]
compile_error!("picollo-linux supports Linux (and Android) only");

// Layering: a module imports only modules listed before it here (leaves first), so imports
// run one way and there are no circles:
//   count, skip, workload, page, event   import nothing from this crate
//   error    ← event                (PerfError, DroppedEvent)
//   sys      ← event, page          (the perf system calls)
//   pmu      ← error, event, sys    (the sysfs resolver of `pmu/…/` events)
//   shm      ← sys
//   session  ← count, error, event, page, pmu, sys
//   caps     ← error, event, page, pmu, session, sys   (session: the counter-count probe)
//   span     ← count, caps, event, error, session, shm
// `event` never calls `pmu`: `Event::config_with` takes any `event::ResolvePmu`, and `pmu`
// implements it for `Sysfs`. Inside a module split over files, the parent file is the map
// (docs and `pub use`) and its children import each other one way too.
pub mod caps;
mod count;
pub mod error;
pub mod event;
pub mod page;
pub mod pmu;
pub mod session;
pub mod shm;
#[cfg(any(test, feature = "testing"))]
#[cfg_attr(docsrs, doc(cfg(feature = "testing")))]
pub mod skip;
pub mod span;
mod sys;
#[cfg(any(test, feature = "testing"))]
#[cfg_attr(docsrs, doc(cfg(feature = "testing")))]
pub mod workload;

pub use caps::Capabilities;
pub use count::{Count, Reading};
pub use error::PerfError;
pub use event::{Event, EventSpec, Modifiers};
pub use session::{CounterSession, CounterSessionBuilder};
pub use sys::thread_cpu_time_ns;

// The span name type for the `span!` and `counter!` macros, reachable from `$crate` (users
// import `picollo_spans` themselves).
#[doc(hidden)]
pub use picollo_spans as __spans;
