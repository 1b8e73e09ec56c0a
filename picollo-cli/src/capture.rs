//! Capture files (`picollo attach --output`, `picollo convert`): frames as a reader drained them, with each ring's schema, clock and
//! counter tables, so they can be converted later, on another machine (as ppt, the
//! Portable Performance Tool, does with `ppt attach -o output.bin`, then `ppt convert`).
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
//! | 1 ring | name length (`u32`), name (UTF-8, at most 255 bytes), then the ring header's words as [`RingInfo::encode_header`](picollo_ring::RingInfo::encode_header) writes them (schema, clock record, counter table) |
//! | 2 frames | frames of that ring, each its number (`u64`) then its payload words |
//! | 3 lost | frames of that ring the reader lost (`u64`), since the previous such record |
//! | 4 counters | the ring's counter table changed: its epoch (`u64`), its first frame (`u64`), then the table ([`CounterTable::encode`](picollo_ring::CounterTable::encode)) |
//! | 5 end | the capture's frames (`u64`) and lost frames (`u64`); a file without it was cut short |
//!
//! A ring record comes before any other record of its ring; frame numbers of a ring
//! increase (gaps are lost frames).
//!
//! # Reading untrusted files
//!
//! [`CaptureReader`] checks everything: the magic and version, record kinds, lengths (no record
//! payload over [`MAX_RECORD_BYTES`](format::MAX_RECORD_BYTES), no more than
//! [`MAX_RINGS`](format::MAX_RINGS) rings, sizes that divide evenly),
//! ring headers ([`RingInfo::from_header_words`](picollo_ring::RingInfo::from_header_words)),
//! counter tables, ring ids and frame order. A hostile file gets an error naming the byte offset,
//! never a panic, and the reader holds one record and the rings' headers at a time: memory is
//! bounded whatever the file says.
//!
//! `tests::round_trip` below writes a ring's frames into a capture and reads them back.
//!
//! # Modules
//!
//! - `format`: the format's constants and [`CaptureError`](format::CaptureError);
//! - `writer`: [`CaptureWriter`];
//! - `reader`: [`CaptureReader`] and [`CaptureEvent`], with the format's round-trip tests.
//!
//! Imports run one way: `format` ← `writer`, `reader`.

mod format;
mod reader;
mod writer;

pub(crate) use reader::{CaptureEvent, CaptureReader};
pub(crate) use writer::CaptureWriter;

#[cfg(test)]
mod tests {
    use super::{CaptureEvent, CaptureReader, CaptureWriter};

    #[test]
    fn round_trip() {
        use picollo_ring::{required_words, Frame, RingBuffer, RingOptions};

        picollo_ring::frame! {
            struct Tick { n: u64 }
        }
        static RING: RingBuffer<{ required_words(&Tick::SCHEMA, 0, 8) }> = RingBuffer::new();
        let mut w = RING.frame_writer::<Tick>(&RingOptions::new(8)).unwrap();
        let mut r = RING.reader().unwrap();
        w.save(&Tick { n: 42 });

        let mut file = Vec::new();
        let mut capture = CaptureWriter::new(&mut file, 1234).unwrap();
        let ring = capture.add_ring("ticks", r.info()).unwrap();
        let drained = r
            .drain(|f| {
                capture
                    .frame(ring, f.info(), f.number(), f.words())
                    .unwrap()
            })
            .unwrap();
        capture.lost(ring, drained.lost).unwrap();
        capture.finish().unwrap();

        let mut reader = CaptureReader::new(file.as_slice()).unwrap();
        assert_eq!(reader.pid(), 1234);
        let mut values = Vec::new();
        while let Some(event) = reader.next_event().unwrap() {
            if let CaptureEvent::Frame { words, .. } = event {
                values.push(words[0]);
            }
        }
        assert_eq!(values, [42]);
        assert!(reader.is_complete());
    }
}
