//! The library's counter checks: what the PMU offers, exact counts on every read path, the
//! other calibrated workload (fresh pages), the cost of a read, groups and multiplexing.

use std::hint::black_box;
use std::process::Command;

use picollo_core::workload::add_chain_256;
use picollo_linux::caps::{Capabilities, RdpmcStatus};
use picollo_linux::event::HardwareEvent;
use picollo_linux::page::Fallback;
use picollo_linux::session::{CounterSession, ReadPath};
use picollo_linux::Count;

use crate::model::{
    model_check, session, set_user_access, MAX_CONSTANT, MAX_PAGE_CHECK, MUX_BOUND_PERMILLE,
    PER_UNIT,
};
use crate::report::Report;

/// The counter count the kernel logged at boot: `hw perfevents: enabled with armv8_pmuv3 PMU
/// driver, 7 counters available`.
pub(crate) fn kernel_counter_count() -> Option<u32> {
    let out = Command::new("dmesg").output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().find(|l| l.contains("counters available"))?;
    let before = line.split(" counters available").next()?;
    before.rsplit([' ', ',']).next()?.parse().ok()
}

pub(crate) fn capabilities(r: &mut Report) {
    let kernel_paranoid: Option<i32> =
        std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
            .ok()
            .and_then(|s| s.trim().parse().ok());
    for on in [false, true] {
        if let Err(e) = set_user_access(on) {
            r.error("caps", e);
            return;
        }
        let caps = Capabilities::detect();
        let tag = if on { "on" } else { "off" };
        r.check(
            &format!("caps-pmu-{tag}"),
            caps.has_hardware_pmu(),
            format!("hardware PMU {}", caps.pmu),
        );
        r.check(
            &format!("caps-paranoid-{tag}"),
            caps.paranoid == kernel_paranoid && kernel_paranoid.is_some(),
            format!("caps {:?}, kernel {:?}", caps.paranoid, kernel_paranoid),
        );
        let want_usable = on;
        r.check(
            &format!("caps-user-access-{tag}"),
            (caps.rdpmc == RdpmcStatus::Usable) == want_usable,
            format!("perf_user_access={} → rdpmc: {}", u8::from(on), caps.rdpmc),
        );
        if on {
            let kernel = kernel_counter_count();
            let ours = caps.counter_counts();
            // The kernel's count includes the cycle counter, which counts only cycles.
            r.check(
                "caps-counters",
                kernel.is_some()
                    && ours.map(|c| c.fixed + c.programmable) == kernel
                    && ours.is_some_and(|c| c.fixed == 1),
                format!("caps {ours:?}, kernel log {kernel:?} counters"),
            );
        }
    }
}

pub(crate) fn exact_counts(r: &mut Report) {
    let both = [HardwareEvent::Instructions, HardwareEvent::Cycles];
    // read(): the group read, with user access on.
    let mut s = match session(&both) {
        Ok(s) => s,
        Err(e) => return r.error("exact-read-syscall", e),
    };
    let syscall = model_check(r, "exact-read-syscall", &mut s, true, ReadPath::Syscall);
    // The user-space read: the mmap page's seqlock, index, pmc_width and offset, and MRS.
    let user = model_check(r, "exact-read-user", &mut s, false, ReadPath::Rdpmc);
    // Both paths on the same counter at the same moment: the value the page gives, then the
    // value read() gives, differ by the instructions between the two reads only.
    if let (Ok(_), Ok(_)) = (s.read(false), s.read(true)) {
        let d = s.counters()[0].delta().and_then(Count::value);
        r.check(
            "exact-paths-agree",
            d.is_some_and(|d| d <= MAX_CONSTANT),
            format!("read() right after the page read counts {d:?} more instructions"),
        );
    }
    drop(s);
    // Turning user access off: the page's index becomes 0 and reads fall back to read().
    if let Err(e) = set_user_access(false) {
        return r.error("exact-user-access-off", e);
    }
    match session(&both) {
        Ok(mut s) => {
            let fallback =
                model_check(r, "exact-user-access-off", &mut s, false, ReadPath::Syscall);
            r.check(
                "user-access-off-fallback",
                s.last_fallback() == Some(Fallback::IndexZero),
                format!(
                    "with perf_user_access=0 the page says {:?}; the read() path gives C = {fallback:?} \
                     (forced read(): C = {syscall:?})",
                    s.last_fallback()
                ),
            );
            // Same slope (exactly 258 per unit) on both; the fallback's constant is the forced
            // read()'s plus the page check that finds index 0.
            let extra = fallback.zip(syscall).map(|(f, s)| f.wrapping_sub(s));
            r.check(
                "user-access-off-agrees",
                extra.is_some_and(|e| e <= MAX_PAGE_CHECK),
                format!(
                    "fallback C {fallback:?} = read() C {syscall:?} + {extra:?} instructions of \
                     the page check (bound {MAX_PAGE_CHECK})"
                ),
            );
        }
        Err(e) => r.error("exact-user-access-off", e),
    }
    if let Err(e) = set_user_access(true) {
        r.error("user-access", e);
    }
    fresh_pages(r);
    if let (Some(u), Some(s)) = (user, syscall) {
        r.figure("constant_user_read", u);
        r.figure("constant_syscall_read", s);
    }
}

