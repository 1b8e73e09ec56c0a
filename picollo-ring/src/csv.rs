//! Frames of a ring as CSV: the header line a ring's schema and counter table give, and one
//! row per frame. The std side of the frames (feature `std`; the `no_std` part decodes
//! them, [`DynamicFrame`]; rendering text belongs here), used by `picollo record`, the span
//! rings of `picollo-linux` and the fuzz targets.
//!
//! ```
//! use picollo_ring::csv::FrameCsv;
//! use picollo_ring::{
//!     required_words, DynamicFrame, Frame, RingBuffer, RingOptions, TimeInterval,
//! };
//!
//! picollo_ring::frame! {
//!     pub struct Io { pub bytes: u32, pub ok: bool, pub t: TimeInterval }
//! }
//! static RING: RingBuffer<{ required_words(&Io::SCHEMA, 0, 8) }> = RingBuffer::new();
//!
//! let mut w = RING.frame_writer::<Io>(&RingOptions::new(8))?;
//! let mut r = RING.reader()?;
//! w.save(&Io { bytes: 512, ok: true, t: TimeInterval::new(3, 9) });
//! let mut buf = [0u64; 8];
//! let n = r.next_into(&mut buf)?.expect("one frame");
//! let mut csv = String::new();
//! DynamicFrame::new(r.info(), n, &buf).to_csv(&mut csv, true)?;
//! assert_eq!(csv, "frame,bytes,ok,t_start,t_end\n0,512,true,3,9\n");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use core::fmt;
use std::format;

use crate::{CounterStatus, DynamicFrame, FieldKind, RingInfo, Value};

/// CSV output for a decoded frame ([`DynamicFrame`]): `use picollo_ring::csv::FrameCsv;`.
pub trait FrameCsv {
    /// Writes the CSV header line: `frame`, then one column per scalar field, `NAME_start` and
    /// `NAME_end` for intervals, and `NAME_COUNTER` (`NAME_COUNTER_start`, `NAME_COUNTER_end`)
    /// for counter fields, where `COUNTER` is the header's name of that counter slot (or its
    /// index when the header names none).
    fn write_csv_header(&self, w: &mut dyn fmt::Write) -> fmt::Result;

    /// Writes this frame as one CSV line matching [`FrameCsv::write_csv_header`]. Counter
    /// slots the header marks unavailable or unused are written as empty cells, never as 0.
    fn write_csv_row(&self, w: &mut dyn fmt::Write) -> fmt::Result;

    /// Writes this frame as CSV: the header line first when `with_header`, then its row.
    fn to_csv(&self, out: &mut dyn fmt::Write, with_header: bool) -> fmt::Result {
        if with_header {
            self.write_csv_header(out)?;
        }
        self.write_csv_row(out)
    }
}

impl FrameCsv for DynamicFrame<'_> {
    fn write_csv_header(&self, w: &mut dyn fmt::Write) -> fmt::Result {
        write_csv_header(self.info(), w)
    }

    fn write_csv_row(&self, w: &mut dyn fmt::Write) -> fmt::Result {
        let info = self.info();
        write!(w, "{}", self.number())?;
        for f in self.fields() {
            match f.value {
                Value::Unsigned(v) | Value::Time(v) => write!(w, ",{v}")?,
                Value::Signed(v) => write!(w, ",{v}")?,
                Value::Float(v) => write!(w, ",{v}")?,
                Value::Bool(v) => write!(w, ",{v}")?,
                Value::Str(s) => {
                    w.write_char(',')?;
                    write_csv_cell(w, s.as_str())?;
                }
                Value::TimeInterval { start, end } => write!(w, ",{start},{end}")?,
                Value::Counters(c) => {
                    for (i, v) in c.as_slice().iter().enumerate() {
                        counter_cell(info, w, i, *v)?;
                    }
                }
                Value::CounterInterval { start, end } => {
                    for (i, (s, e)) in start.as_slice().iter().zip(end.as_slice()).enumerate() {
                        counter_cell(info, w, i, *s)?;
                        counter_cell(info, w, i, *e)?;
                    }
                }
            }
        }
        w.write_char('\n')
    }
}

