//! Frame rings in shared memory: a program saves frames, another process attaches, drains
//! them and converts them to CSV (seed 002, ppt), with no ptrace.
//!
//! # Segments
//!
//! One segment per ring (Linux 3.17 or later): an anonymous `memfd_create("picollo-<name>")`
//! file (`MFD_CLOEXEC`, `MFD_NOEXEC_SEAL` where the kernel has it, mode 0600) holding a [`picollo_core::ring`] header and slots, sized once and then sealed
//! with `F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL`. Such a segment
//!
//! - **cannot be truncated** by anyone, the writer included (`ftruncate` fails with `EPERM`),
//!   so no other process can make the writer or a reader fault (`SIGBUS`) on the mapping;
//! - **has no name in a shared namespace**, so no other user can squat it (a file in
//!   `/dev/shm` could be pre-created for the next pids);
//! - **is freed by the kernel** when the writer exits, however it exits (`SIGTERM`,
//!   `SIGKILL`, a crash): nothing is left behind to reclaim. A reader still attached keeps it
//!   until it detaches.
//!
//! Its header carries the writer's identity: the pid and the process start time (field 22 of
//! `/proc/<pid>/stat`), so a reader can tell a live writer from a dead one whose pid was
//! reused.
//!
//! # Finding a ring
//!
//! A reader finds the rings of process `PID` in `/proc/PID/fd`: each is a descriptor whose
//! link reads `/memfd:picollo-<name> (deleted)` ([`list_rings`]), and opening
//! `/proc/PID/fd/N` opens the segment itself (its *segment path*). The kernel lets only a
//! process that may inspect `PID` (the same user, or root; see `ptrace(2)`, "ptrace access
//! mode checking") read that directory, so only those can attach. A process that makes itself
//! non-dumpable (`prctl(PR_SET_DUMPABLE, 0)`, or a set-user-ID program) hands its
//! `/proc/PID/fd` to root: only root can attach to it then.
//!
//! # Attaching
//!
//! A reader ([`ShmReader`]) takes `flock(LOCK_SH)` on the segment, then increments the
//! header's `attached` word; the writer's saves stop being no-ops. On drop it decrements the
//! word and closes the segment, which releases the lock. A reader that crashes leaves
//! `attached` set but releases its lock (the kernel closes its descriptor), so the writer
//! clears a stale flag whenever `flock(LOCK_EX | LOCK_NB)` succeeds: it tries every 65,536
//! frames it saves while attached, and whenever [`ShmWriter::check_readers`] is called (on a
//! timer, say). A stale flag only costs the writer its attached-save price until then.
//!
//! # Untrusted segments
//!
//! A reader checks that what it opened is a Picollo memfd, that it belongs to its own user
//! and is not accessible to others, that it is sealed against shrinking (so its mapping can
//! never fault), that its size is sane, and then every header field ([`RingInfo::parse`]); a
//! corrupt or hostile segment gets an error, never a crash.
//!
//! # fork
//!
//! A child process must not write into its parent's ring. A `pthread_atfork` child handler
//! bumps a fork generation; an attached save compares it (one relaxed load, on the attached
//! path only) and a writer that finds itself in a child turns into a no-op for good
//! ([`RingWriter::disable`]). The child's drop leaves the parent's segment alone. A child
//! that wants frames creates its own ring. The child inherits the parent's descriptors until
//! it `exec`s, so its `/proc/PID/fd` lists them: a reader refuses them
//! ([`ShmError::WrongWriter`]: the header names the parent).
//!
//! ```
//! use picollo_core::ring::{RingOptions, TimeInterval};
//! use picollo_linux::shm::{ShmFrameWriter, ShmReader};
//!
//! picollo_core::frame! {
//!     #[derive(Clone, Copy, Debug, PartialEq)]
//!     pub struct Request { pub id: u64, pub bytes: u32, pub t: TimeInterval }
//! }
//!
//! # fn main() -> Result<(), picollo_linux::shm::ShmError> {
//! let mut w = ShmFrameWriter::<Request>::create("doc-requests", &RingOptions::new(1024))?;
//! assert!(!w.save(&Request { id: 0, bytes: 1, t: TimeInterval::new(0, 1) })); // no reader
//!
//! // Usually another process: `ShmReader::attach(writer_pid, "doc-requests")`.
//! let mut r = ShmReader::attach(std::process::id() as i32, "doc-requests")?;
//! for id in 1..=3 {
//!     w.save(&Request { id, bytes: 512, t: TimeInterval::new(10 * id, 10 * id + 4) });
//! }
//! let mut csv = Vec::new();
//! let drained = r.drain_to_csv(&mut csv, true)?;
//! assert_eq!(drained.accepted, 3);
//! let csv = String::from_utf8(csv).unwrap();
//! assert!(csv.starts_with("frame,id,bytes,t_start,t_end\n0,1,512,10,14\n"));
//! # Ok(())
//! # }
//! ```

