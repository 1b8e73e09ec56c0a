//! The writing end: [`ShmWriter`] (untyped) and [`ShmFrameWriter`] (typed) create, seal and
//! save into a segment, and notice attached readers through the `flock` protocol.

use core::fmt;
use core::marker::PhantomData;

use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::sync::atomic::Ordering;

use picollo_ring::{
    AtomicU64 as RingWord, CounterInfo, CounterRequest, Frame, RingOptions, RingWriter, Schema,
    WriterId, REQUEST_BYTES,
};

use crate::sys::last_errno as errno;
use crate::sys::SharedMapping as Map;

use super::error::ShmError;
use super::names::{claim_name, memfd_name, release_name, segment_path, this_writer_id};
use super::segment::{
    flock, fork_generation, memfd_create, FORK_GENERATION, MAX_SEGMENT_BYTES, SEALS,
    STALE_CHECK_INTERVAL,
};

/// The writing end of a shared-memory ring, untyped (payload word slices, the span rings'
/// runtime schema); see the [module docs](crate::shm). [`ShmFrameWriter`] is the public,
/// typed one.
///
/// Not `Sync`: one thread saves. It is `Send`, so a ring can be handed to another thread.
pub(crate) struct ShmWriter {
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
    pub(crate) fn create(
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
        let words = picollo_ring::required_words(schema, options.counters.len(), options.slots);
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
        // `ring` (field order); the mapping stays where it is when `Self` moves. Every
        // process accesses it through 64-bit atomics only (this crate's readers and
        // writers). The `'static` lifetime escapes `Self` in one place only: the crate-private
        // `attached_word` hands out a raw pointer to the mapping's `attached` word, valid
        // while `Self` lives; its one user (`span::thread`'s `ThreadRing::publish`, the
        // thread-local fast check) points the thread-local away in `ThreadRing`'s `Drop`,
        // which runs before its writer field (and so the mapping) drops. No method returns a
        // reference derived from it. This is the only writer: the memfd was
        // just created, and the name is claimed in this process; a new memfd reads as zeros.
        // The memfd is new, so all zeros: its slots' pages stay unallocated until frames are
        // saved, which happens only while a reader is attached (a thread's span ring costs
        // its header page until then, not its 2 MB).
        let ring =
            unsafe { RingWriter::from_zeroed_raw(map.ptr.as_ptr(), map.len, schema, &options) }
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
    pub(crate) fn is_attached(&self) -> bool {
        self.ring.is_attached()
    }

    /// Saves a frame if a reader is attached, with `fill` storing the payload into the slot's
    /// words (see [`RingWriter::write_with`]: words it does not store keep the slot's old
    /// values); returns whether it saved.
    #[inline(always)]
    pub(crate) fn save_with(&mut self, fill: impl FnOnce(&[RingWord])) -> bool {
        if !self.ring.is_attached() {
            return false;
        }
        self.save_attached_with(fill)
    }

    /// Whether a reader asked for other counters
    /// ([`ShmReader::request_counters`](crate::shm::ShmReader::request_counters)): one relaxed
    /// load.
    #[inline(always)]
    pub(crate) fn has_counter_request(&self) -> bool {
        self.ring.has_counter_request()
    }

    /// Takes the pending counter request (see [`RingWriter::take_counter_request`]).
    pub(crate) fn take_counter_request<'b>(
        &mut self,
        buf: &'b mut [u8; REQUEST_BYTES],
    ) -> Option<CounterRequest<'b>> {
        self.ring.take_counter_request(buf)
    }

    /// Acknowledges counter request `seq` (see [`RingWriter::ack_counter_request`]).
    pub(crate) fn ack_counter_request(&mut self, seq: u64) {
        self.ring.ack_counter_request(seq);
    }

    /// Replaces the counter table from the next frame on (see [`RingWriter::set_counters`]).
    pub(crate) fn set_counters(&mut self, counters: &[CounterInfo<'_>]) -> Result<(), ShmError> {
        self.ring
            .set_counters(counters)
            .map_err(|e| ShmError::ring(&self.segment, e))
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
    pub(crate) fn check_readers(&mut self) -> Result<bool, ShmError> {
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
    pub(crate) fn segment(&self) -> &str {
        &self.segment
    }

    /// The ring's `attached` word (in the mapping, or a static zero once the writer is
    /// disabled): valid while `self` lives, wherever `self` moves. A caller that keeps the
    /// pointer must stop reading it before `self` drops (the mapping is unmapped then); see
    /// the SAFETY note in `create_claimed`.
    pub(crate) fn attached_word(&self) -> *const RingWord {
        self.ring.attached_word()
    }

    /// Frames written since creation.
    pub(crate) fn frames_written(&self) -> u64 {
        self.ring.frames_written()
    }

    /// Whether the writer turned itself off (it found itself in a child after `fork`).
    pub(crate) fn is_disabled(&self) -> bool {
        self.ring.is_disabled()
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
    /// Creates ring `name` of this process (a sealed memfd `picollo-<name>`, mode 0600) for
    /// `F` frames. `options.writer` is replaced by this process's identity.
    ///
    /// [`ShmError::AlreadyExists`] if this process already has the ring. Nothing another
    /// process does can make this fail (there is no shared name to take) short of exhausting
    /// memory or descriptors.
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
        self.inner.save_with(|data| frame.store(data))
    }

    /// Whether a reader is attached: one relaxed load.
    #[inline(always)]
    pub fn is_attached(&self) -> bool {
        self.inner.is_attached()
    }

    /// Clears a stale `attached` flag: if `flock(LOCK_EX | LOCK_NB)` succeeds, no reader holds
    /// the segment, so `attached` is set to 0 (and saves become no-ops again). Returns whether
    /// readers remain. Call it on a timer if saves are rare; saving also calls it every
    /// 65,536 attached frames.
    pub fn check_readers(&mut self) -> Result<bool, ShmError> {
        self.inner.check_readers()
    }

    /// The segment path readers open, `/proc/<pid>/fd/<fd>`.
    pub fn segment(&self) -> &str {
        self.inner.segment()
    }

    /// Frames written since creation.
    pub fn frames_written(&self) -> u64 {
        self.inner.frames_written()
    }

    /// Whether the writer turned itself off (it found itself in a child after `fork`).
    pub fn is_disabled(&self) -> bool {
        self.inner.is_disabled()
    }
}

#[cfg(test)]
mod tests {
    use picollo_ring::{Field, FieldKind, RingOptions, Schema, Value};

    use super::ShmWriter;
    use crate::shm::ShmReader;

    /// A writer with a schema made at run time (the span rings' kind) and a reader that decodes
    /// its frames by the header's schema.
    #[test]
    fn untyped_writer_and_reader() {
        const FIELDS: [Field<'static>; 2] = [
            Field::new("x", FieldKind::U64),
            Field::new("y", FieldKind::F64),
        ];
        let schema = Schema::new("xy", &FIELDS);
        let mut w = ShmWriter::create("untyped", &schema, &RingOptions::new(4)).unwrap();
        let pid = std::process::id() as i32;
        let mut r = ShmReader::attach(pid, "untyped").unwrap();
        for i in 0..10u64 {
            let payload = [i, (i as f64 / 2.0).to_bits()];
            assert!(w.save_with(|data| picollo_ring::store_payload(data, &payload)));
        }
        let mut got = Vec::new();
        r.drain(|f| {
            if let (Some(Value::Unsigned(x)), Some(Value::Float(y))) = (f.get("x"), f.get("y")) {
                got.push((f.number(), x, y));
            }
        })
        .unwrap();
        // 10 frames into 4 slots: resumed at 10 - 2.
        assert_eq!(got, [(8, 8, 4.0), (9, 9, 4.5)]);
        assert_eq!((r.ring().accepted(), r.ring().lost()), (2, 8));
    }
}
