//! Hardware-counter tests. They run where a hardware PMU is exposed; elsewhere (VMs without a
//! virtual PMU) each one reports the detected reason and returns: never a vacuous pass.
//! Tests whose path the arm64 guest checks on a real kernel PMU driver (`guest/run.sh`:
//! counter counts, exact instruction counts through `read()`) say so
//! ([`picollo_linux::skip::covered_by_guest`]); the others need silicon the guest does not
//! have (x86 `rdpmc`, generic cache events, which QEMU's PMU does not implement) and count
//! as hardware skips in CI ([`picollo_linux::skip::hardware`]).

use picollo_linux::caps::{Capabilities, RdpmcStatus};
use picollo_linux::event::{CacheEvent, HardwareEvent};
use picollo_linux::session::{CounterSession, OnUnsupported, ReadPath};
use picollo_linux::Count;

/// The capabilities, or `None` after printing why hardware tests skip.
fn hardware(test: &str) -> Option<Capabilities> {
    detect(test, None)
}

/// As [`hardware`], for a test whose path the arm64 guest checks (`guest_check` names the
/// check in guest/src/, by topic): skipping here is reported as covered there.
fn covered(test: &str, guest_check: &str) -> Option<Capabilities> {
    detect(test, Some(guest_check))
}

fn detect(test: &str, guest_check: Option<&str>) -> Option<Capabilities> {
    if cfg!(miri) {
        eprintln!("skip {test}: miri cannot call perf_event_open");
        return None;
    }
    let caps = Capabilities::detect();
    if let Some(why) = caps.no_pmu_reason() {
        match guest_check {
            Some(check) => picollo_linux::skip::covered_by_guest(test, &why, check),
            None => picollo_linux::skip::hardware(test, &why),
        }
        return None;
    }
    Some(caps)
}

/// 1000 iterations of a dependent add chain: about 1000 instructions' worth of cycles.
#[inline(never)]
fn add_chain(n: u64) -> u64 {
    let mut x = 0u64;
    for i in 0..n {
        x = std::hint::black_box(x.wrapping_add(i));
    }
    x
}

#[test]
fn counter_counts_are_reported() {
    let Some(caps) = covered(
        "counter_counts_are_reported",
        "caps-counters; this test runs in the guest",
    ) else {
        return;
    };
    eprintln!("{caps}");
    match caps.counter_counts() {
        Some(c) => assert!(c.programmable > 0, "{c:?}"),
        None => eprintln!("note: PMU available but no source reports counter counts"),
    }
}

#[test]
fn fixed_counters_count_a_known_workload() {
    let Some(_) = covered(
        "fixed_counters_count_a_known_workload",
        "exact-read-syscall, group-of-7; this test runs in the guest",
    ) else {
        return;
    };
    let mut s = CounterSession::builder()
        .fixed_counters()
        .event(HardwareEvent::BranchMisses)
        .on_unsupported(OnUnsupported::Drop)
        .build()
        .unwrap();
    for d in s.dropped() {
        eprintln!("dropped {}: {}", d.event, d.error);
    }
    s.read(true).unwrap();
    std::hint::black_box(add_chain(100_000));
    s.read(true).unwrap();
    for (c, d) in s.deltas().unwrap() {
        eprintln!("{}: {d}", c.name());
        if c.name() == "instructions" {
            let v = d.value().expect("instructions counted");
            assert!(v >= 100_000, "instructions {v}");
        }
    }
}

#[test]
fn rdpmc_fast_path_agrees_with_the_group_read() {
    let Some(caps) = hardware("rdpmc_fast_path_agrees_with_the_group_read") else {
        return;
    };
    if caps.rdpmc != RdpmcStatus::Usable {
        picollo_linux::skip::hardware(
            "rdpmc_fast_path_agrees_with_the_group_read",
            &format!("rdpmc {}", caps.rdpmc),
        );
        return;
    }
    let mut s = CounterSession::builder()
        .event(HardwareEvent::Instructions)
        .build()
        .unwrap();
    let mut last = 0u64;
    let mut fast = 0;
    for i in 0..1000 {
        let path = s.read(i % 3 == 0).unwrap();
        if path == ReadPath::Rdpmc {
            fast += 1;
        }
        let v = s.counters()[0].value().and_then(Count::value).unwrap();
        assert!(
            v >= last,
            "instructions went backwards ({path:?}): {v} < {last}"
        );
        last = v;
        std::hint::black_box(add_chain(100));
    }
    eprintln!("{fast} of 1000 reads took the rdpmc path");
    assert!(fast > 0, "last fallback: {:?}", s.last_fallback());
}

#[test]
fn cache_events_count() {
    let Some(_) = hardware("cache_events_count") else {
        return;
    };
    let mut s = CounterSession::builder()
        .event(CacheEvent::L1D_READ_MISS)
        .event(CacheEvent::LL_READ_MISS)
        .on_unsupported(OnUnsupported::Drop)
        .build();
    let Ok(s) = s.as_mut() else {
        picollo_linux::skip::hardware("cache_events_count", "no generic cache events here");
        return;
    };
    let v = vec![1u8; 64 << 20];
    s.read(true).unwrap();
    let sum: u64 = v.iter().step_by(64).map(|&b| u64::from(b)).sum();
    std::hint::black_box(sum);
    s.read(true).unwrap();
    for (c, d) in s.deltas().unwrap() {
        eprintln!("{}: {d}", c.name());
        assert_ne!(d, Count::NotCounted, "{}", c.name());
    }
}
