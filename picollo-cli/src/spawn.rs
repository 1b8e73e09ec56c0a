//! Runs a command once with counters on it from its `exec`.
//!
//! The counters must be open on the child before it execs, so the child waits:
//!
//! 1. `Command::spawn` runs on a helper thread (it returns only once the child has exec'd);
//!    the child's `pre_exec` hook writes its pid into one pipe and blocks reading another;
//! 2. this thread reads the pid, opens the counters on it (`inherit`, `enable_on_exec`,
//!    disabled until the exec), starts the wall clock and writes the go byte;
//! 3. the child execs (the counters start), the helper's `spawn` returns, this thread waits
//!    for the exit, stops the clock and reads the counters.
//!
//! If the counters cannot be opened, dropping the write end of the go pipe makes the child's
//! read return 0: its hook fails and the child exits without running the command.

use std::ffi::OsString;
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Command, ExitStatus, Stdio};
use std::time::Instant;

use picollo_linux::event::EventSpec;
use picollo_linux::session::{
    CounterSession, CounterSessionBuilder, DroppedEvent, OnUnsupported, Target,
};
use picollo_linux::Count;
use picollo_linux::PerfError;

use crate::error::{CliError, Result};

/// Where the measured command's standard output goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ChildOutput {
    /// Discarded (the default: stdout carries the tables).
    Discard,
    /// Sent to this process's standard error.
    ToStderr,
}

/// One measured run.
#[derive(Debug)]
pub(crate) struct Run {
    /// Nanoseconds from releasing the child (just before its `exec`) to its exit.
    pub(crate) wall_ns: u64,
    /// How the command ended.
    pub(crate) status: ExitStatus,
    /// Each opened counter's name and total since the exec.
    pub(crate) counts: Vec<(String, Count)>,
    /// Events that could not be opened here.
    pub(crate) dropped: Vec<DroppedEvent>,
}

/// A pipe whose both ends close on exec.
fn pipe() -> Result<(File, File)> {
    let mut fds = [0i32; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2 writes.
    let r = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) };
    if r != 0 {
        return Err(CliError::new(format!(
            "cannot create a pipe: {}; raise the open-file limit (ulimit -n)",
            std::io::Error::last_os_error()
        )));
    }
    // SAFETY: pipe2 succeeded: both descriptors are open and owned by nobody else.
    let (r, w) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    Ok((File::from(r), File::from(w)))
}

/// Runs `argv` once, counting `events` on it from its exec; events without modifiers count the
/// kernel too when `kernel` is set (perf stat's default where permitted), else user space.
///
/// # Errors
/// The command cannot be started, or the counters cannot be opened (unsupported events are
/// dropped and reported in [`Run::dropped`], unless every event is unsupported).
pub(crate) fn run(
    argv: &[OsString],
    events: &[EventSpec],
    kernel: bool,
    output: ChildOutput,
) -> Result<Run> {
    let (program, args) = argv
        .split_first()
        .ok_or_else(|| CliError::new("no command given; put it after `--`"))?;
    let (mut pid_r, pid_w) = pipe()?;
    let (go_r, mut go_w) = pipe()?;
    let (pid_w_fd, go_r_fd, go_w_fd) = (pid_w.as_raw_fd(), go_r.as_raw_fd(), go_w.as_raw_fd());

    let mut cmd = held_at_exec(program, args, output, pid_w_fd, go_r_fd, go_w_fd)?;

    std::thread::scope(|scope| {
        let spawner = scope.spawn(move || {
            let child = cmd.spawn();
            // The child holds its own copies until exec; ours go now, so a failed fork
            // shows as end-of-file on the pid pipe.
            drop(pid_w);
            drop(go_r);
            child
        });
        let mut pid = [0u8; 4];
        let got_pid = pid_r.read_exact(&mut pid).is_ok();
        let opened = if got_pid {
            open_on(i32::from_ne_bytes(pid), events, kernel)
        } else {
            Err(CliError::new("the command did not start"))
        };
        let (sessions, dropped) = match opened {
            Ok(s) => s,
            Err(e) => {
                drop(go_w); // the child's hook fails and it exits without running
                let _ = spawner.join().map(|c| c.map(|mut c| c.wait()));
                return Err(e);
            }
        };
        let start = Instant::now();
        let released = go_w.write_all(&[1]);
        drop(go_w);
        let child = spawner
            .join()
            .map_err(|_| CliError::new("the spawning thread panicked; please report it"))?;
        let mut child = child.map_err(|e| {
            CliError::new(format!(
                "cannot run `{}`: {e}; check the command name and PATH",
                program.to_string_lossy()
            ))
        })?;
        released.map_err(|e| CliError::new(format!("cannot release the command: {e}")))?;
        let status = child
            .wait()
            .map_err(|e| CliError::new(format!("cannot wait for the command: {e}")))?;
        let wall_ns = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
        Ok(Run {
            wall_ns,
            status,
            counts: read_counts(sessions)?,
            dropped,
        })
    })
}

