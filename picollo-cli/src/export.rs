//! `picollo export FILE.hlog --format prom-text|openmetrics|otlp-json`: an HdrHistogram
//! interval log (jHiccup, wrk2, HdrHistogram's own writers) in the formats fleet systems take.
//!
//! - `prom-text`: the selected intervals of each tag added up, as one classic histogram per
//!   tag in Prometheus text 0.0.4 (for a Pushgateway or a textfile collector);
//! - `openmetrics`: one cumulative classic histogram sample per interval, stamped with the
//!   interval's end, ending in `# EOF`: `promtool tsdb create-blocks-from openmetrics` turns it
//!   into Prometheus blocks (backfill);
//! - `otlp-json`: one OTLP exponential histogram data point per interval (delta temporality,
//!   the interval's start and end), an `ExportMetricsServiceRequest` in OTLP/JSON for a
//!   collector's `/v1/metrics`.
//!
//! Each interval converts exactly into a Picollo histogram (index for index at the log's
//! precision), then through picollo-export's mapping. Values are exported as logged, or
//! divided with `--unit` as `report` does (the log taken to be in nanoseconds). Selection
//! (`--tag`, `--from`, `--to`) is `report`'s.

use std::fs::File;
use std::io::{BufReader, Write};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::PathBuf;

use clap::{Args, ValueEnum};
use picollo_alloc::hdr::{interop, HdrCounts, LogEntry, LogReader};
use picollo_alloc::HeapHistogram;
use picollo_core::{HistogramRead, Window};
use picollo_export::text::{MetricKind, TextEncoder, TextFormat};
use picollo_export::{
    check_metric_name, otlp, ClassicBuckets, ClassicHistogram, Labels, Mapping, NativeHistogram,
    Schema,
};

use crate::error::{CliError, Result};
use crate::hlog::{self, Scan, SparseCounts, Tags, Unit};

/// What `export` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum ExportFormat {
    /// Prometheus text 0.0.4: per tag, the selected intervals added up.
    PromText,
    /// OpenMetrics text: one timestamped sample per interval, for promtool backfill.
    Openmetrics,
    /// OTLP/JSON: one exponential histogram data point per interval.
    OtlpJson,
}

/// Arguments of `picollo export`.
#[derive(Debug, Args)]
pub(crate) struct ExportArgs {
    /// The interval log.
    file: PathBuf,
    /// Output format.
    #[arg(long, value_enum)]
    format: ExportFormat,
    /// The metric name (Prometheus rules: letters, digits, '_' and ':').
    #[arg(long, default_value = "hlog_value")]
    name: String,
    #[command(flatten)]
    select: hlog::SelectArgs,
    /// Exponential schema for otlp-json, -4..=8 (default: the finest not finer than the
    /// log's precision, 8 for 3 significant digits).
    #[arg(long, allow_negative_numbers = true, value_name = "N")]
    schema: Option<i8>,
    /// Classic bucket boundaries (inclusive, comma-separated, increasing) for prom-text and
    /// openmetrics (default: 2^m - 1 up to the largest value, each exact).
    #[arg(long, value_delimiter = ',', value_name = "LE,…")]
    buckets: Option<Vec<u64>>,
}

/// One selected interval, converted.
struct Interval {
    tag: Option<String>,
    start_ms: i64,
    end_ms: i64,
    /// The counts in the chosen unit.
    counts: HdrCounts,
    /// The same, as a Picollo histogram.
    histogram: HeapHistogram<u64>,
}

/// Runs `export`, writing to stdout; returns nothing more to print.
///
/// The log is read as a stream: memory holds one interval plus, per tag, a sparse sum (see
/// [`hlog`]'s docs). Nothing is written unless the whole log converts: `openmetrics` and
/// `otlp-json`, whose output grows with the log, are staged in an unlinked temporary file
/// (in `$TMPDIR`), then copied out.
pub(crate) fn run(a: &ExportArgs) -> Result<String> {
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::with_capacity(64 << 10, stdout.lock());
    match write(a, &mut out).and_then(|()| {
        out.flush()
            .map_err(|e| CliError::new(format!("cannot write to stdout: {e}")))
    }) {
        Err(e) if e.to_string().contains("Broken pipe") => Ok(String::new()),
        other => other.map(|()| String::new()),
    }
}

