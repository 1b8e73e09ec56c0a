//! Capture files: frames as a reader drained them, with each ring's schema, clock and
//! counter tables, so they can be converted later, on another machine (seed 002's
//! `ppt attach -o output.bin`, then `ppt convert`).
//!
//! # Format (version 1, little-endian)
//!
//! A 32-byte file header: the magic `PICOCAPT`, the version (`u32`), flags (`u32`, 0), the
//! pid of the process the frames came from (`u64`) and the wall-clock time the capture
//! started (`u64`, nanoseconds since the Unix epoch). Then records, each a 16-byte record
//! header (kind `u32`, ring id `u32`, payload length `u64`) and its payload:
//!
//! | kind | payload |
//! |---|---|
//! | 1 ring | name length (`u32`), name (UTF-8, at most 255 bytes), then the ring header's words as [`RingInfo::encode_header`] writes them (schema, clock record, counter table) |
//! | 2 frames | frames of that ring, each its number (`u64`) then its payload words |
//! | 3 lost | frames of that ring the reader lost (`u64`), since the previous such record |
//! | 4 counters | the ring's counter table changed: its epoch (`u64`), its first frame (`u64`), then the table ([`CounterTable::encode`]) |
//! | 5 end | the capture's frames (`u64`) and lost frames (`u64`); a file without it was cut short |
//!
//! A ring record comes before any other record of its ring; frame numbers of a ring
//! increase (gaps are lost frames).
//!
//! # Reading untrusted files
//!
//! [`CaptureReader`] checks everything: the magic and version, record kinds, lengths (no
//! record payload over [`MAX_RECORD_BYTES`], no more than [`MAX_RINGS`] rings, sizes that
//! divide evenly), ring headers ([`RingInfo::from_header_words`]), counter tables, ring ids
//! and frame order. A hostile file gets an error naming the byte offset, never a panic, and
//! the reader holds one record and the rings' headers at a time: memory is bounded whatever
//! the file says.
//!
//! ```
//! use picollo_core::ring::{RingBuffer, RingOptions, required_words, Frame};
//! use picollo_linux::capture::{CaptureEvent, CaptureReader, CaptureWriter};
//!
//! picollo_core::frame! {
//!     pub struct Tick { pub n: u64 }
//! }
//! static RING: RingBuffer<{ required_words(&Tick::SCHEMA, 0, 8) }> = RingBuffer::new();
//! let mut w = RING.frame_writer::<Tick>(&RingOptions::new(8))?;
//! let mut r = RING.reader()?;
//! w.save(&Tick { n: 42 });
//!
//! let mut file = Vec::new();
//! let mut capture = CaptureWriter::new(&mut file, 1234)?;
//! let ring = capture.add_ring("ticks", r.info())?;
//! let drained = r.drain(|f| capture.frame(ring, f.info(), f.number(), f.words()).unwrap())?;
//! capture.lost(ring, drained.lost)?;
//! capture.finish()?;
//!
//! let mut reader = CaptureReader::new(file.as_slice())?;
//! assert_eq!(reader.pid(), 1234);
//! let mut values = Vec::new();
//! while let Some(event) = reader.next_event()? {
//!     if let CaptureEvent::Frame { words, .. } = event {
//!         values.push(words[0]);
//!     }
//! }
//! assert_eq!(values, [42]);
//! assert!(reader.is_complete());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use core::fmt;
use std::io::{self, Read, Write};

use picollo_core::ring::{CounterTable, RingError, RingInfo, MAX_COUNTERS, MAX_PAYLOAD_WORDS};

/// The file magic.
pub const MAGIC: [u8; 8] = *b"PICOCAPT";
/// The format version this code writes and reads.
pub const VERSION: u32 = 1;
/// The largest record payload a reader accepts (and a writer produces): 1 MiB.
pub const MAX_RECORD_BYTES: u64 = 1 << 20;
/// The most rings one capture may describe.
pub const MAX_RINGS: u32 = 4096;
/// Longest ring name, in bytes.
pub const MAX_RING_NAME: usize = 255;

