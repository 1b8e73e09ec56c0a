//! A program whose only Picollo code is installing the layer: another process attaches to
//! its span rings (the `SpanConsumer` API, and the real `picollo attach --spans` when the
//! CLI is built) and gets the per-phase table.
#![cfg(all(feature = "counters", target_os = "linux"))] // counters and span rings: Linux

use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use picollo_testkit::child::{Watched, DEADLINE};

use picollo_linux::span::SpanConsumer;
use picollo_tracing::PicolloLayer;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

use picollo_linux::workload::touch_fresh_pages;

const CHILD_ENV: &str = "PICOLLO_TRACING_ATTACH_CHILD";
const ROUNDS: usize = 30;
const PAGES: usize = 8;

/// The traced program.
#[test]
#[ignore = "child process of attach_to_a_program_that_only_installs_the_layer; run by it"]
fn child_traced_program() {
    assert!(
        std::env::var_os(CHILD_ENV).is_some(),
        "child process of attach_to_a_program_that_only_installs_the_layer: run by it, not on its own"
    );
    tracing_subscriber::registry()
        .with(
            PicolloLayer::builder()
                .counters(picollo_tracing::SpanCounters::parse("page-faults").expect("an event"))
                .build(),
        )
        .init();
    // The first span opens this thread's ring.
    drop(tracing::info_span!("start").entered());
    // Both `apply` callsites registered (a callsite is renamed `module::name` when a second
    // target's span of its name first appears), before anyone attaches.
    get::apply();
    set::apply();
    let mut out = std::io::stdout().lock();
    writeln!(out, "\nREADY").unwrap();
    out.flush().unwrap();
    let mut line = String::new();
    let mut stdin = std::io::stdin().lock();
    stdin.read_line(&mut line).unwrap();
    for _ in 0..ROUNDS {
        let _request = tracing::info_span!("request").entered();
        let _alloc = tracing::info_span!("alloc").entered();
        touch_fresh_pages(PAGES).expect("mmap fresh pages");
    }
    // One span entered three times: three intervals, three frames.
    let polled = tracing::info_span!("polled");
    for _ in 0..3 {
        polled.in_scope(|| std::hint::black_box(1));
    }
    drop(polled);
    // Two targets with a span named `apply` (mini-redis's commands): the frames name them as
    // the table and the `.hlog` do.
    get::apply();
    set::apply();
    writeln!(out, "DONE").unwrap();
    out.flush().unwrap();
    line.clear();
    stdin.read_line(&mut line).unwrap();
}

mod get {
    pub fn apply() {
        let _s = tracing::info_span!("apply").entered();
    }
}

mod set {
    pub fn apply() {
        let _s = tracing::info_span!("apply").entered();
    }
}

/// The `picollo` binary of this workspace, if it was built (it is whenever the workspace's
/// tests are built: the CLI's tests need it).
fn picollo_bin() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let bin = exe.parent()?.parent()?.join("picollo");
    bin.is_file().then_some(bin)
}

