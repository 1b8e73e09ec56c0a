//! `picollo attach` and `picollo top`: read a running process's shared-memory rings.
//!
//! - `attach PID --csv DIR`: every ring of the process (one per frame kind, one per thread
//!   for spans) drained to `DIR/<ring>.csv`, with rings created later picked up as they
//!   appear;
//! - `attach PID --output run.bin`: the same frames into a capture file, for `convert`;
//! - `attach PID --spans`: the span rings aggregated into the per-phase table and the
//!   counter-event table;
//! - `top PID`: the span tables of the last interval, refreshed every interval;
//! - `-e cycles,instructions`: asks the process's span threads to count these (see
//!   [`picollo_linux::span`](mod@picollo_linux::span)), and reports what each thread could open;
//! - `--format json`: one JSON object per interval on stdout (one for `attach`, one per
//!   refresh for `top`), for scripts.
//!
//! All stop after `--duration` (or `--count` refreshes) or when the process exits.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use clap::{ArgGroup, Args, ValueEnum};
use picollo_core::fmt::Grouped;
use picollo_linux::shm::ShmError;
use picollo_linux::span::{RingEvent, SpanConsumer, SpanCounters};
use picollo_ring::{CounterStatus, RequestStatus};
use picollo_spans::{unavailable_reason, SpanAggregator};

use crate::error::{CliError, Result};
use crate::frames::{csv_summary, spans_markdown, Sinks};
use crate::json;
use crate::live_json::{
    path, AttachReport, AttachRing, AttachSpans, Capture, CounterRequest, FileFrames, RingRequest,
    Slot, Spans, TopHead, Totals,
};

/// How often rings are drained.
const POLL: Duration = Duration::from_millis(20);
/// How often the process's rings are listed again (threads that began spans since).
const RESCAN: Duration = Duration::from_millis(500);
/// How long `-e` waits for the threads to apply the counters.
const REQUEST_WAIT: Duration = Duration::from_secs(2);

/// Keys typed to `top`: `q` quits. On a terminal, standard input is switched to
/// character-at-a-time input without echo (restored on drop, and on Ctrl-C, which quits
/// the same way); from a pipe, a `q` in what arrives quits too. End of input (such as
/// `/dev/null`) just stops the watching.
struct Keys {
    /// The terminal settings to restore, when standard input is a terminal.
    saved: Option<libc::termios>,
    open: bool,
}

/// Set by the SIGINT handler while `top` watches its keys.
static INTERRUPTED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

extern "C" fn on_interrupt(_: libc::c_int) {
    INTERRUPTED.store(true, std::sync::atomic::Ordering::Relaxed);
}

impl Keys {
    fn watch() -> Self {
        let mut saved = None;
        if std::io::stdin().is_terminal() {
            // SAFETY: an all-zero termios is a valid value for tcgetattr to overwrite.
            let mut t: libc::termios = unsafe { core::mem::zeroed() };
            // SAFETY: fd 0 is open (a terminal) and `t` is a valid termios to write.
            if unsafe { libc::tcgetattr(0, &mut t) } == 0 {
                let mut raw = t;
                raw.c_lflag &= !(libc::ICANON | libc::ECHO);
                raw.c_cc[libc::VMIN] = 0;
                raw.c_cc[libc::VTIME] = 0;
                // SAFETY: fd 0 is a terminal and `raw` a termios read from it, modified.
                if unsafe { libc::tcsetattr(0, libc::TCSANOW, &raw) } == 0 {
                    saved = Some(t);
                    // Ctrl-C must restore the terminal too: it sets a flag the loop reads.
                    INTERRUPTED.store(false, std::sync::atomic::Ordering::Relaxed);
                    // SAFETY: the handler only stores to an atomic (async-signal-safe).
                    unsafe {
                        libc::signal(
                            libc::SIGINT,
                            on_interrupt as extern "C" fn(libc::c_int) as libc::sighandler_t,
                        )
                    };
                }
            }
        }
        Keys { saved, open: true }
    }

