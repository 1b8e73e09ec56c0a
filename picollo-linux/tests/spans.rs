//! Spans with counters: a thread's ring, the consumer's table, and a child process writing
//! spans while this process attaches.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::Once;

use picollo_linux::caps::Capabilities;
use picollo_linux::span::{self, Span, SpanConfig, SpanConsumer};
use picollo_ring::{CounterStatus, RequestStatus};

/// The counters every test in this binary asks for: two software events that work on any
/// Linux, and two hardware events that need a PMU.
const COUNTERS: &str = "task-clock,page-faults,cycles,instructions";

fn setup() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let cfg = SpanConfig::new()
            .with_counters(span::SpanCounters::parse(COUNTERS).expect("perf event names"))
            .with_slots(4096);
        span::configure(cfg).expect("configured before any span");
    });
}

fn pid() -> i32 {
    std::process::id() as i32
}

/// Touches `pages` fresh pages: exactly one page fault each.
fn touch_pages(pages: usize) -> usize {
    picollo_linux::workload::touch_fresh_pages(pages).unwrap()
}

#[test]
fn spans_are_inactive_without_a_consumer() {
    setup();
    let s = picollo_linux::span!("idle");
    assert!(!s.is_active());
    s.end();
    let dynamic = Span::enter_str(&format!("idle-{}", 1));
    assert!(!dynamic.is_active());
}

#[test]
fn spans_in_process_table() {
    setup();
    let segment = span::open_thread_ring().unwrap();
    assert!(
        segment.starts_with(&format!("/proc/{}/fd/", pid())),
        "{segment}"
    );
    assert!(std::fs::read_link(&segment)
        .unwrap()
        .to_string_lossy()
        .starts_with("/memfd:picollo-span-"));
    let measured = span::thread_counters().unwrap();
    let caps = Capabilities::detect();
    eprintln!("measured counters here: {measured:?}; PMU: {}", caps.pmu);
    assert!(measured.iter().any(|c| c == "task-clock"), "{measured:?}");
    assert!(measured.iter().any(|c| c == "page-faults"), "{measured:?}");
    if caps.has_hardware_pmu() {
        assert!(measured.iter().any(|c| c == "cycles"));
    } else {
        assert!(!measured.iter().any(|c| c == "cycles"));
    }

    let mut consumer = SpanConsumer::attach(pid()).unwrap();
    assert!(consumer.rings() >= 1);

    for _ in 0..20 {
        let _outer = picollo_linux::span!("inproc-outer");
        for _ in 0..3 {
            let s = picollo_linux::span!("inproc-pages");
            assert!(s.is_active());
            touch_pages(16);
        }
    }
    let d = consumer.poll().unwrap();
    assert_eq!(d.lost, 0);
    let agg = consumer.aggregator();
    assert_eq!(agg.span("inproc-outer").unwrap().count(), 20);
    assert_eq!(agg.span("inproc-pages").unwrap().count(), 60);
    let pf = agg
        .counters()
        .iter()
        .position(|c| c == "page-faults")
        .unwrap();
    let faults = agg.span("inproc-pages").unwrap().counter_sum(pf).unwrap();
    assert!(faults >= 60, "page faults counted: {faults}");
    let table = consumer.table();
    eprintln!("{table}");
    assert_eq!(table.cell("inproc-pages", "N"), Some("60"));
    if !caps.has_hardware_pmu() {
        assert_eq!(table.cell("inproc-pages", "Cycles"), Some("n/a"));
        assert_eq!(table.cell("inproc-pages", "IPC p50"), Some("n/a"));
        let shown = table.to_string();
        assert!(
            shown.contains("not measured (n/a): cycles (ENOENT: not supported here"),
            "{shown}"
        );
        assert!(shown.contains("instructions (ENOENT"), "{shown}");
    }
}

// ---------------------------------------------------------------------------------------------
// Two processes
// ---------------------------------------------------------------------------------------------

/// This test binary, run again as a child to execute the ignored test `test` (`--ignored
/// --exact`; it asserts that `env`'s first variable is set), with its stdin and stdout piped.
struct ChildTest {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    lines: std::io::Lines<BufReader<std::process::ChildStdout>>,
}

