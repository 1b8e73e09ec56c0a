//! Instruction counts (callgrind, via iai-callgrind) for reading perf_event counters: the rdpmc
//! path's page logic on a synthetic `perf_event_mmap_page` (fake `rdpmc`/`rdtsc`, so it runs
//! where no PMU exists) against the group `read()` syscall path, and the cost of
//! `record(deltas)` into per-counter histograms. Kernel work is not counted by callgrind. The
//! teardown prints block `perf-instructions`.
//! Run: `cargo bench -p picollo-benches --bench perf_iai`.
#![allow(missing_docs)] // iai-callgrind's macros generate undocumented modules.

use iai_callgrind::{library_benchmark, library_benchmark_group, main};
use picollo_benches::iai::{cell, instructions, per_op};
use picollo_benches::perf::{software_session, synthetic_page, Fake};
use picollo_benches::report::{header, Block};
use picollo_linux::page::{read_page, PageRead, SyntheticPage};
use picollo_linux::session::CounterSession;
use std::hint::black_box;

/// Reads per bench call.
const READS: u64 = 10_000;

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

fn tables() {
    let ir = |function: &str, id: &str| instructions("perf_iai", "perf", function, id);
    let baseline = ir("loop_baseline", "empty");
    let _block = Block::begin("perf-instructions");
    println!(
        "{READS} calls per bench, per call net of `loop_baseline`; callgrind counts user space \
         only, not the kernel's work."
    );
    println!();
    header(&["bench", "total Ir", "per call"]);
    for (function, id, label) in [
        ("loop_baseline", "empty", "`loop_baseline`"),
        (
            "rdpmc_page_reads",
            "page",
            "`rdpmc_page_reads` (seqlock loop, `pmc_width` sign extension, time \
             extrapolation; fake `rdpmc`/`rdtsc`)",
        ),
        (
            "group_syscall_reads",
            "three_software_events",
            "`group_syscall_reads` (one `read()` of the 3-event group, parse, store; plus the \
             syscall)",
        ),
        (
            "record_deltas",
            "three_software_events",
            "`record_deltas` (`record(true)`: 3 deltas scaled and recorded into 3 histograms)",
        ),
    ] {
        let total = ir(function, id);
        let each = if function == "loop_baseline" {
            "—".to_string()
        } else {
            per_op(total, baseline, READS).map_or_else(|| "n/a".to_string(), |x| format!("{x:.1}"))
        };
        println!("| {label} | {} | {each} |", cell(total));
    }
}

main!(
    teardown = tables();
    library_benchmark_groups = perf
);