const FILE_HEADER: usize = 32;
const RECORD_HEADER: usize = 16;
/// The longest ring header: 80 fixed words, 32 fields and 8 counters of 4 words.
const MAX_HEADER_WORDS: usize = 80 + 4 * (32 + MAX_COUNTERS);
/// Frame bytes a writer buffers before it writes a frames record.
const FRAME_BUFFER: usize = 64 << 10;

mod kind {
    pub const RING: u32 = 1;
    pub const FRAMES: u32 = 2;
    pub const LOST: u32 = 3;
    pub const COUNTERS: u32 = 4;
    pub const END: u32 = 5;
}

/// Why a capture could not be written or read.
#[derive(Debug)]
#[non_exhaustive]
pub enum CaptureError {
    /// Reading or writing the file failed.
    Io(io::Error),
    /// The file is not a capture, or is damaged: what is wrong, at which byte.
    Invalid {
        /// The byte offset of the file header or record at fault.
        offset: u64,
        /// What is wrong.
        what: String,
    },
    /// A ring header or counter table in the file is invalid.
    Ring {
        /// The byte offset of the record.
        offset: u64,
        /// What the ring code said.
        error: RingError,
    },
    /// A writer was given something it cannot record (a name too long, too many rings).
    Unrecordable(String),
}

impl fmt::Display for CaptureError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Io(e) => write!(f, "{e}"),
            Self::Invalid { offset, what } => write!(f, "at byte {offset}: {what}"),
            Self::Ring { offset, error } => {
                write!(f, "at byte {offset}: invalid ring description: {error}")
            }
            Self::Unrecordable(what) => write!(f, "cannot record: {what}"),
        }
    }
}

impl std::error::Error for CaptureError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Io(e) => Some(e),
            Self::Ring { error, .. } => Some(error),
            _ => None,
        }
    }
}

impl From<io::Error> for CaptureError {
    fn from(e: io::Error) -> Self {
        Self::Io(e)
    }
}

// ---------------------------------------------------------------------------------------------
// Writer
// ---------------------------------------------------------------------------------------------

/// What a writer remembers of a ring.
struct WrittenRing {
    payload_words: usize,
    epoch: u64,
    last: Option<u64>,
}

/// Writes a capture: rings, then their frames as they are drained.
///
/// Frames are buffered per call sequence and written as one record when the buffer fills,
/// when another ring's frame comes, or on [`CaptureWriter::flush`]; call
/// [`CaptureWriter::finish`] at the end (a file without its end record reads as cut short).
pub struct CaptureWriter<W: Write> {
    out: W,
    rings: Vec<WrittenRing>,
    /// The ring whose frames are buffered, and the buffer.
    pending: Option<u32>,
    buf: Vec<u8>,
    frames: u64,
    lost: u64,
}

impl<W: Write> fmt::Debug for CaptureWriter<W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CaptureWriter")
            .field("rings", &self.rings.len())
            .field("frames", &self.frames)
            .field("lost", &self.lost)
            .finish_non_exhaustive()
    }
}

fn put_record(out: &mut impl Write, kind: u32, ring: u32, payload: &[u8]) -> io::Result<()> {
    let mut h = [0u8; RECORD_HEADER];
    h[..4].copy_from_slice(&kind.to_le_bytes());
    h[4..8].copy_from_slice(&ring.to_le_bytes());
    h[8..].copy_from_slice(&(payload.len() as u64).to_le_bytes());
    out.write_all(&h)?;
    out.write_all(payload)
}

impl<W: Write> CaptureWriter<W> {
    /// Starts a capture of process `pid`'s frames: writes the file header.
    pub fn new(mut out: W, pid: u32) -> Result<Self, CaptureError> {
        let started = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
        let mut h = [0u8; FILE_HEADER];
        h[..8].copy_from_slice(&MAGIC);
        h[8..12].copy_from_slice(&VERSION.to_le_bytes());
        h[16..24].copy_from_slice(&u64::from(pid).to_le_bytes());
        h[24..32].copy_from_slice(&started.to_le_bytes());
        out.write_all(&h)?;
        Ok(Self {
            out,
            rings: Vec::new(),
            pending: None,
            buf: Vec::with_capacity(FRAME_BUFFER),
            frames: 0,
            lost: 0,
        })
    }

