//! `finish_on_sigterm` in a program that handles `SIGTERM` itself (a graceful shutdown with
//! `tokio::signal`): whichever of the two was installed first, the signal must not end the
//! process, the program's shutdown runs to its end, and its `Handle::finish` reports the
//! spans closed during the shutdown, in the table and in the last `.hlog` interval. And in a
//! program that does not, the layer finishes and the process ends killed by `SIGTERM`, as
//! before. Real processes receiving a real `SIGTERM`: each case is an `#[ignore]`d child
//! that its parent test runs.
#![cfg(unix)]

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use picollo_tracing::{Handle, PicolloLayer};
use tokio::signal::unix::{signal, Signal, SignalKind};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

/// The `.hlog` of the child, set by its parent.
const HLOG_ENV: &str = "PICOLLO_TRACING_SIGTERM_HLOG";
/// What a child prints once its handlers are installed.
const READY: &str = "sigterm-child-ready";
/// Spans closed before the signal, and during the program's shutdown.
const SERVED: usize = 5;
const AT_SHUTDOWN: usize = 9;

/// The layer as the README configures it (time only, so the test does not depend on a PMU).
fn layer() -> (PicolloLayer, Handle) {
    let hlog = std::env::var_os(HLOG_ENV).expect("the parent names the .hlog");
    let layer = PicolloLayer::builder()
        .time_only()
        .report_at_exit(true)
        .hlog(File::create(hlog).unwrap(), Duration::from_secs(3600))
        .finish_on_sigterm(true)
        .build();
    let handle = layer.handle();
    (layer, handle)
}

/// The program's own SIGTERM handler, as a tokio server installs it.
fn own_handler(rt: &tokio::runtime::Runtime) -> Signal {
    let _in_runtime = rt.enter();
    signal(SignalKind::terminate()).unwrap()
}

/// Serves, says it is ready, waits for SIGTERM, then shuts down gracefully: spans close
/// during the shutdown, then `Handle::finish`, then a last word on stdout and a normal exit.
fn serve_then_shut_down(rt: &tokio::runtime::Runtime, mut term: Signal, handle: &Handle) {
    for _ in 0..SERVED {
        let _s = tracing::info_span!("served").entered();
    }
    println!("{READY}");
    std::io::stdout().flush().unwrap();
    rt.block_on(term.recv());
    for _ in 0..AT_SHUTDOWN {
        let _s = tracing::info_span!("shutdown_flush").entered();
        std::thread::sleep(Duration::from_millis(1));
    }
    handle.finish();
    println!("shutdown complete");
    std::io::stdout().flush().unwrap();
    std::process::exit(0);
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[test]
#[ignore = "a child process of layer_first_then_the_programs_handler"]
fn child_layer_first() {
    let rt = runtime();
    let (layer, handle) = layer();
    tracing_subscriber::registry().with(layer).init();
    let term = own_handler(&rt);
    serve_then_shut_down(&rt, term, &handle);
}

#[test]
#[ignore = "a child process of the_programs_handler_first_then_the_layer"]
fn child_handler_first() {
    let rt = runtime();
    let term = own_handler(&rt);
    let (layer, handle) = layer();
    tracing_subscriber::registry().with(layer).init();
    serve_then_shut_down(&rt, term, &handle);
}

#[test]
#[ignore = "a child process of without_a_handler_the_layer_finishes_and_the_signal_ends_it"]
fn child_no_handler() {
    let (layer, _handle) = layer();
    tracing_subscriber::registry().with(layer).init();
    for _ in 0..SERVED {
        let _s = tracing::info_span!("served").entered();
    }
    println!("{READY}");
    std::io::stdout().flush().unwrap();
    loop {
        std::thread::sleep(Duration::from_secs(1));
    }
}

/// What a child left: how it ended, its stdout after "ready", its stderr, its `.hlog`.
struct Ended {
    status: std::process::ExitStatus,
    stdout: String,
    stderr: String,
    hlog: String,
}

/// Runs child test `name`, sends it SIGTERM once it is ready, and waits for it.
fn run_and_terminate(name: &str) -> Ended {
    let dir = std::env::temp_dir().join(format!("picollo-sigterm-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let hlog: PathBuf = dir.join("spans.hlog");
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--ignored",
            "--exact",
            name,
            "--nocapture",
            "--test-threads=1",
        ])
        .env(HLOG_ENV, &hlog)
        .env_remove("PICOLLO_COUNTERS")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    // The harness prints `test NAME ... ` first, on the same line.
    while !line.contains(READY) {
        line.clear();
        assert!(
            out.read_line(&mut line).unwrap() > 0,
            "the child ended before it was ready"
        );
    }
    let pid = i32::try_from(child.id()).unwrap();
    // SAFETY: `kill` has no memory effects; `pid` is our child, not yet waited for.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    let mut stdout = String::new();
    out.read_to_string(&mut stdout).unwrap();
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    let status = child.wait().unwrap();
    let hlog = std::fs::read_to_string(&hlog).unwrap_or_default();
    let _ = std::fs::remove_dir_all(&dir);
    eprintln!("{name}: {status:?}\nstdout:\n{stdout}\nstderr:\n{stderr}");
    Ended {
        status,
        stdout,
        stderr,
        hlog,
    }
}

/// The `N` cell of the table's row `name` on stderr.
fn count_in_table(stderr: &str, name: &str) -> Option<String> {
    let row = stderr
        .lines()
        .find(|l| l.starts_with(&format!("| {name} ")))?;
    Some(row.split('|').map(str::trim).nth(2)?.to_owned())
}

/// The program kept its shutdown: it ran to its end and exited normally, and its
/// `Handle::finish` reported every span, the shutdown's included, once.
fn assert_the_program_kept_its_shutdown(e: &Ended) {
    assert_eq!(e.status.code(), Some(0), "not killed: {:?}", e.status);
    assert!(e.stdout.contains("shutdown complete"), "{}", e.stdout);
    assert_eq!(count_in_table(&e.stderr, "served").as_deref(), Some("5"));
    assert_eq!(
        count_in_table(&e.stderr, "shutdown_flush").as_deref(),
        Some("9"),
        "the spans closed during the shutdown are in the table"
    );
    assert_eq!(e.stderr.matches("picollo-tracing spans:").count(), 1);
    assert!(
        e.hlog.contains("Tag=shutdown_flush.busy,"),
        "the last interval holds the shutdown's spans: {}",
        e.hlog
    );
}

#[test]
fn layer_first_then_the_programs_handler() {
    assert_the_program_kept_its_shutdown(&run_and_terminate("child_layer_first"));
}

#[test]
fn the_programs_handler_first_then_the_layer() {
    assert_the_program_kept_its_shutdown(&run_and_terminate("child_handler_first"));
}

#[test]
fn without_a_handler_the_layer_finishes_and_the_signal_ends_it() {
    let e = run_and_terminate("child_no_handler");
    assert_eq!(e.status.signal(), Some(libc::SIGTERM), "{:?}", e.status);
    assert_eq!(count_in_table(&e.stderr, "served").as_deref(), Some("5"));
    assert!(e.hlog.contains("Tag=served.busy,"), "{}", e.hlog);
}