/// Runs `export` into `out`.
fn write(a: &ExportArgs, out: &mut dyn Write) -> Result<()> {
    check_metric_name(&a.name).map_err(|e| CliError::new(format!("--name: {e}")))?;
    let schema = match a.schema {
        None => None,
        Some(n) => Some(Schema::new(n).ok_or_else(|| {
            CliError::new(format!(
                "--schema {n} is outside -4..=8; pick a schema in that range"
            ))
        })?),
    };
    let buckets = match &a.buckets {
        None => ClassicBuckets::PowersOfTwo,
        Some(b) => ClassicBuckets::explicit(b.clone())
            .map_err(|e| CliError::new(format!("--buckets: {e}")))?,
    };
    let help = format!(
        "from {}",
        a.file.file_name().map_or_else(
            || a.file.display().to_string(),
            |n| n.to_string_lossy().into_owned()
        )
    );
    let selection = a.select.selection()?;
    hlog::check_range(&selection)?;
    let mut sink = match a.format {
        ExportFormat::PromText => Sink::PromText(Tags::new(selection.max_tags)),
        ExportFormat::Openmetrics => Sink::OpenMetrics {
            tags: Tags::new(selection.max_tags),
            spill: Spill::new()?,
        },
        ExportFormat::OtlpJson => Sink::Otlp {
            tags: Tags::new(selection.max_tags),
            spill: Spill::new()?,
            points: 0,
            frame: otlp_frame(&a.name, ""),
        },
    };
    let shown = a.file.display().to_string();
    let file = File::open(&a.file)
        .map_err(|e| CliError::new(format!("cannot open {shown}: {e}; check the path")))?;
    let mut scan = Scan::default();
    let mut scratch = Vec::new();
    let mut selected = 0usize;
    for entry in selection.intervals(LogReader::new(BufReader::new(file)), &shown, &mut scan) {
        let entry = entry?;
        selected += 1;
        let interval = convert(&entry, &shown, a.select.unit)?;
        sink.interval(interval, &buckets, &a.name, schema, &mut scratch)
            .map_err(|e| CliError::new(format!("{shown}: line {}: {e}", entry.line)))?;
    }
    if scan.seen == 0 {
        return Err(CliError::new(format!(
            "{shown} holds no interval lines; give an HdrHistogram interval log (.hlog)"
        )));
    }
    if selected == 0 {
        return Err(CliError::new(format!(
            "no interval of {shown} matches the selection (--tag, --from, --to); change it"
        )));
    }
    sink.finish(&a.name, &help, &buckets, out)
}

/// Where the converted intervals go.
enum Sink {
    /// Per tag, the sum of its intervals (written at the end).
    PromText(Tags<TagSum>),
    /// Per tag, the running sum; each interval's sample staged in `spill`, in chunks per tag
    /// (OpenMetrics wants each series' samples together).
    OpenMetrics { tags: Tags<Running>, spill: Spill },
    /// Each interval's data point staged in `spill`, in log order.
    Otlp {
        /// The tags seen (for the limit only).
        tags: Tags<()>,
        spill: Spill,
        points: u64,
        /// The request around one point, to cut each point's text out of.
        frame: (String, String),
    },
}

/// A tag's intervals added up, sparse, with what rebuilds them: the first interval's
/// geometry and the largest highest trackable value.
#[derive(Debug)]
struct TagSum {
    lowest: u64,
    highest: u64,
    digits: u8,
    sum: SparseCounts,
}

impl TagSum {
    fn new(first: &HdrCounts) -> Self {
        Self {
            lowest: first.lowest_discernible,
            highest: first.highest_trackable,
            digits: first.significant_digits,
            sum: SparseCounts::default(),
        }
    }

    fn add(&mut self, counts: &HdrCounts, scratch: &mut Vec<(u64, u64)>) -> Result<()> {
        self.highest = self.highest.max(counts.highest_trackable);
        self.sum.add(counts, scratch)
    }

    /// The sum as a Picollo histogram over its layout's full window (as the sums of
    /// intervals have always been exported: the power-of-two buckets run to 2^64 - 1).
    fn histogram(&self) -> Result<HeapHistogram<u64>> {
        let counts = self
            .sum
            .to_counts(self.lowest, self.highest, self.digits)
            .map_err(|e| CliError::new(format!("cannot add up the intervals: {e}")))?;
        let geometry = counts
            .geometry()
            .map_err(|e| CliError::new(format!("cannot add up the intervals: {e}")))?;
        let layout = interop::layout_for(&geometry);
        let (h, _) = interop::to_picollo_in(&counts, layout, Window::full(layout))
            .map_err(|e| CliError::new(format!("cannot add up the intervals: {e}")))?;
        Ok(h)
    }
}

/// A tag's running sum and where its samples are staged.
#[derive(Debug)]
struct Running {
    sum: TagSum,
    last_ms: i64,
    chunks: Vec<(u64, u64)>,
}

