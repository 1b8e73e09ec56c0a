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
use std::io::BufReader;
use std::path::PathBuf;

use clap::{Args, ValueEnum};
use picollo_alloc::hdr::{interop, LogEntry, LogReader};
use picollo_alloc::HeapHistogram;
use picollo_core::{HistogramRead, Window};
use picollo_export::text::{MetricKind, TextEncoder, TextFormat};
use picollo_export::{
    check_metric_name, otlp, ClassicBuckets, ClassicHistogram, Labels, Mapping, NativeHistogram,
    Schema,
};

use crate::error::{CliError, Result};
use crate::hlog::{self, Unit};

/// What `export` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ExportFormat {
    /// Prometheus text 0.0.4: per tag, the selected intervals added up.
    PromText,
    /// OpenMetrics text: one timestamped sample per interval, for promtool backfill.
    Openmetrics,
    /// OTLP/JSON: one exponential histogram data point per interval.
    OtlpJson,
}

/// Arguments of `picollo export`.
#[derive(Debug, Args)]
pub struct ExportArgs {
    /// The interval log.
    file: PathBuf,
    /// Output format.
    #[arg(long, value_enum)]
    format: ExportFormat,
    /// The metric name (Prometheus rules: letters, digits, '_' and ':').
    #[arg(long, default_value = "hlog_value")]
    name: String,
    #[command(flatten)]
    select: crate::SelectArgs,
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
    histogram: HeapHistogram<u64>,
}

/// Runs `export` and returns what goes to stdout.
pub fn run(a: &ExportArgs) -> Result<String> {
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
    let intervals = read(a)?;
    let help = format!(
        "from {}",
        a.file.file_name().map_or_else(
            || a.file.display().to_string(),
            |n| n.to_string_lossy().into_owned()
        )
    );
    Ok(match a.format {
        ExportFormat::PromText => prom_text(&a.name, &help, &intervals, &buckets),
        ExportFormat::Openmetrics => openmetrics(&a.name, &help, &intervals, &buckets),
        ExportFormat::OtlpJson => otlp_json(&a.name, &help, &intervals, schema),
    })
}

/// The selected intervals of the log, in log order, in the chosen unit.
fn read(a: &ExportArgs) -> Result<Vec<Interval>> {
    let selection = a.select.selection()?;
    let shown = a.file.display();
    let file = File::open(&a.file)
        .map_err(|e| CliError::new(format!("cannot open {shown}: {e}; check the path")))?;
    let from = selection.from.unwrap_or(f64::NEG_INFINITY);
    let to = selection.to.unwrap_or(f64::INFINITY);
    let mut out = Vec::new();
    let mut seen = 0usize;
    for entry in LogReader::new(BufReader::new(file)) {
        let entry = entry.map_err(|e| {
            CliError::new(format!(
                "{shown}: {e}; is this an HdrHistogram interval log (.hlog)?"
            ))
        })?;
        seen += 1;
        let t = entry.offset_start_sec;
        let tag_matches = selection
            .tag
            .as_ref()
            .is_none_or(|want| entry.tag.as_deref().unwrap_or("") == want);
        if t < from || t > to || !tag_matches {
            continue;
        }
        out.push(convert(&entry, &shown.to_string(), a.select.unit)?);
    }
    if seen == 0 {
        return Err(CliError::new(format!(
            "{shown} holds no interval lines; give an HdrHistogram interval log (.hlog)"
        )));
    }
    if out.is_empty() {
        return Err(CliError::new(format!(
            "no interval of {shown} matches the selection (--tag, --from, --to); change it"
        )));
    }
    Ok(out)
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

/// The tags in order of first appearance (untagged first).
fn tags(intervals: &[Interval]) -> Vec<Option<String>> {
    let mut tags: Vec<Option<String>> = Vec::new();
    for i in intervals {
        if !tags.contains(&i.tag) {
            tags.push(i.tag.clone());
        }
    }
    tags.sort_by_key(Option::is_some);
    tags
}

/// Per tag, the running sum of its intervals: `(end of interval in ms, sum so far)`.
fn running_sums(intervals: &[Interval], tag: &Option<String>) -> Vec<(i64, HeapHistogram<u64>)> {
    let mut out: Vec<(i64, HeapHistogram<u64>)> = Vec::new();
    for i in intervals.iter().filter(|i| &i.tag == tag) {
        let mut sum = match out.last() {
            Some((_, s)) => s.clone(),
            None => {
                let layout = i.histogram.layout();
                picollo_alloc::heap::plain::<u64>(layout, Window::full(layout))
            }
        };
        sum.add(&i.histogram);
        out.push((i.end_ms, sum));
    }
    out
}

fn prom_text(name: &str, help: &str, intervals: &[Interval], buckets: &ClassicBuckets) -> String {
    let mut text = TextEncoder::new(TextFormat::Prometheus);
    // The name was checked in `run`.
    let _ = text.family(name, help, MetricKind::Histogram);
    for tag in tags(intervals) {
        if let Some((_, total)) = running_sums(intervals, &tag).pop() {
            let classic = ClassicHistogram::from_histogram(&total, buckets);
            text.histogram(&labels(&tag), &classic, None);
        }
    }
    text.finish()
}

fn openmetrics(name: &str, help: &str, intervals: &[Interval], buckets: &ClassicBuckets) -> String {
    let mut text = TextEncoder::new(TextFormat::OpenMetrics);
    let _ = text.family(name, help, MetricKind::Histogram);
    for tag in tags(intervals) {
        let mut last = i64::MIN;
        for (end_ms, sum) in running_sums(intervals, &tag) {
            // OpenMetrics wants strictly increasing timestamps per series: a repeated
            // end time keeps the later (larger) sum only.
            if end_ms <= last {
                continue;
            }
            last = end_ms;
            let classic = ClassicHistogram::from_histogram(&sum, buckets);
            text.histogram(&labels(&tag), &classic, Some(end_ms));
        }
    }
    text.finish()
}

fn otlp_json(name: &str, help: &str, intervals: &[Interval], schema: Option<Schema>) -> String {
    let ns = |ms: i64| (ms.max(0) as u64).saturating_mul(1_000_000);
    let points = intervals
        .iter()
        .map(|i| {
            let layout = i.histogram.layout();
            let mapping = schema.map_or(Mapping::for_layout(layout), |s| Mapping::new(layout, s));
            let mut native = NativeHistogram::new(mapping.schema());
            native.fill_from(&i.histogram, mapping);
            let attributes = otlp::attributes(&labels(&i.tag));
            otlp::exponential_point(&native, attributes, ns(i.start_ms), ns(i.end_ms))
        })
        .collect();
    let metric = otlp::exponential_metric(name, help, "", otlp::Temporality::Delta, points);
    let mut json = otlp::to_json(&otlp::request(Vec::new(), vec![metric]));
    json.push('\n');
    json
}
