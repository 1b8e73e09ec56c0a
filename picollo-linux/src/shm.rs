//! Frame rings in shared memory: a program saves frames, another process attaches, drains them and
//! converts them to CSV (the frame ring design of ppt, the Portable Performance Tool), with no
//! ptrace.
//!
//! # Segments
//!
//! One segment per ring (Linux 3.17 or later): an anonymous `memfd_create("picollo-<name>")`
//! file (`MFD_CLOEXEC`, `MFD_NOEXEC_SEAL` where the kernel has it, mode 0600) holding a [`picollo_ring`] header and slots, sized once and then sealed
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
//! frames it saves while attached, and whenever [`ShmFrameWriter::check_readers`] is called (on a
//! timer, say). A stale flag only costs the writer its attached-save price until then.
//!
//! # Untrusted segments
//!
//! A reader checks that what it opened is a Picollo memfd, that it belongs to its own user and is
//! not accessible to others, that it is sealed against shrinking (so its mapping can never fault),
//! that its size is sane, and then every header field
//! ([`RingInfo::parse`](picollo_ring::RingInfo::parse)); a corrupt or hostile segment gets an
//! error, never a crash.
//!
//! # fork
//!
//! A child process must not write into its parent's ring. A `pthread_atfork` child handler bumps a
//! fork generation; an attached save compares it (one relaxed load, on the attached path only) and
//! a writer that finds itself in a child turns into a no-op for good
//! ([`RingWriter::disable`](picollo_ring::RingWriter::disable)). The child's drop leaves the
//! parent's segment alone. A child that wants frames creates its own ring. The child inherits the
//! parent's descriptors until it `exec`s, so its `/proc/PID/fd` lists them: a reader refuses them
//! ([`ShmError::WrongWriter`]: the header names the parent).
//!
//! ```
//! use picollo_ring::{RingOptions, TimeInterval};
//! use picollo_linux::shm::{ShmFrameWriter, ShmReader};
//!
//! picollo_ring::frame! {
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
//!
//! # Modules
//!
//! - `segment`: the limits, the system calls on the `memfd`, the fork generation and the names
//!   this process holds;
//! - `error`: [`ShmError`];
//! - `names`: memfd names, segment paths and writer identities;
//! - `writer`: `ShmWriter` (untyped: the span rings) and [`ShmFrameWriter`];
//! - `reader`: [`ShmReader`];
//! - `list`: [`list_rings`].
//!
//! Imports run one way: `segment` ← `error` ← `names` ← `list` ← `reader`, and `names` ←
//! `writer`.

mod error;
mod list;
mod names;
mod reader;
mod segment;
mod writer;

pub use error::ShmError;
pub use list::{list_rings, RingEntry};
pub use reader::ShmReader;
pub use writer::ShmFrameWriter;
pub(crate) use writer::ShmWriter;
