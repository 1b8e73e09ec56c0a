//! Where frames go, live (`attach`, `top`) or from a capture file (`convert`): CSV files, a
//! capture file, the span tables, JSON lines. One set of sinks, so a capture converts to
//! exactly what attaching would have printed.
//!
//! # CSV files
//!
//! One file per ring, `DIR/<ring>.csv`: the frame number, then the schema's fields. When a
//! ring's counter table changes (counters chosen at attach time), the columns change, so
//! the frames from then on go to a new file, `DIR/<ring>.2.csv`, `.3.csv`, …
//!
//! # JSON
//!
//! With JSON lines (`convert --format json`), every event is written as a
//! [`crate::live_json::Line`] as it comes.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::capture::CaptureWriter;
use picollo_core::fmt::Grouped;
use picollo_ring::csv::{write_csv_header, FrameCsv};
use picollo_ring::{DynamicFrame, RingInfo};
use picollo_spans::{SpanAggregator, SpanDecoder};

use crate::error::{CliError, Result};
use crate::json;
use crate::live_json::Line;

/// One CSV file of a ring (one per counter table).
struct CsvFile {
    path: PathBuf,
    frames: u64,
}

/// A ring's CSV output.
struct CsvRing {
    out: BufWriter<File>,
    epoch: u64,
    files: Vec<CsvFile>,
    line: String,
}

/// What the sinks know of a ring.
struct Ring {
    name: String,
    frames: u64,
    lost: u64,
    /// The CSV output, opened at the first frame (its counter table names the columns).
    csv: Option<CsvRing>,
    /// With CSV output: the header the ring was added with, for a ring that gets no frame
    /// (its file is written with the header line only).
    csv_info: Option<Box<RingInfo>>,
    span: Option<SpanDecoder>,
}

/// One ring's totals, for the closing summary.
#[derive(Clone, Debug)]
pub(crate) struct RingTotals {
    /// The ring's name.
    pub(crate) name: String,
    /// Frames delivered.
    pub(crate) frames: u64,
    /// Frames lost.
    pub(crate) lost: u64,
    /// CSV files written, with their frame counts.
    pub(crate) csv: Vec<(PathBuf, u64)>,
}

/// The sinks frames are written to.
pub(crate) struct Sinks {
    rings: Vec<Ring>,
    csv_dir: Option<PathBuf>,
    capture: Option<(PathBuf, CaptureWriter<BufWriter<File>>)>,
    spans: Option<SpanAggregator>,
    json_lines: Option<Box<dyn Write>>,
}

/// An error writing standard output. A closed pipe (`| head`) ends the program quietly, as
/// a successful one: the reader has what it wanted.
fn stdout_error(e: std::io::Error) -> CliError {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        std::process::exit(0);
    }
    CliError::new(format!("cannot write to stdout: {e}"))
}

fn io_err(what: &Path) -> impl Fn(std::io::Error) -> CliError + '_ {
    move |e| CliError::new(format!("{}: {e}", what.display()))
}

impl Sinks {
    /// No sinks yet.
    pub(crate) fn new() -> Self {
        Self {
            rings: Vec::new(),
            csv_dir: None,
            capture: None,
            spans: None,
            json_lines: None,
        }
    }

    /// CSV files in `dir` (created if missing).
    pub(crate) fn csv(mut self, dir: &Path) -> Result<Self> {
        std::fs::create_dir_all(dir).map_err(|e| {
            CliError::new(format!(
                "cannot create {}: {e}; give a writable directory",
                dir.display()
            ))
        })?;
        self.csv_dir = Some(dir.to_owned());
        Ok(self)
    }

    /// A capture file at `path` of process `pid`'s frames.
    pub(crate) fn capture(mut self, path: &Path, pid: u32) -> Result<Self> {
        let file = File::create(path).map_err(|e| {
            CliError::new(format!(
                "cannot create {}: {e}; give a writable path",
                path.display()
            ))
        })?;
        let w = CaptureWriter::new(BufWriter::new(file), pid)
            .map_err(|e| CliError::new(format!("{}: {e}", path.display())))?;
        self.capture = Some((path.to_owned(), w));
        Ok(self)
    }

    /// Span rings aggregated into the per-phase and counter-event tables.
    pub(crate) fn spans(mut self) -> Self {
        self.spans = Some(picollo_linux::span::new_aggregator());
        self
    }

    /// Every event as a JSON line on `out`.
    pub(crate) fn json_lines(mut self, out: Box<dyn Write>) -> Self {
        self.json_lines = Some(out);
        self
    }

    /// Whether only span rings are of interest (no CSV, capture or JSON lines).
    pub(crate) fn spans_only(&self) -> bool {
        self.csv_dir.is_none() && self.capture.is_none() && self.json_lines.is_none()
    }