#[test]
fn attach_to_a_program_that_only_installs_the_layer() {
    let mut child = Watched::spawn(
        "child_traced_program",
        Command::new(std::env::current_exe().unwrap())
            .args([
                "--ignored",
                "--exact",
                "child_traced_program",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_ENV, "1")
            .stdin(Stdio::piped()),
        false,
    );
    let pid = child.pid();
    let mut stdin = child.stdin();
    let mut wait_for = |what: &str| {
        child.line_containing(what, DEADLINE);
    };
    wait_for("READY");
    let mut consumer = SpanConsumer::attach(pid).unwrap();
    assert!(consumer.rings() >= 1, "{consumer:?}");

    // The real CLI too, when built: attached until the child exits.
    let cli = picollo_bin().map(|bin| {
        let cli = Watched::spawn(
            "picollo attach --spans",
            Command::new(bin).args(["attach", &pid.to_string(), "--spans"]),
            false,
        );
        // Attached once it maps the child's ring (a memfd `picollo-span-<tid>`).
        let maps = format!("/proc/{}/maps", cli.pid());
        let deadline = Instant::now() + Duration::from_secs(20);
        while !std::fs::read_to_string(&maps)
            .unwrap_or_default()
            .contains("/memfd:picollo-span-")
        {
            assert!(Instant::now() < deadline, "picollo attach did not attach");
            std::thread::sleep(Duration::from_millis(20));
        }
        cli
    });
    if cli.is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "target/*/picollo is not built: CI's `cargo test --workspace` builds it"
        );
        eprintln!("skip (CLI part): target/*/picollo is not built; checked with SpanConsumer only");
    }

    writeln!(stdin, "go").unwrap();
    stdin.flush().unwrap();
    wait_for("DONE");
    let d = consumer.poll().unwrap();
    assert_eq!(d.lost, 0);
    assert_eq!(
        d.accepted as usize,
        2 * ROUNDS + 3 + 2,
        "one frame per busy interval"
    );
    let table = consumer.table();
    eprintln!("{table}");
    assert_eq!(table.cell("request", "N"), Some("30"));
    assert_eq!(table.cell("alloc", "N"), Some("30"));
    assert_eq!(table.cell("polled", "N"), Some("3"), "intervals, not spans");
    // One name per callsite: what the layer's table and `.hlog` call them.
    assert_eq!(table.cell("get::apply", "N"), Some("1"), "{table}");
    assert_eq!(table.cell("set::apply", "N"), Some("1"), "{table}");
    let agg = consumer.aggregator();
    let pf = agg
        .counters()
        .iter()
        .position(|c| c == "page-faults")
        .unwrap();
    let alloc = agg.span("alloc").unwrap();
    // Exact: every alloc interval faulted its 8 fresh pages.
    assert_eq!(alloc.counter_sum(pf), Some((ROUNDS * PAGES) as u128));
    assert!(agg.span("request").unwrap().counter_sum(pf).unwrap() >= (ROUNDS * PAGES) as u128);

    writeln!(stdin, "exit").unwrap();
    drop(stdin);
    assert!(child.wait(DEADLINE).status.success());
    if let Some(cli) = cli {
        let out = cli.wait(DEADLINE);
        let text = out.stdout;
        assert!(out.status.success());
        let row = |name: &str| {
            text.lines()
                .find(|l| l.starts_with(&format!("| {name} ")))
                .unwrap_or_else(|| panic!("no row {name} in:\n{text}"))
                .split('|')
                .map(str::trim)
                .collect::<Vec<_>>()
        };
        assert_eq!(row("alloc")[2], "30", "N");
        assert_eq!(row("request")[2], "30", "N");
        assert_eq!(row("get::apply")[2], "1", "N");
        assert!(text.contains("page-faults"), "{text}");
    }
}

const TIME_ONLY_CHILD_ENV: &str = "PICOLLO_TRACING_TIME_ONLY_CHILD";

/// A traced program that installs the default layer with no counters configured: it starts
/// time only, and counts what a consumer asks for at attach time.
#[test]
#[ignore = "child process of counters_requested_at_attach_time_reach_a_time_only_layer; run by it"]
fn child_time_only_program() {
    assert!(
        std::env::var_os(TIME_ONLY_CHILD_ENV).is_some(),
        "child process of counters_requested_at_attach_time_reach_a_time_only_layer: run by it, not on its own"
    );
    let layer = PicolloLayer::new();
    assert!(
        layer.counters().is_empty(),
        "PICOLLO_COUNTERS is empty: time only"
    );
    tracing_subscriber::registry().with(layer).init();
    // The first span opens this thread's ring.
    drop(tracing::info_span!("start").entered());
    // Both `apply` callsites registered (a callsite is renamed `module::name` when a second
    // target's span of its name first appears), before anyone attaches.
    get::apply();
    set::apply();
    let counters = || picollo_linux::span::thread_counters().unwrap();
    let mut out = std::io::stdout().lock();
    writeln!(out, "\nREADY {:?}", counters()).unwrap();
    out.flush().unwrap();
    let mut line = String::new();
    let mut stdin = std::io::stdin().lock();
    loop {
        line.clear();
        stdin.read_line(&mut line).unwrap();
        match line.trim() {
            // Outermost spans until the requested counters are in place (at most 5 s).
            "ticks" => {
                for _ in 0..5000 {
                    drop(tracing::info_span!("tick").entered());
                    if !counters().is_empty() {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(1));
                }
                writeln!(out, "TICKED {:?}", counters()).unwrap();
            }
            "work" => {
                for _ in 0..ROUNDS {
                    let _alloc = tracing::info_span!("alloc").entered();
                    touch_fresh_pages(PAGES).expect("mmap fresh pages");
                }
                writeln!(out, "WORKED").unwrap();
            }
            _ => break,
        }
        out.flush().unwrap();
    }
}