impl Sink {
    fn interval(
        &mut self,
        i: Interval,
        buckets: &ClassicBuckets,
        name: &str,
        schema: Option<Schema>,
        scratch: &mut Vec<(u64, u64)>,
    ) -> Result<()> {
        match self {
            Self::PromText(tags) => tags
                .entry(&i.tag, || TagSum::new(&i.counts))?
                .add(&i.counts, scratch),
            Self::OpenMetrics { tags, spill } => {
                let r = tags.entry(&i.tag, || Running {
                    sum: TagSum::new(&i.counts),
                    last_ms: i64::MIN,
                    chunks: Vec::new(),
                })?;
                r.sum.add(&i.counts, scratch)?;
                // OpenMetrics wants strictly increasing timestamps per series: a repeated
                // end time keeps the first sum only.
                if i.end_ms <= r.last_ms {
                    return Ok(());
                }
                r.last_ms = i.end_ms;
                let classic = ClassicHistogram::from_histogram(&r.sum.histogram()?, buckets);
                let mut text = TextEncoder::new(TextFormat::OpenMetrics);
                let _ = text.family(name, "", MetricKind::Histogram);
                let _ = text.take_text(); // the family lines, written once at the end
                text.histogram(&labels(&i.tag), &classic, Some(i.end_ms));
                let sample = text.take_text();
                let at = spill.append(sample.as_bytes())?;
                match r.chunks.last_mut() {
                    // Consecutive intervals of one tag make one chunk.
                    Some((start, len)) if *start + *len == at => *len += sample.len() as u64,
                    _ => r.chunks.push((at, sample.len() as u64)),
                }
                Ok(())
            }
            Self::Otlp {
                tags,
                spill,
                points,
                frame,
            } => {
                tags.entry(&i.tag, || ())?;
                let ns = |ms: i64| (ms.max(0) as u64).saturating_mul(1_000_000);
                let layout = i.histogram.layout();
                let mapping =
                    schema.map_or(Mapping::for_layout(layout), |s| Mapping::new(layout, s));
                let mut native = NativeHistogram::new(mapping.schema());
                native.fill_from(&i.histogram, mapping);
                let attributes = otlp::attributes(&labels(&i.tag));
                let point =
                    otlp::exponential_point(&native, attributes, ns(i.start_ms), ns(i.end_ms));
                let json = point_json(name, point, frame);
                if *points > 0 {
                    spill.append(b",")?;
                }
                spill.append(json.as_bytes())?;
                *points += 1;
                Ok(())
            }
        }
    }

    fn finish(
        self,
        name: &str,
        help: &str,
        buckets: &ClassicBuckets,
        out: &mut dyn Write,
    ) -> Result<()> {
        let w = |out: &mut dyn Write, bytes: &[u8]| {
            out.write_all(bytes)
                .map_err(|e| CliError::new(format!("cannot write to stdout: {e}")))
        };
        match self {
            Self::PromText(tags) => {
                let mut text = TextEncoder::new(TextFormat::Prometheus);
                // The name was checked in `write`.
                let _ = text.family(name, help, MetricKind::Histogram);
                for (tag, sum) in tags.into_ordered() {
                    let classic = ClassicHistogram::from_histogram(&sum.histogram()?, buckets);
                    text.histogram(&labels(&tag), &classic, None);
                    w(out, text.take_text().as_bytes())?;
                }
                w(out, text.finish().as_bytes())
            }
            Self::OpenMetrics { tags, mut spill } => {
                let mut text = TextEncoder::new(TextFormat::OpenMetrics);
                let _ = text.family(name, help, MetricKind::Histogram);
                w(out, text.take_text().as_bytes())?;
                for (_, r) in tags.into_ordered() {
                    for (at, len) in r.chunks {
                        spill.copy(at, len, out)?;
                    }
                }
                w(out, text.finish().as_bytes())
            }
            Self::Otlp {
                mut spill, points, ..
            } => {
                let (head, tail) = otlp_frame(name, help);
                w(out, head.as_bytes())?;
                spill.copy(0, spill.len, out)?;
                debug_assert!(points > 0);
                w(out, tail.as_bytes())
            }
        }
    }
}

/// The OTLP/JSON request around the data points: the text before and after them (the
/// request with no point, cut at its empty `dataPoints` list).
fn otlp_frame(name: &str, help: &str) -> (String, String) {
    let metric = otlp::exponential_metric(name, help, "", otlp::Temporality::Delta, Vec::new());
    let json = otlp::to_json(&otlp::request(Vec::new(), vec![metric]));
    const EMPTY: &str = "\"dataPoints\":[]";
    // The key is written by the encoder (a name or help text cannot hold an unescaped `"`).
    let at = json.find(EMPTY).map_or(json.len(), |i| i + EMPTY.len() - 1);
    let (head, tail) = json.split_at(at);
    (head.to_owned(), format!("{tail}\n"))
}