use core::fmt;
use core::marker::PhantomData;

use picollo_alloc::csv::FrameCsv;
use std::collections::HashSet;
use std::ffi::CString;
use std::io;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, Once};

use picollo_core::ring::{
    AtomicU64 as RingWord, CounterInfo, CounterRequest, CounterTable, Drained, DynamicFrame, Frame,
    RequestStatus, RingError, RingInfo, RingOptions, RingReader, RingWriter, Schema, WriterId,
    REQUEST_BYTES,
};

/// Where a reader finds the rings of process `PID`: `/proc/PID/fd`.
pub const PROC_DIR: &str = "/proc";
/// The prefix of every Picollo segment's memfd name (`picollo-<name>`).
pub const SEGMENT_PREFIX: &str = "picollo-";
/// Seals every Picollo segment carries: its size can never change (and the seals neither).
pub const SEALS: i32 = libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_SEAL;
/// The largest segment a reader maps (1 GiB).
pub const MAX_SEGMENT_BYTES: u64 = 1 << 30;
/// Longest ring name, in bytes.
pub const MAX_NAME_BYTES: usize = 100;
/// The writer tries `flock(LOCK_EX | LOCK_NB)` every this many attached saves (a power of
/// two), to clear an `attached` flag a crashed reader left.
pub const STALE_CHECK_INTERVAL: u64 = 1 << 16;

// ---------------------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------------------

/// Why a shared-memory ring could not be created, attached or read.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ShmError {
    /// A ring name is empty, too long, or has characters other than ASCII letters, digits,
    /// `_`, `-` and `.` (or starts with `.`).
    BadName(String),
    /// No such segment: the writer has not created it, or has exited.
    NotFound(String),
    /// The segment path leads to something that is not a Picollo ring (another file, a
    /// memfd of another name).
    NotARing {
        /// The segment path.
        segment: String,
        /// What it leads to (the `/proc` link's target).
        target: String,
    },
    /// The segment is not sealed against shrinking and growing: its owner could truncate it
    /// under the mapping (not a segment Picollo created; refused).
    NotSealed {
        /// The segment.
        segment: String,
        /// Its seals (`F_GET_SEALS`).
        seals: i32,
    },
    /// This process already has a ring of that name.
    AlreadyExists(String),
    /// A system call failed.
    Os {
        /// The call.
        op: &'static str,
        /// The segment.
        segment: String,
        /// The errno.
        errno: i32,
    },
    /// The segment belongs to another user.
    NotOwner {
        /// The segment.
        segment: String,
        /// Its owner.
        uid: u32,
    },
    /// The segment is accessible to group or others (rings are created 0600).
    BadMode {
        /// The segment.
        segment: String,
        /// Its mode bits.
        mode: u32,
    },
    /// The segment's size is not a whole number of words, or is above
    /// [`MAX_SEGMENT_BYTES`].
    BadSize {
        /// The segment.
        segment: String,
        /// Its size.
        bytes: u64,
    },
    /// The writer held its lock for a long time: `flock(LOCK_SH)` kept failing.
    Busy(String),
    /// The header's writer pid is not the pid in the segment's name.
    WrongWriter {
        /// The segment.
        segment: String,
        /// The pid in the name.
        pid: i32,
        /// The pid in the header.
        header_pid: u64,
    },
    /// The ring itself (header validation, reading).
    Ring {
        /// The segment.
        segment: String,
        /// What the ring said.
        error: RingError,
    },
    /// Writing CSV (or another output) failed.
    Io {
        /// What was being written.
        op: &'static str,
        /// The I/O error kind.
        kind: io::ErrorKind,
        /// The I/O error's message.
        message: String,
    },
}

impl ShmError {
    fn os(op: &'static str, segment: &str, errno: i32) -> Self {
        Self::Os {
            op,
            segment: segment.to_owned(),
            errno,
        }
    }

    fn ring(segment: &str, error: RingError) -> Self {
        Self::Ring {
            segment: segment.to_owned(),
            error,
        }
    }

    fn io(op: &'static str, e: &io::Error) -> Self {
        Self::Io {
            op,
            kind: e.kind(),
            message: e.to_string(),
        }
    }
}