    /// Adds ring `name` described by `info`; returns its id. A ring that is not a span ring
    /// still goes to CSV, capture and JSON.
    pub(crate) fn add_ring(&mut self, name: &str, info: &RingInfo) -> Result<u32> {
        let id = self.rings.len() as u32;
        let csv_info = self.csv_dir.as_ref().map(|_| Box::new(info.clone()));
        if let Some((path, w)) = &mut self.capture {
            let cid = w
                .add_ring(name, info)
                .map_err(|e| CliError::new(format!("{}: {e}", path.display())))?;
            debug_assert_eq!(cid, id);
        }
        let span = match &self.spans {
            Some(_) => SpanDecoder::new(info).ok(),
            None => None,
        };
        if let Some(out) = &mut self.json_lines {
            let line = json::to_line(&Line::ring(name, info));
            writeln!(out, "{line}").map_err(stdout_error)?;
        }
        self.rings.push(Ring {
            name: name.to_owned(),
            frames: 0,
            lost: 0,
            csv: None,
            csv_info,
            span,
        });
        Ok(id)
    }

    /// Frame `number` of ring `id`, with its payload `words`, described by `info` (the
    /// header as of this frame).
    pub(crate) fn frame(
        &mut self,
        id: u32,
        info: &RingInfo,
        number: u64,
        words: &[u64],
    ) -> Result<()> {
        let Some(ring) = self.rings.get_mut(id as usize) else {
            return Ok(());
        };
        ring.frames += 1;
        if let (Some(dir), None) = (&self.csv_dir, &ring.csv) {
            ring.csv = Some(CsvRing::open(dir, &ring.name, info)?);
        }
        if let Some(c) = &mut ring.csv {
            if info.counters_epoch() != c.epoch {
                // New columns: a new file.
                let dir = self.csv_dir.as_deref().unwrap_or(Path::new("."));
                c.next_part(dir, &ring.name, info)?;
            }
            c.line.clear();
            let _ = DynamicFrame::new(info, number, words).write_csv_row(&mut c.line);
            let file = c.files.last_mut();
            let path = file.as_ref().map(|f| f.path.clone()).unwrap_or_default();
            c.out.write_all(c.line.as_bytes()).map_err(io_err(&path))?;
            if let Some(f) = file {
                f.frames += 1;
            }
        }
        if let Some((path, w)) = &mut self.capture {
            w.frame(id, info, number, words)
                .map_err(|e| CliError::new(format!("{}: {e}", path.display())))?;
        }
        if let (Some(agg), Some(d)) = (&mut self.spans, &mut ring.span) {
            d.record(agg, info, words);
            agg.add_counts(picollo_ring::Drained {
                accepted: 1,
                lost: 0,
            });
        }
        if let Some(out) = &mut self.json_lines {
            let frame = DynamicFrame::new(info, number, words);
            let line = json::to_line(&Line::frame(&ring.name, &frame));
            writeln!(out, "{line}").map_err(stdout_error)?;
        }
        Ok(())
    }

    /// Ring `id`'s counter table changed (a capture's record; live readers see it with the
    /// next frame).
    pub(crate) fn counters_changed(&mut self, id: u32, info: &RingInfo) -> Result<()> {
        let Some(ring) = self.rings.get(id as usize) else {
            return Ok(());
        };
        if let Some(out) = &mut self.json_lines {
            let line = json::to_line(&Line::counters(&ring.name, info));
            writeln!(out, "{line}").map_err(stdout_error)?;
        }
        Ok(())
    }

    /// The reader lost `count` frames of ring `id`.
    pub(crate) fn lost(&mut self, id: u32, count: u64) -> Result<()> {
        if count == 0 {
            return Ok(());
        }
        let Some(ring) = self.rings.get_mut(id as usize) else {
            return Ok(());
        };
        ring.lost += count;
        if let Some((path, w)) = &mut self.capture {
            w.lost(id, count)
                .map_err(|e| CliError::new(format!("{}: {e}", path.display())))?;
        }
        if let Some(agg) = &mut self.spans {
            if ring.span.is_some() {
                agg.add_counts(picollo_ring::Drained {
                    accepted: 0,
                    lost: count,
                });
            }
        }
        if let Some(out) = &mut self.json_lines {
            let line = json::to_line(&Line::Lost {
                ring: &ring.name,
                count,
            });
            writeln!(out, "{line}").map_err(stdout_error)?;
        }
        Ok(())
    }

    /// Writes what is buffered.
    pub(crate) fn flush(&mut self) -> Result<()> {
        self.flush_with(false)
    }

