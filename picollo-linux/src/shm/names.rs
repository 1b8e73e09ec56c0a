//! Names and identities: a ring's memfd name and segment path, and a writer's identity (pid
//! and start time) with the check that it is still alive.

use std::collections::HashSet;
use std::sync::Mutex;

use picollo_ring::WriterId;

use super::error::ShmError;
use super::segment::{MAX_NAME_BYTES, PROC_DIR, SEGMENT_PREFIX};

fn check_ring_name(name: &str) -> Result<(), ShmError> {
    let ok = !name.is_empty()
        && name.len() <= MAX_NAME_BYTES
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'));
    if ok {
        Ok(())
    } else {
        Err(ShmError::BadName(name.to_owned()))
    }
}

/// The memfd name of ring `name`: `picollo-<name>` (its `/proc/PID/fd` link reads
/// `/memfd:picollo-<name> (deleted)`).
pub(crate) fn memfd_name(name: &str) -> Result<String, ShmError> {
    check_ring_name(name)?;
    Ok(format!("{SEGMENT_PREFIX}{name}"))
}

/// The ring name in the target of a `/proc/PID/fd/N` link (`/memfd:picollo-<name> (deleted)`,
/// the ` (deleted)` optional); `None` if it is not a Picollo segment.
pub(crate) fn parse_memfd_target(target: &str) -> Option<&str> {
    let rest = target.strip_prefix("/memfd:")?;
    let rest = rest.strip_suffix(" (deleted)").unwrap_or(rest);
    let name = rest.strip_prefix(SEGMENT_PREFIX)?;
    check_ring_name(name).ok()?;
    Some(name)
}

/// The segment path of descriptor `fd` of process `pid`: `/proc/<pid>/fd/<fd>`.
pub(crate) fn segment_path(pid: i32, fd: i32) -> String {
    format!("{PROC_DIR}/{pid}/fd/{fd}")
}

/// Splits a segment path (`/proc/<pid>/fd/<fd>`) into the pid and the descriptor; `None` if
/// it is not one.
pub(crate) fn parse_segment_path(segment: &str) -> Option<(i32, i32)> {
    let rest = segment.strip_prefix(PROC_DIR)?.strip_prefix('/')?;
    let (pid, rest) = rest.split_once('/')?;
    let fd = rest.strip_prefix("fd/")?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(pid) || !digits(fd) {
        return None;
    }
    let pid: i32 = pid.parse().ok().filter(|p| *p > 0)?;
    let fd: i32 = fd.parse().ok()?;
    Some((pid, fd))
}

/// The start time of process `pid`, in clock ticks since boot (field 22 of
/// `/proc/<pid>/stat`); `None` when there is no such process.
pub(crate) fn process_start_time(pid: i32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may hold spaces and parentheses:
    // fields 3 onward follow the last `)`.
    let rest = stat.get(stat.rfind(')')? + 1..)?;
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// This process's writer identity: its pid and start time.
pub(crate) fn this_writer_id() -> WriterId {
    let pid = std::process::id();
    let start = i32::try_from(pid)
        .ok()
        .and_then(process_start_time)
        .unwrap_or(0);
    WriterId(u64::from(pid), start)
}

/// Whether the process a ring header names is still running: a process with that pid
/// exists and started at the recorded time.
pub(crate) fn writer_alive(id: WriterId) -> bool {
    match i32::try_from(id.0) {
        Ok(pid) if pid > 0 => process_start_time(pid) == Some(id.1),
        _ => false,
    }
}

/// Ring names this process has open, so two threads never create the same one.
static OPEN_NAMES: Mutex<Option<HashSet<String>>> = Mutex::new(None);

pub(super) fn claim_name(segment: &str) -> Result<(), ShmError> {
    let mut names = OPEN_NAMES.lock().unwrap_or_else(|p| p.into_inner());
    if !names
        .get_or_insert_with(HashSet::new)
        .insert(segment.to_owned())
    {
        return Err(ShmError::AlreadyExists(segment.to_owned()));
    }
    Ok(())
}

pub(super) fn release_name(segment: &str) {
    let mut names = OPEN_NAMES.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(set) = names.as_mut() {
        set.remove(segment);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(memfd_name("spans").unwrap(), "picollo-spans");
        assert_eq!(segment_path(42, 7), "/proc/42/fd/7");
        assert_eq!(parse_segment_path("/proc/42/fd/7"), Some((42, 7)));
        for bad in [
            "/proc/0/fd/7",
            "/proc/-1/fd/7",
            "/proc/42/fd/",
            "/proc/42/fd/+7",
            "/proc/self/fd/7",
            "/dev/shm/picollo-42-x",
            "/proc/42/fdinfo/7",
        ] {
            assert_eq!(parse_segment_path(bad), None, "{bad}");
        }
        assert_eq!(
            parse_memfd_target("/memfd:picollo-span-7 (deleted)"),
            Some("span-7")
        );
        assert_eq!(parse_memfd_target("/memfd:picollo-a.b_c"), Some("a.b_c"));
        for bad in ["", ".x", "a/b", "a b", "é"] {
            assert!(
                matches!(memfd_name(bad), Err(ShmError::BadName(_))),
                "{bad:?}"
            );
        }
        assert!(memfd_name(&"x".repeat(101)).is_err());
        for bad in [
            "/dev/shm/picollo-x",
            "/memfd:other-x (deleted)",
            "/memfd:picollo- (deleted)",
            "/memfd:picollo-a b (deleted)",
            "socket:[1234]",
            "/memfd:picollo-.x",
        ] {
            assert_eq!(parse_memfd_target(bad), None, "{bad}");
        }
    }

    #[test]
    fn start_time_of_this_process() {
        let id = this_writer_id();
        assert_eq!(id.0, u64::from(std::process::id()));
        assert!(id.1 > 0);
        assert!(writer_alive(id));
        assert!(!writer_alive(WriterId(id.0, id.1 + 1)));
        assert!(!writer_alive(WriterId(0, 0)));
        assert!(!writer_alive(WriterId(u64::MAX, 0)));
    }
}