impl fmt::Display for ShmError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::BadName(n) => write!(
                f,
                "bad ring name {n:?}: use 1 to {MAX_NAME_BYTES} ASCII letters, digits, `_`, `-` or `.`"
            ),
            Self::NotFound(s) => write!(
                f,
                "no ring segment {s}: the writer has not created it yet, or has exited \
                 (see `list_rings`)"
            ),
            Self::NotARing { segment, target } => {
                write!(f, "{segment} is not a Picollo ring (it is {target:?})")
            }
            Self::NotSealed { segment, seals } => write!(
                f,
                "ring segment {segment} is not sealed against resizing (seals {seals:#x}): \
                 not a segment Picollo created; refusing it"
            ),
            Self::AlreadyExists(s) => write!(f, "this process already has a ring {s}"),
            Self::Os { op, segment, errno } => write!(
                f,
                "{op} on {segment} failed: {}",
                io::Error::from_raw_os_error(*errno)
            ),
            Self::NotOwner { segment, uid } => write!(
                f,
                "ring segment {segment} belongs to uid {uid}: attach as that user"
            ),
            Self::BadMode { segment, mode } => write!(
                f,
                "ring segment {segment} has mode {mode:o}, readable or writable by others: \
                 not a segment Picollo created; refusing it"
            ),
            Self::BadSize { segment, bytes } => {
                write!(f, "ring segment {segment} has an implausible size of {bytes} bytes")
            }
            Self::Busy(s) => write!(f, "ring segment {s} stayed locked by its writer; try again"),
            Self::WrongWriter {
                segment,
                pid,
                header_pid,
            } => write!(
                f,
                "ring segment {segment} is named for pid {pid} but its header says pid {header_pid}"
            ),
            Self::Ring { segment, error } => write!(f, "ring segment {segment}: {error}"),
            Self::Io { op, message, .. } => write!(f, "{op}: {message}"),
        }
    }
}

impl std::error::Error for ShmError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Ring { error, .. } => Some(error),
            _ => None,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Names and identities
// ---------------------------------------------------------------------------------------------

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
pub fn memfd_name(name: &str) -> Result<String, ShmError> {
    check_ring_name(name)?;
    Ok(format!("{SEGMENT_PREFIX}{name}"))
}

/// The ring name in the target of a `/proc/PID/fd/N` link (`/memfd:picollo-<name> (deleted)`,
/// the ` (deleted)` optional); `None` if it is not a Picollo segment.
pub fn parse_memfd_target(target: &str) -> Option<&str> {
    let rest = target.strip_prefix("/memfd:")?;
    let rest = rest.strip_suffix(" (deleted)").unwrap_or(rest);
    let name = rest.strip_prefix(SEGMENT_PREFIX)?;
    check_ring_name(name).ok()?;
    Some(name)
}

/// The segment path of descriptor `fd` of process `pid`: `/proc/<pid>/fd/<fd>`.
pub fn segment_path(pid: i32, fd: i32) -> String {
    format!("{PROC_DIR}/{pid}/fd/{fd}")
}