    /// Describes a ring (its name, and the header `info` as the reader validated it) and
    /// returns its id for [`CaptureWriter::frame`].
    pub fn add_ring(&mut self, name: &str, info: &RingInfo) -> Result<u32, CaptureError> {
        if name.len() > MAX_RING_NAME {
            return Err(CaptureError::Unrecordable(format!(
                "ring name of {} bytes (at most {MAX_RING_NAME})",
                name.len()
            )));
        }
        let id = u32::try_from(self.rings.len())
            .ok()
            .filter(|id| *id < MAX_RINGS)
            .ok_or_else(|| CaptureError::Unrecordable(format!("more than {MAX_RINGS} rings")))?;
        self.flush_frames()?;
        let mut words = [0u64; MAX_HEADER_WORDS];
        let n = info
            .encode_header(&mut words)
            .map_err(|e| CaptureError::Unrecordable(e.to_string()))?;
        let mut payload = Vec::with_capacity(4 + name.len() + 8 * n);
        payload.extend_from_slice(&(name.len() as u32).to_le_bytes());
        payload.extend_from_slice(name.as_bytes());
        for w in &words[..n] {
            payload.extend_from_slice(&w.to_le_bytes());
        }
        put_record(&mut self.out, kind::RING, id, &payload)?;
        self.rings.push(WrittenRing {
            payload_words: info.payload_words(),
            epoch: info.counters_epoch(),
            last: None,
        });
        Ok(id)
    }

    /// Records frame `number` of ring `ring` with payload `words`, described by `info` (the
    /// header as of that frame: a counter table different from the last one written is
    /// recorded first).
    pub fn frame(
        &mut self,
        ring: u32,
        info: &RingInfo,
        number: u64,
        words: &[u64],
    ) -> Result<(), CaptureError> {
        let r = self
            .rings
            .get(ring as usize)
            .ok_or_else(|| CaptureError::Unrecordable(format!("no ring {ring}")))?;
        if r.last.is_some_and(|l| number <= l) {
            return Err(CaptureError::Unrecordable(format!(
                "frame {number} of ring {ring} after frame {}",
                r.last.unwrap_or(0)
            )));
        }
        let pw = r.payload_words;
        if info.counters_epoch() != r.epoch {
            self.flush_frames()?;
            let mut payload = Vec::with_capacity(16 + 32 * MAX_COUNTERS);
            payload.extend_from_slice(&info.counters_epoch().to_le_bytes());
            payload.extend_from_slice(&info.counters_since().to_le_bytes());
            let mut t = [0u64; 4 * MAX_COUNTERS];
            let n = info.counter_table().encode(&mut t);
            for w in &t[..n] {
                payload.extend_from_slice(&w.to_le_bytes());
            }
            put_record(&mut self.out, kind::COUNTERS, ring, &payload)?;
        }
        if self.pending != Some(ring) || self.buf.len() + 8 * (1 + pw) > FRAME_BUFFER {
            self.flush_frames()?;
            self.pending = Some(ring);
        }
        self.buf.extend_from_slice(&number.to_le_bytes());
        for i in 0..pw {
            let w = words.get(i).copied().unwrap_or(0);
            self.buf.extend_from_slice(&w.to_le_bytes());
        }
        if let Some(r) = self.rings.get_mut(ring as usize) {
            r.last = Some(number);
            r.epoch = info.counters_epoch();
        }
        self.frames += 1;
        Ok(())
    }

    /// Records that the reader lost `count` frames of ring `ring` (nothing when 0).
    pub fn lost(&mut self, ring: u32, count: u64) -> Result<(), CaptureError> {
        if count == 0 {
            return Ok(());
        }
        if ring as usize >= self.rings.len() {
            return Err(CaptureError::Unrecordable(format!("no ring {ring}")));
        }
        self.flush_frames()?;
        put_record(&mut self.out, kind::LOST, ring, &count.to_le_bytes())?;
        self.lost += count;
        Ok(())
    }

    fn flush_frames(&mut self) -> io::Result<()> {
        if let Some(ring) = self.pending.take() {
            if !self.buf.is_empty() {
                put_record(&mut self.out, kind::FRAMES, ring, &self.buf)?;
                self.buf.clear();
            }
        }
        Ok(())
    }

    /// Writes buffered frames and flushes the output (so a reader of the file sees them).
    pub fn flush(&mut self) -> Result<(), CaptureError> {
        self.flush_frames()?;
        self.out.flush()?;
        Ok(())
    }