impl ChildTest {
    fn spawn(test: &str, env: &[(&str, &str)]) -> Self {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "--ignored",
                "--exact",
                test,
                "--nocapture",
                "--test-threads=1",
            ])
            .envs(env.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        Self {
            child,
            stdin,
            lines,
        }
    }

    fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// Sends one line.
    fn send(&mut self, line: &str) {
        writeln!(self.stdin, "{line}").unwrap();
        self.stdin.flush().unwrap();
    }

    /// The rest of the first line with `prefix`, from `prefix` on.
    fn wait_for(&mut self, prefix: &str) -> String {
        for line in self.lines.by_ref() {
            let line = line.unwrap();
            if let Some(at) = line.find(prefix) {
                return line[at..].to_owned();
            }
        }
        panic!("child ended before {prefix}");
    }

    /// Tells the child to exit and checks that it did, reading its output to the end so its
    /// harness never writes into a closed pipe.
    fn finish(mut self) {
        self.send("exit");
        drop(self.stdin);
        self.lines.for_each(drop);
        assert!(self.child.wait().unwrap().success());
    }
}

const CHILD_ENV: &str = "PICOLLO_SPAN_TEST_CHILD";
const FAIL_ENV: &str = "PICOLLO_SPAN_TEST_RING_FAILURE";
/// Threads of the child that cannot create their rings.
const FAILING_THREADS: usize = 4;

/// The child of `ring_creation_failure_is_reported_once`: uses up its descriptors, so no
/// thread can create its span ring, then begins spans on several threads.
#[test]
#[ignore = "child process of ring_creation_failure_is_reported_once; run by it"]
fn child_ring_failure() {
    assert!(
        std::env::var_os(FAIL_ENV).is_some(),
        "child process of ring_creation_failure_is_reported_once: run by it, not on its own"
    );
    let limit = libc::rlimit {
        rlim_cur: 64,
        rlim_max: 64,
    };
    // SAFETY: `limit` is a valid rlimit to read.
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &limit) }, 0);
    // SAFETY: dup has no memory effects; the descriptors are left open on purpose.
    while unsafe { libc::dup(2) } >= 0 {}
    let threads: Vec<_> = (0..FAILING_THREADS)
        .map(|_| {
            std::thread::spawn(|| {
                for _ in 0..3 {
                    let _s = picollo_linux::span!("work");
                }
                span::open_thread_ring().unwrap_err()
            })
        })
        .collect();
    for t in threads {
        let e = t.join().unwrap();
        assert!(e.to_string().contains("memfd_create"), "{e}");
    }
    let (n, first) = span::ring_failures();
    println!("\nFAILURES {n} {}", first.unwrap());
}

/// A thread that cannot create its span ring (here: no descriptor left) says so on stderr
/// once per process, and through `span::ring_failures`, never silently.
#[test]
fn ring_creation_failure_is_reported_once() {
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "--ignored",
            "--exact",
            "child_ring_failure",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(FAIL_ENV, "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains(&format!("FAILURES {FAILING_THREADS} memfd_create")),
        "{stdout}"
    );
    let reports: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("could not create its span ring"))
        .collect();
    assert_eq!(reports.len(), 1, "{stderr}");
    // EMFILE, in the C library's words or not (glibc: "Too many open files"; musl, as in the
    // arm64 guest: "No file descriptors available"): the OS error number is always printed.
    assert!(reports[0].contains("(os error 24)"), "{}", reports[0]);
}

/// The child: runs phases of a workload inside spans once told to.
#[test]
#[ignore = "child process of spans_cross_process_table; run by it"]
fn child_span_writer() {
    assert!(
        std::env::var_os(CHILD_ENV).is_some(),
        "child process of spans_cross_process_table: run by it, not on its own"
    );
    // The child takes its counters from PICOLLO_COUNTERS, as a real program would.
    let segment = span::open_thread_ring().unwrap();
    let mut out = std::io::stdout().lock();
    writeln!(out, "\nREADY {segment}").unwrap();
    out.flush().unwrap();
    let mut stdin = std::io::stdin().lock();
    let mut line = String::new();
    stdin.read_line(&mut line).unwrap();
    let mut sum = 0usize;
    for round in 0..50 {
        let _s = picollo_linux::span!("request");
        {
            let _p = picollo_linux::span!("alloc");
            sum += touch_pages(8);
        }
        {
            let _c = picollo_linux::span!("compute");
            for i in 0..10_000usize {
                sum = sum.wrapping_add(std::hint::black_box(i * round));
            }
        }
        if round % 10 == 0 {
            let _g = picollo_linux::span!("gc");
            sum += touch_pages(64);
        }
    }
    writeln!(out, "DONE {}", sum % 7).unwrap();
    out.flush().unwrap();
    line.clear();
    stdin.read_line(&mut line).unwrap();
}