/// Splits a segment path (`/proc/<pid>/fd/<fd>`) into the pid and the descriptor; `None` if
/// it is not one.
pub fn parse_segment_path(segment: &str) -> Option<(i32, i32)> {
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
pub fn process_start_time(pid: i32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may hold spaces and parentheses:
    // fields 3 onward follow the last `)`.
    let rest = stat.get(stat.rfind(')')? + 1..)?;
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// This process's writer identity: its pid and start time.
pub fn this_writer_id() -> WriterId {
    let pid = std::process::id();
    let start = i32::try_from(pid)
        .ok()
        .and_then(process_start_time)
        .unwrap_or(0);
    WriterId(u64::from(pid), start)
}

/// Whether the process a ring header names is still running: a process with that pid
/// exists and started at the recorded time.
pub fn writer_alive(id: WriterId) -> bool {
    match i32::try_from(id.0) {
        Ok(pid) if pid > 0 => process_start_time(pid) == Some(id.1),
        _ => false,
    }
}

// ---------------------------------------------------------------------------------------------
// System calls
// ---------------------------------------------------------------------------------------------

use crate::sys::last_errno as errno;

/// Creates the sealable, close-on-exec, never-executable memfd of segment `name`
/// (`picollo-<name>`). `MFD_NOEXEC_SEAL` (Linux 6.3) is asked for first: hosts that set
/// `vm.memfd_noexec = 2` refuse memfds without it; older kernels refuse the flag (`EINVAL`),
/// and get the plain sealable memfd.
fn memfd_create(memfd: &str) -> Result<OwnedFd, i32> {
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
fn open_rw(path: &str) -> Result<OwnedFd, i32> {
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
fn get_seals(fd: &OwnedFd) -> Result<i32, i32> {
    // SAFETY: `fd` is open; `F_GET_SEALS` takes no argument and has no memory effects.
    let seals = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GET_SEALS) };
    if seals < 0 {
        return Err(errno());
    }
    Ok(seals)
}

/// What the link `path` (a `/proc/PID/fd/N`) points to.
fn read_link(path: &str) -> io::Result<String> {
    Ok(std::fs::read_link(path)?.to_string_lossy().into_owned())
}

fn fstat(fd: &OwnedFd) -> Result<libc::stat, i32> {
    // SAFETY: an all-zero `stat` is a valid value of this plain C struct.
    let mut st: libc::stat = unsafe { core::mem::zeroed() };
    // SAFETY: `fd` is open and `st` is a valid `stat` to write.
    if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } != 0 {
        return Err(errno());
    }
    Ok(st)
}

/// `flock(fd, op)`, retried on EINTR. `Ok(false)` when a non-blocking lock is held elsewhere.
fn flock(fd: &OwnedFd, op: i32) -> Result<bool, i32> {
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

fn euid() -> u32 {
    // SAFETY: `geteuid` has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

use crate::sys::SharedMapping as Map;

// ---------------------------------------------------------------------------------------------
// fork
// ---------------------------------------------------------------------------------------------

static FORK_GENERATION: AtomicU64 = AtomicU64::new(0);
static ATFORK: Once = Once::new();

extern "C" fn on_fork_child() {
    // Async-signal-safe: one atomic add.
    FORK_GENERATION.fetch_add(1, Ordering::Relaxed);
}

/// The current fork generation, registering the `pthread_atfork` child handler on first use.
fn fork_generation() -> u64 {
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

/// Ring names this process has open, so two threads never create the same one.
static OPEN_NAMES: Mutex<Option<HashSet<String>>> = Mutex::new(None);

fn claim_name(segment: &str) -> Result<(), ShmError> {
    let mut names = OPEN_NAMES.lock().unwrap_or_else(|p| p.into_inner());
    if !names
        .get_or_insert_with(HashSet::new)
        .insert(segment.to_owned())
    {
        return Err(ShmError::AlreadyExists(segment.to_owned()));
    }
    Ok(())
}

fn release_name(segment: &str) {
    let mut names = OPEN_NAMES.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(set) = names.as_mut() {
        set.remove(segment);
    }
}

// ---------------------------------------------------------------------------------------------
// Writer
// ---------------------------------------------------------------------------------------------

/// The writing end of a shared-memory ring, untyped (payload word slices); see the
/// [module docs](self). [`ShmFrameWriter`] is the typed one.
///
/// Not `Sync`: one thread saves. It is `Send`, so a ring can be handed to another thread.
pub struct ShmWriter {
    /// Views `map`; declared first so it is dropped before the mapping.
    ring: RingWriter<'static>,
    map: Map,
    fd: OwnedFd,
    /// `/proc/<pid>/fd/<fd>`.
    segment: String,
    /// `picollo-<name>`, claimed in this process.
    memfd: String,
    pid: u32,
    fork_generation: u64,
}

// SAFETY: the writer's ring views a mapping the writer owns, accessed only through atomics;
// nothing in it is tied to the creating thread.
unsafe impl Send for ShmWriter {}

impl fmt::Debug for ShmWriter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ShmWriter")
            .field("segment", &self.segment)
            .field("ring", &self.ring)
            .field("bytes", &self.map.len)
            .finish_non_exhaustive()
    }
}

impl ShmWriter {
    /// Creates ring `name` of this process (a sealed memfd `picollo-<name>`, mode 0600) for
    /// `schema` frames. `options.writer` is replaced by this process's identity.
    ///
    /// [`ShmError::AlreadyExists`] if this process already has the ring. Nothing another
    /// process does can make this fail (there is no shared name to take) short of exhausting
    /// memory or descriptors.
    pub fn create(
        name: &str,
        schema: &Schema<'_>,
        options: &RingOptions<'_>,
    ) -> Result<Self, ShmError> {
        let id = this_writer_id();
        let pid = std::process::id();
        let memfd = memfd_name(name)?;
        claim_name(&memfd)?;
        let result = Self::create_claimed(&memfd, schema, options, id, pid);
        if result.is_err() {
            release_name(&memfd);
        }
        result
    }

    fn create_claimed(
        memfd: &str,
        schema: &Schema<'_>,
        options: &RingOptions<'_>,
        id: WriterId,
        pid: u32,
    ) -> Result<Self, ShmError> {
        let options = options.with_writer(id);
        let words =
            picollo_core::ring::required_words(schema, options.counters.len(), options.slots);
        let bytes = words
            .checked_mul(8)
            .filter(|b| *b as u64 <= MAX_SEGMENT_BYTES)
            .ok_or(ShmError::BadSize {
                segment: memfd.to_owned(),
                bytes: u64::MAX,
            })?;
        // Check the schema and options before making the segment.
        schema
            .check()
            .map_err(|e| ShmError::ring(memfd, e.into()))?;

        let fd = memfd_create(memfd).map_err(|e| ShmError::os("memfd_create", memfd, e))?;
        let segment = segment_path(pid as i32, fd.as_raw_fd());
        // memfds are created 0777 (0666 with MFD_NOEXEC_SEAL); only the owner (and root) may
        // open this one.
        // SAFETY: `fd` is open; fchmod has no memory effects.
        if unsafe { libc::fchmod(fd.as_raw_fd(), 0o600) } != 0 {
            return Err(ShmError::os("fchmod", &segment, errno()));
        }
        // SAFETY: `fd` is open; ftruncate has no memory effects.
        if unsafe { libc::ftruncate(fd.as_raw_fd(), bytes as libc::off_t) } != 0 {
            return Err(ShmError::os("ftruncate", &segment, errno()));
        }
        // From here on, nobody can change the size: the mapping never faults.
        // SAFETY: `fd` is open; `F_ADD_SEALS` takes an int and has no memory effects.
        if unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_ADD_SEALS, SEALS) } != 0 {
            return Err(ShmError::os("fcntl(F_ADD_SEALS)", &segment, errno()));
        }
        let map = Map::new(fd.as_fd(), bytes).map_err(|e| ShmError::os("mmap", &segment, e))?;
        // SAFETY: `map` is a live, page-aligned, read-write shared mapping of `bytes` bytes
        // of a segment sealed at that size, which `Self` owns and unmaps only after dropping
        // `ring` (field order). Every process accesses it through 64-bit atomics only (this
        // crate's readers and writers). The `'static` lifetime never escapes `Self`: no
        // method returns a reference derived from it. This is the only writer: the memfd was
        // just created, and the name is claimed in this process.
        let ring = unsafe { RingWriter::from_raw(map.ptr.as_ptr(), map.len, schema, &options) }
            .map_err(|e| ShmError::ring(&segment, e))?;
        Ok(Self {
            ring,
            map,
            fd,
            segment,
            memfd: memfd.to_owned(),
            pid,
            fork_generation: fork_generation(),
        })
    }

    /// Whether a reader is attached: one relaxed load.
    #[inline(always)]
    pub fn is_attached(&self) -> bool {
        self.ring.is_attached()
    }

    /// Saves a frame if a reader is attached; returns whether it did. Without a reader this is
    /// one relaxed load and a branch. A shorter `payload` is padded with zeros.
    #[inline(always)]
    pub fn save_words(&mut self, payload: &[u64]) -> bool {
        if !self.ring.is_attached() {
            return false;
        }
        self.save_attached(payload)
    }

    #[inline]
    fn save_attached(&mut self, payload: &[u64]) -> bool {
        self.save_attached_with(|data| picollo_core::ring::store_payload(data, payload))
    }

    /// Saves a frame if a reader is attached, with `fill` storing the payload into the slot's
    /// words (see [`RingWriter::write_with`]: words it does not store keep the slot's old
    /// values); returns whether it saved.
    #[inline(always)]
    pub fn save_with(&mut self, fill: impl FnOnce(&[RingWord])) -> bool {
        if !self.ring.is_attached() {
            return false;
        }
        self.save_attached_with(fill)
    }

    /// Whether a reader asked for other counters ([`ShmReader::request_counters`]): one
    /// relaxed load.
    #[inline(always)]
    pub fn has_counter_request(&self) -> bool {
        self.ring.has_counter_request()
    }

    /// Takes the pending counter request (see [`RingWriter::take_counter_request`]).
    pub fn take_counter_request<'b>(
        &mut self,
        buf: &'b mut [u8; REQUEST_BYTES],
    ) -> Option<CounterRequest<'b>> {
        self.ring.take_counter_request(buf)
    }

    /// Acknowledges counter request `seq` (see [`RingWriter::ack_counter_request`]).
    pub fn ack_counter_request(&mut self, seq: u64) {
        self.ring.ack_counter_request(seq);
    }

    /// Replaces the counter table from the next frame on (see [`RingWriter::set_counters`]).
    pub fn set_counters(&mut self, counters: &[CounterInfo<'_>]) -> Result<(), ShmError> {
        self.ring
            .set_counters(counters)
            .map_err(|e| ShmError::ring(&self.segment, e))
    }

    /// Counter slots the header describes.
    pub fn counter_slots(&self) -> usize {
        self.ring.counter_slots()
    }

    /// The attached path: the fork check, the write, and the periodic stale-reader check.
    #[inline(always)]
    fn save_attached_with(&mut self, fill: impl FnOnce(&[RingWord])) -> bool {
        if FORK_GENERATION.load(Ordering::Relaxed) != self.fork_generation {
            self.forked();
            return false;
        }
        self.ring.write_with(fill);
        if self.ring.frames_written() & (STALE_CHECK_INTERVAL - 1) == 0 {
            self.stale_check();
        }
        true
    }

    #[cold]
    #[inline(never)]
    fn forked(&mut self) {
        self.ring.disable();
    }

    #[cold]
    #[inline(never)]
    fn stale_check(&mut self) {
        let _ = self.check_readers();
    }

    /// Clears a stale `attached` flag: if `flock(LOCK_EX | LOCK_NB)` succeeds, no reader holds
    /// the segment, so `attached` is set to 0 (and saves become no-ops again). Returns whether
    /// readers remain. Call it on a timer if saves are rare; saving also calls it every
    /// [`STALE_CHECK_INTERVAL`] attached frames.
    pub fn check_readers(&mut self) -> Result<bool, ShmError> {
        if !self.ring.is_attached() {
            return Ok(false);
        }
        match flock(&self.fd, libc::LOCK_EX | libc::LOCK_NB) {
            Ok(true) => {
                self.ring.clear_attached();
                flock(&self.fd, libc::LOCK_UN)
                    .map_err(|e| ShmError::os("flock(LOCK_UN)", &self.segment, e))?;
                Ok(false)
            }
            Ok(false) => Ok(true),
            Err(e) => Err(ShmError::os("flock(LOCK_EX)", &self.segment, e)),
        }
    }

    /// The segment path readers open, `/proc/<pid>/fd/<fd>`.
    pub fn segment(&self) -> &str {
        &self.segment
    }

    /// The ring's name (without the `picollo-` prefix).
    pub fn name(&self) -> &str {
        &self.memfd[SEGMENT_PREFIX.len()..]
    }

    /// The ring's `attached` word (in the mapping, or a static zero once the writer is
    /// disabled): valid while `self` lives, wherever `self` moves.
    pub(crate) fn attached_word(&self) -> *const RingWord {
        self.ring.attached_word()
    }

    /// Frames written since creation.
    pub fn frames_written(&self) -> u64 {
        self.ring.frames_written()
    }

    /// Whether the writer turned itself off (it found itself in a child after `fork`).
    pub fn is_disabled(&self) -> bool {
        self.ring.is_disabled()
    }

    /// The segment's size in bytes.
    pub fn bytes(&self) -> usize {
        self.map.len
    }
}

