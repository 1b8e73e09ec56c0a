//! Finding rings: [`list_rings`] reads `/proc/PID/fd` (one process, or every process this
//! user may inspect) for `picollo-<name>` memfds.

use std::io;

use super::names::{parse_memfd_target, segment_path};
use super::segment::{read_link, PROC_DIR};

/// A ring found in a process's `/proc/PID/fd`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RingEntry {
    /// The writer's pid.
    pub pid: i32,
    /// The ring's name.
    pub name: String,
    /// The segment path, `/proc/<pid>/fd/<fd>`.
    pub segment: String,
    /// The segment's inode number (see [`ShmReader::inode`](crate::shm::ShmReader::inode)).
    pub inode: u64,
}

/// The rings of process `pid` (sorted by name), or of every process this user may inspect
/// (`None`; sorted by pid, then name). Only links are read; attach to check the headers.
///
/// A process's rings are its descriptors that lead to a `picollo-<name>` memfd. One seen
/// through several descriptors (`dup`) is listed once. A child forked by a writer lists its
/// parent's rings until it `exec`s; attaching to them fails with
/// [`ShmError::WrongWriter`](crate::shm::ShmError::WrongWriter).
///
/// # Errors
/// `pid`'s `/proc/PID/fd` cannot be read: no permission (another user's process, or one that
/// is not dumpable). No such process is not an error (no rings).
pub fn list_rings(pid: Option<i32>) -> io::Result<Vec<RingEntry>> {
    let mut out = Vec::new();
    match pid {
        Some(p) => rings_of(p, &mut out)?,
        None => {
            for entry in std::fs::read_dir(PROC_DIR)? {
                let Ok(entry) = entry else { continue };
                let Some(p) = entry
                    .file_name()
                    .to_str()
                    .and_then(|s| s.parse::<i32>().ok())
                else {
                    continue;
                };
                // Other users' processes, and processes that exit meanwhile, are skipped.
                let _ = rings_of(p, &mut out);
            }
        }
    }
    out.sort();
    Ok(out)
}

fn rings_of(pid: i32, out: &mut Vec<RingEntry>) -> io::Result<()> {
    if pid <= 0 {
        return Ok(());
    }
    let dir = format!("{PROC_DIR}/{pid}/fd");
    let entries = match std::fs::read_dir(&dir) {
        Ok(e) => e,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(io::Error::new(e.kind(), format!("reading {dir}: {e}"))),
    };
    let first = out.len();
    for entry in entries {
        let Ok(entry) = entry else { continue };
        let Some(fd) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<i32>().ok())
        else {
            continue;
        };
        let segment = segment_path(pid, fd);
        let Ok(target) = read_link(&segment) else {
            continue;
        };
        let Some(name) = parse_memfd_target(&target) else {
            continue;
        };
        if out[first..].iter().any(|e| e.name == name) {
            continue;
        }
        // The inode of the memfd itself (`stat` follows the link); gone: closed meanwhile.
        let Ok(meta) = std::fs::metadata(&segment) else {
            continue;
        };
        out.push(RingEntry {
            pid,
            name: name.to_owned(),
            segment,
            inode: std::os::unix::fs::MetadataExt::ino(&meta),
        });
    }
    Ok(())
}
