//! The layer where `perf_event_open` is refused (a seccomp filter, as in many containers):
//! one clear message, counters reported as not counted, span times recorded as usual.
#![cfg(all(feature = "counters", target_os = "linux"))] // counters and span rings: Linux

use std::process::Command;
use std::time::{Duration, Instant};

use picollo_testkit::child::{Watched, DEADLINE};

use picollo_core::ReadExt;
use picollo_tracing::{PicolloLayer, SpanCounters};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::Registry;

const CHILD_ENV: &str = "PICOLLO_TRACING_NO_PERF_CHILD";

/// One classic-BPF instruction (`struct sock_filter`).
#[repr(C)]
struct SockFilter {
    code: u16,
    jt: u8,
    jf: u8,
    k: u32,
}

/// `struct sock_fprog`.
#[repr(C)]
struct SockFprog {
    len: u16,
    filter: *const SockFilter,
}

/// Makes `perf_event_open` fail with EACCES for this thread and the threads it starts.
fn deny_perf_event_open() {
    const LD_W_ABS: u16 = 0x20; // BPF_LD | BPF_W | BPF_ABS
    const JEQ_K: u16 = 0x15; // BPF_JMP | BPF_JEQ | BPF_K
    const RET_K: u16 = 0x06; // BPF_RET | BPF_K
    const RET_ALLOW: u32 = 0x7fff_0000; // SECCOMP_RET_ALLOW
    let prog = [
        // A = seccomp_data.nr
        SockFilter {
            code: LD_W_ABS,
            jt: 0,
            jf: 0,
            k: 0,
        },
        SockFilter {
            code: JEQ_K,
            jt: 0,
            jf: 1,
            k: libc::SYS_perf_event_open as u32,
        },
        SockFilter {
            code: RET_K,
            jt: 0,
            jf: 0,
            k: libc::SECCOMP_RET_ERRNO | libc::EACCES as u32,
        },
        SockFilter {
            code: RET_K,
            jt: 0,
            jf: 0,
            k: RET_ALLOW,
        },
    ];
    let fprog = SockFprog {
        len: prog.len() as u16,
        filter: prog.as_ptr(),
    };
    // SAFETY: prctl with integer arguments; no memory is passed.
    let rc = unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) };
    assert_eq!(rc, 0, "PR_SET_NO_NEW_PRIVS");
    // SAFETY: `fprog` points to `prog`, a valid filter program that outlives the call (the
    // kernel copies it).
    let rc = unsafe {
        libc::prctl(
            libc::PR_SET_SECCOMP,
            libc::SECCOMP_MODE_FILTER as libc::c_ulong,
            &fprog as *const SockFprog,
        )
    };
    assert_eq!(rc, 0, "PR_SET_SECCOMP: {}", std::io::Error::last_os_error());
}

/// The child: perf refused, software counters asked for.
#[test]
#[ignore = "child process of perf_unavailable_gives_one_message_and_times; run by it"]
fn child_without_perf() {
    assert!(
        std::env::var_os(CHILD_ENV).is_some(),
        "child process of perf_unavailable_gives_one_message_and_times: run by it, not on its own"
    );
    deny_perf_event_open();
    let layer = PicolloLayer::builder()
        .counters(SpanCounters::parse("page-faults,task-clock").expect("perf event names"))
        .build();
    let h = layer.handle();
    tracing::subscriber::with_default(Registry::default().with(layer), || {
        for _ in 0..5 {
            let _s = tracing::info_span!("work").entered();
            let t = Instant::now();
            while t.elapsed() < Duration::from_micros(100) {
                std::hint::spin_loop();
            }
        }
    });
    let r = h.span("work").unwrap();
    assert_eq!(r.count(), 5, "spans are recorded");
    // Busy time is TSC ticks at the rate calibrated against the monotonic clock: 2 % for
    // the calibration (as `layer.rs`'s `at_least`), whatever the load.
    assert!(r.busy_ns.min().unwrap() >= 98_000, "and timed");
    for c in &r.counters {
        assert_eq!(c.deltas.total(), 0, "{}: nothing recorded as 0", c.name);
        assert_eq!(c.not_counted, 5, "{}", c.name);
    }
    let table = h.table();
    println!("{table}");
    assert_eq!(table.cell("work", "N"), Some("5"));
    assert_eq!(table.cell("work", "page-faults"), Some("n/a"));
    assert_eq!(table.cell("work", "task-clock"), Some("n/a"));
    println!("CHILD-OK");
}

#[test]
fn perf_unavailable_gives_one_message_and_times() {
    let out = Watched::spawn(
        "child_without_perf",
        Command::new(std::env::current_exe().unwrap())
            .args([
                "--ignored",
                "--exact",
                "child_without_perf",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_ENV, "1"),
        false,
    )
    .wait(DEADLINE);
    let (stdout, stderr) = (out.stdout, out.stderr);
    assert!(out.status.success());
    assert!(stdout.contains("CHILD-OK"), "the child ran its checks");
    let messages: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("picollo-tracing:"))
        .collect();
    assert_eq!(messages.len(), 1, "one message: {messages:?}");
    let m = messages[0];
    assert!(
        m.contains("counters not counted here: page-faults, task-clock"),
        "{m}"
    );
    assert!(m.contains("permission denied"), "says why: {m}");
    assert!(m.contains("span times are still recorded"), "{m}");
}