    /// Whether `q` was typed (or Ctrl-C pressed) since the last call; never blocks.
    fn quit(&mut self) -> bool {
        if INTERRUPTED.load(std::sync::atomic::Ordering::Relaxed) {
            return true;
        }
        let mut buf = [0u8; 64];
        while self.open {
            let mut fds = libc::pollfd {
                fd: 0,
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one valid pollfd, no wait.
            if unsafe { libc::poll(&mut fds, 1, 0) } <= 0 {
                return false;
            }
            if fds.revents & (libc::POLLIN | libc::POLLHUP) == 0 {
                self.open = false; // POLLERR/POLLNVAL: stop watching
                return false;
            }
            // SAFETY: `buf` is valid for `buf.len()` bytes; fd 0 is readable now.
            let n = unsafe { libc::read(0, buf.as_mut_ptr().cast(), buf.len()) };
            if n <= 0 {
                self.open = false; // end of input, or an error: stop watching
                return false;
            }
            if buf[..n as usize].iter().any(|&b| b == b'q' || b == b'Q') {
                return true;
            }
        }
        false
    }
}

impl Drop for Keys {
    fn drop(&mut self) {
        if let Some(t) = self.saved.take() {
            // SAFETY: restores the settings read from the same terminal in `watch`.
            unsafe { libc::tcsetattr(0, libc::TCSANOW, &t) };
            // SAFETY: restores the default action for SIGINT.
            unsafe { libc::signal(libc::SIGINT, libc::SIG_DFL) };
        }
    }
}

/// The output of `attach` and `top`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub(crate) enum LiveFormat {
    /// Markdown tables and summary lines (the default).
    #[default]
    Markdown,
    /// One JSON object per interval, on one line.
    Json,
}

/// The arguments of `attach`.
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("mode").required(true).multiple(true).args(["csv", "spans", "output"])))]
pub(crate) struct AttachArgs {
    /// The process id.
    pub(crate) pid: i32,
    /// Write every ring to `DIR/<ring>.csv`.
    #[arg(long, value_name = "DIR")]
    pub(crate) csv: Option<PathBuf>,
    /// Aggregate the span rings and print the per-phase table.
    #[arg(long)]
    pub(crate) spans: bool,
    /// Write every ring's frames to a capture file (for `picollo convert`).
    #[arg(short = 'o', long, value_name = "FILE")]
    pub(crate) output: Option<PathBuf>,
    /// Stop after S seconds (default: when the process exits).
    #[arg(long, value_name = "S")]
    pub(crate) duration: Option<f64>,
    /// Counters for the span threads to sample, comma-separated perf names (cycles,
    /// instructions, page-faults, task-clock, rNNNN, pmu/…/).
    #[arg(short = 'e', long = "events", value_name = "EVENTS")]
    pub(crate) events: Option<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = LiveFormat::Markdown)]
    pub(crate) format: LiveFormat,
}

