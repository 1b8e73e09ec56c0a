//! The JSON of `attach`, `top` and `convert`, as typed structs (written by [`crate::json`]):
//!
//! - `convert --format json` prints one [`Line`] per event of the capture: `{"type":"ring",…}`,
//!   `{"type":"frame",…}`, `{"type":"counters",…}`, `{"type":"lost",…}` and a final
//!   `{"type":"end",…}`;
//! - the span report ([`Spans`]) follows a head of its own: [`AttachSpans`] (in
//!   [`AttachReport`], as its `spans` field), [`TopHead`] (one per refresh) and
//!   [`ConvertHead`].
//!
//! The fields are documented in the commands' `--help` and in `picollo-cli/README.md`.

use std::path::Path;

use picollo_ring::{ClockKind, CounterInfo, CounterStatus, DynamicFrame, RingInfo, Value};
use picollo_spans::{unavailable_reason, SpanAggregator};
use serde::Serialize;

use crate::json::Ordered;

/// One line of `convert --format json`.
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub(crate) enum Line<'a> {
    /// A ring's header: its schema, clock and counter slots.
    Ring {
        /// The ring's name.
        ring: &'a str,
        /// The frame schema, as text.
        schema: String,
        /// The clock record.
        clock: Clock,
        /// The counter slots.
        counters: Vec<Slot>,
    },
    /// One frame.
    Frame {
        /// The ring's name.
        ring: &'a str,
        /// The frame number.
        frame: u64,
        /// The frame's fields, by name.
        fields: Ordered<FieldValue>,
    },
    /// The ring's counter table changed.
    Counters {
        /// The ring's name.
        ring: &'a str,
        /// The first frame under the new table.
        since: u64,
        /// The counter slots.
        counters: Vec<Slot>,
    },
    /// Frames of a ring the reader lost.
    Lost {
        /// The ring's name.
        ring: &'a str,
        /// Frames lost since the last such line.
        count: u64,
    },
    /// The end of the capture.
    End {
        /// The process the frames came from.
        pid: u64,
        /// Frames in the capture.
        frames: u64,
        /// Frames lost.
        lost: u64,
        /// Whether the capture has its end record (else it was cut short).
        complete: bool,
    },
}

impl<'a> Line<'a> {
    /// The header line of ring `ring`.
    pub(crate) fn ring(ring: &'a str, info: &RingInfo) -> Self {
        Line::Ring {
            ring,
            schema: info.to_string(),
            clock: Clock::of(info),
            counters: slots(info),
        }
    }

    /// Frame `f` of ring `ring`.
    pub(crate) fn frame(ring: &'a str, f: &DynamicFrame<'_>) -> Self {
        Line::Frame {
            ring,
            frame: f.number(),
            fields: frame_fields(f),
        }
    }

    /// Ring `ring`'s counter table, changed to `info`'s.
    pub(crate) fn counters(ring: &'a str, info: &RingInfo) -> Self {
        Line::Counters {
            ring,
            since: info.counters_since(),
            counters: slots(info),
        }
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

/// The clock record of a ring header.
#[derive(Serialize)]
pub(crate) struct Clock {
    kind: &'static str,
    hz: u64,
    ref_ticks: u64,
    ref_ns: u64,
}

impl Clock {
    fn of(info: &RingInfo) -> Self {
        let c = info.clock();
        Clock {
            kind: clock_kind_name(c.kind),
            hz: c.hz,
            ref_ticks: c.ref_ticks,
            ref_ns: c.ref_ns,
        }
    }
}

/// One counter slot: its name and status, with the errno and its reason when unavailable.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct Slot {
    name: String,
    status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    errno: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
}

impl Slot {
    /// The slot `c`.
    pub(crate) fn of(c: CounterInfo<'_>) -> Self {
        Slot::new(c.name, c.status, c.errno)
    }

