//! Frame rings in POSIX shared memory: a program saves frames, another process attaches,
//! drains them and converts them to CSV (seed 002, ppt), with no ptrace.
//!
//! # Segments
//!
//! One segment per ring, `shm_open("/picollo-<pid>-<name>")` (a file in `/dev/shm`), mode
//! 0600, `O_CLOEXEC`, holding a [`picollo_core::ring`] header and slots. Its header carries the
//! writer's identity: the pid and the process start time (field 22 of `/proc/<pid>/stat`), so
//! a reader can tell a live writer from a dead one whose pid was reused.
//!
//! - The writer ([`ShmWriter`], typed [`ShmFrameWriter`]) unlinks the segment when it is
//!   dropped in the process that created it.
//! - After a crash the segment stays; [`reclaim_stale`] unlinks every segment of this user
//!   whose writer is gone (no such pid, or a different start time).
//! - [`list_rings`] lists the rings of a pid (for `picollo attach PID`).
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
//! A reader checks that the segment belongs to its own user and is not accessible to others,
//! that its size is sane, and then every header field ([`RingInfo::parse`]); a corrupt or
//! hostile segment gets an error, never a crash. One thing no reader of a shared mapping can
//! defend against is the owner truncating the file after it is mapped: accesses past the new
//! end raise `SIGBUS`. Only the same user can do that, and that user can also ptrace the
//! reader.
//!
//! # fork
//!
//! A child process must not write into its parent's ring. A `pthread_atfork` child handler
//! bumps a fork generation; an attached save compares it (one relaxed load, on the attached
//! path only) and a writer that finds itself in a child turns into a no-op for good
//! ([`RingWriter::disable`]). The child's drop does not unlink the parent's segment. A child
//! that wants frames creates its own ring.
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

/// Where Linux keeps POSIX shared-memory segments.
pub const SHM_DIR: &str = "/dev/shm";
/// The prefix of every Picollo segment (after the `/`).
pub const SEGMENT_PREFIX: &str = "picollo-";
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

/// The segment name of ring `name` of process `pid`: `/picollo-<pid>-<name>`.
pub fn segment_name(pid: i32, name: &str) -> Result<String, ShmError> {
    check_ring_name(name)?;
    Ok(format!("/{SEGMENT_PREFIX}{pid}-{name}"))
}