/// Whether process `pid` is running (it has a `/proc` entry).
fn alive(pid: i32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

fn check_pid(pid: i32) -> Result<()> {
    if pid <= 0 || !alive(pid) {
        return Err(CliError::new(format!(
            "no process {pid}; give the pid of a running process"
        )));
    }
    Ok(())
}

/// When to stop: a deadline, if any.
fn deadline(duration: Option<f64>) -> Result<Option<Instant>> {
    match duration {
        None => Ok(None),
        Some(s) if s.is_finite() && s >= 0.0 => {
            Ok(Some(Instant::now() + Duration::from_secs_f64(s)))
        }
        Some(s) => Err(CliError::new(format!(
            "--duration {s} is not a number of seconds; give one such as 2.5"
        ))),
    }
}

/// A process's rings read into sinks: the one consumer loop (`SpanConsumer::poll_with`), its
/// rings and frames handed to the sinks.
struct Live {
    consumer: SpanConsumer,
    sinks: Sinks,
    /// Only span rings are attached (no CSV, capture or JSON lines).
    spans_only: bool,
    /// The sinks' id of each of the consumer's rings, by the consumer's index.
    ids: Vec<u32>,
    /// Skipped rings already reported.
    skipped_shown: usize,
    /// The `-e` counters (checked before anything is sent), asked of every span ring.
    request: Option<SpanCounters>,
}

/// Hands one event of the consumer's loop to the sinks.
fn feed(sinks: &mut Sinks, ids: &mut Vec<u32>, spans_only: bool, e: RingEvent<'_>) -> Result<()> {
    match e {
        RingEvent::Attached {
            ring,
            name,
            segment,
            info,
        } => {
            let id = sinks.add_ring(name, info)?;
            if ids.len() <= ring {
                ids.resize(ring + 1, u32::MAX);
            }
            ids[ring] = id;
            if !spans_only {
                eprintln!("picollo: attached to {segment}");
            }
        }
        RingEvent::Frame {
            ring,
            info,
            number,
            words,
        } => {
            if let Some(&id) = ids.get(ring) {
                sinks.frame(id, info, number, words)?;
            }
        }
        RingEvent::Lost { ring, count } => {
            if let Some(&id) = ids.get(ring) {
                sinks.lost(id, count)?;
            }
        }
        _ => {}
    }
    Ok(())
}

impl Live {
    /// Attaches to the process's rings (its span rings only when the sinks want nothing
    /// else) and asks the span rings for `request`.
    fn attach(pid: i32, sinks: Sinks, request: Option<SpanCounters>) -> Result<Self> {
        let spans_only = sinks.spans_only();
        let consumer = if spans_only {
            SpanConsumer::attach(pid)
        } else {
            SpanConsumer::attach_all(pid)
        }
        .map_err(|e| list_error(pid, &e))?;
        let mut live = Self {
            consumer,
            sinks,
            spans_only,
            ids: Vec::new(),
            skipped_shown: 0,
            request,
        };
        live.report_skipped();
        if let Some(counters) = &live.request {
            live.consumer.request_counters(counters).map_err(|e| {
                CliError::new(format!(
                    "-e: {e}; ask for fewer counters, or start the program with more counter \
                     slots (SpanConfig::with_counter_slots)"
                ))
            })?;
        }
        Ok(live)
    }

    /// Rings that could not be attached, said once each (with CSV or capture output).
    fn report_skipped(&mut self) {
        let skipped = self.consumer.skipped();
        if !self.spans_only {
            for (segment, why) in &skipped[self.skipped_shown..] {
                eprintln!("picollo: skipping {segment}: {why}");
            }
        }
        self.skipped_shown = skipped.len();
    }

    /// Attaches to the process's rings not attached yet.
    fn scan(&mut self) -> Result<()> {
        let pid = self.consumer.pid();
        self.consumer.refresh().map_err(|e| list_error(pid, &e))?;
        self.report_skipped();
        Ok(())
    }

    /// Drains every ring into the sinks.
    fn drain(&mut self) -> Result<()> {
        let (sinks, ids, spans_only) = (&mut self.sinks, &mut self.ids, self.spans_only);
        let mut failed: Option<CliError> = None;
        self.consumer
            .poll_with(|e| {
                if failed.is_none() {
                    failed = feed(sinks, ids, spans_only, e).err();
                }
            })
            .map_err(|e| CliError::new(format!("reading {e}")))?;
        failed.map_or(Ok(()), Err)
    }

    /// Drains the rings for `step` (rescanning for new rings every `RESCAN`), or until
    /// process `pid` exits; `false` when the user asked to quit.
    fn drain_for(
        &mut self,
        step: Duration,
        pid: i32,
        keys: &mut Keys,
        last_scan: &mut Instant,
    ) -> Result<bool> {
        let t0 = Instant::now();
        while t0.elapsed() < step {
            self.drain()?;
            if keys.quit() {
                return Ok(false);
            }
            if !alive(pid) {
                break;
            }
            if last_scan.elapsed() >= RESCAN {
                *last_scan = Instant::now();
                self.scan()?;
            }
            std::thread::sleep(POLL.min(step));
        }
        Ok(true)
    }

    /// Waits (draining) until every ring asked with `-e` applied it, or `wait` passed, then
    /// reports per ring on stderr and returns the JSON of the outcome.
    fn settle_request(&mut self, wait: Duration) -> Result<Option<CounterRequest>> {
        let Some(list) = self.request.as_ref().map(SpanCounters::to_string) else {
            return Ok(None);
        };
        let pid = self.consumer.pid();
        let (sinks, ids, spans_only) = (&mut self.sinks, &mut self.ids, self.spans_only);
        let mut failed: Option<CliError> = None;
        let outcomes = self
            .consumer
            .request_outcomes_with(
                wait,
                |e| {
                    if failed.is_none() {
                        failed = feed(sinks, ids, spans_only, e).err();
                    }
                },
                || !alive(pid),
            )
            .map_err(|e| CliError::new(format!("reading {e}")))?;
        if let Some(e) = failed {
            return Err(e);
        }
        let mut rings = Vec::new();
        for o in &outcomes {
            let mut measured = Vec::new();
            let mut unavailable = Vec::new();
            let mut slots = Vec::new();
            for (name, status, errno) in &o.counters {
                match status {
                    CounterStatus::Measured => measured.push(name.clone()),
                    CounterStatus::Unavailable => {
                        unavailable.push(format!("{name} ({})", unavailable_reason(*errno)))
                    }
                    _ => continue,
                }
                slots.push(Slot::new(name, *status, *errno));
            }
            let counting = if measured.is_empty() {
                "time only".to_owned()
            } else {
                measured.join(", ")
            };
            let status_name = match o.status {
                RequestStatus::Applied => "applied",
                RequestStatus::Pending => "pending",
                RequestStatus::Superseded => "superseded",
            };
            match o.status {
                RequestStatus::Pending => eprintln!(
                    "picollo: {}: counter request pending: the thread has not begun an \
                     outermost span since (it applies requests there); still counting: \
                     {counting}",
                    o.ring,
                ),
                _ => {
                    let mut line = format!("picollo: {}: counting {counting}", o.ring);
                    if !unavailable.is_empty() {
                        line.push_str(&format!("; unavailable: {}", unavailable.join(", ")));
                    }
                    if o.status == RequestStatus::Superseded {
                        line.push_str(" (another reader asked for counters after this one)");
                    }
                    eprintln!("{line}");
                }
            }
            rings.push(RingRequest {
                ring: o.ring.clone(),
                status: status_name,
                counters: slots,
            });
        }
        Ok(Some(CounterRequest {
            counters: list,
            rings,
        }))
    }

    fn no_rings_error(&self) -> CliError {
        let pid = self.consumer.pid();
        let skipped = self.consumer.skipped();
        if !skipped.is_empty() {
            let why: Vec<String> = skipped.iter().map(|(s, w)| format!("{s}: {w}")).collect();
            return CliError::new(format!(
                "no {}ring of process {pid} could be attached: {}",
                if self.spans_only { "span " } else { "" },
                why.join("; ")
            ));
        }
        if self.spans_only {
            CliError::new(format!(
                "process {pid} has no span rings (no picollo-span-* memfd in /proc/{pid}/fd); a \
                 thread opens one at its first span of `picollo_linux::span!` or of the \
                 `picollo-tracing` layer (`PicolloLayer`, with rings on, its default): check \
                 that the process installs one of them and has begun a span"
            ))
        } else {
            CliError::new(format!(
                "process {pid} has no Picollo rings (no picollo-* memfd in /proc/{pid}/fd); it must \
                 create them (picollo_linux::shm writers, or spans with `span!`) before \
                 attaching"
            ))
        }
    }
}

/// The `-e` list, checked here (every name an event) before anything is sent to a process.
fn requested_counters(list: Option<&str>) -> Result<Option<SpanCounters>> {
    let Some(list) = list else {
        return Ok(None);
    };
    let counters = SpanCounters::parse(list).map_err(|e| {
        CliError::new(format!(
            "-e: {e}; give perf event names such as -e page-faults,cycles (`picollo \
             counters` lists those available here)"
        ))
    })?;
    if counters.is_empty() {
        return Err(CliError::new(
            "-e names no counter; give perf event names such as -e page-faults,cycles",
        ));
    }
    Ok(Some(counters))
}

/// Listing the process's rings failed.
fn list_error(pid: i32, e: &ShmError) -> CliError {
    CliError::new(format!(
        "cannot list the rings of process {pid}: {e}; attach as the user the process runs as \
         (or root)"
    ))
}

fn sinks_for(o: &AttachArgs) -> Result<Sinks> {
    let mut s = Sinks::new();
    if let Some(dir) = &o.csv {
        s = s.csv(dir)?;
    }
    if let Some(path) = &o.output {
        s = s.capture(path, o.pid as u32)?;
    }
    if o.spans || o.events.is_some() {
        s = s.spans();
    }
    Ok(s)
}

/// `attach`: reads the rings of `o.pid` into the chosen sinks until the deadline or the
/// process exits; returns what goes to stdout.
///
/// # Errors
/// No such process, no rings, a file that cannot be written, a ring that fails its checks.
pub(crate) fn attach(o: &AttachArgs) -> Result<String> {
    check_pid(o.pid)?;
    let until = deadline(o.duration)?;
    let started = Instant::now();
    let mut live = Live::attach(
        o.pid,
        sinks_for(o)?,
        requested_counters(o.events.as_deref())?,
    )?;
    if live.consumer.rings() == 0 {
        return Err(live.no_rings_error());
    }
    let request = live.settle_request(REQUEST_WAIT.min(until.map_or(REQUEST_WAIT, |t| {
        t.saturating_duration_since(Instant::now())
    })))?;
    let mut last_scan = Instant::now();
    loop {
        live.drain()?;
        live.sinks.flush()?;
        if until.is_some_and(|t| Instant::now() >= t) || !alive(o.pid) {
            break;
        }
        if last_scan.elapsed() >= RESCAN {
            last_scan = Instant::now();
            live.scan()?;
        }
        std::thread::sleep(POLL);
    }
    live.drain()?;
    let capture = live.sinks.finish()?;
    let seconds = started.elapsed().as_secs_f64();
    Ok(match o.format {
        LiveFormat::Json => attach_json(o.pid, seconds, &live, capture.as_ref(), request),
        LiveFormat::Markdown => attach_markdown(o.pid, &live, capture.as_ref()),
    })
}

/// `attach`'s report as one JSON line: every ring's frames, losses and CSV files, the
/// capture, the counter request's outcome and the span report.
fn attach_json(
    pid: i32,
    seconds: f64,
    live: &Live,
    capture: Option<&(PathBuf, u64, u64)>,
    request: Option<CounterRequest>,
) -> String {
    let report = AttachReport {
        kind: "attach",
        pid,
        seconds,
        rings: live
            .sinks
            .totals()
            .iter()
            .map(|t| AttachRing {
                ring: t.name.clone(),
                frames: t.frames,
                lost: t.lost,
                csv: t
                    .csv
                    .iter()
                    .map(|(p, n)| FileFrames {
                        path: path(p),
                        frames: *n,
                    })
                    .collect(),
            })
            .collect(),
        capture: capture.map(|(p, frames, lost)| Capture {
            path: path(p),
            frames: *frames,
            lost: *lost,
        }),
        counter_request: request,
        spans: live.sinks.aggregator().map(|agg| {
            let head = AttachSpans {
                rings: live.sinks.span_rings(),
            };
            Spans::new(head, agg)
        }),
    };
    format!("{}\n", json::to_line(&report))
}

/// `attach`'s report in Markdown: the CSV files, the capture and the span tables.
fn attach_markdown(pid: i32, live: &Live, capture: Option<&(PathBuf, u64, u64)>) -> String {
    let totals = live.sinks.totals();
    let mut out = csv_summary(&totals);
    if let Some((path, frames, lost)) = capture {
        out.push_str(&format!(
            "{}: {} frames, {} lost, {} rings\n",
            path.display(),
            Grouped(*frames),
            Grouped(*lost),
            totals.len()
        ));
    }
    if let Some(agg) = live.sinks.aggregator() {
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(&format!(
            "- process: {pid}\n- rings: {}\n- frames: {} ({} lost)\n\n{}",
            live.sinks.span_rings(),
            Grouped(agg.accepted()),
            Grouped(agg.lost()),
            spans_markdown(agg)
        ));
    }
    out
}

/// The arguments of `top`.
#[derive(Debug, Args)]
pub(crate) struct TopArgs {
    /// The process id.
    pub(crate) pid: i32,
    /// Seconds between refreshes.
    #[arg(long, value_name = "S", default_value_t = 1.0)]
    pub(crate) interval: f64,
    /// Stop after N refreshes (default: when the process exits).
    #[arg(long, value_name = "N")]
    pub(crate) count: Option<u64>,
    /// Counters for the span threads to sample (as for attach).
    #[arg(short = 'e', long = "events", value_name = "EVENTS")]
    pub(crate) events: Option<String>,
    /// Output format: redrawn tables, or one JSON object per line.
    #[arg(long, value_enum, default_value_t = LiveFormat::Markdown)]
    pub(crate) format: LiveFormat,
}

/// The live view: every `interval` seconds, the span tables of the last interval, under a
/// header with the totals (or one JSON object per line). Stops after `count` refreshes,
/// when the process exits, or on Ctrl-C.
///
/// # Errors
/// No such process, no span rings, a bad interval.
pub(crate) fn top(o: &TopArgs) -> Result<String> {
    if !(o.interval.is_finite() && o.interval >= 0.05) {
        return Err(CliError::new(format!(
            "--interval {} is too short; give at least 0.05 seconds",
            o.interval
        )));
    }
    check_pid(o.pid)?;
    let step = Duration::from_secs_f64(o.interval);
    let clear = o.format == LiveFormat::Markdown && std::io::stdout().is_terminal();
    let started = Instant::now();
    let mut live = Live::attach(
        o.pid,
        Sinks::new().spans(),
        requested_counters(o.events.as_deref())?,
    )?;
    if live.consumer.rings() == 0 {
        return Err(live.no_rings_error());
    }
    let request = live.settle_request(REQUEST_WAIT.min(step))?;
    // What was drained while settling belongs to no interval.
    let _ = live.sinks.take_interval();
    let mut totals = (0u64, 0u64);
    let mut shown = 0u64;
    let mut last_scan = Instant::now();
    let mut keys = Keys::watch();
    loop {
        if !live.drain_for(step, o.pid, &mut keys, &mut last_scan)? {
            return Ok(String::new());
        }
        live.drain()?;
        let exited = !alive(o.pid);
        let Some(a) = live.sinks.take_interval() else {
            return Ok(String::new());
        };
        totals.0 += a.accepted();
        totals.1 += a.lost();
        shown += 1;
        let view = TopView {
            o,
            started,
            shown,
            totals,
            rings: live.sinks.span_rings(),
        };
        let screen = match o.format {
            LiveFormat::Json => view.json(&a, if shown == 1 { request.clone() } else { None }),
            LiveFormat::Markdown => view.markdown(&a, clear),
        };
        let mut out = std::io::stdout().lock();
        if out
            .write_all(screen.as_bytes())
            .and_then(|()| out.flush())
            .is_err()
        {
            return Ok(String::new()); // stdout closed: stop quietly
        }
        drop(out);
        if o.count.is_some_and(|n| shown >= n) {
            return Ok(String::new());
        }
        if exited {
            eprintln!("picollo: process {} exited", o.pid);
            return Ok(String::new());
        }
    }
}

/// One refresh of `top`: its place in the run, for the header.
struct TopView<'a> {
    o: &'a TopArgs,
    started: Instant,
    shown: u64,
    /// Busy intervals read and lost since the start.
    totals: (u64, u64),
    rings: usize,
}

