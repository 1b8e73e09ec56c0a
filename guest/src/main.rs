//! `picollo-guest`: Picollo's hardware-counter paths checked against a real kernel PMU
//! driver. `guest/run.sh` boots Debian's arm64 kernel under `qemu-system-aarch64 -cpu max
//! -icount shift=0` (one instruction is one nanosecond of guest time and one cycle, so counts
//! are exact) with this program and `picollo` in the initramfs, and reads what this program
//! prints on the serial console:
//!
//! ```text
//! PASS <check>: <detail>
//! FAIL <check>: <detail>
//! FIGURE <key> <value>            (guest/run.sh turns these into the RESULTS.md table)
//! PICOLLO-GUEST DONE passed=<n> failed=<m>
//! ```
//!
//! Subcommands:
//!
//! - `picollo-guest check PICOLLO`: every check (run as root in the guest; it sets
//!   `kernel.perf_user_access` itself); `PICOLLO` is the `picollo` binary to test;
//! - `picollo-guest chain N`: runs `add_chain_256(N)` and exits (the workload of
//!   `picollo stat`);
//! - `picollo-guest spans SECONDS`: a program with spans around `add_chain_256(1000)`, for
//!   `picollo attach -e instructions PID`.
//!
//! # The model
//!
//! `picollo_core::workload::add_chain_256(n)` on aarch64 retires exactly [`PER_UNIT`] = 258
//! instructions per unit (256 adds, `subs`, `b.ne`) plus a constant per call. Every counted
//! interval here is `258·n + C`, where `C` (the call, the loop set-up and the part of the
//! counter reads inside the window) depends on the read path but not on `n`. The checks
//! measure each interval for several `n` and require the slope to be exactly 258 and `C` to
//! be the same for every `n` and every repetition, and within [`MAX_CONSTANT`]: an off-by-one
//! anywhere (a lost or doubled count, a wrong sign extension, a stale offset) breaks one of
//! the two.

use std::fmt::Display;
use std::hint::black_box;
use std::io::{BufRead, BufReader, Read};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use picollo_core::workload::add_chain_256;
use picollo_linux::caps::{Capabilities, RdpmcStatus};
use picollo_linux::count::Count;
use picollo_linux::event::HardwareEvent;
use picollo_linux::page::Fallback;
use picollo_linux::session::{CounterSession, ReadPath};
use picollo_linux::span::{self, Span, SpanConfig, SpanConsumer, SpanName};

/// Instructions per unit of `add_chain_256` on aarch64: 256 adds, `subs`, `b.ne`.
const PER_UNIT: u64 = 258;

/// The largest constant `C` any checked interval may have: the call of `add_chain_256`, its
/// loop set-up and the instructions of the reads inside the window. The measured values are
/// printed (a few dozen to a few hundred); a constant above this means counting something
/// that is not the workload.
const MAX_CONSTANT: u64 = 2_000;

/// The most instructions a page check that falls back (index 0) may add to a `read()`.
const MAX_PAGE_CHECK: u64 = 100;

/// The `n`s of the exact-count checks.
const UNITS: [u64; 5] = [1, 10, 100, 1_000, 4_000];

/// Scaled totals of multiplexed counters must be within this many parts per thousand of the
/// exact count (the workload is uniform, so the estimate is good; the bound leaves room for
/// the rotation's edges).
const MUX_BOUND_PERMILLE: u64 = 20;

/// The events of the exact `picollo stat` checks. User-space counts only (`:u`): the exact
/// counts they are compared with exclude the kernel, which `stat` counts by default where
/// permitted, as `perf stat` does (the guest runs as root).
const STAT_EVENTS: &str = "instructions:u,cycles:u";

/// More hardware events than QEMU's PMU has counters (1 cycle counter, 6 event counters).
const STAT_MUX_EVENTS: &str =
    "cycles:u,instructions:u,r0000:u,r0001:u,r0002:u,r0003:u,r0004:u,r0005:u";