impl Drop for ShmWriter {
    fn drop(&mut self) {
        // In a child after fork the name registry is the parent's copy, whose lock another
        // parent thread may have held at the fork: leave it.
        if std::process::id() == self.pid {
            release_name(&self.memfd);
        }
        // `ring`, then `map` (munmap), then `fd` drop in field order; the kernel frees the
        // segment once no process maps it or holds it open.
    }
}

/// A typed shared-memory writer: saves `F` frames.
pub struct ShmFrameWriter<F> {
    inner: ShmWriter,
    _frame: PhantomData<fn(&F)>,
}

impl<F> fmt::Debug for ShmFrameWriter<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("ShmFrameWriter").field(&self.inner).finish()
    }
}

impl<F: Frame> ShmFrameWriter<F> {
    /// Creates ring `name` for `F` frames (see [`ShmWriter::create`]).
    pub fn create(name: &str, options: &RingOptions<'_>) -> Result<Self, ShmError> {
        Ok(Self {
            inner: ShmWriter::create(name, &F::SCHEMA, options)?,
            _frame: PhantomData,
        })
    }

    /// Saves `frame` if a reader is attached; returns whether it did. Without a reader this is
    /// one relaxed load and a branch.
    #[inline(always)]
    pub fn save(&mut self, frame: &F) -> bool {
        if !self.inner.is_attached() {
            return false;
        }
        self.inner.save_attached_with(|data| frame.store(data))
    }