impl TopView<'_> {
    /// The refresh as one JSON line; `request` on the first only.
    fn json(&self, a: &SpanAggregator, request: Option<CounterRequest>) -> String {
        let head = TopHead {
            kind: "top",
            pid: self.o.pid,
            refresh: self.shown,
            interval_s: self.o.interval,
            uptime_s: self.started.elapsed().as_secs_f64(),
            rings: self.rings,
            total: Totals {
                read: self.totals.0,
                lost: self.totals.1,
            },
            counter_request: request,
        };
        format!("{}\n", json::to_line(&Spans::new(head, a)))
    }

    /// The refresh as a screen: the header and the last interval's tables (after a
    /// clear-screen sequence on a terminal).
    fn markdown(&self, a: &SpanAggregator, clear: bool) -> String {
        let mut screen = String::new();
        if clear {
            screen.push_str("\x1b[H\x1b[2J");
        }
        screen.push_str(&format!(
            "picollo top {}: every {} s, refresh {}, up {:.1} s; last interval: {} busy \
             intervals ({} lost); total {} busy intervals ({} lost); {} rings\n\n{}\n",
            self.o.pid,
            self.o.interval,
            self.shown,
            self.started.elapsed().as_secs_f64(),
            Grouped(a.accepted()),
            Grouped(a.lost()),
            Grouped(self.totals.0),
            Grouped(self.totals.1),
            self.rings,
            spans_markdown(a)
        ));
        screen
    }
}