    /// Frames recorded so far.
    pub fn frames(&self) -> u64 {
        self.frames
    }

    /// Lost frames recorded so far.
    pub fn lost_frames(&self) -> u64 {
        self.lost
    }

    /// Writes the end record and flushes; returns the output.
    pub fn finish(mut self) -> Result<W, CaptureError> {
        self.flush_frames()?;
        let mut p = [0u8; 16];
        p[..8].copy_from_slice(&self.frames.to_le_bytes());
        p[8..].copy_from_slice(&self.lost.to_le_bytes());
        put_record(&mut self.out, kind::END, 0, &p)?;
        self.out.flush()?;
        Ok(self.out)
    }
}

// ---------------------------------------------------------------------------------------------
// Reader
// ---------------------------------------------------------------------------------------------

/// One thing a capture holds, in file order.
#[derive(Debug)]
#[non_exhaustive]
pub enum CaptureEvent<'a> {
    /// A ring is described: later events of ring `id` are its frames.
    Ring {
        /// Its id in this capture.
        id: u32,
        /// Its name (the segment's ring name: `span-1234`, `requests`).
        name: &'a str,
        /// Its header: schema, clock, counter table.
        info: &'a RingInfo,
    },
    /// A frame.
    Frame {
        /// The ring's id.
        ring: u32,
        /// The frame number (gaps are lost frames).
        number: u64,
        /// The header as of this frame (its counter table describes this frame's counter
        /// slots).
        info: &'a RingInfo,
        /// The payload words.
        words: &'a [u64],
    },
    /// The reader lost frames of a ring.
    Lost {
        /// The ring's id.
        ring: u32,
        /// How many.
        count: u64,
    },
    /// A ring's counter table changed (counters chosen at attach time); later frames are
    /// described by `info`.
    Counters {
        /// The ring's id.
        ring: u32,
        /// The header with the new table.
        info: &'a RingInfo,
    },
}

/// A ring as the reader knows it.
#[derive(Debug)]
struct ReadRing {
    name: String,
    info: RingInfo,
    last: Option<u64>,
}

/// Reads a capture file, checking everything (see the [module docs](self)).
pub struct CaptureReader<R: Read> {
    input: R,
    offset: u64,
    pid: u64,
    started_ns: u64,
    rings: Vec<ReadRing>,
    record: Vec<u8>,
    /// The frames record being delivered: ring, next byte in `record`.
    frames: Option<(u32, usize)>,
    words: Vec<u64>,
    end: Option<(u64, u64)>,
    frames_read: u64,
    lost_read: u64,
}