/// Splits a segment name (`/picollo-<pid>-<name>`, with or without the `/`) into the pid and
/// the ring name; `None` if it is not a Picollo segment name.
pub fn parse_segment_name(segment: &str) -> Option<(i32, &str)> {
    let s = segment.strip_prefix('/').unwrap_or(segment);
    let rest = s.strip_prefix(SEGMENT_PREFIX)?;
    let (pid, name) = rest.split_once('-')?;
    let pid: i32 = pid.parse().ok().filter(|p| *p > 0)?;
    check_ring_name(name).ok()?;
    Some((pid, name))
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

fn c_name(segment: &str) -> Result<CString, ShmError> {
    CString::new(segment).map_err(|_| ShmError::BadName(segment.to_owned()))
}

fn shm_open(segment: &str, flags: i32, mode: libc::mode_t) -> Result<OwnedFd, i32> {
    let name = CString::new(segment).map_err(|_| libc::EINVAL)?;
    // SAFETY: `name` is a NUL-terminated string that outlives the call.
    let fd = unsafe { libc::shm_open(name.as_ptr(), flags | libc::O_CLOEXEC, mode) };
    if fd < 0 {
        return Err(errno());
    }
    // SAFETY: `shm_open` just returned `fd`; nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn shm_unlink(segment: &str) -> Result<(), i32> {
    let name = CString::new(segment).map_err(|_| libc::EINVAL)?;
    // SAFETY: `name` is a NUL-terminated string that outlives the call.
    if unsafe { libc::shm_unlink(name.as_ptr()) } != 0 {
        return Err(errno());
    }
    Ok(())
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

/// Ring names this process has open, so two threads never create (or reclaim) the same one.
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

fn name_is_open(segment: &str) -> bool {
    let names = OPEN_NAMES.lock().unwrap_or_else(|p| p.into_inner());
    names.as_ref().is_some_and(|s| s.contains(segment))
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
    segment: String,
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
    /// Creates ring `name` of this process (`/picollo-<pid>-<name>`, mode 0600) for `schema`
    /// frames. `options.writer` is replaced by this process's identity.
    ///
    /// A segment of the same name left by a dead process whose pid this process reuses is
    /// replaced; [`ShmError::AlreadyExists`] if this process already has the ring.
    pub fn create(
        name: &str,
        schema: &Schema<'_>,
        options: &RingOptions<'_>,
    ) -> Result<Self, ShmError> {
        let id = this_writer_id();
        let pid = std::process::id();
        let segment = segment_name(pid as i32, name)?;
        claim_name(&segment)?;
        let result = Self::create_claimed(&segment, schema, options, id, pid);
        if result.is_err() {
            release_name(&segment);
        }
        result
    }

    fn create_claimed(
        segment: &str,
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
                segment: segment.to_owned(),
                bytes: u64::MAX,
            })?;
        // Check the schema and options before touching the file system.
        schema
            .check()
            .map_err(|e| ShmError::ring(segment, e.into()))?;

        let flags = libc::O_RDWR | libc::O_CREAT | libc::O_EXCL;
        let fd = match shm_open(segment, flags, 0o600) {
            Ok(fd) => fd,
            Err(libc::EEXIST) => {
                // Not ours (the name is claimed in this process), so left by a dead process
                // whose pid we now have: replace it.
                shm_unlink(segment).map_err(|e| ShmError::os("shm_unlink", segment, e))?;
                shm_open(segment, flags, 0o600).map_err(|e| ShmError::os("shm_open", segment, e))?
            }
            Err(e) => return Err(ShmError::os("shm_open", segment, e)),
        };
        let unlink_on_error = |e: ShmError| {
            let _ = shm_unlink(segment);
            e
        };
        // SAFETY: `fd` is open; ftruncate has no memory effects.
        if unsafe { libc::ftruncate(fd.as_raw_fd(), bytes as libc::off_t) } != 0 {
            return Err(unlink_on_error(ShmError::os("ftruncate", segment, errno())));
        }
        let map = Map::new(fd.as_fd(), bytes)
            .map_err(|e| unlink_on_error(ShmError::os("mmap", segment, e)))?;
        // SAFETY: `map` is a live, page-aligned, read-write shared mapping of `bytes` bytes
        // that `Self` owns and unmaps only after dropping `ring` (field order). Every process
        // accesses it through 64-bit atomics only (this crate's readers and writers). The
        // `'static` lifetime never escapes `Self`: no method returns a reference derived from
        // it. This is the only writer: the name is claimed in this process and the segment
        // was created with O_EXCL.
        let ring = unsafe { RingWriter::from_raw(map.ptr.as_ptr(), map.len, schema, &options) }
            .map_err(|e| unlink_on_error(ShmError::ring(segment, e)))?;
        Ok(Self {
            ring,
            map,
            fd,
            segment: segment.to_owned(),
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

    /// The segment's name, `/picollo-<pid>-<name>`.
    pub fn segment(&self) -> &str {
        &self.segment
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
        // In a child after fork the segment is the parent's: leave it (and the name registry,
        // whose lock another parent thread may have held at the fork).
        if std::process::id() == self.pid {
            let _ = shm_unlink(&self.segment);
            release_name(&self.segment);
        }
        // `ring`, then `map` (munmap), then `fd` drop in field order.
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
    /// Attaches to ring `name` of process `pid`.
    pub fn attach(pid: i32, name: &str) -> Result<Self, ShmError> {
        Self::attach_segment(&segment_name(pid, name)?)
    }

    /// Attaches to a segment by its name (`/picollo-<pid>-<name>`): opens and checks it,
    /// takes `flock(LOCK_SH)`, then increments `attached`. Frames saved from now on can be
    /// read.
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

    /// Opens a segment without attaching (post-mortem, or a writer that uses unconditional
    /// writes): reads the frames that are in the ring, oldest first.
    pub fn inspect_segment(segment: &str) -> Result<Self, ShmError> {
        Self::open(segment)
    }

    fn open(segment: &str) -> Result<Self, ShmError> {
        let Some((pid, _)) = parse_segment_name(segment) else {
            return Err(ShmError::BadName(segment.to_owned()));
        };
        c_name(segment)?;
        let fd = shm_open(segment, libc::O_RDWR, 0).map_err(|e| match e {
            libc::ENOENT => ShmError::NotFound(segment.to_owned()),
            e => ShmError::os("shm_open", segment, e),
        })?;
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
        // (the file's size, checked above) that `Self` owns and unmaps only after dropping
        // `reader` (field order). All Picollo processes access it through 64-bit atomics
        // only; the contents are untrusted and validated by `inspect`. The `'static` lifetime
        // never escapes `Self`. (A truncation by the owner after mapping would fault; see the
        // module docs.)
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
        })
    }

    /// The segment's name.
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
    /// [`DynamicFrame::write_csv_header`]).
    pub fn csv_header(&self) -> String {
        let mut s = String::new();
        // Writing into a `String` cannot fail.
        let _ = picollo_core::ring::write_csv_header(self.reader.info(), &mut s);
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
// Listing and reclaiming
// ---------------------------------------------------------------------------------------------

/// A ring segment found in [`SHM_DIR`].
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RingEntry {
    /// The writer's pid (from the name).
    pub pid: i32,
    /// The ring's name.
    pub name: String,
    /// The segment name, `/picollo-<pid>-<name>`.
    pub segment: String,
}

/// The ring segments in [`SHM_DIR`], of process `pid` or of every process (`None`), sorted.
/// Only names are read; attach to check the headers.
pub fn list_rings(pid: Option<i32>) -> io::Result<Vec<RingEntry>> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(SHM_DIR)? {
        let entry = entry?;
        let file = entry.file_name();
        let Some(file) = file.to_str() else { continue };
        let Some((p, name)) = parse_segment_name(file) else {
            continue;
        };
        if pid.is_none_or(|want| want == p) {
            out.push(RingEntry {
                pid: p,
                name: name.to_owned(),
                segment: format!("/{file}"),
            });
        }
    }
    out.sort();
    Ok(out)
}

/// Unlinks the ring segments of this user whose writer is gone: no process has the pid in
/// the name, or the one that has it started at another time than the header says. Returns
/// the segments removed. Segments that cannot be read are left alone while a process with
/// their pid runs (it may be creating them).
pub fn reclaim_stale() -> io::Result<Vec<String>> {
    let mut removed = Vec::new();
    for entry in list_rings(None)? {
        if name_is_open(&entry.segment) {
            continue;
        }
        let Ok(fd) = shm_open(&entry.segment, libc::O_RDWR, 0) else {
            continue;
        };
        if fstat(&fd).map_or(true, |st| st.st_uid != euid()) {
            continue;
        }
        drop(fd);
        let stale = match process_start_time(entry.pid) {
            None => true,
            Some(start) => match ShmReader::inspect_segment(&entry.segment) {
                Ok(r) => r.info().writer() != WriterId(entry.pid as u64, start),
                Err(_) => false,
            },
        };
        if stale && shm_unlink(&entry.segment).is_ok() {
            removed.push(entry.segment);
        }
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(segment_name(42, "spans").unwrap(), "/picollo-42-spans");
        assert_eq!(
            parse_segment_name("/picollo-42-span-7"),
            Some((42, "span-7"))
        );
        assert_eq!(parse_segment_name("picollo-42-a.b_c"), Some((42, "a.b_c")));
        for bad in ["", ".x", "a/b", "a b", "é"] {
            assert!(
                matches!(segment_name(1, bad), Err(ShmError::BadName(_))),
                "{bad:?}"
            );
        }
        assert!(segment_name(1, &"x".repeat(101)).is_err());
        for bad in [
            "/picollo--1-x",
            "/picollo-0-x",
            "/picollo-x-y",
            "/other-1-x",
            "/picollo-1-",
        ] {
            assert_eq!(parse_segment_name(bad), None, "{bad}");
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