/// The command `program args`, its output sent where `output` says, held at its exec: in
/// the forked child, before exec, it writes its pid into `pid_w_fd` and waits for a byte on
/// `go_r_fd` (closing its copy of `go_w_fd`), so that the counters open on it first.
fn held_at_exec(
    program: &OsString,
    args: &[OsString],
    output: ChildOutput,
    pid_w_fd: i32,
    go_r_fd: i32,
    go_w_fd: i32,
) -> Result<Command> {
    let mut cmd = Command::new(program);
    cmd.args(args).stdin(Stdio::null());
    match output {
        ChildOutput::Discard => {
            cmd.stdout(Stdio::null());
        }
        ChildOutput::ToStderr => {
            let err = std::io::stderr()
                .as_fd()
                .try_clone_to_owned()
                .map_err(|e| CliError::new(format!("cannot duplicate stderr: {e}")))?;
            cmd.stdout(Stdio::from(err));
        }
    }
    // SAFETY: the hook runs in the forked child before exec and calls only async-signal-safe
    // functions (close, getpid, write, read) on descriptors and stack buffers; it allocates
    // nothing (the error is built from a raw errno).
    unsafe {
        cmd.pre_exec(move || {
            libc::close(go_w_fd);
            let pid = libc::getpid().to_ne_bytes();
            if libc::write(pid_w_fd, pid.as_ptr().cast(), pid.len()) != pid.len() as isize {
                return Err(std::io::Error::from_raw_os_error(libc::EPIPE));
            }
            let mut go = 0u8;
            if libc::read(go_r_fd, (&mut go as *mut u8).cast(), 1) != 1 {
                return Err(std::io::Error::from_raw_os_error(libc::ECANCELED));
            }
            Ok(())
        });
    }
    Ok(cmd)
}

/// Each session's counters, read once (the command has exited).
fn read_counts(sessions: Vec<CounterSession>) -> Result<Vec<(String, Count)>> {
    let mut counts = Vec::new();
    for mut session in sessions {
        session
            .read(true)
            .map_err(|e| CliError::new(format!("cannot read the counters: {e}")))?;
        counts.extend(
            session
                .counters()
                .iter()
                .map(|c| (c.name().to_string(), c.value().unwrap_or(Count::NotCounted))),
        );
    }
    Ok(counts)
}

/// Opens `events` on `pid` and its future children, enabled at its exec: as one group when
/// the PMU takes them together, else (more hardware events than counters: the kernel refuses
/// the group with EINVAL) one group per event, as `perf stat` does, so that the kernel
/// multiplexes them and the counts are scaled estimates instead of missing. Returns the
/// sessions and the events that could not be opened.
fn open_on(
    pid: i32,
    events: &[EventSpec],
    kernel: bool,
) -> Result<(Vec<CounterSession>, Vec<DroppedEvent>)> {
    let group = open_group(pid, events, kernel)?;
    if !needs_split(events, group.dropped()) {
        let dropped = group.dropped().to_vec();
        return Ok((vec![group], dropped));
    }
    drop(group);
    let mut sessions = Vec::new();
    let mut dropped = Vec::new();
    for event in events {
        match builder(pid, kernel).event_spec(event.clone()).build() {
            Ok(s) => sessions.push(s),
            Err(PerfError::AllEventsDropped(d)) => dropped.extend(d),
            Err(other) => return Err(CliError::new(format!("cannot open the counters: {other}"))),
        }
    }
    if sessions.is_empty() {
        return Err(none_countable(&dropped));
    }
    Ok((sessions, dropped))
}

/// Whether a group whose open dropped `dropped` must be split: an event refused as
/// unschedulable or invalid (EINVAL; one group per event tells the two apart), with more than
/// one event asked for.
fn needs_split(events: &[EventSpec], dropped: &[DroppedEvent]) -> bool {
    events.len() > 1
        && dropped
            .iter()
            .any(|d| matches!(d.error, PerfError::CannotSchedule { .. }))
}

/// The session builder for `pid`: user space only unless `kernel` (events with modifiers
/// count what they say).
fn builder(pid: i32, kernel: bool) -> CounterSessionBuilder {
    CounterSession::builder()
        .target(Target::Pid(pid))
        .exclude_kernel(!kernel)
        .exclude_hv(!kernel)
        .enabled(false)
        .enable_on_exec(true)
        .inherit(true)
        .on_unsupported(OnUnsupported::Drop)
}

fn none_countable(dropped: &[DroppedEvent]) -> CliError {
    let list: Vec<String> = dropped
        .iter()
        .map(|x| format!("{} ({})", x.event, crate::counters::short_reason(&x.error)))
        .collect();
    CliError::new(format!(
        "none of the events can be counted here: {}; run `picollo counters` to see what is \
         available, or use software events (-e task-clock,page-faults)",
        list.join(", ")
    ))
}

fn open_group(pid: i32, events: &[EventSpec], kernel: bool) -> Result<CounterSession> {
    let mut b = builder(pid, kernel);
    for e in events {
        b = b.event_spec(e.clone());
    }
    b.build().map_err(|e| match e {
        PerfError::AllEventsDropped(d) => none_countable(&d),
        other => CliError::new(format!("cannot open the counters: {other}")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dropped(name: &str, error: PerfError) -> DroppedEvent {
        DroppedEvent {
            event: name.parse().unwrap(),
            error,
        }
    }

    #[test]
    fn groups_split_only_when_refused_as_unschedulable() {
        // Found on the arm64 guest (guest/run.sh): eight hardware events on a PMU with seven
        // counters were one group, the kernel refused the eighth with EINVAL, and stat
        // silently counted seven instead of multiplexing eight.
        let events: Vec<EventSpec> = ["cycles", "instructions", "r0003"]
            .iter()
            .map(|n| n.parse().unwrap())
            .collect();
        let einval = PerfError::CannotSchedule {
            event: "r0003".into(),
            errno: libc::EINVAL,
        };
        let enoent = PerfError::Unsupported {
            event: "r0003".into(),
            errno: libc::ENOENT,
        };
        assert!(needs_split(&events, &[dropped("r0003", einval.clone())]));
        assert!(
            !needs_split(&events, &[dropped("r0003", enoent)]),
            "missing, not too many"
        );
        assert!(!needs_split(&events, &[]));
        assert!(
            !needs_split(&events[..1], &[dropped("cycles", einval)]),
            "one event: nothing to split"
        );
    }
}