/// The sysctl that lets user space read arm64 PMU counters.
const USER_ACCESS: &str = "/proc/sys/kernel/perf_user_access";

/// Collects results and prints them in the format `guest/run.sh` parses.
#[derive(Default)]
struct Report {
    passed: u32,
    failed: u32,
}

impl Report {
    fn check(&mut self, name: &str, ok: bool, detail: impl Display) {
        if ok {
            self.passed += 1;
            println!("PASS {name}: {detail}");
        } else {
            self.failed += 1;
            println!("FAIL {name}: {detail}");
        }
    }

    fn error(&mut self, name: &str, e: impl Display) {
        self.check(name, false, format!("error: {e}"));
    }

    fn figure(&self, key: &str, value: impl Display) {
        println!("FIGURE {key} {value}");
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("chain") => {
            let n = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(1000);
            black_box(add_chain_256(black_box(n)));
            ExitCode::SUCCESS
        }
        Some("spans") => {
            let secs = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(5.0);
            spans_program(secs);
            ExitCode::SUCCESS
        }
        Some("check") if args.len() == 2 => {
            let mut r = Report::default();
            checks(&mut r, &args[1]);
            println!("PICOLLO-GUEST DONE passed={} failed={}", r.passed, r.failed);
            if r.failed == 0 {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        _ => {
            eprintln!(
                "usage: picollo-guest check PICOLLO | chain N | spans SECONDS\n\
                 (runs inside the arm64 guest of guest/run.sh)"
            );
            ExitCode::from(2)
        }
    }
}

fn set_user_access(on: bool) -> std::io::Result<()> {
    std::fs::write(USER_ACCESS, if on { "1\n" } else { "0\n" })
}

fn checks(r: &mut Report, picollo: &str) {
    // Deterministic process counts for `picollo stat`: without address randomisation the
    // same binary with the same arguments retires the same instructions every run (string
    // and copy routines branch on alignment).
    let _ = std::fs::write("/proc/sys/kernel/randomize_va_space", "0\n");
    capabilities(r);
    if let Err(e) = set_user_access(true) {
        r.error("user-access", e);
        return;
    }
    exact_counts(r);
    read_cost(r);
    groups(r);
    multiplexing(r);
    let span_constant = spans_and_tracing(r);
    cli(r, picollo, span_constant);
}

/// The counter count the kernel logged at boot: `hw perfevents: enabled with armv8_pmuv3 PMU
/// driver, 7 counters available`.
fn kernel_counter_count() -> Option<u32> {
    let out = Command::new("dmesg").output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().find(|l| l.contains("counters available"))?;
    let before = line.split(" counters available").next()?;
    before.rsplit([' ', ',']).next()?.parse().ok()
}

fn capabilities(r: &mut Report) {
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

/// One interval's `(instructions, cycles)` deltas and the path of its closing read.
fn interval(
    s: &mut CounterSession,
    force_syscall: bool,
    n: u64,
) -> Result<(u64, Option<u64>, ReadPath), String> {
    s.read(force_syscall).map_err(|e| e.to_string())?;
    black_box(add_chain_256(black_box(n)));
    let path = s.read(force_syscall).map_err(|e| e.to_string())?;
    let deltas: Vec<(String, Count)> = s
        .deltas()
        .ok_or("no deltas after two reads")?
        .map(|(c, d)| (c.name().to_owned(), d))
        .collect();
    let get = |name: &str| {
        deltas
            .iter()
            .find(|(n, _)| n == name)
            .and_then(|(_, d)| match d {
                Count::Exact(v) => Some(*v),
                _ => None,
            })
    };
    let instructions = get("instructions").ok_or_else(|| format!("not exact: {deltas:?}"))?;
    Ok((instructions, get("cycles"), path))
}

/// Checks `258·n + C` over [`UNITS`] (three repetitions each) for one read path; returns `C`.
fn model_check(
    r: &mut Report,
    name: &str,
    s: &mut CounterSession,
    force_syscall: bool,
    want: ReadPath,
) -> Option<u64> {
    let mut constants = Vec::new();
    let mut detail = Vec::new();
    let mut cycles_equal = true;
    for &n in &UNITS {
        for _ in 0..3 {
            match interval(s, force_syscall, n) {
                Ok((instr, cycles, path)) => {
                    if path != want {
                        r.check(
                            name,
                            false,
                            format!(
                                "read took {path:?}, expected {want:?} (fallback {:?})",
                                s.last_fallback()
                            ),
                        );
                        return None;
                    }
                    constants.push(instr.wrapping_sub(PER_UNIT * n));
                    cycles_equal &= cycles.is_none_or(|c| c == instr);
                    detail.push(format!("n={n}: {instr}"));
                }
                Err(e) => {
                    r.error(name, e);
                    return None;
                }
            }
        }
    }
    let c = constants[0];
    let same = constants.iter().all(|&x| x == c);
    let shown: Vec<&String> = detail.iter().step_by(3).collect();
    r.check(
        name,
        same && c <= MAX_CONSTANT,
        format!(
            "instructions = 258·n + {c} for every n and repetition ({}); constants {:?}",
            shown
                .iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            dedup(&constants)
        ),
    );
    if s.counter_by_name("cycles").is_some() {
        r.check(
            &format!("{name}-cycles"),
            cycles_equal,
            "cycles = instructions in every interval (-icount shift=0)",
        );
    }
    same.then_some(c)
}

fn dedup(v: &[u64]) -> Vec<u64> {
    let mut out: Vec<u64> = v.to_vec();
    out.sort_unstable();
    out.dedup();
    out
}

fn session(events: &[HardwareEvent]) -> Result<CounterSession, String> {
    let mut b = CounterSession::builder();
    for &e in events {
        b = b.hardware(e);
    }
    b.build().map_err(|e| e.to_string())
}

fn exact_counts(r: &mut Report) {
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
fn fresh_pages(r: &mut Report) {
    use picollo_linux::event::SoftwareEvent;
    let s = CounterSession::builder()
        .software(SoftwareEvent::PageFaults)
        .hardware(HardwareEvent::Instructions)
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
fn read_cost(r: &mut Report) {
    const READS: u64 = 1_000;
    let meter = CounterSession::builder()
        .hardware(HardwareEvent::Instructions)
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

fn groups(r: &mut Report) {
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

fn multiplexing(r: &mut Report) {
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

/// Spans around `add_chain_256(n)`, with `instructions` sampled at each span's ends, read
/// back by a consumer in this process; then the same through the `tracing` layer.
fn spans_and_tracing(r: &mut Report) -> Option<u64> {
    let mut span_constant = None;
    if span::configure(SpanConfig::new().with_counters(["instructions"])).is_err() {
        r.error("spans", "span counters configured already");
        return None;
    }
    let _ = span::open_thread_ring();
    let pid = std::process::id() as i32;
    let mut consumer = match SpanConsumer::attach(pid) {
        Ok(c) => c,
        Err(e) => {
            r.error("spans", e);
            return None;
        }
    };
    const K: u64 = 20;
    for round in 0..=K {
        if round == 1 {
            // The first round (the ring's and the counters' first use) is not measured.
            if let Err(e) = consumer.poll() {
                r.error("spans", e);
                return None;
            }
            let _ = consumer.take_interval();
        }
        chain_span(CHAIN_1000, 1000);
        chain_span(SpanName::new("chain3000"), 3000);
    }
    if let Err(e) = consumer.poll() {
        r.error("spans", e);
        return None;
    }
    let agg = consumer.aggregator();
    let idx = agg.counters().iter().position(|c| c == "instructions");
    let per_span = |name: &str| -> Option<(u64, u128)> {
        use picollo_core::read::ReadExt;
        let st = agg.span(name)?;
        let i = idx?;
        let h = st.counter_deltas(i)?;
        println!(
            "INFO {name}: instructions per span in [{:?}, {:?}]",
            h.min(),
            h.max()
        );
        Some((st.counter_count(i), st.counter_sum(i)?))
    };
    match (per_span("chain1000"), per_span("chain3000")) {
        (Some((n1, s1)), Some((n3, s3))) => {
            let c1 = s1 as i128 - i128::from(n1 * PER_UNIT * 1000);
            let c3 = s3 as i128 - i128::from(n3 * PER_UNIT * 3000);
            let ok = n1 == K
                && n3 == K
                && c1 == c3
                && c1 % i128::from(K) == 0
                && (0..=i128::from(MAX_CONSTANT * K)).contains(&c1);
            r.check(
                "span-instructions",
                ok,
                format!(
                    "{n1} + {n3} spans: sums {s1} and {s3} = spans × (258·n + {}) exactly",
                    c1 / i128::from(K.max(1))
                ),
            );
            if ok {
                let c = u64::try_from(c1 / i128::from(K)).unwrap_or(u64::MAX);
                r.figure("constant_span", c);
                span_constant = Some(c);
            }
        }
        other => r.check(
            "span-instructions",
            false,
            format!("no span counts: {other:?}"),
        ),
    }
    tracing_layer(r, &mut consumer);
    span_constant
}

/// One `tracing` span callsite around `add_chain_256(n)` (one callsite: the layer's own
/// instructions inside the window depend on the callsite's place in its tables).
#[inline(never)]
fn traced(n: u64) {
    let s = tracing::info_span!("traced");
    s.in_scope(|| black_box(add_chain_256(black_box(n))));
}

/// The `tracing` layer's counter deltas: the frames it writes to the thread's ring (read by
/// `consumer`, exact sums) are exactly `258·n + C` per span for every `n`, as for `span!`,
/// and its own histograms (0.4% buckets) hold every span around that count.
fn tracing_layer(r: &mut Report, consumer: &mut SpanConsumer) {
    use picollo_core::read::ReadExt;
    use tracing_subscriber::layer::SubscriberExt;
    let layer = picollo_tracing::PicolloLayer::builder()
        .counters(picollo_tracing::SpanCounters::parse("instructions").expect("a perf event"))
        .build();
    let handle = layer.handle();
    let subscriber = tracing_subscriber::registry().with(layer);
    const K: u64 = 20;
    // (n, spans, sum) of each interval of K spans.
    let mut intervals: Vec<Result<(u64, u64, u128), String>> = Vec::new();
    tracing::subscriber::with_default(subscriber, || {
        // The callsite's first span is not measured.
        traced(1000);
        let _ = consumer.poll();
        let _ = consumer.take_interval();
        for n in [1000u64, 3000] {
            for _ in 0..K {
                traced(n);
            }
            let sum = consumer.poll().map_err(|e| e.to_string()).and_then(|_| {
                let agg = consumer.take_interval();
                let i = agg
                    .counters()
                    .iter()
                    .position(|c| c == "instructions")
                    .ok_or("no instructions in the frames")?;
                let st = agg.span("traced").ok_or("no traced frames")?;
                Ok((n, st.counter_count(i), st.counter_sum(i).unwrap_or(0)))
            });
            intervals.push(sum);
        }
    });
    match intervals[..] {
        [Ok((n1, k1, s1)), Ok((n3, k3, s3))] => {
            let c1 = s1 as i128 - i128::from(k1 * PER_UNIT * n1);
            let c3 = s3 as i128 - i128::from(k3 * PER_UNIT * n3);
            let ok = k1 == K
                && k3 == K
                && c1 == c3
                && c1 % i128::from(K) == 0
                && (0..=i128::from(MAX_CONSTANT * K)).contains(&c1);
            r.check(
                "tracing-frames",
                ok,
                format!(
                    "the layer's frames: {k1} + {k3} spans, sums {s1} and {s3} = spans × \
                     (258·n + {})",
                    c1 / i128::from(K)
                ),
            );
            if ok {
                r.figure("constant_tracing", c1 / i128::from(K));
            }
        }
        ref other => r.check("tracing-frames", false, format!("{other:?}")),
    }
    let report = handle.span("traced");
    let c = report.as_ref().and_then(|s| s.counter("instructions"));
    match (
        report.as_ref(),
        c,
        c.and_then(|c| c.deltas.min()),
        c.and_then(|c| c.deltas.max()),
    ) {
        (Some(report), Some(c), Some(min), Some(max)) => {
            // 128 buckets per power of two: min and max are bucket bounds around
            // 258·1000 + C and 258·3000 + C.
            let (lo, hi) = (PER_UNIT * 1000, PER_UNIT * 3000);
            let ok = report.count() == 2 * K + 1
                && c.not_counted == 0
                && min + lo / 128 >= lo
                && min <= lo + lo / 128 + MAX_CONSTANT
                && max + hi / 128 >= hi
                && max <= hi + hi / 128 + MAX_CONSTANT;
            r.check(
                "tracing-histograms",
                ok,
                format!(
                    "{} spans, not counted {}; instructions per span from {min} to {max} \
                     (258,000 + C and 774,000 + C, in 0.4% buckets)",
                    report.count(),
                    c.not_counted
                ),
            );
        }
        _ => r.check("tracing-histograms", false, "no report"),
    }
    if let Some(p) = handle.counter_problem() {
        r.check("tracing-counters", false, p);
    }
}

/// The span of [`chain_span`] around `add_chain_256(1000)`, in this process and in the
/// spans program `picollo attach` attaches to.
const CHAIN_1000: SpanName = SpanName::new("chain1000");

/// A span around `add_chain_256(n)`: one function for the in-process check and the spans
/// program, so both count the same constant.
#[inline(never)]
fn chain_span(name: SpanName, n: u64) {
    let _s = Span::enter(name);
    black_box(add_chain_256(black_box(n)));
}

/// A spans program for `picollo attach`: [`chain_span`]s of `add_chain_256(1000)`,
/// with a short sleep between, for `secs` seconds. Prints its pid when its ring is open.
fn spans_program(secs: f64) {
    let _ = span::open_thread_ring();
    println!("ready {}", std::process::id());
    let deadline = Instant::now() + Duration::from_secs_f64(secs);
    while Instant::now() < deadline {
        chain_span(CHAIN_1000, 1000);
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// The CLI's machine-readable output, parsed in one place (the human formats may change).
mod cli_json {
    use serde_json::Value;

    /// `picollo stat --format json`: `(runs, p0 value, p100 value, half width of p100)` of
    /// the table whose name starts with `counter`.
    pub fn stat_min_max(json: &str, counter: &str) -> Option<(u64, u64, u64, u64)> {
        let v: Value = serde_json::from_str(json).ok()?;
        let table = v["tables"]
            .as_array()?
            .iter()
            .find(|t| t["name"].as_str().is_some_and(|n| n.starts_with(counter)))?;
        let ps = table["percentiles"].as_array()?;
        let first = ps.first()?;
        let last = ps.last()?;
        Some((
            table["total"].as_u64()?,
            first["value"].as_u64()?,
            last["value"].as_u64()?,
            last["half_width"].as_u64()?,
        ))
    }

    /// `picollo attach --spans --format json`: `(spans, sum)` of `counter` in phase `phase`
    /// of the last line that has it.
    pub fn attach_sum(out: &str, phase: &str, counter: &str) -> Option<(u64, u64)> {
        out.lines().rev().find_map(|line| {
            let v: Value = serde_json::from_str(line).ok()?;
            let p = v["spans"]["phases"]
                .as_array()?
                .iter()
                .find(|p| p["name"] == phase)?
                .clone();
            // cycles and instructions are columns of their own; other counters are in
            // `counters` with their own span counts.
            match counter {
                "instructions" | "cycles" => Some((p["n"].as_u64()?, p[counter].as_u64()?)),
                _ => {
                    let c = &p["counters"][counter];
                    Some((c["spans"].as_u64()?, c["sum"].as_u64()?))
                }
            }
        })
    }
}

fn run(cmd: &mut Command) -> Result<String, String> {
    let out = cmd.output().map_err(|e| format!("{cmd:?}: {e}"))?;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    if !out.status.success() {
        return Err(format!(
            "{cmd:?}: {}: {}{}",
            out.status,
            String::from_utf8_lossy(&out.stderr),
            stdout
        ));
    }
    Ok(stdout)
}

fn cli(r: &mut Report, picollo: &str, span_constant: Option<u64>) {
    let me = std::env::current_exe()
        .map_or_else(|_| "/bin/picollo-guest".into(), |p| p.display().to_string());
    // `picollo counters`: the capabilities and the PMU's own events from sysfs.
    match run(Command::new(picollo).arg("counters")) {
        Ok(out) => {
            let sysfs = std::fs::read_dir("/sys/bus/event_source/devices/armv8_pmuv3/events")
                .map(|d| {
                    d.filter_map(|e| e.ok()?.file_name().into_string().ok())
                        .collect::<Vec<_>>()
                })
                .unwrap_or_default();
            let listed = sysfs
                .iter()
                .filter(|e| out.contains(&format!("armv8_pmuv3/{e}/")))
                .count();
            r.check(
                "cli-counters",
                out.contains("hardware PMU: available")
                    && out.contains("rdpmc: usable")
                    && !sysfs.is_empty()
                    && listed == sysfs.len(),
                format!("lists {listed} of the {} events in sysfs", sysfs.len()),
            );
        }
        Err(e) => r.error("cli-counters", e),
    }
    // With user access off, `picollo counters` says so and how to turn it on.
    if set_user_access(false).is_ok() {
        let out = run(Command::new(picollo).arg("counters"));
        let _ = set_user_access(true);
        match out {
            Ok(o) => {
                let line = o
                    .lines()
                    .find(|l| l.contains("rdpmc:"))
                    .unwrap_or("")
                    .trim();
                r.check(
                    "cli-counters-user-access-off",
                    line.contains("kernel.perf_user_access = 0")
                        && line.contains("sysctl kernel.perf_user_access=1"),
                    line,
                );
            }
            Err(e) => r.error("cli-counters-user-access-off", e),
        }
    }
    // `picollo stat -e instructions,cycles -r 10`: every run of the same command counts the
    // same, and the difference between two sizes is exactly the model's.
    let events = STAT_EVENTS;
    let mut values = Vec::new();
    let mut exacts = Vec::new();
    for n in [1_000u64, 5_000] {
        let out = run(Command::new(picollo)
            .args(["stat", "-e", events, "-r", "10", "--format", "json", "--"])
            .arg(&me)
            .args(["chain", &n.to_string()]));
        match out.map(|o| {
            (
                cli_json::stat_min_max(&o, "instructions"),
                cli_json::stat_min_max(&o, "cycles"),
                o,
            )
        }) {
            Ok((Some((runs, min, max, half)), cycles, o)) => {
                let cycles_ok = cycles.is_some_and(|(_, cmin, cmax, _)| cmin == min && cmax == max);
                let exact = exact_process_count(&me, n);
                let within = exact
                    .as_ref()
                    .is_ok_and(|&e| min.abs_diff(e) <= half && max.abs_diff(e) <= half);
                r.check(
                    &format!("cli-stat-{n}"),
                    runs == 10 && min == max && cycles_ok && within,
                    format!(
                        "10 runs: instructions min = max = {max} ± {half} (the histogram's \
                         0.1%), the exact count {exact:?}; cycles {cycles:?}"
                    ),
                );
                if let Ok(e) = exact {
                    exacts.push((n, e));
                }
                if runs != 10 || min != max {
                    println!("{o}");
                }
                values.push((n, max, half));
            }
            Ok((None, _, o)) => r.check(
                &format!("cli-stat-{n}"),
                false,
                format!("no instructions table: {o}"),
            ),
            Err(e) => r.error(&format!("cli-stat-{n}"), e),
        }
    }
    if let [(n1, v1, h1), (n2, v2, h2)] = values[..] {
        let model = PER_UNIT * (n2 - n1);
        let diff = v2.abs_diff(v1);
        r.check(
            "cli-stat-model",
            diff.abs_diff(model) <= h1 + h2,
            format!("stat({n2}) − stat({n1}) = {diff}, model 258·{} = {model}, within the two half widths", n2 - n1),
        );
    }
    if let [(n1, e1), (n2, e2)] = exacts[..] {
        r.check(
            "exact-process",
            e2 - e1 == PER_UNIT * (n2 - n1),
            format!(
                "the whole `chain` process from exec to exit (inherit, enable_on_exec): \
                 {e1} and {e2}, exactly 258·{} apart",
                n2 - n1
            ),
        );
    }
    stat_multiplexed(r, picollo, &me);
    stat_defaults(r, picollo, &me);
    attach(r, picollo, &me, span_constant);
}

/// The exact user-space instructions of `picollo-guest chain n` from its exec to its exit, as
/// `picollo stat` counts a command, through the library: a disabled `instructions` counter on
/// this thread with `inherit` and `enable_on_exec`, which the child inherits and which starts
/// counting at the child's exec (this thread never execs, so its own copy stays off).
fn exact_process_count(me: &str, n: u64) -> Result<u64, String> {
    let mut s = CounterSession::builder()
        .hardware(HardwareEvent::Instructions)
        .enabled(false)
        .enable_on_exec(true)
        .inherit(true)
        .build()
        .map_err(|e| e.to_string())?;
    let status = Command::new(me)
        .args(["chain", &n.to_string()])
        .status()
        .map_err(|e| e.to_string())?;
    if !status.success() {
        return Err(format!("chain {n}: {status}"));
    }
    s.read(true).map_err(|e| e.to_string())?;
    match s.counters()[0].value() {
        Some(Count::Exact(v)) => Ok(v),
        other => Err(format!("chain {n}: counted {other:?}")),
    }
}

/// `picollo stat -- CMD` with no `-e`, what a user runs first: the defaults for a machine
/// with a PMU, the ones QEMU's PMU lacks (`branch-misses`) left out with a note, the others
/// counted.
fn stat_defaults(r: &mut Report, picollo: &str, me: &str) {
    let out = Command::new(picollo)
        .args(["stat", "-r", "3", "--format", "json", "--"])
        .arg(me)
        .args(["chain", "1000"])
        .output();
    match out {
        Ok(o) => {
            let json = String::from_utf8_lossy(&o.stdout);
            let stderr = String::from_utf8_lossy(&o.stderr);
            let counted: Vec<&str> = ["task-clock", "cycles", "instructions", "page-faults"]
                .into_iter()
                .filter(|t| cli_json::stat_min_max(&json, t).is_some_and(|(runs, ..)| runs == 3))
                .collect();
            r.check(
                "cli-stat-defaults",
                o.status.success() && counted.len() == 4 && stderr.contains("`branch-misses`"),
                format!(
                    "counted {counted:?}; notes: {}",
                    stderr.trim().replace('\n', " | ")
                ),
            );
        }
        Err(e) => r.error("cli-stat-defaults", e),
    }
}

/// `picollo stat` with more hardware events than the PMU has counters (cycles, instructions
/// and six raw events for six event counters): the kernel refuses them as one group, so stat
/// opens one group per event and they multiplex; the scaled instructions must stay within
/// [`MUX_BOUND_PERMILLE`] of the exact count ([`exact_process_count`]).
fn stat_multiplexed(r: &mut Report, picollo: &str, me: &str) {
    const N: u64 = 400_000; // 103 M instructions: about 25 rotations of 4 ms
    let exact = match exact_process_count(me, N) {
        Ok(e) => e,
        Err(e) => return r.error("cli-stat-multiplexed", e),
    };
    let out = Command::new(picollo)
        .args(["stat", "-e", STAT_MUX_EVENTS])
        .args(["-r", "3", "--format", "json", "--"])
        .arg(me)
        .args(["chain", &N.to_string()])
        .output();
    let out = match out {
        Ok(o) if o.status.success() => o,
        Ok(o) => {
            return r.check(
                "cli-stat-multiplexed",
                false,
                format!("{}: {}", o.status, String::from_utf8_lossy(&o.stderr)),
            )
        }
        Err(e) => return r.error("cli-stat-multiplexed", e),
    };
    let json = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let tables = ["cycles", "r0000", "r0005"]
        .iter()
        .all(|t| cli_json::stat_min_max(&json, t).is_some());
    match cli_json::stat_min_max(&json, "instructions") {
        Some((runs, min, max, _)) => {
            let worst = min.abs_diff(exact).max(max.abs_diff(exact)) * 1000 / exact;
            r.check(
                "cli-stat-multiplexed",
                runs == 3
                    && tables
                    && stderr.contains("multiplexed")
                    && worst <= MUX_BOUND_PERMILLE,
                format!(
                    "8 events for 7 counters: one group each, multiplexed ({}); instructions \
                     in [{min}, {max}], {worst}‰ from {exact} (bound {MUX_BOUND_PERMILLE}‰); \
                     every event has a table: {tables}",
                    stderr
                        .lines()
                        .find(|l| l.contains("multiplexed"))
                        .unwrap_or("no note")
                ),
            );
            r.figure("stat_mux_worst_permille", worst);
        }
        None => r.check("cli-stat-multiplexed", false, format!("{json}{stderr}")),
    }
}

/// `picollo attach PID --spans -e instructions` on a running spans program: its spans of
/// `add_chain_256(1000)` count `258,000 + C` each, `C` as the in-process span check measured
/// (`span_constant`), except for at most [`MAX_CONSTANT`] instructions in all (the first span
/// after the counters are switched on reads its start through a path of its own).
fn attach(r: &mut Report, picollo: &str, me: &str, span_constant: Option<u64>) {
    let child = Command::new(me)
        .args(["spans", "6"])
        .stdout(Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => return r.error("cli-attach", e),
    };
    let mut line = String::new();
    let pid = child.stdout.take().and_then(|out| {
        let mut reader = BufReader::new(out);
        reader.read_line(&mut line).ok()?;
        // Keep draining so the child never blocks on a full pipe.
        std::thread::spawn(move || {
            let mut sink = Vec::new();
            let _ = reader.read_to_end(&mut sink);
        });
        line.trim().strip_prefix("ready ")?.parse::<i32>().ok()
    });
    let Some(pid) = pid else {
        let _ = child.kill();
        return r.error(
            "cli-attach",
            format!("the spans program did not start: {line:?}"),
        );
    };
    let out = run(Command::new(picollo).args([
        "attach",
        &pid.to_string(),
        "--spans",
        "-e",
        "instructions",
        "--duration",
        "2",
        "--format",
        "json",
    ]));
    let _ = child.kill();
    let _ = child.wait();
    match out {
        Ok(o) => match cli_json::attach_sum(&o, "chain1000", "instructions") {
            Some((spans, sum)) if spans > 0 => {
                let c = span_constant.unwrap_or(0);
                let model = spans * (PER_UNIT * 1000 + c);
                let excess = sum.wrapping_sub(model);
                r.check(
                    "cli-attach",
                    span_constant.is_some() && spans >= 100 && excess <= MAX_CONSTANT,
                    format!(
                        "attach -e instructions on pid {pid}: {spans} spans, sum {sum} = spans × \
                         (258,000 + {c}) + {excess}"
                    ),
                );
            }
            other => r.check(
                "cli-attach",
                false,
                format!("no instructions in the span table ({other:?}): {o}"),
            ),
        },
        Err(e) => r.error("cli-attach", e),
    }
}
