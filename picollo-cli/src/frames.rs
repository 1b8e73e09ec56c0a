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
//! Span reports are one object ([`spans_json`]); `convert --format json` prints one object
//! per line: `{"type":"ring",…}`, `{"type":"frame",…}`, `{"type":"counters",…}`,
//! `{"type":"lost",…}` and a final `{"type":"end",…}` (see the CLI docs for the fields).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use picollo_alloc::csv::{write_csv_header, FrameCsv};
use picollo_core::ring::{ClockKind, CounterInfo, CounterStatus, DynamicFrame, RingInfo, Value};
use picollo_linux::capture::CaptureWriter;
use picollo_linux::span::{unavailable_reason, SpanAggregator, SpanDecoder};

use crate::error::{CliError, Result};
use crate::json::{Json, Object};

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
pub struct RingTotals {
    /// The ring's name.
    pub name: String,
    /// Frames delivered.
    pub frames: u64,
    /// Frames lost.
    pub lost: u64,
    /// CSV files written, with their frame counts.
    pub csv: Vec<(PathBuf, u64)>,
}

/// The sinks frames are written to.
pub struct Sinks {
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
    pub fn new() -> Self {
        Self {
            rings: Vec::new(),
            csv_dir: None,
            capture: None,
            spans: None,
            json_lines: None,
        }
    }

    /// CSV files in `dir` (created if missing).
    pub fn csv(mut self, dir: &Path) -> Result<Self> {
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
    pub fn capture(mut self, path: &Path, pid: u32) -> Result<Self> {
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
    pub fn spans(mut self) -> Self {
        self.spans = Some(picollo_linux::span::new_aggregator());
        self
    }

    /// Every event as a JSON line on `out`.
    pub fn json_lines(mut self, out: Box<dyn Write>) -> Self {
        self.json_lines = Some(out);
        self
    }

    /// Whether only span rings are of interest (no CSV, capture or JSON lines).
    pub fn spans_only(&self) -> bool {
        self.csv_dir.is_none() && self.capture.is_none() && self.json_lines.is_none()
    }

    /// Adds ring `name` described by `info`; returns its id. A ring that is not a span ring
    /// still goes to CSV, capture and JSON.
    pub fn add_ring(&mut self, name: &str, info: &RingInfo) -> Result<u32> {
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
            let line = Object::new()
                .field("type", Json::str("ring"))
                .field("ring", Json::str(name))
                .field("schema", Json::str(&info.to_string()))
                .field("clock", clock_json(info))
                .field("counters", counters_json(info));
            writeln!(out, "{}", line.build().as_str()).map_err(stdout_error)?;
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
    pub fn frame(&mut self, id: u32, info: &RingInfo, number: u64, words: &[u64]) -> Result<()> {
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
            agg.add_counts(picollo_core::ring::Drained {
                accepted: 1,
                lost: 0,
            });
        }
        if let Some(out) = &mut self.json_lines {
            let line = frame_json(&ring.name, &DynamicFrame::new(info, number, words));
            writeln!(out, "{}", line.as_str()).map_err(stdout_error)?;
        }
        Ok(())
    }

    /// Ring `id`'s counter table changed (a capture's record; live readers see it with the
    /// next frame).
    pub fn counters_changed(&mut self, id: u32, info: &RingInfo) -> Result<()> {
        let Some(ring) = self.rings.get(id as usize) else {
            return Ok(());
        };
        if let Some(out) = &mut self.json_lines {
            let line = Object::new()
                .field("type", Json::str("counters"))
                .field("ring", Json::str(&ring.name))
                .field("since", Json::uint(info.counters_since()))
                .field("counters", counters_json(info));
            writeln!(out, "{}", line.build().as_str()).map_err(stdout_error)?;
        }
        Ok(())
    }

    /// The reader lost `count` frames of ring `id`.
    pub fn lost(&mut self, id: u32, count: u64) -> Result<()> {
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
                agg.add_counts(picollo_core::ring::Drained {
                    accepted: 0,
                    lost: count,
                });
            }
        }
        if let Some(out) = &mut self.json_lines {
            let line = Object::new()
                .field("type", Json::str("lost"))
                .field("ring", Json::str(&ring.name))
                .field("count", Json::uint(count));
            writeln!(out, "{}", line.build().as_str()).map_err(stdout_error)?;
        }
        Ok(())
    }

