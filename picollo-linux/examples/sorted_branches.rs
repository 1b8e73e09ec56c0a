//! Sorted versus unsorted (Picollo for .NET, "Sorted vs unsorted aggregation"): why is processing a
//! sorted array faster? Branch misses. Counts cycles and branch misses per pass over
//! 1,000,000 random bytes, 1,000 passes unsorted then 1,000 sorted, and prints Picollo for .NET's
//! side-by-side tables: every percentile of both, the change (Δ%), mean, standard deviation,
//! precision, total and Cohen's d (the D-value), with thousands separators.
//!
//! Without a hardware PMU (a VM) it says so and counts task-clock (nanoseconds of CPU time)
//! instead, which still shows the difference in time; branch misses need a PMU.
//!
//! Run with `cargo run --release -p picollo-linux --example sorted_branches`
//! (`-- PASSES` for another pass count).

use picollo_alloc::{HeapHistogram, HistogramBuilder, SummaryExt};
use picollo_linux::caps::Capabilities;
use picollo_linux::event::{Event, HardwareEvent, SoftwareEvent};
use picollo_linux::session::CounterSession;
use picollo_linux::PerfError;

const LEN: usize = 1_000_000;
const PASSES: usize = 1000;

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

/// `passes` passes over `values`: one histogram per counter of the per-pass deltas (a pass
/// whose counter was multiplexed out is left out, never recorded as 0).
fn measure(
    session: &mut CounterSession,
    values: &[u8],
    passes: usize,
) -> Result<Vec<HeapHistogram>, PerfError> {
    let mut acc = 0.0;
    let mut out: Vec<HeapHistogram> = session
        .counters()
        .iter()
        .map(|_| HistogramBuilder::new().dense().plain().unwrap())
        .collect();
    session.reset();
    for _ in 0..passes {
        session.read(true)?;
        pass(values, &mut acc);
        session.read(true)?;
        for (h, (_, d)) in out.iter_mut().zip(session.deltas().into_iter().flatten()) {
            if let Some(v) = d.value() {
                h.record(v);
            }
        }
    }
    std::hint::black_box(acc);
    Ok(out)
}

/// `len` random bytes (xorshift64*: no dependency, same bytes every run).
fn random_bytes(len: usize) -> Vec<u8> {
    let mut s = 0x9e37_79b9_7f4a_7c15u64;
    (0..len)
        .map(|_| {
            s ^= s >> 12;
            s ^= s << 25;
            s ^= s >> 27;
            (s.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 56) as u8
        })
        .collect()
}

/// The whole session: the PMU line, then one diff table per counter.
fn sorted_vs_unsorted(len: usize, passes: usize) -> Result<String, PerfError> {
    let caps = Capabilities::detect();
    let mut out = String::new();
    let events: Vec<(Event, &str)> = match caps.counter_counts() {
        Some(c) => {
            out.push_str(&format!(
                "CPU PMU: fixedCounters={}, programmableCounters={}\n\n",
                c.fixed, c.programmable
            ));
            vec![
                (HardwareEvent::Cycles.into(), "CpuCycles"),
                (HardwareEvent::BranchMisses.into(), "BranchMisses"),
            ]
        }
        None => {
            out.push_str(&format!(
                "CPU PMU: unavailable ({})\nCounting task-clock (ns) instead: branch misses \
                 need a hardware PMU.\n\n",
                caps.pmu
            ));
            vec![(SoftwareEvent::TaskClock.into(), "TaskClock (ns)")]
        }
    };
    let mut builder = CounterSession::builder().exclude_kernel(true).enabled(true);
    for (e, _) in &events {
        builder = builder.event(e.clone());
    }
    let mut session = builder.build()?;

    let mut values = random_bytes(len);
    let unsorted = measure(&mut session, &values, passes)?;
    values.sort_unstable();
    let sorted = measure(&mut session, &values, passes)?;

    for (i, ((_, title), (u, s))) in events.iter().zip(unsorted.iter().zip(&sorted)).enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let (u, s) = (u.summary(), s.summary());
        out.push_str(&u.diff(&s, title, "Unsorted", "Sorted").to_string());
    }
    Ok(out)
}

fn main() -> Result<(), PerfError> {
    let passes = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(PASSES);
    print!("{}", sorted_vs_unsorted(LEN, passes)?);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Picollo for .NET's table, at a tenth of the size: every row, Δ%, the D-value, and thousands
    /// separators in the values.
    #[test]
    fn prints_the_dotnet_table() {
        let out = sorted_vs_unsorted(LEN / 10, 50).unwrap();
        eprintln!("{out}");
        assert!(out.starts_with("CPU PMU: "), "{out}");
        let first = if Capabilities::detect().has_hardware_pmu() {
            "##### CpuCycles\n"
        } else {
            "##### TaskClock (ns)\n"
        };
        assert!(out.contains(first), "{out}");
        let table: Vec<&str> = out
            .lines()
            .skip_while(|l| !l.starts_with("#####"))
            .collect();
        assert!(table[1].starts_with("| Percentile |"), "{out}");
        assert!(
            table[1].contains("| Unsorted |") || table[1].contains("Unsorted"),
            "{out}"
        );
        assert!(table[1].trim_end().ends_with("Δ% |"), "{out}");
        for row in [
            "| 0 ",
            "| 50 ",
            "| 99.9 ",
            "| 100 ",
            "| Mean:",
            "| StDev:",
            "| Precision:",
            "| Total:",
            "| D-value:",
        ] {
            assert!(table.iter().any(|l| l.starts_with(row)), "{row}: {out}");
        }
        let total = table.iter().find(|l| l.starts_with("| Total:")).unwrap();
        assert!(total.contains(" 50 "), "50 passes each: {total}");
        // Per-pass figures are in the thousands at least (ns or cycles for 100,000 bytes):
        // grouped with commas.
        let p50 = table.iter().find(|l| l.starts_with("| 50 ")).unwrap();
        assert!(p50.contains(','), "{p50}");
        assert!(p50.contains('%'), "{p50}");
    }
}
