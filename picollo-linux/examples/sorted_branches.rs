//! Sorted versus unsorted (seed 000, "PerfEvent"): why is processing a sorted array faster?
//! Branch misses. With a hardware PMU this counts cycles and branch-misses per pass over
//! 1,000,000 random bytes, unsorted then sorted. Without one it says so and falls back to
//! task-clock (nanoseconds), which still shows the difference in time.
//!
//! Run with `cargo run --release -p picollo-linux --example sorted_branches`.

use picollo_linux::caps::Capabilities;
use picollo_linux::event::{Event, HardwareEvent, SoftwareEvent};
use picollo_linux::session::CounterSession;
use picollo_linux::PerfError;

const LEN: usize = 1_000_000;
const PASSES: usize = 100;

/// The loop from the StackOverflow question; `black_box` keeps the branch a branch.
#[inline(never)]
fn pass(values: &[u8], acc: &mut f64) {
    for &v in values {
        if v >= 128 {
            *acc = std::hint::black_box(*acc + 100.0);
        } else {
            *acc *= 0.9999;
        }
    }
}

fn median(v: &mut [u64]) -> u64 {
    v.sort_unstable();
    v.get(v.len() / 2).copied().unwrap_or(0)
}

/// Per-pass deltas of each counter over `PASSES` passes.
fn measure(session: &mut CounterSession, values: &[u8]) -> Result<Vec<Vec<u64>>, PerfError> {
    let mut acc = 0.0;
    let mut out = vec![Vec::with_capacity(PASSES); session.counters().len()];
    session.reset();
    for _ in 0..PASSES {
        session.read(true)?;
        pass(values, &mut acc);
        session.read(true)?;
        for (j, (_, d)) in session.deltas().into_iter().flatten().enumerate() {
            // A multiplexed-out pass has no value; it is skipped, never counted as 0.
            out[j].extend(d.value());
        }
    }
    std::hint::black_box(acc);
    Ok(out)
}

fn main() -> Result<(), PerfError> {
    let caps = Capabilities::detect();
    let events: Vec<Event> = if caps.has_hardware_pmu() {
        vec![
            HardwareEvent::Cycles.into(),
            HardwareEvent::BranchMisses.into(),
        ]
    } else {
        println!(
            "No hardware PMU ({}).\nFalling back to software events: task-clock (ns). Branch \
             misses need a hardware PMU.\n",
            caps.pmu
        );
        vec![SoftwareEvent::TaskClock.into()]
    };
    let mut builder = CounterSession::builder().exclude_kernel(true).enabled(true);
    for e in events {
        builder = builder.event(e);
    }
    let mut session = builder.build()?;

    // xorshift64*: random bytes without a dependency.
    let mut s = 0x9e37_79b9_7f4a_7c15u64;
    let mut values: Vec<u8> = (0..LEN)
        .map(|_| {
            s ^= s >> 12;
            s ^= s << 25;
            s ^= s >> 27;
            (s.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 56) as u8
        })
        .collect();

    let mut unsorted = measure(&mut session, &values)?;
    values.sort_unstable();
    let mut sorted = measure(&mut session, &values)?;

    println!("| counter (median of {PASSES} passes) | unsorted | sorted | Δ% |");
    println!("| :-- | --: | --: | --: |");
    for (j, c) in session.counters().iter().enumerate() {
        let u = median(&mut unsorted[j]);
        let so = median(&mut sorted[j]);
        let pct = if u == 0 {
            0.0
        } else {
            (so as f64 - u as f64) / u as f64 * 100.0
        };
        println!("| {} | {u} | {so} | {pct:+.1}% |", c.name());
    }
    Ok(())
}
