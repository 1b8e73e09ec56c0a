//! What reading counters costs (issue 6, "Performance"):
//!
//! 1. one group `read()` of 3 software events against 3 single-event reads;
//! 2. `read(false)` on software events (page check, then fallback) against `read(true)`;
//! 3. the rdpmc path's page logic on a synthetic page (fake RDPMC/RDTSC), which runs where no
//!    PMU exists;
//! 4. computing the per-counter deltas after a read (what `record(deltas)` will feed to
//!    histograms).
//!
//! Run with `cargo run --release -p picollo-linux --example read_cost`. With the argument
//! `synthetic N` (or `syscall N`) it only runs N synthetic-page reads (or N group reads), for
//! instruction counting in user space:
//! `valgrind --tool=callgrind --toggle-collect='*synthetic_reads*' <example> synthetic 100000`
//! (`'*syscall_reads*'` for the other).

use std::time::Instant;

use picollo_linux::event::SoftwareEvent;
use picollo_linux::page::{
    read_page, CounterInstructions, PageRead, PageState, SyntheticPage, CAP_USER_RDPMC,
    CAP_USER_TIME,
};
use picollo_linux::session::CounterSession;
use picollo_linux::PerfError;

/// Fake instructions: constant PMC and TSC.
struct Fake;

impl CounterInstructions for Fake {
    const HAS_RDPMC: bool = true;
    unsafe fn rdpmc(&self, counter: u32) -> u64 {
        std::hint::black_box(u64::from(counter))
    }
    fn rdtsc(&self) -> u64 {
        std::hint::black_box(1_000_000)
    }
}

/// Best-of-5 nanoseconds per call of `f`, over `n` calls each.
fn best_ns(n: u32, mut f: impl FnMut()) -> f64 {
    (0..5)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..n {
                f();
            }
            t.elapsed().as_nanos() as f64 / f64::from(n)
        })
        .fold(f64::INFINITY, f64::min)
}

#[inline(never)]
fn synthetic_reads(page: &SyntheticPage, n: u64) -> u64 {
    let mut sum = 0u64;
    for _ in 0..n {
        // SAFETY: a live synthetic page, only accessed atomically; Fake's rdpmc is safe.
        if let PageRead::Counted(c) = unsafe { read_page(page.as_ptr(), &Fake) } {
            sum = sum.wrapping_add(c.value);
        }
    }
    sum
}

#[inline(never)]
fn syscall_reads(session: &mut CounterSession, n: u64) -> u64 {
    let mut ok = 0u64;
    for _ in 0..n {
        ok += u64::from(session.read(true).is_ok());
    }
    ok
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

fn main() -> Result<(), PerfError> {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("synthetic") {
        let n = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(100_000);
        let page = synthetic_page();
        println!("{}", synthetic_reads(&page, n));
        return Ok(());
    }
    if args.get(1).map(String::as_str) == Some("syscall") {
        let n = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(100_000);
        let mut s = CounterSession::builder()
            .event(SoftwareEvent::TaskClock)
            .event(SoftwareEvent::PageFaults)
            .event(SoftwareEvent::ContextSwitches)
            .build()?;
        println!("{}", syscall_reads(&mut s, n));
        return Ok(());
    }

    let events = [
        SoftwareEvent::TaskClock,
        SoftwareEvent::PageFaults,
        SoftwareEvent::ContextSwitches,
    ];
    let mut group = CounterSession::builder();
    for e in events {
        group = group.event(e);
    }
    let mut group = group.build()?;
    let mut singles = events
        .iter()
        .map(|&e| CounterSession::builder().event(e).build())
        .collect::<Result<Vec<_>, _>>()?;

    let n = 200_000;
    let group_ns = best_ns(n, || {
        let _ = group.read(true);
    });
    let singles_ns = best_ns(n, || {
        for s in &mut singles {
            let _ = s.read(true);
        }
    });
    let fast_attempt_ns = best_ns(n, || {
        let _ = group.read(false);
    });
    let page = synthetic_page();
    let synthetic_ns = best_ns(n * 10, || {
        std::hint::black_box(synthetic_reads(&page, 1));
    });
    group.read(true)?;
    group.read(true)?;
    let deltas_ns = best_ns(n * 10, || {
        let mut sum = 0u64;
        for (_, d) in group.deltas().into_iter().flatten() {
            sum = sum.wrapping_add(d.value().unwrap_or(0));
        }
        std::hint::black_box(sum);
    });

    println!("| what | ns per call |");
    println!("| :-- | --: |");
    println!("| group read(true), 3 software events, 1 syscall | {group_ns:.0} |");
    println!("| 3 single-event sessions, read(true) each, 3 syscalls | {singles_ns:.0} |");
    println!("| group read(false): page check, fallback to 1 syscall | {fast_attempt_ns:.0} |");
    println!("| read_page on a synthetic page (fake rdpmc/rdtsc) | {synthetic_ns:.1} |");
    println!("| deltas() of 3 counters, summed | {deltas_ns:.1} |");
    println!(
        "\nper-counter reads cost {:.2}x the group read",
        singles_ns / group_ns
    );
    Ok(())
}