/// One counter cell: empty for a slot the header marks unavailable or unused.
fn counter_cell(info: &RingInfo, w: &mut dyn fmt::Write, slot: usize, v: u64) -> fmt::Result {
    if matches!(
        info.counter_status(slot),
        Some(CounterStatus::Unavailable | CounterStatus::Unused)
    ) {
        w.write_char(',')
    } else {
        write!(w, ",{v}")
    }
}

/// Writes the CSV header line for frames described by `info` (see
/// [`FrameCsv::write_csv_header`]).
pub fn write_csv_header(info: &RingInfo, w: &mut dyn fmt::Write) -> fmt::Result {
    w.write_str("frame")?;
    for f in info.fields() {
        match f.kind {
            FieldKind::TimeInterval => write!(w, ",{0}_start,{0}_end", f.name)?,
            FieldKind::Counters { count } => {
                for i in 0..usize::from(count) {
                    w.write_char(',')?;
                    write_counter_column(w, info, f.name, i, "")?;
                }
            }
            FieldKind::CounterInterval { count } => {
                for i in 0..usize::from(count) {
                    w.write_char(',')?;
                    write_counter_column(w, info, f.name, i, "_start")?;
                    w.write_char(',')?;
                    write_counter_column(w, info, f.name, i, "_end")?;
                }
            }
            _ => write!(w, ",{}", f.name)?,
        }
    }
    w.write_char('\n')
}

/// The column of counter slot `slot` of field `field`: named after the header's counter, or
/// its index when the header names none; quoted when the name needs it.
fn write_counter_column(
    w: &mut dyn fmt::Write,
    info: &RingInfo,
    field: &str,
    slot: usize,
    suffix: &str,
) -> fmt::Result {
    let name = info
        .counters()
        .nth(slot)
        .map(|c| c.name)
        .filter(|n| !n.is_empty());
    let column = match name {
        Some(name) => format!("{field}_{name}{suffix}"),
        None => format!("{field}_{slot}{suffix}"),
    };
    write_csv_cell(w, &column)
}

/// Writes one CSV cell, quoted (RFC 4180) when it holds `,`, `"`, CR or LF.
pub(crate) fn write_csv_cell(w: &mut dyn fmt::Write, s: &str) -> fmt::Result {
    if !s.contains([',', '"', '\n', '\r']) {
        return w.write_str(s);
    }
    w.write_char('"')?;
    for c in s.chars() {
        if c == '"' {
            w.write_char('"')?;
        }
        w.write_char(c)?;
    }
    w.write_char('"')
}