#[test]
fn spans_cross_process_table() {
    let mut child = ChildTest::spawn(
        "child_span_writer",
        &[(CHILD_ENV, "1"), (picollo_spans::COUNTERS_ENV, COUNTERS)],
    );
    let child_pid = child.pid();
    let ready = child.wait_for("READY");
    let mut consumer = SpanConsumer::attach(child_pid).unwrap();
    assert_eq!(consumer.rings(), 1, "{consumer:?}");
    assert!(ready.contains(&format!("/proc/{child_pid}/fd/")), "{ready}");
    child.send("go");
    child.wait_for("DONE");

    let d = consumer.poll().unwrap();
    assert_eq!((d.accepted, d.lost), (50 + 50 + 50 + 5, 0));
    let table = consumer.table();
    eprintln!("{table}");
    for (name, n) in [
        ("request", "50"),
        ("alloc", "50"),
        ("compute", "50"),
        ("gc", "5"),
    ] {
        assert_eq!(table.cell(name, "N"), Some(n), "{name}");
    }
    // `request` encloses the others: it is the largest.
    assert_eq!(table.rows[0][0], "request");
    let caps = Capabilities::detect();
    if caps.has_hardware_pmu() {
        assert_ne!(table.cell("compute", "IPC p50"), Some("n/a"));
    } else {
        eprintln!(
            "no hardware PMU here ({}): cycles and IPC must read n/a",
            caps.pmu
        );
        assert_eq!(table.cell("compute", "Cycles"), Some("n/a"));
        assert_eq!(table.cell("compute", "IPC p95"), Some("n/a"));
        // Software counters still work: page faults per span of the allocating phases.
        let gc: f64 = table
            .cell("gc", "page-faults/span")
            .unwrap()
            .parse()
            .unwrap();
        assert!(gc >= 64.0, "gc touched 64 fresh pages per span: {gc}");
    }

    child.finish();
}

// ---------------------------------------------------------------------------------------------
// Counters chosen at attach time, and counter events
// ---------------------------------------------------------------------------------------------

const REQUEST_CHILD_ENV: &str = "PICOLLO_SPAN_TEST_REQUEST_CHILD";

