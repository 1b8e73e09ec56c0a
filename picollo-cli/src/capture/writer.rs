//! [`CaptureWriter`]: writes the file header, each ring's header record, buffered frames
//! records, counter-table changes, losses and the end record.

use core::fmt;
use std::io::{self, Write};

use picollo_ring::{RingInfo, MAX_COUNTERS};

use super::format::{
    kind, CaptureError, FILE_HEADER, FRAME_BUFFER, MAGIC, MAX_HEADER_WORDS, MAX_RINGS,
    MAX_RING_NAME, RECORD_HEADER, VERSION,
};

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
pub(crate) struct CaptureWriter<W: Write> {
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
    pub(crate) fn new(mut out: W, pid: u32) -> Result<Self, CaptureError> {
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
    pub(crate) fn add_ring(&mut self, name: &str, info: &RingInfo) -> Result<u32, CaptureError> {
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
    pub(crate) fn frame(
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
    pub(crate) fn lost(&mut self, ring: u32, count: u64) -> Result<(), CaptureError> {
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
    pub(crate) fn flush(&mut self) -> Result<(), CaptureError> {
        self.flush_frames()?;
        self.out.flush()?;
        Ok(())
    }

    /// Frames recorded so far.
    pub(crate) fn frames(&self) -> u64 {
        self.frames
    }

    /// Lost frames recorded so far.
    pub(crate) fn lost_frames(&self) -> u64 {
        self.lost
    }

    /// Writes the end record and flushes; returns the output.
    pub(crate) fn finish(mut self) -> Result<W, CaptureError> {
        self.flush_frames()?;
        let mut p = [0u8; 16];
        p[..8].copy_from_slice(&self.frames.to_le_bytes());
        p[8..].copy_from_slice(&self.lost.to_le_bytes());
        put_record(&mut self.out, kind::END, 0, &p)?;
        self.out.flush()?;
        Ok(self.out)
    }
}
