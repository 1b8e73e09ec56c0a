//! Instruction counts (callgrind, via iai-callgrind) for reading perf_event counters: the rdpmc
//! path's page logic on a synthetic `perf_event_mmap_page` (fake `rdpmc`/`rdtsc`, so it runs
//! where no PMU exists) against the group `read()` syscall path, and the cost of
//! `record(deltas)` into per-counter histograms. Kernel work is not counted by callgrind.
//! Run: `cargo bench -p picollo-benches --bench perf_iai`.
#![allow(missing_docs)] // iai-callgrind's macros generate undocumented modules.

use iai_callgrind::{library_benchmark, library_benchmark_group, main};
use picollo_linux::event::SoftwareEvent;
use picollo_linux::page::{
    read_page, CounterInstructions, PageRead, PageState, SyntheticPage, CAP_USER_RDPMC,
    CAP_USER_TIME,
};
use picollo_linux::session::CounterSession;
use std::hint::black_box;

/// Reads per bench call.
const READS: u64 = 10_000;

/// Fake instructions: constant PMC and TSC values.
struct Fake;

impl CounterInstructions for Fake {
    const HAS_RDPMC: bool = true;
    unsafe fn rdpmc(&self, counter: u32) -> u64 {
        black_box(u64::from(counter))
    }
    fn rdtsc(&self) -> u64 {
        black_box(1_000_000)
    }
}

fn synthetic_page() -> SyntheticPage {
    SyntheticPage::with(&PageState {
        index: 1,
        offset: 1000,
        time_enabled: 10,
        time_running: 10,
        capabilities: CAP_USER_RDPMC | CAP_USER_TIME,
        pmc_width: 48,
        time_shift: 10,
        time_mult: 3000,
        ..PageState::default()
    })
}

fn software_session() -> CounterSession {
    CounterSession::builder()
        .software(SoftwareEvent::TaskClock)
        .software(SoftwareEvent::PageFaults)
        .software(SoftwareEvent::ContextSwitches)
        .build()
        .expect("software events open without a PMU")
}

fn read_twice() -> CounterSession {
    let mut s = software_session();
    s.read(true).expect("read");
    s.read(true).expect("read");
    s
}

#[library_benchmark]
#[bench::page(setup = synthetic_page)]
fn rdpmc_page_reads(page: SyntheticPage) -> u64 {
    let mut sum = 0u64;
    for _ in 0..READS {
        // SAFETY: a live synthetic page, accessed atomically only; Fake's rdpmc is safe.
        if let PageRead::Counted(c) = unsafe { read_page(page.as_ptr(), &Fake) } {
            sum = sum.wrapping_add(c.value);
        }
    }
    sum
}

#[library_benchmark]
#[bench::three_software_events(setup = software_session)]
fn group_syscall_reads(mut session: CounterSession) -> u64 {
    let mut ok = 0u64;
    for _ in 0..READS {
        ok += u64::from(session.read(true).is_ok());
    }
    ok
}

#[library_benchmark]
#[bench::three_software_events(setup = read_twice)]
fn record_deltas(mut session: CounterSession) -> CounterSession {
    for _ in 0..READS {
        black_box(session.record(black_box(true)));
    }
    session
}

#[library_benchmark]
#[bench::empty(setup = synthetic_page)]
fn loop_baseline(page: SyntheticPage) -> u64 {
    let mut sum = 0u64;
    for i in 0..READS {
        sum = sum.wrapping_add(black_box(i));
    }
    black_box(&page);
    sum
}

library_benchmark_group!(
    name = perf;
    benchmarks = loop_baseline, rdpmc_page_reads, group_syscall_reads, record_deltas
);

main!(library_benchmark_groups = perf);