    /// Writes what is buffered.
    pub fn flush(&mut self) -> Result<()> {
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
    pub fn aggregator(&self) -> Option<&SpanAggregator> {
        self.spans.as_ref()
    }

    /// The span statistics of the interval so far, starting a new one.
    pub fn take_interval(&mut self) -> Option<SpanAggregator> {
        self.spans.as_mut().map(SpanAggregator::take_interval)
    }

    /// Span rings being aggregated.
    pub fn span_rings(&self) -> usize {
        self.rings.iter().filter(|r| r.span.is_some()).count()
    }

    /// Per-ring totals.
    pub fn totals(&self) -> Vec<RingTotals> {
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
    pub fn finish(&mut self) -> Result<Option<(PathBuf, u64, u64)>> {
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

/// A clock kind's name in JSON: `tsc`, `monotonic_ns`, …
fn clock_kind_name(kind: ClockKind) -> &'static str {
    match kind {
        ClockKind::MonotonicNs => "monotonic_ns",
        ClockKind::RealtimeNs => "realtime_ns",
        ClockKind::ThreadCpuNs => "thread_cpu_ns",
        ClockKind::Tsc => "tsc",
        ClockKind::Cycles => "cycles",
        ClockKind::Unspecified => "unspecified",
        _ => "other",
    }
}

/// The clock record of a ring header as JSON.
pub fn clock_json(info: &RingInfo) -> Json {
    let c = info.clock();
    Object::new()
        .field("kind", Json::str(clock_kind_name(c.kind)))
        .field("hz", Json::uint(c.hz))
        .field("ref_ticks", Json::uint(c.ref_ticks))
        .field("ref_ns", Json::uint(c.ref_ns))
        .build()
}

/// A ring's counter slots as JSON: `[{"name","status","errno","reason"}]`.
pub fn counters_json(info: &RingInfo) -> Json {
    Json::array(info.counters().map(counter_json))
}

/// One counter slot as JSON: `{"name","status"}`, with `"errno"` and `"reason"` when it is
/// unavailable.
pub fn counter_json(c: CounterInfo<'_>) -> Json {
    slot_json(c.name, c.status, c.errno)
}

/// A counter slot as JSON, from its name, status and errno (see [`counter_json`]).
pub fn slot_json(name: &str, status: CounterStatus, errno: u32) -> Json {
    let mut o = Object::new()
        .field("name", Json::str(name))
        .field("status", Json::str(status.as_str()));
    if status == CounterStatus::Unavailable {
        o.push("errno", Json::uint(errno));
        o.push("reason", Json::str(&unavailable_reason(errno)));
    }
    o.build()
}

/// One frame as JSON: `{"type":"frame","ring","frame","fields":{…}}`. Counter slots are
/// objects keyed by counter name (or slot number), `null` where the counter is unavailable;
/// unused slots are left out.
pub fn frame_json(ring: &str, f: &DynamicFrame<'_>) -> Json {
    let info = f.info();
    let slot_key = |i: usize| -> Option<(String, bool)> {
        match info.counters().nth(i) {
            Some(c) if c.status == CounterStatus::Unused => None,
            Some(c) => Some((c.name.to_owned(), c.status == CounterStatus::Measured)),
            None => Some((i.to_string(), true)),
        }
    };
    let mut fields = Object::new();
    for fv in f.fields() {
        let v = match fv.value {
            Value::Unsigned(v) | Value::Time(v) => Json::uint(v),
            Value::Signed(v) => Json::int(v),
            Value::Float(v) => Json::float(v),
            Value::Bool(v) => Json::bool(v),
            Value::Str(s) => Json::str(s.as_str()),
            Value::TimeInterval { start, end } => Object::new()
                .field("start", Json::uint(start))
                .field("end", Json::uint(end))
                .build(),
            Value::Counters(c) => {
                let mut o = Object::new();
                for (i, v) in c.as_slice().iter().enumerate() {
                    if let Some((k, measured)) = slot_key(i) {
                        o.push(
                            &k,
                            if measured {
                                Json::uint(*v)
                            } else {
                                Json::null()
                            },
                        );
                    }
                }
                o.build()
            }
            Value::CounterInterval { start, end } => {
                let mut o = Object::new();
                for (i, (s, e)) in start.as_slice().iter().zip(end.as_slice()).enumerate() {
                    if let Some((k, measured)) = slot_key(i) {
                        o.push(
                            &k,
                            if measured {
                                Object::new()
                                    .field("start", Json::uint(*s))
                                    .field("end", Json::uint(*e))
                                    .build()
                            } else {
                                Json::null()
                            },
                        );
                    }
                }
                o.build()
            }
            _ => Json::null(),
        };
        fields.push(fv.name, v);
    }
    Object::new()
        .field("type", Json::str("frame"))
        .field("ring", Json::str(ring))
        .field("frame", Json::uint(f.number()))
        .field("fields", fields)
        .build()
}

/// The span report as one JSON object (see the `attach` docs for the schema): `head` first
/// (pid, interval, …), then `frames`, `clock`, `unavailable`, `phases`, `events`, `notes`.
pub fn spans_json(agg: &SpanAggregator, head: Object) -> Json {
    let mut o = head;
    o.push(
        "frames",
        Object::new()
            .field("read", Json::uint(agg.accepted()))
            .field("lost", Json::uint(agg.lost())),
    );
    o.push(
        "clock",
        Object::new()
            .field(
                "kind",
                Json::opt(agg.clock(), |c| Json::str(clock_kind_name(c.kind))),
            )
            .field("hz", Json::opt(agg.clock_hz(), Json::float)),
    );
    o.push(
        "unavailable",
        Json::array(agg.unavailable().map(|(n, e)| {
            Object::new()
                .field("name", Json::str(n))
                .field("errno", Json::uint(e))
                .field("reason", Json::str(&unavailable_reason(e)))
                .build()
        })),
    );
    o.push(
        "phases",
        Json::array(agg.phases().into_iter().map(|p| {
            let mut counters = Object::new();
            for c in &p.counters {
                counters.push(
                    &c.name,
                    Object::new()
                        .field("sum", Json::uint(c.sum))
                        .field("spans", Json::uint(c.spans))
                        .field("per_span", Json::float(c.per_span))
                        .field(
                            "per_kilo_instruction",
                            Json::opt(c.per_kilo_instruction, Json::float),
                        ),
                );
            }
            Object::new()
                .field("name", Json::str(&p.name))
                .field("n", Json::uint(p.count))
                .field("ticks", Json::uint(p.ticks))
                .field("time_ns", Json::opt(p.time_ns, Json::float))
                .field("share", Json::float(p.share))
                .field("p50_ticks", Json::opt(p.p50_ticks, Json::uint))
                .field("p50_ns", Json::opt(p.p50_ns, Json::float))
                .field("cycles", Json::opt(p.cycles, Json::uint))
                .field("instructions", Json::opt(p.instructions, Json::uint))
                .field(
                    "ipc",
                    Json::opt(p.ipc, |[p5, p50, p95]| {
                        Object::new()
                            .field("p5", Json::float(p5))
                            .field("p50", Json::float(p50))
                            .field("p95", Json::float(p95))
                            .build()
                    }),
                )
                .field("counters", counters)
                .build()
        })),
    );
    o.push(
        "events",
        Json::array(agg.events().into_iter().map(|e| {
            Object::new()
                .field("name", Json::str(&e.name))
                .field("n", Json::uint(e.count))
                .field("last", Json::int(e.last))
                .field("min", Json::int(e.min))
                .field("mean", Json::float(e.mean))
                .field("max", Json::int(e.max))
                .field("p50", Json::opt(e.p50, Json::uint))
                .field("p99", Json::opt(e.p99, Json::uint))
                .build()
        })),
    );
    o.push(
        "notes",
        Json::array(agg.notes().iter().map(|n| Json::str(n))),
    );
    o.build()
}

/// One line per CSV file written: `DIR/ring.csv: N frames, M lost` (the ring's losses on
/// its first file; later files, after a counter change, say so).
pub fn csv_summary(totals: &[RingTotals]) -> String {
    let mut out = String::new();
    for t in totals {
        for (i, (path, frames)) in t.csv.iter().enumerate() {
            if i == 0 {
                out.push_str(&format!(
                    "{}: {frames} frames, {} lost\n",
                    path.display(),
                    t.lost
                ));
            } else {
                out.push_str(&format!(
                    "{}: {frames} frames (after a counter change)\n",
                    path.display()
                ));
            }
        }
    }
    out
}

/// The span report as Markdown: the per-phase table, then the counter-event table if any.
pub fn spans_markdown(agg: &SpanAggregator) -> String {
    let mut s = agg.table().to_string();
    if let Some(events) = agg.event_table() {
        s.push('\n');
        s.push_str(&events.to_string());
    }
    s
}
