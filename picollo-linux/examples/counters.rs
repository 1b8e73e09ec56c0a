//! Getting started (Picollo for .NET, "PerfEvent"): print what the PMU offers, then measure a known
//! workload 10,000 times and summarize the per-iteration counter deltas.
//!
//! With a hardware PMU it counts cycles, instructions, ref-cycles, branch misses and L1 misses
//! around 256,000 dependent adds. Without one (VMs without a virtual PMU) it says so and falls
//! back to software events: task-clock, and page-faults around touching one fresh page per
//! iteration (exactly 1 each).
//!
//! Run with `cargo run --release -p picollo-linux --example counters`.

use picollo_alloc::SummaryExt;
use picollo_linux::caps::Capabilities;
use picollo_linux::event::{CacheEvent, HardwareEvent, SoftwareEvent};
use picollo_linux::session::{CounterSession, OnUnsupported};
use picollo_linux::workload::FreshPages;
use picollo_linux::PerfError;

const ITERATIONS: usize = 10_000;
const WARMUP: usize = 1_000;

/// 256 dependent adds, `n` times: about 256·n cycles and instructions.
#[inline(never)]
fn add_chain_256(n: u64) -> u64 {
    let mut x = 0u64;
    for _ in 0..n {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: only adds to a register the asm owns; no memory, no stack.
        unsafe {
            core::arch::asm!(".rept 256", "add {x}, 1", ".endr", x = inout(reg) x,
                options(nomem, nostack));
        }
        #[cfg(not(target_arch = "x86_64"))]
        for _ in 0..256 {
            x = std::hint::black_box(x + 1);
        }
    }
    x
}

fn main() -> Result<(), PerfError> {
    let caps = Capabilities::detect();
    println!("{caps}\n");
    match caps.counter_counts() {
        Some(c) => println!(
            "CPU PMU: fixedCounters={}, programmableCounters={}",
            c.fixed, c.programmable
        ),
        None => println!("CPU PMU: unavailable"),
    }

    let builder = CounterSession::builder()
        .pinned(true)
        .exclude_kernel(true)
        .enabled(true);
    let hardware = caps.has_hardware_pmu();
    let builder = if hardware {
        builder
            .fixed_counters()
            .event(HardwareEvent::BranchMisses)
            .event(CacheEvent::L1D_READ_MISS)
            .event(CacheEvent::L1I_READ_MISS)
            .on_unsupported(OnUnsupported::Drop)
    } else {
        println!(
            "No hardware PMU here: falling back to software events (task-clock, page-faults).\n\
             Hardware, cache and raw events need a PMU; see `perf_event_paranoid` and your VM's \
             vPMU setting."
        );
        builder
            .event(SoftwareEvent::TaskClock)
            .event(SoftwareEvent::PageFaults)
    };
    let mut session = builder.build()?;
    for d in session.dropped() {
        println!("dropped {}: {}", d.event, d.error);
    }

    let pages = FreshPages::new(ITERATIONS).ok();
    let mut sink = 0u64;
    for i in 0..ITERATIONS {
        // force_syscall: one read() of the whole group, atomic for the group.
        session.read(true)?;
        sink = sink.wrapping_add(add_chain_256(1000));
        if let Some(p) = &pages {
            p.touch(i..i + 1);
        }
        session.read(true)?;
        // Each counter's delta goes into its own HDR histogram (Picollo for .NET's
        // `Record(deltas)`).
        session.record(true);
        if i == WARMUP {
            session.reset(); // warm-up done: readings and histograms start over
        }
    }
    std::hint::black_box(sink);

    for c in session.counters() {
        print!("{}", c.histogram().summary().table(c.name()));
        if c.not_counted() > 0 {
            println!(
                "{} intervals not counted (multiplexed out)\n",
                c.not_counted()
            );
        }
    }
    if !hardware {
        println!(
            "\ntask-clock is in nanoseconds; page-faults should be exactly 1 per iteration \
             (one fresh page touched)."
        );
    }
    Ok(())
}