impl<R: Read> fmt::Debug for CaptureReader<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CaptureReader")
            .field("offset", &self.offset)
            .field("pid", &self.pid)
            .field("rings", &self.rings.len())
            .field("frames", &self.frames_read)
            .finish_non_exhaustive()
    }
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// Reads exactly `buf.len()` bytes; `Ok(false)` at a clean end of input before any byte.
fn read_full(input: &mut impl Read, buf: &mut [u8]) -> io::Result<bool> {
    let mut got = 0;
    while got < buf.len() {
        match input.read(&mut buf[got..]) {
            Ok(0) if got == 0 => return Ok(false),
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}

impl<R: Read> CaptureReader<R> {
    /// Reads and checks the file header.
    pub fn new(mut input: R) -> Result<Self, CaptureError> {
        let mut h = [0u8; FILE_HEADER];
        let invalid = |what: &str| CaptureError::Invalid {
            offset: 0,
            what: what.to_owned(),
        };
        match read_full(&mut input, &mut h) {
            Ok(true) => {}
            Ok(false) => return Err(invalid("empty file: not a Picollo capture")),
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                return Err(invalid(
                    "shorter than a capture header: not a Picollo capture",
                ))
            }
            Err(e) => return Err(e.into()),
        }
        if h[..8] != MAGIC {
            return Err(invalid(
                "no PICOCAPT magic: not a Picollo capture (picollo attach --output writes them)",
            ));
        }
        let version = u32_at(&h, 8).unwrap_or(0);
        if version != VERSION {
            return Err(invalid(&format!(
                "capture format version {version}; this picollo reads version {VERSION}"
            )));
        }
        if u32_at(&h, 12) != Some(0) {
            return Err(invalid("unknown capture flags"));
        }
        Ok(Self {
            input,
            offset: FILE_HEADER as u64,
            pid: u64_at(&h, 16).unwrap_or(0),
            started_ns: u64_at(&h, 24).unwrap_or(0),
            rings: Vec::new(),
            record: Vec::new(),
            frames: None,
            words: Vec::with_capacity(MAX_PAYLOAD_WORDS),
            end: None,
            frames_read: 0,
            lost_read: 0,
        })
    }

    /// The pid of the process the frames came from.
    pub fn pid(&self) -> u64 {
        self.pid
    }

    /// When the capture started, in nanoseconds since the Unix epoch.
    pub fn started_ns(&self) -> u64 {
        self.started_ns
    }

    /// Whether the end record was read (false for a capture cut short, until then).
    pub fn is_complete(&self) -> bool {
        self.end.is_some()
    }

    /// Frames read so far.
    pub fn frames(&self) -> u64 {
        self.frames_read
    }

    /// Lost frames recorded so far.
    pub fn lost(&self) -> u64 {
        self.lost_read
    }

    /// The name of ring `id`.
    pub fn ring_name(&self, id: u32) -> Option<&str> {
        self.rings.get(id as usize).map(|r| r.name.as_str())
    }

    /// The header of ring `id` as of the last event read.
    pub fn ring_info(&self, id: u32) -> Option<&RingInfo> {
        self.rings.get(id as usize).map(|r| &r.info)
    }

    /// Rings described so far.
    pub fn rings(&self) -> usize {
        self.rings.len()
    }

    /// The next event; `Ok(None)` at the end of the file. A file cut short (no end record)
    /// ends without error; [`CaptureReader::is_complete`] says so.
    pub fn next_event(&mut self) -> Result<Option<CaptureEvent<'_>>, CaptureError> {
        if let Some((ring, at)) = self.frames {
            let r = &self.rings[ring as usize];
            let pw = r.info.payload_words();
            let size = 8 * (1 + pw);
            if at + size <= self.record.len() {
                let number = u64_at(&self.record, at).unwrap_or(0);
                if r.last.is_some_and(|l| number <= l) {
                    return Err(CaptureError::Invalid {
                        offset: self.offset,
                        what: format!(
                            "frame {number} of ring {ring} comes after frame {}",
                            r.last.unwrap_or(0)
                        ),
                    });
                }
                self.words.clear();
                for i in 0..pw {
                    self.words
                        .push(u64_at(&self.record, at + 8 + 8 * i).unwrap_or(0));
                }
                self.frames = Some((ring, at + size));
                self.frames_read += 1;
                let r = &mut self.rings[ring as usize];
                r.last = Some(number);
                return Ok(Some(CaptureEvent::Frame {
                    ring,
                    number,
                    info: &r.info,
                    words: &self.words,
                }));
            }
            self.frames = None;
        }
        self.next_record()
    }

    fn next_record(&mut self) -> Result<Option<CaptureEvent<'_>>, CaptureError> {
        let at = self.offset;
        let invalid = |what: String| CaptureError::Invalid { offset: at, what };
        let mut h = [0u8; RECORD_HEADER];
        match read_full(&mut self.input, &mut h) {
            Ok(true) => {}
            Ok(false) => return Ok(None),
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                return Err(invalid("the file ends inside a record header".to_owned()))
            }
            Err(e) => return Err(e.into()),
        }
        if self.end.is_some() {
            return Err(invalid("a record after the end record".to_owned()));
        }
        let kind = u32_at(&h, 0).unwrap_or(0);
        let ring = u32_at(&h, 4).unwrap_or(0);
        let len = u64_at(&h, 8).unwrap_or(0);
        if len > MAX_RECORD_BYTES {
            return Err(invalid(format!(
                "a record of {len} bytes (at most {MAX_RECORD_BYTES})"
            )));
        }
        self.record.clear();
        self.record.resize(len as usize, 0);
        match read_full(&mut self.input, &mut self.record) {
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                return Err(invalid(format!(
                    "the file ends inside a record of {len} bytes (cut short?)"
                )))
            }
            Err(e) => return Err(e.into()),
        }
        self.offset += RECORD_HEADER as u64 + len;
        let known = (ring as usize) < self.rings.len();
        let p = &self.record;
        match kind {
            kind::RING => {
                if ring as usize != self.rings.len() || ring >= MAX_RINGS {
                    return Err(invalid(format!(
                        "ring {ring} described out of order (expected ring {})",
                        self.rings.len()
                    )));
                }
                let name_len =
                    u32_at(p, 0).ok_or_else(|| invalid("empty ring record".into()))? as usize;
                if name_len > MAX_RING_NAME {
                    return Err(invalid(format!("a ring name of {name_len} bytes")));
                }
                let name = p
                    .get(4..4 + name_len)
                    .and_then(|b| std::str::from_utf8(b).ok())
                    .filter(|n| !n.chars().any(char::is_control))
                    .ok_or_else(|| invalid("a ring name that is not clean UTF-8".into()))?
                    .to_owned();
                let rest = p.get(4 + name_len..).unwrap_or(&[]);
                if rest.len() % 8 != 0 || rest.len() / 8 > MAX_HEADER_WORDS {
                    return Err(invalid(format!("a ring header of {} bytes", rest.len())));
                }
                let words: Vec<u64> = rest
                    .chunks_exact(8)
                    .map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
                    .collect();
                let info = RingInfo::from_header_words(&words)
                    .map_err(|error| CaptureError::Ring { offset: at, error })?;
                if info.header_words() != words.len() {
                    return Err(invalid("a ring header with extra words".into()));
                }
                self.rings.push(ReadRing {
                    name,
                    info,
                    last: None,
                });
                let r = &self.rings[ring as usize];
                Ok(Some(CaptureEvent::Ring {
                    id: ring,
                    name: &r.name,
                    info: &r.info,
                }))
            }
            kind::FRAMES => {
                if !known {
                    return Err(invalid(format!("frames of undescribed ring {ring}")));
                }
                let size = 8 * (1 + self.rings[ring as usize].info.payload_words());
                if p.is_empty() || p.len() % size != 0 {
                    return Err(invalid(format!(
                        "a frames record of {} bytes for frames of {size}",
                        p.len()
                    )));
                }
                self.frames = Some((ring, 0));
                self.next_event()
            }
            kind::LOST => {
                if !known {
                    return Err(invalid(format!("losses of undescribed ring {ring}")));
                }
                let count = u64_at(p, 0)
                    .filter(|_| p.len() == 8)
                    .ok_or_else(|| invalid("a lost record that is not 8 bytes".into()))?;
                self.lost_read = self.lost_read.saturating_add(count);
                Ok(Some(CaptureEvent::Lost { ring, count }))
            }
            kind::COUNTERS => {
                if !known {
                    return Err(invalid(format!("counters of undescribed ring {ring}")));
                }
                let (Some(epoch), Some(since)) = (u64_at(p, 0), u64_at(p, 8)) else {
                    return Err(invalid("a counters record shorter than 16 bytes".into()));
                };
                let rest = &p[16..];
                if rest.len() % 8 != 0 || rest.len() > 32 * MAX_COUNTERS {
                    return Err(invalid(format!("a counter table of {} bytes", rest.len())));
                }
                let words: Vec<u64> = rest
                    .chunks_exact(8)
                    .map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
                    .collect();
                let table = CounterTable::decode(&words)
                    .map_err(|error| CaptureError::Ring { offset: at, error })?;
                let r = &mut self.rings[ring as usize];
                r.info
                    .set_counter_table(table, epoch, since)
                    .map_err(|error| CaptureError::Ring { offset: at, error })?;
                Ok(Some(CaptureEvent::Counters {
                    ring,
                    info: &r.info,
                }))
            }
            kind::END => {
                let (Some(frames), Some(lost)) = (u64_at(p, 0), u64_at(p, 8)) else {
                    return Err(invalid("an end record shorter than 16 bytes".into()));
                };
                if p.len() != 16 {
                    return Err(invalid("an end record that is not 16 bytes".into()));
                }
                if frames != self.frames_read || lost != self.lost_read {
                    return Err(invalid(format!(
                        "the end record counts {frames} frames and {lost} lost, the file holds \
                         {} and {}",
                        self.frames_read, self.lost_read
                    )));
                }
                self.end = Some((frames, lost));
                self.next_record()
            }
            k => Err(invalid(format!("unknown record kind {k}"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use picollo_core::ring::{
        required_words, AtomicU64, ClockInfo, ClockKind, CounterInfo, CounterInterval, Frame,
        FrameWriter, Label, RingOptions, RingReader, TimeInterval,
    };

    picollo_core::frame! {
        #[derive(Clone, Copy, Debug, Default, PartialEq)]
        struct Op {
            name: Label,
            bytes: u32,
            t: TimeInterval,
            pmc: CounterInterval<2>,
        }
    }

    fn region(n: usize) -> Vec<AtomicU64> {
        (0..n).map(|_| AtomicU64::new(0)).collect()
    }

    /// A capture of two rings, a counter-table change and losses.
    fn sample() -> Vec<u8> {
        let slots = [CounterInfo::unused(); 2];
        let opts = RingOptions::new(4)
            .with_counters(&slots)
            .with_clock(ClockInfo::nanoseconds(ClockKind::MonotonicNs));
        let mut a = region(required_words(&Op::SCHEMA, 2, 4));
        let mut b = region(required_words(&Op::SCHEMA, 2, 4));
        let mut wa = FrameWriter::<Op>::new(&mut a, &opts).unwrap();
        let mut wb = FrameWriter::<Op>::new(&mut b, &opts).unwrap();
        let mut ra = RingReader::attach(wa.region()).unwrap();
        let mut rb = RingReader::attach(wb.region()).unwrap();
        let mut out = CaptureWriter::new(Vec::new(), 77).unwrap();
        let ia = out.add_ring("a", ra.info()).unwrap();
        let ib = out.add_ring("b", rb.info()).unwrap();
        let op = |n: u64| Op {
            name: Label::new("op"),
            bytes: n as u32,
            t: TimeInterval::new(n, n + 10),
            pmc: CounterInterval {
                start: [n, 0],
                end: [n + 5, 0],
            },
        };
        for n in 0..3 {
            wa.save(&op(n));
        }
        wa.ring_mut()
            .set_counters(&[CounterInfo::measured("page-faults")])
            .unwrap();
        for n in 3..10 {
            wa.save(&op(n)); // 7 frames into 4 slots: some lost
        }
        wb.save(&op(100));
        for (id, r) in [(ia, &mut ra), (ib, &mut rb)] {
            let d = r
                .drain(|f| out.frame(id, f.info(), f.number(), f.words()).unwrap())
                .unwrap();
            out.lost(id, d.lost).unwrap();
        }
        out.finish().unwrap()
    }

    #[test]
    fn capture_roundtrip() {
        let file = sample();
        let mut r = CaptureReader::new(file.as_slice()).unwrap();
        assert_eq!(r.pid(), 77);
        let mut log = Vec::new();
        while let Some(e) = r.next_event().unwrap() {
            log.push(match e {
                CaptureEvent::Ring { id, name, info } => {
                    format!("ring {id} {name} {}", info.frame_name())
                }
                CaptureEvent::Frame {
                    ring,
                    number,
                    info,
                    words,
                } => format!(
                    "frame {ring}:{number} bytes={} epoch={} {}",
                    words[3],
                    info.counters_epoch(),
                    info.counters().next().unwrap().name
                ),
                CaptureEvent::Lost { ring, count } => format!("lost {ring}:{count}"),
                CaptureEvent::Counters { ring, info } => {
                    format!("counters {ring} since {}", info.counters_since())
                }
            });
        }
        assert!(r.is_complete());
        assert_eq!(r.frames() + r.lost(), 11);
        let text = log.join("\n");
        assert!(text.starts_with("ring 0 a Op\nring 1 b Op\n"), "{text}");
        assert!(text.contains("lost 0:"), "{text}");
        assert!(text.contains("counters 0 since 3"), "{text}");
        assert!(
            text.contains("frame 0:9 bytes=9 epoch=2 page-faults"),
            "{text}"
        );
        assert!(text.ends_with("frame 1:0 bytes=100 epoch=0 "), "{text}");
    }

    #[test]
    fn capture_damage_is_reported() {
        let file = sample();
        // Every prefix reads to an error or to a clean (incomplete) end: never a panic.
        for n in 0..file.len() {
            if let Ok(mut r) = CaptureReader::new(&file[..n]) {
                loop {
                    match r.next_event() {
                        Ok(Some(_)) => {}
                        Ok(None) => {
                            assert!(!r.is_complete() || n == file.len());
                            break;
                        }
                        Err(_) => break,
                    }
                }
            }
        }
        // Random damage: flipped bytes and words anywhere.
        let mut rng = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        for _ in 0..3000 {
            let mut v = file.clone();
            for _ in 0..1 + next() % 4 {
                let i = (next() % v.len() as u64) as usize;
                v[i] = match next() % 3 {
                    0 => next() as u8,
                    1 => v[i] ^ (1 << (next() % 8)),
                    _ => 0xff,
                };
            }
            if let Ok(mut r) = CaptureReader::new(v.as_slice()) {
                while let Ok(Some(e)) = r.next_event() {
                    if let CaptureEvent::Frame { info, words, .. } = e {
                        assert_eq!(words.len(), info.payload_words());
                    }
                }
            }
        }
        let err = |bytes: &[u8]| -> String {
            let mut r = match CaptureReader::new(bytes) {
                Ok(r) => r,
                Err(e) => return e.to_string(),
            };
            loop {
                match r.next_event() {
                    Ok(Some(_)) => {}
                    Ok(None) => return "no error".to_owned(),
                    Err(e) => return e.to_string(),
                }
            }
        };
        assert!(err(b"").contains("empty file"));
        assert!(err(b"PICORING........................").contains("no PICOCAPT magic"));
        let mut v = file.clone();
        v[8] = 9;
        assert!(err(&v).contains("version 9"));
        // A record claiming 2^40 bytes: refused before allocating.
        let mut v = file[..FILE_HEADER].to_vec();
        v.extend_from_slice(&2u32.to_le_bytes());
        v.extend_from_slice(&0u32.to_le_bytes());
        v.extend_from_slice(&(1u64 << 40).to_le_bytes());
        assert!(err(&v).contains("at byte 32: a record of 1099511627776 bytes"));
        // Frames before their ring.
        let mut v = file[..FILE_HEADER].to_vec();
        v.extend_from_slice(&2u32.to_le_bytes());
        v.extend_from_slice(&5u32.to_le_bytes());
        v.extend_from_slice(&8u64.to_le_bytes());
        v.extend_from_slice(&[0; 8]);
        assert!(err(&v).contains("frames of undescribed ring 5"));
        // A corrupted ring header (the schema's frame name).
        let mut v = file.clone();
        let name_at = FILE_HEADER + RECORD_HEADER + 4 + 1 + 8 * 24;
        v[name_at] = b',';
        assert!(err(&v).contains("invalid ring description"), "{}", err(&v));
        // The end record must match what the file holds.
        let mut v = file.clone();
        let end = v.len() - 16;
        v[end] ^= 1;
        assert!(err(&v).contains("the end record counts"));
        // Unknown kinds.
        let mut v = file[..FILE_HEADER].to_vec();
        v.extend_from_slice(&9u32.to_le_bytes());
        v.extend_from_slice(&[0; 12]);
        assert!(err(&v).contains("unknown record kind 9"));
    }

    #[test]
    fn capture_writer_refuses_bad_input() {
        let mut w = CaptureWriter::new(Vec::new(), 1).unwrap();
        let slots = [CounterInfo::unused(); 2];
        let mut a = region(required_words(&Op::SCHEMA, 2, 4));
        let wa =
            FrameWriter::<Op>::new(&mut a, &RingOptions::new(4).with_counters(&slots)).unwrap();
        let info = RingInfo::parse(wa.region()).unwrap();
        assert!(w.add_ring(&"x".repeat(300), &info).is_err());
        let id = w.add_ring("a", &info).unwrap();
        w.frame(id, &info, 5, &[0; 9]).unwrap();
        assert!(w.frame(id, &info, 5, &[0; 9]).is_err(), "frame order");
        assert!(w.frame(9, &info, 6, &[0; 9]).is_err(), "unknown ring");
        assert!(w.lost(9, 1).is_err());
    }
}