/// The other calibrated workload, `picollo_linux::workload::FreshPages`: writing `k` fresh
/// pages is exactly `k` page faults, counted in the same group as `instructions`.
pub(crate) fn fresh_pages(r: &mut Report) {
    use picollo_linux::event::SoftwareEvent;
    let s = CounterSession::builder()
        .event(SoftwareEvent::PageFaults)
        .event(HardwareEvent::Instructions)
        .build();
    let mut s = match s {
        Ok(s) => s,
        Err(e) => return r.error("exact-page-faults", e),
    };
    let mut shown = Vec::new();
    let mut ok = true;
    for k in [1usize, 16, 256] {
        let pages = match picollo_linux::workload::FreshPages::new(k) {
            Ok(p) => p,
            Err(e) => return r.error("exact-page-faults", e),
        };
        let (a, touched, b) = (s.read(false), pages.touch_all(), s.read(false));
        let d: Vec<Option<u64>> = s
            .deltas()
            .map(|d| d.map(|(_, c)| c.value()).collect())
            .unwrap_or_default();
        ok &= a.is_ok() && b.is_ok() && touched == k && d.first() == Some(&Some(k as u64));
        ok &= d.get(1).is_some_and(Option::is_some);
        shown.push(format!(
            "{k} pages: {:?} faults",
            d.first().copied().flatten()
        ));
    }
    r.check(
        "exact-page-faults",
        ok,
        format!(
            "page-faults = pages written, beside instructions in one group: {}",
            shown.join(", ")
        ),
    );
}

/// Instructions (user and kernel) per `CounterSession::read` on each path, measured by a
/// second session that counts the kernel too.
pub(crate) fn read_cost(r: &mut Report) {
    const READS: u64 = 1_000;
    let meter = CounterSession::builder()
        .event(HardwareEvent::Instructions)
        .exclude_kernel(false)
        .rdpmc(false)
        .build();
    let mut meter = match meter {
        Ok(m) => m,
        Err(e) => return r.error("read-cost", e),
    };
    let mut measure = |events: &[HardwareEvent], force: bool| -> Result<(u64, ReadPath), String> {
        let mut s = session(events)?;
        let mut per_read = Vec::new();
        let mut path = ReadPath::Syscall;
        for _ in 0..5 {
            meter.read(true).map_err(|e| e.to_string())?;
            for _ in 0..READS {
                path = black_box(&mut s).read(force).map_err(|e| e.to_string())?;
            }
            meter.read(true).map_err(|e| e.to_string())?;
            let d = meter.counters()[0]
                .delta()
                .and_then(Count::value)
                .ok_or("meter not counted")?;
            per_read.push(d / READS);
        }
        per_read.sort_unstable();
        Ok((per_read[per_read.len() / 2], path))
    };
    for (label, events) in [
        ("1", &[HardwareEvent::Instructions][..]),
        (
            "2",
            &[HardwareEvent::Instructions, HardwareEvent::Cycles][..],
        ),
    ] {
        match (measure(events, false), measure(events, true)) {
            (Ok((user, up)), Ok((sys, sp))) => {
                r.check(
                    &format!("read-cost-{label}"),
                    up == ReadPath::Rdpmc && sp == ReadPath::Syscall && user < sys,
                    format!(
                        "{label} counter(s): user-space read {user} instructions, read() {sys} \
                         instructions (user + kernel, median of 5 × {READS})"
                    ),
                );
                r.figure(&format!("read_user_{label}"), user);
                r.figure(&format!("read_syscall_{label}"), sys);
            }
            (Err(e), _) | (_, Err(e)) => r.error(&format!("read-cost-{label}"), e),
        }
    }
}

