//! The segment itself: the limits every segment keeps to, the system calls on the `memfd`
//! (create, seal, `flock`, `fstat`), the fork generation (a child never writes its parent's
//! rings) and the ring names this process holds.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Once;

/// Where a reader finds the rings of process `PID`: `/proc/PID/fd`.
pub(crate) const PROC_DIR: &str = "/proc";
/// The prefix of every Picollo segment's memfd name (`picollo-<name>`).
pub(crate) const SEGMENT_PREFIX: &str = "picollo-";
/// Seals every Picollo segment carries: its size can never change (and the seals neither).
pub(crate) const SEALS: i32 = libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_SEAL;
/// The largest segment a reader maps (1 GiB).
pub(crate) const MAX_SEGMENT_BYTES: u64 = 1 << 30;
/// Longest ring name, in bytes.
pub(crate) const MAX_NAME_BYTES: usize = 100;
/// The writer tries `flock(LOCK_EX | LOCK_NB)` every this many attached saves (a power of
/// two), to clear an `attached` flag a crashed reader left.
pub(crate) const STALE_CHECK_INTERVAL: u64 = 1 << 16;

use crate::sys::last_errno as errno;

/// Creates the sealable, close-on-exec, never-executable memfd of segment `name`
/// (`picollo-<name>`). `MFD_NOEXEC_SEAL` (Linux 6.3) is asked for first: hosts that set
/// `vm.memfd_noexec = 2` refuse memfds without it; older kernels refuse the flag (`EINVAL`),
/// and get the plain sealable memfd.
pub(super) fn memfd_create(memfd: &str) -> Result<OwnedFd, i32> {
    let name = CString::new(memfd).map_err(|_| libc::EINVAL)?;
    let flags = libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING;
    // SAFETY: `name` is a NUL-terminated string that outlives the calls.
    let mut fd = unsafe { libc::memfd_create(name.as_ptr(), flags | libc::MFD_NOEXEC_SEAL) };
    if fd < 0 && errno() == libc::EINVAL {
        // SAFETY: as above.
        fd = unsafe { libc::memfd_create(name.as_ptr(), flags) };
    }
    if fd < 0 {
        return Err(errno());
    }
    // SAFETY: `memfd_create` just returned `fd`; nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Opens `path` read-write, close-on-exec (following the `/proc/PID/fd/N` magic link).
pub(super) fn open_rw(path: &str) -> Result<OwnedFd, i32> {
    let name = CString::new(path).map_err(|_| libc::EINVAL)?;
    // SAFETY: `name` is a NUL-terminated string that outlives the call.
    let fd = unsafe { libc::open(name.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(errno());
    }
    // SAFETY: `open` just returned `fd`; nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// The seals of `fd` (`F_GET_SEALS`).
pub(super) fn get_seals(fd: &OwnedFd) -> Result<i32, i32> {
    // SAFETY: `fd` is open; `F_GET_SEALS` takes no argument and has no memory effects.
    let seals = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GET_SEALS) };
    if seals < 0 {
        return Err(errno());
    }
    Ok(seals)
}

/// What the link `path` (a `/proc/PID/fd/N`) points to.
pub(super) fn read_link(path: &str) -> io::Result<String> {
    Ok(std::fs::read_link(path)?.to_string_lossy().into_owned())
}

pub(super) fn fstat(fd: &OwnedFd) -> Result<libc::stat, i32> {
    // SAFETY: an all-zero `stat` is a valid value of this plain C struct.
    let mut st: libc::stat = unsafe { core::mem::zeroed() };
    // SAFETY: `fd` is open and `st` is a valid `stat` to write.
    if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } != 0 {
        return Err(errno());
    }
    Ok(st)
}

/// `flock(fd, op)`, retried on EINTR. `Ok(false)` when a non-blocking lock is held elsewhere.
pub(super) fn flock(fd: &OwnedFd, op: i32) -> Result<bool, i32> {
    loop {
        // SAFETY: `fd` is an open descriptor; `flock` has no memory effects.
        if unsafe { libc::flock(fd.as_raw_fd(), op) } == 0 {
            return Ok(true);
        }
        match errno() {
            libc::EINTR => continue,
            libc::EWOULDBLOCK => return Ok(false),
            e => return Err(e),
        }
    }
}

pub(super) fn euid() -> u32 {
    // SAFETY: `geteuid` has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

pub(super) static FORK_GENERATION: AtomicU64 = AtomicU64::new(0);
static ATFORK: Once = Once::new();

extern "C" fn on_fork_child() {
    // Async-signal-safe: one atomic add.
    FORK_GENERATION.fetch_add(1, Ordering::Relaxed);
}

/// The current fork generation, registering the `pthread_atfork` child handler on first use.
pub(super) fn fork_generation() -> u64 {
    ATFORK.call_once(|| {
        // SAFETY: registers a handler that only does an atomic add, which is safe in a child
        // after fork. Registration failure (ENOMEM) leaves the generation unchanged; writers
        // then also compare pids on drop.
        unsafe {
            libc::pthread_atfork(None, None, Some(on_fork_child));
        }
    });
    FORK_GENERATION.load(Ordering::Relaxed)
}
