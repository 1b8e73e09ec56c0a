//! The reading end: [`ShmReader`] attaches to a segment found through `/proc/PID/fd` (shared
//! `flock`, validated header), drains frames and detaches.

use core::fmt;

use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};

use picollo_ring::{CounterTable, Drained, DynamicFrame, Frame, RingReader};

use crate::sys::SharedMapping as Map;
use picollo_ring::csv::FrameCsv;

use super::error::ShmError;
use super::list::{list_rings, RingEntry};
use super::names::{memfd_name, parse_memfd_target, parse_segment_path, writer_alive};
use super::segment::{euid, flock, fstat, get_seals, open_rw, read_link, MAX_SEGMENT_BYTES};

/// The reading end of a shared-memory ring, in any process of the same user; see the
/// [module docs](crate::shm).
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
        // never escapes `Self`: `ring()` lends the reader with its lifetime shortened to the
        // borrow of `self` (`RingReader` is covariant in it).
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

    /// The ring reader over the mapped segment: its header ([`RingReader::info`]), what it
    /// delivered and lost ([`RingReader::accepted`], [`RingReader::lost`],
    /// [`RingReader::unattributed`]), the writer's `head`, whether it is attached and how a
    /// counter request fared ([`RingReader::request_status`]). The reads that can fail are this
    /// type's own, so that their errors name the segment.
    pub fn ring(&self) -> &RingReader<'_> {
        &self.reader
    }

    /// The segment path it was opened by, `/proc/<pid>/fd/<fd>`.
    pub fn segment(&self) -> &str {
        &self.segment
    }

    /// Whether the writer process is still running (same pid and start time).
    pub fn writer_alive(&self) -> bool {
        writer_alive(self.reader.info().writer())
    }

    /// Asks the writer to count `counters` (see [`RingReader::request_counters`]); returns
    /// the request's sequence number.
    pub fn request_counters(&self, counters: &str) -> Result<u64, ShmError> {
        self.reader
            .request_counters(counters)
            .map_err(|e| ShmError::ring(&self.segment, e))
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
        let _ = picollo_ring::csv::write_csv_header(self.reader.info(), &mut s);
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

    /// The segment's size in bytes.
    pub fn bytes(&self) -> usize {
        self.map.len
    }
}