/// `picollo attach PID -e page-faults` on a program whose layer runs time only: the request
/// stays pending while the program is idle, is applied at its next outermost span, and from
/// then on every span frame carries the page faults, exactly.
#[test]
fn counters_requested_at_attach_time_reach_a_time_only_layer() {
    use picollo_core::ReadExt;
    use picollo_ring::{CounterStatus, RequestStatus};

    let mut child = Watched::spawn(
        "child_time_only_program",
        Command::new(std::env::current_exe().unwrap())
            .args([
                "--ignored",
                "--exact",
                "child_time_only_program",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(TIME_ONLY_CHILD_ENV, "1")
            .env(picollo_spans::COUNTERS_ENV, "")
            .stdin(Stdio::piped()),
        false,
    );
    let pid = child.pid();
    let mut stdin = child.stdin();
    let mut wait_for = |what: &str| -> String {
        loop {
            let line = child.line_containing(what, DEADLINE);
            if line.starts_with(what) {
                return line.trim_end().to_owned();
            }
        }
    };
    let mut send = |what: &str| {
        writeln!(stdin, "{what}").unwrap();
        stdin.flush().unwrap();
    };
    assert_eq!(
        wait_for("READY"),
        "READY []",
        "the program starts time only"
    );
    let mut consumer = SpanConsumer::attach(pid).unwrap();
    assert_eq!(consumer.rings(), 1, "{consumer:?}");

    let page_faults = picollo_linux::span::SpanCounters::parse("page-faults").unwrap();
    consumer.request_counters(&page_faults).unwrap();
    let pending = consumer.request_outcomes(Duration::ZERO).unwrap();
    assert_eq!(
        pending[0].status,
        RequestStatus::Pending,
        "idle: not applied yet"
    );

    send("ticks");
    let ticked = wait_for("TICKED");
    assert_eq!(ticked, "TICKED [\"page-faults\"]");
    let outcome = consumer.request_outcomes(Duration::from_secs(5)).unwrap();
    assert_eq!(outcome[0].status, RequestStatus::Applied);
    assert_eq!(
        outcome[0]
            .counters
            .iter()
            .find(|c| c.0 == "page-faults")
            .map(|c| c.1),
        Some(CounterStatus::Measured)
    );

    send("work");
    wait_for("WORKED");
    let polled = consumer.poll().unwrap();
    assert_eq!(polled.lost, 0);
    let agg = consumer.aggregator();
    let pf = agg
        .counters()
        .iter()
        .position(|c| c == "page-faults")
        .expect("the frames carry page-faults");
    let alloc = agg.span("alloc").unwrap();
    assert_eq!(alloc.count(), ROUNDS as u64);
    // Exact: every span faulted its fresh pages, no more, no less.
    let deltas = alloc.counter_deltas(pf).unwrap();
    assert_eq!(deltas.total(), ROUNDS as u64);
    assert_eq!(
        (deltas.min(), deltas.max()),
        (Some(PAGES as u64), Some(PAGES as u64))
    );
    assert_eq!(alloc.counter_sum(pf), Some((ROUNDS * PAGES) as u128));
    eprintln!("{}", consumer.table());

    send("exit");
    drop(stdin);
    assert!(child.wait(DEADLINE).status.success());
}