    /// A slot from its counter's name, status and errno.
    pub(crate) fn new(name: &str, status: CounterStatus, errno: u32) -> Self {
        let unavailable = status == CounterStatus::Unavailable;
        Slot {
            name: name.to_owned(),
            status: status.as_str(),
            errno: unavailable.then_some(errno),
            reason: unavailable.then(|| unavailable_reason(errno)),
        }
    }
}

/// A ring's counter slots.
fn slots(info: &RingInfo) -> Vec<Slot> {
    info.counters().map(Slot::of).collect()
}

/// A start and an end.
#[derive(Serialize)]
pub(crate) struct Interval<T> {
    start: T,
    end: T,
}

/// One field of a frame.
#[derive(Serialize)]
#[serde(untagged)]
pub(crate) enum FieldValue {
    /// An unsigned integer or a time.
    Unsigned(u64),
    /// A signed integer.
    Signed(i64),
    /// A float.
    Float(f64),
    /// A flag.
    Bool(bool),
    /// A label.
    Str(String),
    /// A time interval.
    Interval(Interval<u64>),
    /// Counter values by counter name (slot number when unnamed), `null` when unavailable.
    Counters(Ordered<Option<u64>>),
    /// Counter intervals by counter name, `null` when unavailable.
    CounterIntervals(Ordered<Option<Interval<u64>>>),
    /// A field kind this build does not know.
    Unknown,
}

/// The fields of frame `f` by name. Counter slots are keyed by counter name (or slot
/// number), `null` where the counter is unavailable; unused slots are left out.
fn frame_fields(f: &DynamicFrame<'_>) -> Ordered<FieldValue> {
    let info = f.info();
    let slot_key = |i: usize| -> Option<(String, bool)> {
        match info.counters().nth(i) {
            Some(c) if c.status == CounterStatus::Unused => None,
            Some(c) => Some((c.name.to_owned(), c.status == CounterStatus::Measured)),
            None => Some((i.to_string(), true)),
        }
    };
    let fields = f.fields().map(|fv| {
        let v = match fv.value {
            Value::Unsigned(v) | Value::Time(v) => FieldValue::Unsigned(v),
            Value::Signed(v) => FieldValue::Signed(v),
            Value::Float(v) => FieldValue::Float(v),
            Value::Bool(v) => FieldValue::Bool(v),
            Value::Str(s) => FieldValue::Str(s.as_str().to_owned()),
            Value::TimeInterval { start, end } => FieldValue::Interval(Interval { start, end }),
            Value::Counters(c) => FieldValue::Counters(Ordered::new(
                c.as_slice()
                    .iter()
                    .enumerate()
                    .filter_map(|(i, &v)| {
                        let (k, measured) = slot_key(i)?;
                        Some((k, measured.then_some(v)))
                    })
                    .collect(),
            )),
            Value::CounterInterval { start, end } => FieldValue::CounterIntervals(Ordered::new(
                start
                    .as_slice()
                    .iter()
                    .zip(end.as_slice())
                    .enumerate()
                    .filter_map(|(i, (&start, &end))| {
                        let (k, measured) = slot_key(i)?;
                        Some((k, measured.then_some(Interval { start, end })))
                    })
                    .collect(),
            )),
            _ => FieldValue::Unknown,
        };
        (fv.name.to_owned(), v)
    });
    Ordered::new(fields.collect())
}

/// The outcome of `-e`: the list asked for, and per span ring what it counts now.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct CounterRequest {
    /// The `-e` list.
    pub(crate) counters: String,
    /// Per ring asked.
    pub(crate) rings: Vec<RingRequest>,
}

/// What one ring did with the `-e` request.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct RingRequest {
    /// The ring's name.
    pub(crate) ring: String,
    /// `applied`, `pending` or `superseded`.
    pub(crate) status: &'static str,
    /// Its counter slots now (measured and unavailable ones).
    pub(crate) counters: Vec<Slot>,
}

/// Frames read and lost.
#[derive(Serialize)]
pub(crate) struct Totals {
    /// Frames read.
    pub(crate) read: u64,
    /// Frames lost.
    pub(crate) lost: u64,
}

/// The span report: frames, clock, unavailable counters, the phases, the counter events
/// and the notes, after the head of the command that prints it.
#[derive(Serialize)]
pub(crate) struct Spans<H> {
    #[serde(flatten)]
    head: H,
    frames: Totals,
    clock: SpanClock,
    unavailable: Vec<Unavailable>,
    phases: Vec<Phase>,
    events: Vec<Event>,
    notes: Vec<String>,
}

#[derive(Serialize)]
struct SpanClock {
    kind: Option<&'static str>,
    hz: Option<f64>,
}

#[derive(Serialize)]
struct Unavailable {
    name: String,
    errno: u32,
    reason: String,
}

#[derive(Serialize)]
struct Phase {
    name: String,
    n: u64,
    ticks: u128,
    time_ns: Option<f64>,
    share: f64,
    p50_ticks: Option<u64>,
    p50_ns: Option<f64>,
    cycles: Option<u128>,
    cycles_spans: u64,
    instructions: Option<u128>,
    instructions_spans: u64,
    ipc: Option<Ipc>,
    counters: Ordered<PhaseCounter>,
}

#[derive(Serialize)]
struct Ipc {
    p5: f64,
    p50: f64,
    p95: f64,
}

#[derive(Serialize)]
struct PhaseCounter {
    sum: u128,
    spans: u64,
    per_span: f64,
    per_kilo_instruction: Option<f64>,
}

#[derive(Serialize)]
struct Event {
    name: String,
    n: u64,
    last: i64,
    min: i64,
    mean: f64,
    max: i64,
    p50: Option<u64>,
    p99: Option<u64>,
}