    /// The untyped writer.
    pub fn inner(&self) -> &ShmWriter {
        &self.inner
    }

    /// The untyped writer, mutably.
    pub fn inner_mut(&mut self) -> &mut ShmWriter {
        &mut self.inner
    }
}

// ---------------------------------------------------------------------------------------------
// Reader
// ---------------------------------------------------------------------------------------------

/// The reading end of a shared-memory ring, in any process of the same user; see the
/// [module docs](self).
pub struct ShmReader {
    /// Views `map`; declared first so it is dropped (and detaches) before the unmap.
    reader: RingReader<'static>,
    map: Map,
    /// Closed last, releasing `flock(LOCK_SH)`.
    fd: OwnedFd,
    segment: String,
    name: String,
    inode: u64,
}

// SAFETY: the reader's ring views a mapping it owns, accessed only through atomics; nothing
// in it is tied to the creating thread.
unsafe impl Send for ShmReader {}

impl fmt::Debug for ShmReader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ShmReader")
            .field("segment", &self.segment)
            .field("reader", &self.reader)
            .finish_non_exhaustive()
    }
}

impl ShmReader {
    /// Attaches to ring `name` of process `pid` (found with [`list_rings`]).
    pub fn attach(pid: i32, name: &str) -> Result<Self, ShmError> {
        let want = memfd_name(name)?;
        let entries = list_rings(Some(pid)).map_err(|e| ShmError::io("listing rings", &e))?;
        match entries.iter().find(|e| e.name == name) {
            Some(e) => Self::attach_entry(e),
            None => Err(ShmError::NotFound(format!("{want} of process {pid}"))),
        }
    }

    /// Attaches to a ring [`list_rings`] found; [`ShmError::NotFound`] if that ring is gone
    /// (its descriptor closed, even if since reused for another ring).
    pub fn attach_entry(entry: &RingEntry) -> Result<Self, ShmError> {
        let r = Self::attach_segment(&entry.segment)?;
        if r.inode != entry.inode || r.name != entry.name {
            return Err(ShmError::NotFound(entry.segment.clone()));
        }
        Ok(r)
    }

