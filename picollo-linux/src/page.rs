//! The rdpmc fast path: reading a counter through its `perf_event_mmap_page`.
//!
//! The kernel publishes, in the first page of each event's mmap, the counter's hardware index,
//! an offset to add to the hardware count, and the times, all under a seqcount (`lock`). The
//! read (uapi `linux/perf_event.h`; libperf `tools/lib/perf/mmap.c`) is:
//!
//! 1. loop on `lock`; inside, read `index`, `offset`, `pmc_width` and the times;
//! 2. if `cap_user_rdpmc && index != 0`, add `rdpmc(index - 1)` sign-extended from `pmc_width`
//!    bits;
//! 3. with `cap_user_time`, extrapolate `time_enabled` and `time_running` from the TSC using
//!    `time_mult`, `time_shift` and `time_offset` (and `time_cycles`/`time_mask` with
//!    `cap_user_time_short`);
//! 4. otherwise fall back to `read()` ([`PageRead::Fallback`] says why).
//!
//! # x86_64 and arm64
//!
//! On x86_64 the counter is read with `RDPMC ecx = index - 1` and the time with `RDTSC`. On
//! arm64 (Linux 5.17+, with `sysctl kernel.perf_user_access=1` and the event opened with
//! `config1` bit 1, which [`crate::session`] sets there) the page's `index - 1` names a PMU
//! register (`Arm64Counter`): 0 to 30 are `PMEVCNTR<n>_EL0`, 31 the cycle counter
//! `PMCCNTR_EL0`, 32 the instruction counter `PMICNTR_EL0`; it is read with `MRS`, and
//! the time comes from `CNTVCT_EL0`, the counter the kernel's `time_mult`/`time_shift`
//! describe there. The arithmetic (offset plus the raw value sign-extended from
//! `pmc_width`, 32 bits for a plain arm64 counter) is the same code on both.
//!
//! [`read_page`] takes the page as a pointer and the instructions through
//! [`CounterInstructions`], so tests drive it with [`SyntheticPage`] and fake instructions.
//! All page fields are read with atomic loads; the kernel's stores are outside the Rust
//! abstract machine, and a Rust writer (a test) must use atomic stores too, as
//! [`SyntheticPage`] does.
//!
//! # Modules
//!
//! - `read`: the page's layout and [`read_page`], the seqlock read with its arithmetic (the
//!   hot path);
//! - `instructions`: [`CounterInstructions`], the CPU instructions the read needs, and
//!   `NativeInstructions` (`RDPMC`/`RDTSC`, `MRS`);
//! - `synthetic`: [`SyntheticPage`], a page that tests and benchmarks write like the kernel.
//!
//! Imports run one way: `instructions` ← `read` ← `synthetic`.

mod instructions;
mod read;
mod synthetic;

pub use instructions::CounterInstructions;

pub(crate) use instructions::NativeInstructions;

pub(crate) use read::page_capabilities;
pub use read::{
    read_page, Fallback, MmapPage, PageCounts, PageRead, TimeConversion, CAP_USER_RDPMC,
    CAP_USER_TIME,
};
pub use synthetic::{PageState, SyntheticPage};