impl<H> Spans<H> {
    /// The report of `agg` after `head`.
    pub(crate) fn new(head: H, agg: &SpanAggregator) -> Self {
        Spans {
            head,
            frames: Totals {
                read: agg.accepted(),
                lost: agg.lost(),
            },
            clock: SpanClock {
                kind: agg.clock().map(|c| clock_kind_name(c.kind)),
                hz: agg.clock_hz(),
            },
            unavailable: agg
                .unavailable()
                .map(|(n, e)| Unavailable {
                    name: n.to_owned(),
                    errno: e,
                    reason: unavailable_reason(e),
                })
                .collect(),
            phases: agg.phases().into_iter().map(Phase::from).collect(),
            events: agg
                .events()
                .into_iter()
                .map(|e| Event {
                    name: e.name,
                    n: e.count,
                    last: e.last,
                    min: e.min,
                    mean: e.mean,
                    max: e.max,
                    p50: e.p50,
                    p99: e.p99,
                })
                .collect(),
            notes: agg.notes().to_vec(),
        }
    }
}

impl From<picollo_spans::PhaseRow> for Phase {
    fn from(p: picollo_spans::PhaseRow) -> Self {
        Phase {
            name: p.name,
            n: p.count,
            ticks: p.ticks,
            time_ns: p.time_ns,
            share: p.share,
            p50_ticks: p.p50_ticks,
            p50_ns: p.p50_ns,
            cycles: p.cycles,
            cycles_spans: p.cycles_spans,
            instructions: p.instructions,
            instructions_spans: p.instructions_spans,
            ipc: p.ipc.map(|[p5, p50, p95]| Ipc { p5, p50, p95 }),
            counters: Ordered::new(
                p.counters
                    .into_iter()
                    .map(|c| {
                        let v = PhaseCounter {
                            sum: c.sum,
                            spans: c.spans,
                            per_span: c.per_span,
                            per_kilo_instruction: c.per_kilo_instruction,
                        };
                        (c.name, v)
                    })
                    .collect(),
            ),
        }
    }
}

/// The head of `attach`'s span report: the span rings read.
#[derive(Serialize)]
pub(crate) struct AttachSpans {
    /// Span rings read.
    pub(crate) rings: usize,
}

/// A file written, with its frames.
#[derive(Serialize)]
pub(crate) struct FileFrames {
    /// The file.
    pub(crate) path: String,
    /// Frames written to it.
    pub(crate) frames: u64,
}

/// One ring of `attach`'s report.
#[derive(Serialize)]
pub(crate) struct AttachRing {
    /// The ring's name.
    pub(crate) ring: String,
    /// Frames read.
    pub(crate) frames: u64,
    /// Frames lost.
    pub(crate) lost: u64,
    /// Its CSV files.
    pub(crate) csv: Vec<FileFrames>,
}

/// The capture file of `attach`'s report.
#[derive(Serialize)]
pub(crate) struct Capture {
    /// The file.
    pub(crate) path: String,
    /// Frames written.
    pub(crate) frames: u64,
    /// Frames lost.
    pub(crate) lost: u64,
}

/// `attach --format json`: one object.
#[derive(Serialize)]
pub(crate) struct AttachReport {
    #[serde(rename = "type")]
    pub(crate) kind: &'static str,
    /// The process.
    pub(crate) pid: i32,
    /// Seconds attached.
    pub(crate) seconds: f64,
    /// Every ring read.
    pub(crate) rings: Vec<AttachRing>,
    /// The capture file, if one was written.
    pub(crate) capture: Option<Capture>,
    /// The outcome of `-e`, if given.
    pub(crate) counter_request: Option<CounterRequest>,
    /// The span report, with `--spans` or `-e`.
    pub(crate) spans: Option<Spans<AttachSpans>>,
}

/// The head of one `top --format json` line.
#[derive(Serialize)]
pub(crate) struct TopHead {
    #[serde(rename = "type")]
    pub(crate) kind: &'static str,
    /// The process.
    pub(crate) pid: i32,
    /// The refresh number, from 1.
    pub(crate) refresh: u64,
    /// Seconds between refreshes.
    pub(crate) interval_s: f64,
    /// Seconds since `top` began.
    pub(crate) uptime_s: f64,
    /// Span rings read.
    pub(crate) rings: usize,
    /// Spans read and lost since `top` began.
    pub(crate) total: Totals,
    /// The outcome of `-e`, on the first refresh.
    pub(crate) counter_request: Option<CounterRequest>,
}

/// The head of `convert --spans --format json`.
#[derive(Serialize)]
pub(crate) struct ConvertHead<'a> {
    #[serde(rename = "type")]
    pub(crate) kind: &'static str,
    /// The capture file, as given.
    pub(crate) file: &'a str,
    /// The process the frames came from.
    pub(crate) pid: u64,
    /// Span rings in the capture.
    pub(crate) rings: usize,
}

/// A path as JSON text.
pub(crate) fn path(p: &Path) -> String {
    p.display().to_string()
}