    /// Attaches to a segment by its path (`/proc/<pid>/fd/<fd>`): opens and checks it, takes
    /// `flock(LOCK_SH)`, then increments `attached`. Frames saved from now on can be read.
    pub fn attach_segment(segment: &str) -> Result<Self, ShmError> {
        let mut r = Self::open(segment)?;
        let mut tries = 0;
        loop {
            match flock(&r.fd, libc::LOCK_SH | libc::LOCK_NB) {
                Ok(true) => break,
                // The writer holds LOCK_EX for a moment while it checks for stale readers.
                Ok(false) if tries < 2000 => {
                    tries += 1;
                    std::thread::sleep(std::time::Duration::from_micros(50));
                }
                Ok(false) => return Err(ShmError::Busy(segment.to_owned())),
                Err(e) => return Err(ShmError::os("flock(LOCK_SH)", segment, e)),
            }
        }
        r.reader
            .set_attached()
            .map_err(|e| ShmError::ring(segment, e))?;
        Ok(r)
    }

    /// Opens a segment without attaching (a writer that uses unconditional writes, or one
    /// that stopped saving): reads the frames that are in the ring, oldest first.
    pub fn inspect_segment(segment: &str) -> Result<Self, ShmError> {
        Self::open(segment)
    }

    fn open(segment: &str) -> Result<Self, ShmError> {
        let Some((pid, _)) = parse_segment_path(segment) else {
            return Err(ShmError::BadName(segment.to_owned()));
        };
        let fd = open_rw(segment).map_err(|e| match e {
            libc::ENOENT => ShmError::NotFound(segment.to_owned()),
            e => ShmError::os("open", segment, e),
        })?;
        // What was opened, whatever the link pointed to when it was listed.
        let target = read_link(&format!("/proc/self/fd/{}", fd.as_raw_fd()))
            .map_err(|e| ShmError::io("reading the segment's link", &e))?;
        let Some(name) = parse_memfd_target(&target) else {
            return Err(ShmError::NotARing {
                segment: segment.to_owned(),
                target,
            });
        };
        let name = name.to_owned();
        let st = fstat(&fd).map_err(|e| ShmError::os("fstat", segment, e))?;
        if st.st_uid != euid() {
            return Err(ShmError::NotOwner {
                segment: segment.to_owned(),
                uid: st.st_uid,
            });
        }
        if st.st_mode & 0o077 != 0 {
            return Err(ShmError::BadMode {
                segment: segment.to_owned(),
                mode: st.st_mode & 0o7777,
            });
        }
        let seals = get_seals(&fd).map_err(|e| ShmError::os("fcntl(F_GET_SEALS)", segment, e))?;
        if seals & (libc::F_SEAL_SHRINK | libc::F_SEAL_GROW)
            != libc::F_SEAL_SHRINK | libc::F_SEAL_GROW
        {
            return Err(ShmError::NotSealed {
                segment: segment.to_owned(),
                seals,
            });
        }
        let bytes = u64::try_from(st.st_size).unwrap_or(0);
        if bytes == 0 || bytes % 8 != 0 || bytes > MAX_SEGMENT_BYTES {
            return Err(ShmError::BadSize {
                segment: segment.to_owned(),
                bytes,
            });
        }
        let map =
            Map::new(fd.as_fd(), bytes as usize).map_err(|e| ShmError::os("mmap", segment, e))?;
        // SAFETY: `map` is a live, page-aligned, read-write shared mapping of `map.len` bytes
        // (the file's size, checked above, which the seals checked above keep from ever
        // changing, so no access faults) that `Self` owns and unmaps only after dropping
        // `reader` (field order). All Picollo processes access it through 64-bit atomics
        // only; the contents are untrusted and validated by `inspect`. The `'static` lifetime
        // never escapes `Self`.
        let reader = unsafe { RingReader::inspect_raw(map.ptr.as_ptr(), map.len) }
            .map_err(|e| ShmError::ring(segment, e))?;
        let header_pid = reader.info().writer().0;
        if header_pid != pid as u64 {
            return Err(ShmError::WrongWriter {
                segment: segment.to_owned(),
                pid,
                header_pid,
            });
        }
        Ok(Self {
            reader,
            map,
            fd,
            segment: segment.to_owned(),
            name,
            inode: st.st_ino,
        })
    }

    /// The ring's name (without the `picollo-` prefix).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The segment's inode number: with [`RingEntry::inode`], tells whether a listed ring is
    /// this one (a descriptor number can be reused once a ring is gone; an inode cannot
    /// while this reader holds it).
    pub fn inode(&self) -> u64 {
        self.inode
    }

    /// The segment path it was opened by, `/proc/<pid>/fd/<fd>`.
    pub fn segment(&self) -> &str {
        &self.segment
    }

    /// The validated header.
    pub fn info(&self) -> &RingInfo {
        self.reader.info()
    }

    /// Whether the writer process is still running (same pid and start time).
    pub fn writer_alive(&self) -> bool {
        writer_alive(self.reader.info().writer())
    }

