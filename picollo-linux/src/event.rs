//! The event model and perf's spellings of event names.
//!
//! An [`Event`] is what one counter counts. It parses from the names `perf stat -e` accepts and
//! displays back to perf's canonical name:
//!
//! | spelling | event |
//! |---|---|
//! | `cycles`, `instructions`, `branch-misses`, `ref-cycles`, … | [`Event::Hardware`] |
//! | `task-clock`, `page-faults`, `context-switches`, … | [`Event::Software`] |
//! | `L1-dcache-load-misses`, `LLC-loads`, `dTLB-load-misses`, … | [`Event::Cache`] |
//! | `r00c0` (hex) | [`Event::Raw`] |
//! | `cpu/event=0x3c,umask=0x00/`, `msr/tsc/` | [`Event::Pmu`] (resolved through sysfs) |
//!
//! ```
//! use picollo_linux::event::{CacheEvent, CacheId, CacheOp, CacheResult, Event, HardwareEvent};
//!
//! let e: Event = "L1-dcache-load-misses".parse()?;
//! assert_eq!(e, Event::Cache(CacheEvent::new(CacheId::L1d, CacheOp::Load, CacheResult::Miss)));
//! assert_eq!(e.to_string(), "L1-dcache-load-misses");
//! assert_eq!("cpu-cycles".parse::<Event>()?, Event::Hardware(HardwareEvent::Cycles));
//! assert_eq!(Event::Raw(0xc0).to_string(), "r00c0");
//! assert!("no-such-event".parse::<Event>().is_err());
//! # Ok::<(), picollo_linux::event::ParseEventError>(())
//! ```
//!
//! # Modules
//!
//! - `kind`: the event model ([`Event`] and its kinds) and their canonical names;
//! - `spelling`: parsing perf's names into an [`Event`];
//! - `modifiers`: [`Modifiers`] (`:u`, `:k`, …) and [`EventSpec`];
//! - `config`: the `perf_event_attr` selection ([`EventConfig`]) and the `ResolvePmu` seam
//!   for `pmu/…/` events;
//! - `parse_error`: [`ParseEventError`];
//! - `list`: event lists (`cycles,instructions`), [`split_list`] and `parse_list`: the one
//!   splitter of comma-separated event names.
//!
//! Imports run one way: `parse_error` ← `kind` ← `spelling`, `modifiers`, `config` ← `list`. Nothing
//! here imports another module of the crate.

mod config;
mod kind;
mod list;
mod modifiers;
mod parse_error;
mod spelling;

pub use config::EventConfig;
pub(crate) use config::{ResolvePmu, TYPE_HARDWARE};
pub use kind::{
    CacheEvent, CacheId, CacheOp, CacheResult, HardwareEvent, PmuEvent, PmuTerm, SoftwareEvent,
};
pub(crate) use list::parse_list;
pub use list::split_list;
pub use modifiers::{EventSpec, Modifiers};
pub use parse_error::{ParseErrorKind, ParseEventError};
pub(crate) use spelling::parse_term;

// Defined here, its methods in the children (`kind`: parsing and conversions, `config`: the
// `perf_event_attr` selection), beside what they use.
/// What one counter counts.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Event {
    /// A generic hardware event.
    Hardware(HardwareEvent),
    /// A software event.
    Software(SoftwareEvent),
    /// A generic cache event.
    Cache(CacheEvent),
    /// A raw, CPU-specific event: `rNNNN`, `config = 0xNNNN`.
    Raw(u64),
    /// A dynamic PMU event, `pmu/…/`.
    Pmu(PmuEvent),
}
