//! `finish_on_sigterm` in a program that handles `SIGTERM` itself (a graceful shutdown with
//! `tokio::signal`): whichever of the two was installed first, the signal must not end the
//! process, the program's shutdown runs to its end, and its `Handle::finish` reports the
//! spans closed during the shutdown, in the table and in the last `.hlog` interval. And in a
//! program that does not, the layer finishes and the process ends killed by `SIGTERM`, as
//! before; also when its finish blocks (an `.hlog` sink that never returns, a stderr nobody
//! reads): then the signal ends it after the grace, and stderr says what was cut short. A
//! layer that was dropped does nothing at the signal: the process ends as if it had never been
//! installed. Real processes receiving a real `SIGTERM`: each case is an `#[ignore]`d child
//! that its parent test runs, reading its output with a deadline (`picollo_testkit::child`), so a
//! child that does not end fails its test instead of hanging it.
#![cfg(unix)]

use std::fs::File;
use std::io::Write;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use picollo_testkit::child::{Ended, Watched, DEADLINE};

use picollo_tracing::{Handle, PicolloLayer, DEFAULT_SIGTERM_GRACE};
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

/// The grace of the children whose finish blocks.
const GRACE: Duration = Duration::from_secs(1);
/// What such a child may take beyond the grace to end (to say what was cut short, at most
/// 1 s, and to start and end threads on a loaded machine).
const MARGIN: Duration = Duration::from_secs(10);

/// The layer as the README configures it (time only, so the test does not depend on a PMU).
fn layer() -> (PicolloLayer, Handle) {
    let hlog = std::env::var_os(HLOG_ENV).expect("the parent names the .hlog");
    layer_into(File::create(hlog).unwrap(), None)
}

/// The same layer with its `.hlog` into `out`, and a grace when given.
fn layer_into(out: impl Write + Send + 'static, grace: Option<Duration>) -> (PicolloLayer, Handle) {
    let mut builder = PicolloLayer::builder()
        .time_only()
        .report_at_exit(true)
        .hlog(out, Duration::from_secs(3600))
        .finish_on_sigterm(true);
    if let Some(grace) = grace {
        builder = builder.sigterm_grace(grace);
    }
    let layer = builder.build();
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
    serve_until_killed();
}

/// Closes `SERVED` spans, says it is ready, and waits for the signal.
fn serve_until_killed() -> ! {
    for _ in 0..SERVED {
        let _s = tracing::info_span!("served").entered();
    }
    println!("{READY}");
    std::io::stdout().flush().unwrap();
    loop {
        std::thread::sleep(Duration::from_secs(1));
    }
}

/// An `.hlog` sink that takes the header, then never returns (a stuck disk, a pipe nobody
/// reads) once `STUCK` is set.
struct StuckSink;

static STUCK: AtomicBool = AtomicBool::new(false);

impl Write for StuckSink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        while STUCK.load(Ordering::Relaxed) {
            std::thread::park();
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.write(&[]).map(drop)
    }
}

#[test]
#[ignore = "a child process of a_sink_that_never_returns_does_not_keep_sigterm_from_ending_it"]
fn child_stuck_sink() {
    let (layer, _handle) = layer_into(StuckSink, Some(GRACE));
    tracing_subscriber::registry().with(layer).init();
    STUCK.store(true, Ordering::Relaxed);
    serve_until_killed();
}

#[test]
#[ignore = "a child process of a_stderr_nobody_reads_does_not_keep_sigterm_from_ending_it"]
fn child_stuck_stderr() {
    let (layer, _handle) = layer_into(std::io::sink(), Some(GRACE));
    tracing_subscriber::registry().with(layer).init();
    // Fills stderr, which the parent reads only once the child ended: this thread blocks
    // with the pipe full, and so does every later write to stderr (the table's too).
    std::thread::spawn(|| loop {
        let _ = std::io::stderr().write_all(&[b'x'; 4096]);
    });
    std::thread::sleep(Duration::from_millis(300));
    serve_until_killed();
}

/// An `.hlog` sink that says when it is dropped (closed).
struct ClosedSink(File, Arc<AtomicBool>);

impl Write for ClosedSink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

impl Drop for ClosedSink {
    fn drop(&mut self) {
        self.1.store(true, Ordering::SeqCst);
    }
}

/// The threads of this process named `name` (Linux; elsewhere none are listed).
fn threads_named(name: &str) -> usize {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return 0;
    };
    tasks
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .filter(|comm| comm.trim() == name)
        .count()
}