    /// Whether this reader is attached (not just inspecting).
    pub fn is_attached(&self) -> bool {
        self.reader.is_attached()
    }

    /// Frames delivered so far.
    pub fn accepted(&self) -> u64 {
        self.reader.accepted()
    }

    /// Frames lost so far (overwritten before they were read).
    pub fn lost(&self) -> u64 {
        self.reader.lost()
    }

    /// The ring's `head`: frames the writer has saved.
    pub fn head(&self) -> u64 {
        self.reader.head()
    }

    /// Frames delivered whose counters could not be attributed (see [`RingReader`]).
    pub fn unattributed(&self) -> u64 {
        self.reader.unattributed()
    }

    /// Asks the writer to count `counters` (see [`RingReader::request_counters`]); returns
    /// the request's sequence number.
    pub fn request_counters(&self, counters: &str) -> Result<u64, ShmError> {
        self.reader
            .request_counters(counters)
            .map_err(|e| ShmError::ring(&self.segment, e))
    }

    /// Whether the writer applied request `seq`.
    pub fn request_status(&self, seq: u64) -> RequestStatus {
        self.reader.request_status(seq)
    }

    /// The newest counter table in the header (what frames from now on hold).
    pub fn latest_counters(&mut self) -> Result<CounterTable, ShmError> {
        self.reader
            .latest_counters()
            .map_err(|e| ShmError::ring(&self.segment, e))
    }

    /// Copies the next frame's payload into `buf`; see [`RingReader::next_into`].
    pub fn next_into(&mut self, buf: &mut [u64]) -> Result<Option<u64>, ShmError> {
        self.reader
            .next_into(buf)
            .map_err(|e| ShmError::ring(&self.segment, e))
    }

    /// Reads the next frame as an `F`; see [`RingReader::next_frame`].
    pub fn next_frame<F: Frame>(&mut self) -> Result<Option<(u64, F)>, ShmError> {
        self.reader
            .next_frame()
            .map_err(|e| ShmError::ring(&self.segment, e))
    }

    /// Delivers every frame up to the current `head`, decoded by the header's schema.
    pub fn drain(&mut self, f: impl FnMut(DynamicFrame<'_>)) -> Result<Drained, ShmError> {
        self.reader
            .drain(f)
            .map_err(|e| ShmError::ring(&self.segment, e))
    }

    /// The CSV header line of this ring's frames (see
    /// [`FrameCsv::write_csv_header`]).
    pub fn csv_header(&self) -> String {
        let mut s = String::new();
        // Writing into a `String` cannot fail.
        let _ = picollo_alloc::csv::write_csv_header(self.reader.info(), &mut s);
        s
    }

    /// Drains to CSV: the header line first if `header`, then one line per frame, with the
    /// schema's field names as columns (ppt's `convert`). Unavailable counters are empty
    /// cells.
    pub fn drain_to_csv(
        &mut self,
        out: &mut dyn io::Write,
        header: bool,
    ) -> Result<Drained, ShmError> {
        if header {
            out.write_all(self.csv_header().as_bytes())
                .map_err(|e| ShmError::io("writing CSV", &e))?;
        }
        let mut line = String::new();
        let mut failed: Option<io::Error> = None;
        let d = self.drain(|f| {
            if failed.is_some() {
                return;
            }
            line.clear();
            let _ = f.write_csv_row(&mut line);
            if let Err(e) = out.write_all(line.as_bytes()) {
                failed = Some(e);
            }
        })?;
        match failed {
            Some(e) => Err(ShmError::io("writing CSV", &e)),
            None => Ok(d),
        }
    }

    /// Detaches now (saves become no-ops once no reader is left); frames already in the ring
    /// can still be read.
    pub fn detach(&mut self) {
        self.reader.detach();
    }

    /// Payload words of this ring's frames (at most [`picollo_core::ring::MAX_PAYLOAD_WORDS`]).
    pub fn payload_words(&self) -> usize {
        self.reader.info().payload_words()
    }

    /// The segment's size in bytes.
    pub fn bytes(&self) -> usize {
        self.map.len
    }
}

// ---------------------------------------------------------------------------------------------
// Listing
// ---------------------------------------------------------------------------------------------

/// A ring found in a process's `/proc/PID/fd`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RingEntry {
    /// The writer's pid.
    pub pid: i32,
    /// The ring's name.
    pub name: String,
    /// The segment path, `/proc/<pid>/fd/<fd>`.
    pub segment: String,
    /// The segment's inode number (see [`ShmReader::inode`]).
    pub inode: u64,
}

/// The rings of process `pid` (sorted by name), or of every process this user may inspect
/// (`None`; sorted by pid, then name). Only links are read; attach to check the headers.
///
/// A process's rings are its descriptors that lead to a `picollo-<name>` memfd. One seen
/// through several descriptors (`dup`) is listed once. A child forked by a writer lists its
/// parent's rings until it `exec`s; attaching to them fails with
/// [`ShmError::WrongWriter`].
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