    /// Writes what is buffered; at the end, rings that got no frame get their CSV file too
    /// (the header line only).
    fn flush_with(&mut self, end: bool) -> Result<()> {
        if let (true, Some(dir)) = (end, &self.csv_dir) {
            for r in &mut self.rings {
                if let (None, Some(info)) = (&r.csv, &r.csv_info) {
                    r.csv = Some(CsvRing::open(dir, &r.name, info)?);
                }
            }
        }
        for r in &mut self.rings {
            if let Some(c) = &mut r.csv {
                c.out
                    .flush()
                    .map_err(|e| CliError::new(format!("writing CSV: {e}")))?;
            }
        }
        if let Some((path, w)) = &mut self.capture {
            w.flush()
                .map_err(|e| CliError::new(format!("{}: {e}", path.display())))?;
        }
        if let Some(out) = &mut self.json_lines {
            out.flush().map_err(stdout_error)?;
        }
        Ok(())
    }

    /// The span aggregator (when spans are aggregated).
    pub(crate) fn aggregator(&self) -> Option<&SpanAggregator> {
        self.spans.as_ref()
    }

    /// The span statistics of the interval so far, starting a new one.
    pub(crate) fn take_interval(&mut self) -> Option<SpanAggregator> {
        self.spans.as_mut().map(SpanAggregator::take_interval)
    }

    /// Span rings being aggregated.
    pub(crate) fn span_rings(&self) -> usize {
        self.rings.iter().filter(|r| r.span.is_some()).count()
    }

    /// Per-ring totals.
    pub(crate) fn totals(&self) -> Vec<RingTotals> {
        self.rings
            .iter()
            .map(|r| RingTotals {
                name: r.name.clone(),
                frames: r.frames,
                lost: r.lost,
                csv: r.csv.as_ref().map_or_else(Vec::new, |c| {
                    c.files.iter().map(|f| (f.path.clone(), f.frames)).collect()
                }),
            })
            .collect()
    }

    /// Flushes everything and finishes the capture file (its end record); returns its path
    /// and frame and loss counts when there is one.
    pub(crate) fn finish(&mut self) -> Result<Option<(PathBuf, u64, u64)>> {
        self.flush_with(true)?;
        match self.capture.take() {
            Some((path, w)) => {
                let (frames, lost) = (w.frames(), w.lost_frames());
                w.finish()
                    .map_err(|e| CliError::new(format!("{}: {e}", path.display())))?;
                Ok(Some((path, frames, lost)))
            }
            None => Ok(None),
        }
    }
}

impl CsvRing {
    /// `DIR/<ring>.csv` with the header line of `info`.
    fn open(dir: &Path, ring: &str, info: &RingInfo) -> Result<Self> {
        let path = dir.join(format!("{ring}.csv"));
        Ok(CsvRing {
            out: Self::create(&path, info)?,
            epoch: info.counters_epoch(),
            files: vec![CsvFile { path, frames: 0 }],
            line: String::new(),
        })
    }

    /// Moves on to the next file, `DIR/<ring>.<n>.csv`, for frames described by `info`.
    fn next_part(&mut self, dir: &Path, ring: &str, info: &RingInfo) -> Result<()> {
        self.out
            .flush()
            .map_err(|e| CliError::new(format!("writing CSV: {e}")))?;
        let path = dir.join(format!("{ring}.{}.csv", self.files.len() + 1));
        self.out = Self::create(&path, info)?;
        self.epoch = info.counters_epoch();
        self.files.push(CsvFile { path, frames: 0 });
        Ok(())
    }

    fn create(path: &Path, info: &RingInfo) -> Result<BufWriter<File>> {
        let file = File::create(path).map_err(|e| {
            CliError::new(format!(
                "cannot create {}: {e}; give a writable directory",
                path.display()
            ))
        })?;
        let mut out = BufWriter::new(file);
        let mut header = String::new();
        let _ = write_csv_header(info, &mut header);
        out.write_all(header.as_bytes()).map_err(io_err(path))?;
        Ok(out)
    }
}

/// One line per CSV file written: `DIR/ring.csv: N frames, M lost` (the ring's losses on
/// its first file; later files, after a counter change, say so).
pub(crate) fn csv_summary(totals: &[RingTotals]) -> String {
    let mut out = String::new();
    for t in totals {
        for (i, (path, frames)) in t.csv.iter().enumerate() {
            if i == 0 {
                out.push_str(&format!(
                    "{}: {} frames, {} lost\n",
                    path.display(),
                    Grouped(*frames),
                    Grouped(t.lost)
                ));
            } else {
                out.push_str(&format!(
                    "{}: {} frames (after a counter change)\n",
                    path.display(),
                    Grouped(*frames)
                ));
            }
        }
    }
    out
}

/// The span report as Markdown: the per-phase table, then the counter-event table if any.
pub(crate) fn spans_markdown(agg: &SpanAggregator) -> String {
    let mut s = agg.table().to_string();
    if let Some(events) = agg.event_table() {
        s.push('\n');
        s.push_str(&events.to_string());
    }
    s
}
