//! [`CaptureReader`]: reads a capture back with full validation (bounded records, known
//! kinds, each ring's header parsed), yielding [`CaptureEvent`]s; with the round-trip and
//! damage tests of the format.

use core::fmt;
use std::io::{self, Read};

use picollo_ring::{CounterTable, RingInfo, MAX_COUNTERS, MAX_PAYLOAD_WORDS};

use super::format::{
    kind, CaptureError, FILE_HEADER, MAGIC, MAX_HEADER_WORDS, MAX_RECORD_BYTES, MAX_RINGS,
    MAX_RING_NAME, RECORD_HEADER, VERSION,
};

/// One thing a capture holds, in file order.
#[derive(Debug)]
#[non_exhaustive]
pub(crate) enum CaptureEvent<'a> {
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

/// Reads a capture file, checking everything (see the [module docs](crate::capture)).
pub(crate) struct CaptureReader<R: Read> {
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
            .field("started_ns", &self.started_ns)
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
    pub(crate) fn new(mut input: R) -> Result<Self, CaptureError> {
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
    pub(crate) fn pid(&self) -> u64 {
        self.pid
    }

    /// Whether the end record was read (false for a capture cut short, until then).
    pub(crate) fn is_complete(&self) -> bool {
        self.end.is_some()
    }

    /// Frames read so far.
    pub(crate) fn frames(&self) -> u64 {
        self.frames_read
    }

    /// Lost frames recorded so far.
    pub(crate) fn lost(&self) -> u64 {
        self.lost_read
    }

    /// The next event; `Ok(None)` at the end of the file. A file cut short (no end record)
    /// ends without error; [`CaptureReader::is_complete`] says so.
    pub(crate) fn next_event(&mut self) -> Result<Option<CaptureEvent<'_>>, CaptureError> {
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

    /// Reads the next record and turns it into an event (or, for a frames record, its first
    /// frame; for the end record, checks it and reads on).
    fn next_record(&mut self) -> Result<Option<CaptureEvent<'_>>, CaptureError> {
        let at = self.offset;
        let Some((kind, ring)) = self.read_record(at)? else {
            return Ok(None);
        };
        match kind {
            kind::RING => self.ring_record(at, ring),
            kind::FRAMES => self.frames_record(at, ring),
            kind::LOST => self.lost_record(at, ring),
            kind::COUNTERS => self.counters_record(at, ring),
            kind::END => self.end_record(at),
            k => Err(invalid(at, format!("unknown record kind {k}"))),
        }
    }