#[test]
#[ignore = "a child process of a_dropped_layer_prints_nothing_and_sigterm_ends_the_process"]
fn child_dropped_layer() {
    let hlog = std::env::var_os(HLOG_ENV).expect("the parent names the .hlog");
    let closed = Arc::new(AtomicBool::new(false));
    let sink = ClosedSink(File::create(hlog).unwrap(), closed.clone());
    let (layer, handle) = layer_into(sink, None);
    // The periodic writer names itself once it runs.
    let deadline = std::time::Instant::now() + DEADLINE;
    while threads_named("picollo-hlog") < usize::from(cfg!(target_os = "linux")) {
        assert!(
            std::time::Instant::now() < deadline,
            "the periodic writer runs"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    tracing::subscriber::with_default(tracing_subscriber::registry().with(layer), || {
        for _ in 0..SERVED {
            let _s = tracing::info_span!("dropped").entered();
        }
    });
    // The subscriber, and the layer with it, are dropped: the sink is closed (after the last
    // interval), the periodic writer has stopped, and a finish does nothing.
    assert!(closed.load(Ordering::SeqCst), "the sink is closed");
    let deadline = std::time::Instant::now() + DEADLINE;
    while threads_named("picollo-hlog") > 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the periodic writer stopped"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    handle.finish();
    drop(handle);
    println!("{READY}");
    std::io::stdout().flush().unwrap();
    loop {
        std::thread::sleep(Duration::from_secs(1));
    }
}

/// What a child left: how it ended, its stdout and stderr, its `.hlog`.
struct Run {
    ended: Ended,
    hlog: String,
}

impl std::ops::Deref for Run {
    type Target = Ended;
    fn deref(&self) -> &Ended {
        &self.ended
    }
}

/// Runs child test `name`, sends it SIGTERM once it is ready, and waits for it to end (at
/// most `within`; stderr read as it comes, or only after the end with `stderr_after_exit`).
fn run_and_terminate(name: &str, within: Duration, stderr_after_exit: bool) -> Run {
    let dir = std::env::temp_dir().join(format!("picollo-sigterm-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let hlog: PathBuf = dir.join("spans.hlog");
    let mut child = Watched::spawn(
        name,
        Command::new(std::env::current_exe().unwrap())
            .args([
                "--ignored",
                "--exact",
                name,
                "--nocapture",
                "--test-threads=1",
            ])
            .env(HLOG_ENV, &hlog)
            .env_remove("PICOLLO_COUNTERS"),
        stderr_after_exit,
    );
    // The harness prints `test NAME ... ` first, on the same line.
    child.line_containing(READY, DEADLINE);
    child.signal(libc::SIGTERM);
    let ended = child.wait(within);
    let hlog = std::fs::read_to_string(&hlog).unwrap_or_default();
    let _ = std::fs::remove_dir_all(&dir);
    Run { ended, hlog }
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
fn assert_the_program_kept_its_shutdown(e: &Run) {
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
    assert_the_program_kept_its_shutdown(&run_and_terminate("child_layer_first", DEADLINE, false));
}

#[test]
fn the_programs_handler_first_then_the_layer() {
    assert_the_program_kept_its_shutdown(&run_and_terminate(
        "child_handler_first",
        DEADLINE,
        false,
    ));
}

#[test]
fn without_a_handler_the_layer_finishes_and_the_signal_ends_it() {
    let e = run_and_terminate("child_no_handler", DEADLINE, false);
    assert_eq!(e.status.signal(), Some(libc::SIGTERM), "{:?}", e.status);
    assert_eq!(count_in_table(&e.stderr, "served").as_deref(), Some("5"));
    assert!(e.hlog.contains("Tag=served.busy,"), "{}", e.hlog);
}

/// The child ended killed by SIGTERM, within the grace and the margin, after the grace.
fn assert_ended_after_the_grace(e: &Ended) {
    assert_eq!(e.status.signal(), Some(libc::SIGTERM), "{:?}", e.status);
    assert!(
        e.waited >= GRACE.mul_f64(0.9),
        "the finish had its grace: ended after {:?}",
        e.waited
    );
}

#[test]
fn a_sink_that_never_returns_does_not_keep_sigterm_from_ending_it() {
    let e = run_and_terminate("child_stuck_sink", GRACE + MARGIN, false);
    assert_ended_after_the_grace(&e);
    assert!(
        e.stderr.contains(
            "picollo-tracing: SIGTERM: the finish was cut short after 1 s \
             (Builder::sigterm_grace); not written: the last .hlog interval"
        ),
        "stderr says what was cut short: {}",
        e.stderr
    );
    assert_eq!(
        count_in_table(&e.stderr, "served").as_deref(),
        Some("5"),
        "the table is printed still (the finish had not started it)"
    );
    assert_eq!(e.stderr.matches("picollo-tracing spans:").count(), 1);
}

#[test]
fn a_stderr_nobody_reads_does_not_keep_sigterm_from_ending_it() {
    let e = run_and_terminate("child_stuck_stderr", GRACE + MARGIN, true);
    assert_ended_after_the_grace(&e);
}

#[test]
fn a_dropped_layer_prints_nothing_and_sigterm_ends_the_process() {
    let e = run_and_terminate("child_dropped_layer", DEADLINE, false);
    assert_eq!(e.status.signal(), Some(libc::SIGTERM), "{:?}", e.status);
    assert!(
        e.waited < DEFAULT_SIGTERM_GRACE,
        "ended at once, as without the layer: {:?}",
        e.waited
    );
    assert!(!e.stderr.contains("picollo-tracing"), "{}", e.stderr);
    assert!(
        e.hlog.contains("Tag=dropped.busy,"),
        "the drop wrote the last interval: {}",
        e.hlog
    );
}
