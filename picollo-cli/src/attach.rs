//! `picollo attach` and `picollo top`: read a running process's shared-memory rings.
//!
//! - `attach PID --csv DIR`: every ring of the process (one per frame kind, one per thread
//!   for spans) drained to `DIR/<ring>.csv`, with rings created later picked up as they
//!   appear;
//! - `attach PID --spans`: the span rings aggregated into the per-phase table;
//! - `top PID`: the span table of the last interval, refreshed every interval.
//!
//! All stop after `--duration` (or `--count` refreshes) or when the process exits.

use std::fs::File;
use std::io::{BufWriter, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use picollo_linux::shm::{list_rings, ShmError, ShmReader};
use picollo_linux::span::{SpanConsumer, RING_PREFIX};

use crate::error::{CliError, Result};

/// How often rings are drained.
const POLL: Duration = Duration::from_millis(20);

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

fn shm_err(what: &str) -> impl Fn(ShmError) -> CliError + '_ {
    move |e| CliError::new(format!("{what}: {e}"))
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

/// One ring being written to CSV.
struct CsvRing {
    reader: ShmReader,
    out: BufWriter<File>,
    path: PathBuf,
}

/// Drains every ring of `pid` to `DIR/<ring>.csv` until the deadline or the process exits;
/// returns one line per ring: path, frames and frames lost.
///
/// # Errors
/// No such process, no rings, a directory or file that cannot be written.
pub fn csv(pid: i32, dir: &Path, duration: Option<f64>) -> Result<String> {
    check_pid(pid)?;
    let until = deadline(duration)?;
    std::fs::create_dir_all(dir).map_err(|e| {
        CliError::new(format!(
            "cannot create {}: {e}; give a writable directory",
            dir.display()
        ))
    })?;
    let mut rings: Vec<CsvRing> = Vec::new();
    let mut skipped: Vec<String> = Vec::new();
    let mut last_scan: Option<Instant> = None;
    loop {
        if last_scan.is_none_or(|t| t.elapsed() >= Duration::from_millis(500)) {
            last_scan = Some(Instant::now());
            add_rings(pid, dir, &mut rings, &mut skipped)?;
            if rings.is_empty() && skipped.is_empty() {
                return Err(no_rings(pid));
            }
        }
        for r in &mut rings {
            r.reader
                .drain_to_csv(&mut r.out, false)
                .map_err(shm_err(&r.path.display().to_string()))?;
            r.out
                .flush()
                .map_err(|e| CliError::new(format!("{}: {e}", r.path.display())))?;
        }
        if until.is_some_and(|t| Instant::now() >= t) || !alive(pid) {
            break;
        }
        std::thread::sleep(POLL);
    }
    let mut out = String::new();
    for r in &rings {
        out.push_str(&format!(
            "{}: {} frames, {} lost\n",
            r.path.display(),
            r.reader.accepted(),
            r.reader.lost()
        ));
    }
    if rings.is_empty() {
        return Err(CliError::new(format!(
            "no ring of process {pid} could be attached: {}",
            skipped.join("; ")
        )));
    }
    Ok(out)
}

/// Attaches to the rings of `pid` not yet attached, creating their CSV files.
fn add_rings(
    pid: i32,
    dir: &Path,
    rings: &mut Vec<CsvRing>,
    skipped: &mut Vec<String>,
) -> Result<()> {
    let entries =
        list_rings(Some(pid)).map_err(|e| CliError::new(format!("cannot list /dev/shm: {e}")))?;
    for e in entries {
        if rings.iter().any(|r| r.reader.segment() == e.segment)
            || skipped.iter().any(|s| s.starts_with(&e.segment))
        {
            continue;
        }
        let reader = match ShmReader::attach_segment(&e.segment) {
            Ok(r) => r,
            Err(ShmError::NotFound(_)) => continue,
            Err(err) => {
                eprintln!("picollo: skipping {}: {err}", e.segment);
                skipped.push(format!("{}: {err}", e.segment));
                continue;
            }
        };
        let path = dir.join(format!("{}.csv", e.name));
        let file = File::create(&path).map_err(|err| {
            CliError::new(format!(
                "cannot create {}: {err}; give a writable directory",
                path.display()
            ))
        })?;
        let mut out = BufWriter::new(file);
        out.write_all(reader.csv_header().as_bytes())
            .map_err(|err| CliError::new(format!("{}: {err}", path.display())))?;
        eprintln!("picollo: {} -> {}", e.segment, path.display());
        rings.push(CsvRing { reader, out, path });
    }
    Ok(())
}

fn no_rings(pid: i32) -> CliError {
    CliError::new(format!(
        "process {pid} has no Picollo rings (no /dev/shm/picollo-{pid}-*); it must create \
         them (picollo_linux::shm writers, or spans with `span!`) before attaching"
    ))
}

/// Attaches to the span rings of `pid`, picking up new threads, and waits for one.
fn span_consumer(pid: i32) -> Result<SpanConsumer> {
    check_pid(pid)?;
    let c = SpanConsumer::attach(pid).map_err(shm_err("attaching to the span rings"))?;
    if c.rings() == 0 {
        let any_span = list_rings(Some(pid))
            .unwrap_or_default()
            .iter()
            .any(|e| e.name.starts_with(RING_PREFIX));
        if !any_span {
            return Err(CliError::new(format!(
                "process {pid} has no span rings (no /dev/shm/picollo-{pid}-span-*); it \
                 records spans with `picollo_linux::span!` once a thread has begun one"
            )));
        }
        let why: Vec<String> = c
            .skipped()
            .iter()
            .map(|(s, w)| format!("{s}: {w}"))
            .collect();
        return Err(CliError::new(format!(
            "no span ring of process {pid} could be attached: {}",
            why.join("; ")
        )));
    }
    Ok(c)
}

/// Aggregates the spans of `pid` until the deadline or the process exits; returns the span
/// table.
///
/// # Errors
/// No such process, no span rings, a ring that fails its checks.
pub fn spans(pid: i32, duration: Option<f64>) -> Result<String> {
    let until = deadline(duration)?;
    let mut c = span_consumer(pid)?;
    let mut last_refresh = Instant::now();
    loop {
        c.poll().map_err(shm_err("reading the span rings"))?;
        if until.is_some_and(|t| Instant::now() >= t) || !alive(pid) {
            break;
        }
        if last_refresh.elapsed() >= Duration::from_millis(500) {
            last_refresh = Instant::now();
            c.refresh().map_err(shm_err("listing the span rings"))?;
        }
        std::thread::sleep(POLL);
    }
    let a = c.aggregator();
    Ok(format!(
        "- process: {pid}\n- rings: {}\n- frames: {} ({} lost)\n\n{}",
        c.rings(),
        a.accepted(),
        a.lost(),
        c.table()
    ))
}

/// The live view: every `interval` seconds, the span table of the last interval (a fresh
/// consumer per interval, so the figures are deltas), under a header with the totals.
/// Stops after `count` refreshes, when the process exits, or on Ctrl-C.
///
/// # Errors
/// No such process, no span rings, a bad interval.
pub fn top(pid: i32, interval: f64, count: Option<u64>) -> Result<String> {
    if !(interval.is_finite() && interval >= 0.05) {
        return Err(CliError::new(format!(
            "--interval {interval} is too short; give at least 0.05 seconds"
        )));
    }
    let step = Duration::from_secs_f64(interval);
    let clear = std::io::stdout().is_terminal();
    let started = Instant::now();
    let mut totals = (0u64, 0u64);
    let mut shown = 0u64;
    let mut current = span_consumer(pid)?;
    loop {
        let t0 = Instant::now();
        while t0.elapsed() < step {
            current.poll().map_err(shm_err("reading the span rings"))?;
            if !alive(pid) {
                break;
            }
            std::thread::sleep(POLL.min(step));
        }
        // The next interval's consumer attaches before this one is dropped, so the writers
        // stay attached throughout.
        let next = alive(pid).then(|| SpanConsumer::attach(pid)).transpose();
        current.poll().map_err(shm_err("reading the span rings"))?;
        let a = current.aggregator();
        totals.0 += a.accepted();
        totals.1 += a.lost();
        shown += 1;
        let mut screen = String::new();
        if clear {
            screen.push_str("\x1b[H\x1b[2J");
        }
        screen.push_str(&format!(
            "picollo top {pid}: every {interval} s, refresh {shown}, up {:.1} s; last interval: \
             {} spans ({} lost); total {} spans ({} lost); {} rings\n\n{}\n",
            started.elapsed().as_secs_f64(),
            a.accepted(),
            a.lost(),
            totals.0,
            totals.1,
            current.rings(),
            current.table()
        ));
        let mut out = std::io::stdout().lock();
        if out
            .write_all(screen.as_bytes())
            .and_then(|()| out.flush())
            .is_err()
        {
            return Ok(String::new()); // stdout closed: stop quietly
        }
        drop(out);
        if count.is_some_and(|n| shown >= n) {
            return Ok(String::new());
        }
        match next.map_err(shm_err("attaching to the span rings"))? {
            Some(n) => current = n,
            None => {
                eprintln!("picollo: process {pid} exited");
                return Ok(String::new());
            }
        }
    }
}