    /// Reads a record's header and its bytes into `self.record`: its kind and ring, or
    /// `None` at the end of the file (a record after the end record is an error).
    fn read_record(&mut self, at: u64) -> Result<Option<(u32, u32)>, CaptureError> {
        let mut h = [0u8; RECORD_HEADER];
        match read_full(&mut self.input, &mut h) {
            Ok(true) => {}
            Ok(false) => return Ok(None),
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                return Err(invalid(
                    at,
                    "the file ends inside a record header".to_owned(),
                ))
            }
            Err(e) => return Err(e.into()),
        }
        if self.end.is_some() {
            return Err(invalid(at, "a record after the end record".to_owned()));
        }
        let kind = u32_at(&h, 0).unwrap_or(0);
        let ring = u32_at(&h, 4).unwrap_or(0);
        let len = u64_at(&h, 8).unwrap_or(0);
        if len > MAX_RECORD_BYTES {
            return Err(invalid(
                at,
                format!("a record of {len} bytes (at most {MAX_RECORD_BYTES})"),
            ));
        }
        self.record.clear();
        self.record.resize(len as usize, 0);
        match read_full(&mut self.input, &mut self.record) {
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                return Err(invalid(
                    at,
                    format!("the file ends inside a record of {len} bytes (cut short?)"),
                ))
            }
            Err(e) => return Err(e.into()),
        }
        self.offset += RECORD_HEADER as u64 + len;
        Ok(Some((kind, ring)))
    }

    /// Ring `ring`'s index when an earlier record described it; else what `what` of an
    /// undescribed ring is.
    fn known(&self, at: u64, ring: u32, what: &str) -> Result<usize, CaptureError> {
        let i = ring as usize;
        if i < self.rings.len() {
            Ok(i)
        } else {
            Err(invalid(at, format!("{what} of undescribed ring {ring}")))
        }
    }

    /// A ring record: the ring's name and header words, describing ring `ring` (the next).
    fn ring_record(
        &mut self,
        at: u64,
        ring: u32,
    ) -> Result<Option<CaptureEvent<'_>>, CaptureError> {
        if ring as usize != self.rings.len() || ring >= MAX_RINGS {
            return Err(invalid(
                at,
                format!(
                    "ring {ring} described out of order (expected ring {})",
                    self.rings.len()
                ),
            ));
        }
        let p = &self.record;
        let name_len =
            u32_at(p, 0).ok_or_else(|| invalid(at, "empty ring record".into()))? as usize;
        if name_len > MAX_RING_NAME {
            return Err(invalid(at, format!("a ring name of {name_len} bytes")));
        }
        let name = p
            .get(4..4 + name_len)
            .and_then(|b| std::str::from_utf8(b).ok())
            .filter(|n| !n.chars().any(char::is_control))
            .ok_or_else(|| invalid(at, "a ring name that is not clean UTF-8".into()))?
            .to_owned();
        let rest = p.get(4 + name_len..).unwrap_or(&[]);
        if rest.len() % 8 != 0 || rest.len() / 8 > MAX_HEADER_WORDS {
            return Err(invalid(
                at,
                format!("a ring header of {} bytes", rest.len()),
            ));
        }
        let words = words_of(rest);
        let info = RingInfo::from_header_words(&words)
            .map_err(|error| CaptureError::Ring { offset: at, error })?;
        if info.header_words() != words.len() {
            return Err(invalid(at, "a ring header with extra words".into()));
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

    /// A frames record: whole frames of ring `ring`, handed out one event each.
    fn frames_record(
        &mut self,
        at: u64,
        ring: u32,
    ) -> Result<Option<CaptureEvent<'_>>, CaptureError> {
        let i = self.known(at, ring, "frames")?;
        let size = 8 * (1 + self.rings[i].info.payload_words());
        let p = &self.record;
        if p.is_empty() || !p.len().is_multiple_of(size) {
            return Err(invalid(
                at,
                format!("a frames record of {} bytes for frames of {size}", p.len()),
            ));
        }
        self.frames = Some((ring, 0));
        self.next_event()
    }

    /// A lost record: frames of ring `ring` the capture missed.
    fn lost_record(
        &mut self,
        at: u64,
        ring: u32,
    ) -> Result<Option<CaptureEvent<'_>>, CaptureError> {
        self.known(at, ring, "losses")?;
        let p = &self.record;
        let count = u64_at(p, 0)
            .filter(|_| p.len() == 8)
            .ok_or_else(|| invalid(at, "a lost record that is not 8 bytes".into()))?;
        self.lost_read = self.lost_read.saturating_add(count);
        Ok(Some(CaptureEvent::Lost { ring, count }))
    }

    /// A counters record: ring `ring`'s new counter table, its epoch and first frame.
    fn counters_record(
        &mut self,
        at: u64,
        ring: u32,
    ) -> Result<Option<CaptureEvent<'_>>, CaptureError> {
        let i = self.known(at, ring, "counters")?;
        let p = &self.record;
        let (Some(epoch), Some(since)) = (u64_at(p, 0), u64_at(p, 8)) else {
            return Err(invalid(
                at,
                "a counters record shorter than 16 bytes".into(),
            ));
        };
        let rest = &p[16..];
        if !rest.len().is_multiple_of(8) || rest.len() > 32 * MAX_COUNTERS {
            return Err(invalid(
                at,
                format!("a counter table of {} bytes", rest.len()),
            ));
        }
        let table = CounterTable::decode(&words_of(rest))
            .map_err(|error| CaptureError::Ring { offset: at, error })?;
        let r = &mut self.rings[i];
        r.info
            .set_counter_table(table, epoch, since)
            .map_err(|error| CaptureError::Ring { offset: at, error })?;
        Ok(Some(CaptureEvent::Counters {
            ring,
            info: &r.info,
        }))
    }

    /// The end record: the frames and losses the file holds, checked against those read.
    fn end_record(&mut self, at: u64) -> Result<Option<CaptureEvent<'_>>, CaptureError> {
        let p = &self.record;
        let (Some(frames), Some(lost)) = (u64_at(p, 0), u64_at(p, 8)) else {
            return Err(invalid(at, "an end record shorter than 16 bytes".into()));
        };
        if p.len() != 16 {
            return Err(invalid(at, "an end record that is not 16 bytes".into()));
        }
        if frames != self.frames_read || lost != self.lost_read {
            return Err(invalid(
                at,
                format!(
                    "the end record counts {frames} frames and {lost} lost, the file holds {} \
                     and {}",
                    self.frames_read, self.lost_read
                ),
            ));
        }
        self.end = Some((frames, lost));
        self.next_record()
    }
}

/// A malformed record at `offset`.
fn invalid(offset: u64, what: String) -> CaptureError {
    CaptureError::Invalid { offset, what }
}

/// Little-endian words (`bytes` is a whole number of them).
fn words_of(bytes: &[u8]) -> Vec<u64> {
    bytes
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::format::{FILE_HEADER, RECORD_HEADER};
    use crate::capture::CaptureWriter;
    use picollo_ring::{
        required_words, AtomicU64, ClockInfo, ClockKind, CounterInfo, CounterInterval, Frame,
        FrameWriter, Label, RingOptions, RingReader, TimeInterval,
    };

    picollo_ring::frame! {
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
        let mut ra = RingReader::attach(wa.ring().region()).unwrap();
        let mut rb = RingReader::attach(wb.ring().region()).unwrap();
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
        let info = RingInfo::parse(wa.ring().region()).unwrap();
        assert!(w.add_ring(&"x".repeat(300), &info).is_err());
        let id = w.add_ring("a", &info).unwrap();
        w.frame(id, &info, 5, &[0; 9]).unwrap();
        assert!(w.frame(id, &info, 5, &[0; 9]).is_err(), "frame order");
        assert!(w.frame(9, &info, 6, &[0; 9]).is_err(), "unknown ring");
        assert!(w.lost(9, 1).is_err());
    }
}