pub(crate) fn groups(r: &mut Report) {
    // Seven hardware events in one group: the cycle counter and the six event counters.
    let seven = [
        HardwareEvent::Cycles,
        HardwareEvent::Instructions,
        HardwareEvent::Instructions,
        HardwareEvent::Instructions,
        HardwareEvent::Instructions,
        HardwareEvent::Instructions,
        HardwareEvent::Instructions,
    ];
    match session(&seven) {
        Ok(mut s) => {
            let mut ok = true;
            let mut detail = String::new();
            for force in [true, false] {
                let _ = s.read(force);
                black_box(add_chain_256(black_box(1000)));
                let path = s.read(force);
                let deltas: Vec<Count> = s
                    .deltas()
                    .map(|d| d.map(|(_, c)| c).collect())
                    .unwrap_or_default();
                let exact = deltas.iter().all(
                    |c| matches!(c, Count::Exact(v) if (0..=MAX_CONSTANT).contains(&v.wrapping_sub(PER_UNIT * 1000))),
                );
                ok &= exact && deltas.len() == 7 && path.is_ok();
                detail.push_str(&format!("{path:?}: {deltas:?}; "));
            }
            r.check(
                "group-of-7",
                ok,
                format!("all seven exact, 258,000 + C each: {detail}"),
            );
        }
        Err(e) => r.error("group-of-7", e),
    }
    // Eight cannot be scheduled together: every counter is "not counted", never a zero.
    let mut eight = seven.to_vec();
    eight.push(HardwareEvent::Instructions);
    // Eight do not fit: the kernel refuses the group when it is opened, and the error says
    // what to do.
    match session(&eight) {
        Ok(s) => r.check("group-of-8", false, format!("a group of 8 opened: {s:?}")),
        Err(e) => r.check(
            "group-of-8",
            e.contains("cannot be scheduled") && e.contains("open fewer events"),
            format!("refused at open: {e}"),
        ),
    }
}

pub(crate) fn multiplexing(r: &mut Report) {
    const N: u64 = 200_000; // 51.6 M instructions: about a dozen rotations of 4 ms
    for sessions in [8usize, 12] {
        let name = format!("multiplex-{sessions}");
        let opened: Result<Vec<CounterSession>, String> = (0..sessions)
            .map(|_| session(&[HardwareEvent::Instructions]))
            .collect();
        let mut all = match opened {
            Ok(v) => v,
            Err(e) => {
                r.error(&name, e);
                continue;
            }
        };
        let mut ok = true;
        for s in &mut all {
            ok &= s.read(true).is_ok();
        }
        black_box(add_chain_256(black_box(N)));
        for s in &mut all {
            ok &= s.read(true).is_ok();
        }
        let exact = PER_UNIT * N;
        let mut scaled = 0;
        let mut worst = 0u64;
        let mut shown = Vec::new();
        for s in &all {
            match s.counters()[0].delta() {
                Some(Count::Scaled {
                    value,
                    time_enabled,
                    time_running,
                    ..
                }) => {
                    scaled += 1;
                    let err = value.abs_diff(exact) * 1000 / exact;
                    worst = worst.max(err);
                    shown.push(format!(
                        "{value} ({}%)",
                        time_running * 100 / time_enabled.max(1)
                    ));
                }
                Some(Count::Exact(v)) => {
                    worst = worst.max(v.abs_diff(exact) * 1000 / exact);
                    shown.push(format!("{v} (exact)"));
                }
                other => {
                    ok = false;
                    shown.push(format!("{other:?}"));
                }
            }
        }
        r.check(
            &name,
            ok && scaled > 0 && worst <= MUX_BOUND_PERMILLE,
            format!(
                "{sessions} instruction counters on 6 event counters: {scaled} scaled by \
                 time_enabled/time_running; worst {worst}‰ from the exact {exact} (bound \
                 {MUX_BOUND_PERMILLE}‰): {}",
                shown.join(", ")
            ),
        );
        r.figure(&format!("mux_worst_permille_{sessions}"), worst);
    }
}