/// Writes one CSV record: the cells, each written by `write_csv_cell` (quoted when it must
/// be), separated by commas, and a line feed.
///
/// ```
/// let mut s = String::new();
/// picollo_ring::csv::write_csv_row(&mut s, ["a", "b,c", "", "say \"hi\""])?;
/// assert_eq!(s, "a,\"b,c\",,\"say \"\"hi\"\"\"\n");
/// # Ok::<(), core::fmt::Error>(())
/// ```
pub fn write_csv_row<I>(w: &mut dyn fmt::Write, cells: I) -> fmt::Result
where
    I: IntoIterator,
    I::Item: AsRef<str>,
{
    for (i, cell) in cells.into_iter().enumerate() {
        if i > 0 {
            w.write_char(',')?;
        }
        write_csv_cell(w, cell.as_ref())?;
    }
    w.write_char('\n')
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{
        required_words, AtomicU64, CounterInfo, CounterInterval, Frame, FrameWriter, Label,
        RingOptions, RingReader, TimeInterval,
    };
    use std::string::String;
    use std::vec::Vec;

    crate::frame! {
        struct Span {
            name: Label,
            depth: u32,
            ratio: f32,
            t: TimeInterval,
            pmc: CounterInterval<3>,
        }
    }

    fn region(words: usize) -> Vec<AtomicU64> {
        (0..words).map(|_| AtomicU64::new(0)).collect()
    }

    #[test]
    fn cells_are_quoted_when_they_must_be() {
        let mut s = String::new();
        write_csv_cell(&mut s, "plain").unwrap();
        s.push('|');
        write_csv_cell(&mut s, "cpu/event=0x3c,umask=0/").unwrap();
        s.push('|');
        write_csv_cell(&mut s, "say \"hi\"").unwrap();
        assert_eq!(s, "plain|\"cpu/event=0x3c,umask=0/\"|\"say \"\"hi\"\"\"");
    }

    #[test]
    fn header_and_rows_name_counters_and_leave_unmeasured_ones_empty() {
        let counters = [
            CounterInfo::measured("cycles"),
            CounterInfo::unavailable("cpu/event=0x3c,umask=0/"),
        ];
        let opts = RingOptions::new(4).with_counters(&counters);
        let mut words = region(required_words(&Span::SCHEMA, counters.len(), 4));
        let mut w = FrameWriter::<Span>::new(&mut words, &opts).unwrap();
        let mut r = RingReader::attach(w.ring().region()).unwrap();
        w.save(&Span {
            name: Label::new("parse, \"fast\""),
            depth: 2,
            ratio: 0.5,
            t: TimeInterval::new(100, 250),
            pmc: CounterInterval {
                start: [10, 20, 30],
                end: [15, 26, 37],
            },
        });
        let mut csv = String::new();
        let mut header = true;
        r.drain(|f| {
            f.to_csv(&mut csv, header).unwrap();
            header = false;
        })
        .unwrap();
        assert_eq!(
            csv,
            "frame,name,depth,ratio,t_start,t_end,pmc_cycles_start,pmc_cycles_end,\
             \"pmc_cpu/event=0x3c,umask=0/_start\",\"pmc_cpu/event=0x3c,umask=0/_end\",pmc_2_start,pmc_2_end\n\
             0,\"parse, \"\"fast\"\"\",2,0.5,100,250,10,15,,,30,37\n"
        );
    }

    #[test]
    fn rows_follow_the_counter_table_of_their_frame() {
        let unused = [
            CounterInfo::unused(),
            CounterInfo::unused(),
            CounterInfo::unused(),
        ];
        let opts = RingOptions::new(64).with_counters(&unused);
        let mut words = region(required_words(&Span::SCHEMA, 3, 64));
        let mut w = FrameWriter::<Span>::new(&mut words, &opts).unwrap();
        let mut r = RingReader::attach(w.ring().region()).unwrap();
        let span = |n: u64, start: [u64; 3], end: [u64; 3]| Span {
            name: Label::new("s"),
            depth: n as u32,
            ratio: 0.0,
            t: TimeInterval::new(n, n + 1),
            pmc: CounterInterval { start, end },
        };
        w.save(&span(0, [0; 3], [0; 3]));
        w.ring_mut()
            .set_counters(&[
                CounterInfo::measured("page-faults"),
                CounterInfo::unavailable_because("cycles", 2),
            ])
            .unwrap();
        w.save(&span(1, [10, 0, 0], [13, 0, 0]));
        let mut rows = Vec::new();
        r.drain(|f| {
            let mut row = String::new();
            f.write_csv_row(&mut row).unwrap();
            rows.push(row);
        })
        .unwrap();
        // Frame 0: every slot unused (empty cells); frame 1: page-faults measured, cycles
        // unavailable (empty), the third slot unused (empty).
        assert_eq!(rows.len(), 2);
        assert!(rows[0].ends_with(",0,1,,,,,,\n"), "{}", rows[0]);
        assert!(rows[1].ends_with(",1,2,10,13,,,,\n"), "{}", rows[1]);
        let mut header = String::new();
        write_csv_header(r.info(), &mut header).unwrap();
        assert!(
            header.ends_with(
                "pmc_page-faults_start,pmc_page-faults_end,pmc_cycles_start,pmc_cycles_end,\
                 pmc_2_start,pmc_2_end\n"
            ),
            "{header}"
        );
    }
}