/// The OTLP/JSON text of one data point: the request with that point alone, less `frame`
/// ([`otlp_frame`] with no help text).
fn point_json(
    name: &str,
    point: picollo_export::proto::otlp::ExponentialHistogramDataPoint,
    (head, tail): &(String, String),
) -> String {
    let metric = otlp::exponential_metric(name, "", "", otlp::Temporality::Delta, vec![point]);
    let json = otlp::to_json(&otlp::request(Vec::new(), vec![metric]));
    let tail = tail.trim_end_matches('\n');
    json.strip_prefix(head.as_str())
        .and_then(|j| j.strip_suffix(tail))
        .map_or(json.clone(), str::to_owned)
}

/// An unlinked temporary file that output is staged in (freed when closed, even on a crash).
struct Spill {
    file: std::io::BufWriter<File>,
    len: u64,
}

impl Spill {
    fn new() -> Result<Self> {
        let dir = std::env::temp_dir();
        // A file with no name at all (`O_TMPFILE`), where the file system has them.
        if let Ok(file) = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_TMPFILE)
            .mode(0o600)
            .open(&dir)
        {
            return Ok(Self {
                file: std::io::BufWriter::with_capacity(64 << 10, file),
                len: 0,
            });
        }
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let path = dir.join(format!(".picollo-export-{}-{nanos}", std::process::id()));
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .map_err(|e| {
                CliError::new(format!(
                    "cannot create a temporary file in {} to stage the output: {e}; set TMPDIR \
                     to a writable directory",
                    dir.display()
                ))
            })?;
        let _ = std::fs::remove_file(&path);
        Ok(Self {
            file: std::io::BufWriter::with_capacity(64 << 10, file),
            len: 0,
        })
    }

    /// Appends `bytes`; returns where they start.
    fn append(&mut self, bytes: &[u8]) -> Result<u64> {
        self.file
            .write_all(bytes)
            .map_err(|e| CliError::new(format!("cannot stage the output in $TMPDIR: {e}")))?;
        let at = self.len;
        self.len += bytes.len() as u64;
        Ok(at)
    }

    /// Copies `len` bytes from `at` to `out`.
    fn copy(&mut self, at: u64, len: u64, out: &mut dyn Write) -> Result<()> {
        self.file
            .flush()
            .map_err(|e| CliError::new(format!("cannot stage the output in $TMPDIR: {e}")))?;
        let file = self.file.get_ref();
        let mut buf = vec![0u8; (64 << 10).min(len as usize).max(1)];
        let mut done = 0u64;
        while done < len {
            let n = buf.len().min((len - done) as usize);
            file.read_exact_at(&mut buf[..n], at + done)
                .map_err(|e| CliError::new(format!("cannot read the staged output: {e}")))?;
            out.write_all(&buf[..n])
                .map_err(|e| CliError::new(format!("cannot write to stdout: {e}")))?;
            done += n as u64;
        }
        Ok(())
    }
}

fn convert(entry: &LogEntry, shown: &str, unit: Option<Unit>) -> Result<Interval> {
    let counts = entry.decode().map_err(|e| {
        CliError::new(format!(
            "{shown}: line {}: cannot decode the histogram: {e}; the log is corrupt",
            entry.line
        ))
    })?;
    let counts = hlog::in_unit(&counts, unit)?;
    let histogram = interop::to_picollo(&counts).map_err(|e| {
        CliError::new(format!(
            "{shown}: line {}: cannot convert the histogram: {e}",
            entry.line
        ))
    })?;
    let ms = |sec: f64| -> Result<i64> {
        let ms = (sec * 1000.0).round();
        if ms.is_finite() && ms.abs() < 1e15 {
            Ok(ms as i64)
        } else {
            Err(CliError::new(format!(
                "{shown}: line {}: interval time {sec} s is not a usable timestamp",
                entry.line
            )))
        }
    };
    Ok(Interval {
        tag: entry.tag.clone(),
        start_ms: ms(entry.absolute_start_sec)?,
        end_ms: ms(entry.absolute_end_sec())?,
        counts,
        histogram,
    })
}

/// The label set of a tag.
fn labels(tag: &Option<String>) -> Labels {
    // Tags never hold commas, spaces or line breaks (the reader checks), and "tag" is a valid
    // label name, so this cannot fail; an empty set is the untagged series.
    tag.as_ref()
        .and_then(|t| Labels::new([("tag", t.as_str())]).ok())
        .unwrap_or_default()
}