/// The child: starts with no counters, and runs spans when told to.
#[test]
#[ignore = "child process of counters_requested_at_attach_time; run by it"]
fn child_request_writer() {
    assert!(
        std::env::var_os(REQUEST_CHILD_ENV).is_some(),
        "child process of counters_requested_at_attach_time: run by it, not on its own"
    );
    span::open_thread_ring().unwrap();
    let mut out = std::io::stdout().lock();
    writeln!(out, "\nREADY {:?}", span::thread_counters().unwrap()).unwrap();
    out.flush().unwrap();
    let mut line = String::new();
    let mut sum = 0usize;
    loop {
        line.clear();
        std::io::stdin().read_line(&mut line).unwrap();
        match line.trim() {
            // Outermost spans until the requested counters are in place (at most 5 s).
            "ticks" => {
                for _ in 0..5000 {
                    {
                        let _t = picollo_linux::span!("tick");
                    }
                    if !span::thread_counters().unwrap().is_empty() {
                        break;
                    }
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
                writeln!(out, "TICKED {:?}", span::thread_counters().unwrap()).unwrap();
            }
            "work" => {
                for round in 0..20 {
                    let _s = picollo_linux::span!("alloc");
                    sum += touch_pages(8);
                    picollo_linux::counter!("queue", round);
                }
                picollo_linux::counter!("delta", -3);
                writeln!(out, "WORKED {}", sum % 7).unwrap();
            }
            _ => break,
        }
        out.flush().unwrap();
    }
}

#[test]
fn counters_requested_at_attach_time() {
    let mut child = ChildTest::spawn(
        "child_request_writer",
        &[(REQUEST_CHILD_ENV, "1"), (picollo_spans::COUNTERS_ENV, "")],
    );
    let child_pid = child.pid();
    assert_eq!(
        child.wait_for("READY"),
        "READY []",
        "the child starts time-only"
    );
    let mut consumer = SpanConsumer::attach(child_pid).unwrap();
    assert_eq!(consumer.rings(), 1);

    // Asked while the child is idle: pending (it applies requests at an outermost span).
    let spec = span::SpanCounters::parse("page-faults,cycles").unwrap();
    assert_eq!(consumer.request_counters(&spec).unwrap(), 1, "rings asked");
    let pending = consumer
        .request_outcomes(std::time::Duration::ZERO)
        .unwrap();
    assert_eq!(pending[0].status, RequestStatus::Pending);
    assert!(pending[0]
        .counters
        .iter()
        .all(|c| c.1 == CounterStatus::Unused));
    child.send("ticks");
    let ticked = child.wait_for("TICKED");
    assert!(ticked.contains("page-faults"), "{ticked}");
    let outcome = consumer
        .request_outcomes(std::time::Duration::from_secs(5))
        .unwrap();
    eprintln!("{outcome:?}");
    let o = &outcome[0];
    assert_eq!(o.status, RequestStatus::Applied);
    // Six counters do not fit the ring's four slots: refused before asking.
    let six = span::SpanCounters::parse(
        "page-faults,cycles,instructions,task-clock,branches,branch-misses",
    )
    .unwrap();
    assert!(matches!(
        consumer.request_counters(&six),
        Err(span::SpanError::TooManyCounters {
            asked: 6,
            slots: 4,
            ..
        })
    ));
    child.send("work");
    child.wait_for("WORKED");
    consumer.poll().unwrap();
    let caps = Capabilities::detect();
    let by_name = |n: &str| o.counters.iter().find(|c| c.0 == n).cloned();
    assert_eq!(
        by_name("page-faults").map(|c| c.1),
        Some(CounterStatus::Measured)
    );
    if !caps.has_hardware_pmu() {
        let cycles = by_name("cycles").unwrap();
        assert_eq!(
            (cycles.1, cycles.2),
            (CounterStatus::Unavailable, libc::ENOENT as u32),
            "no PMU here: cycles is unavailable with the reason"
        );
    }

    let agg = consumer.aggregator();
    let pf = agg
        .counters()
        .iter()
        .position(|c| c == "page-faults")
        .unwrap();
    let alloc = agg.span("alloc").unwrap();
    assert_eq!(alloc.count(), 20);
    // Eight fresh pages touched per span: page-faults is exact.
    let deltas = alloc.counter_deltas(pf).unwrap();
    use picollo_core::{EquivalentValue, ReadExt};
    assert_eq!(deltas.total(), 20);
    assert_eq!(
        deltas
            .percentile(50.0, EquivalentValue::Midpoint)
            .unwrap()
            .value,
        8,
        "median page faults"
    );
    let table = consumer.table();
    let events = consumer.aggregator().event_table().unwrap();
    eprintln!("{table}\n{events}");
    assert_eq!(events.cell("queue", "N"), Some("20"));
    assert_eq!(events.cell("queue", "Last"), Some("19"));
    assert_eq!(events.cell("queue", "Max"), Some("19"));
    assert_eq!(events.cell("delta", "Min"), Some("-3"));

    child.finish();
}

/// A thread's span ring commits its memory when a reader attaches, not when the thread begins
/// its first span: a server's every worker thread opens one (found: 2 MB each, attached or
/// not, 128 MB on a 64-core server).
#[test]
fn rings_commit_memory_only_once_attached() {
    use std::os::unix::fs::MetadataExt;
    setup();
    std::thread::spawn(|| {
        let path = span::open_thread_ring().unwrap();
        for _ in 0..100 {
            let _s = picollo_linux::span!("idle");
        }
        let meta = std::fs::metadata(&path).unwrap();
        let committed = meta.blocks() * 512;
        assert!(
            meta.size() > 256 * 1024,
            "a full-size ring: {} bytes",
            meta.size()
        );
        assert!(
            committed <= 8 * 1024,
            "{committed} of {} bytes committed with no reader",
            meta.size()
        );
    })
    .join()
    .unwrap();
}
