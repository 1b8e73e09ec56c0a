//! The text exposition formats: Prometheus text 0.0.4 and OpenMetrics 1.0.0, with classic
//! histograms, counters and gauges.

use core::fmt::Write as _;

use crate::classic::ClassicHistogram;
use crate::labels::{EscapedHelp, EscapedValue};
use crate::{check_metric_name, ExportError, Labels};

/// A text exposition format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TextFormat {
    /// `text/plain; version=0.0.4`: what every Prometheus server scrapes.
    Prometheus,
    /// `application/openmetrics-text; version=1.0.0`: counters end in `_total`, timestamps
    /// are in seconds, the exposition ends with `# EOF`. `promtool tsdb
    /// create-blocks-from openmetrics` backfills it.
    OpenMetrics,
}

impl TextFormat {
    /// The HTTP `Content-Type` of the format.
    pub fn content_type(self) -> &'static str {
        match self {
            Self::Prometheus => "text/plain; version=0.0.4; charset=utf-8",
            Self::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
        }
    }
}

/// The kind of a metric family.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MetricKind {
    /// A monotonic count.
    Counter,
    /// A value that goes up and down.
    Gauge,
    /// A distribution.
    Histogram,
}

impl MetricKind {
    fn type_name(self) -> &'static str {
        match self {
            Self::Counter => "counter",
            Self::Gauge => "gauge",
            Self::Histogram => "histogram",
        }
    }
}

/// Writes a text exposition, family by family.
///
/// ```
/// use picollo_alloc::HistogramBuilder;
/// use picollo_export::text::{MetricKind, TextEncoder, TextFormat};
/// use picollo_export::{ClassicBuckets, ClassicHistogram, Labels};
///
/// let mut h = HistogramBuilder::new().max_trackable(100).plain().unwrap();
/// h.record(3);
/// let classic = ClassicHistogram::from_histogram(&h, &ClassicBuckets::explicit(vec![1, 10])?);
/// let mut text = TextEncoder::new(TextFormat::Prometheus);
/// text.family("rpc_nanoseconds", "RPC latency", MetricKind::Histogram)?;
/// text.histogram(&Labels::new([("rpc", "get")])?, &classic, None);
/// let out = text.finish();
/// assert!(out.contains("rpc_nanoseconds_bucket{rpc=\"get\",le=\"10\"} 1\n"));
/// assert!(out.contains("rpc_nanoseconds_count{rpc=\"get\"} 1\n"));
/// # Ok::<(), picollo_export::ExportError>(())
/// ```
#[derive(Debug)]
pub struct TextEncoder {
    format: TextFormat,
    out: String,
    /// The current family's sample name stem (OpenMetrics counters: without `_total`).
    name: String,
}

impl TextEncoder {
    /// An empty exposition.
    pub fn new(format: TextFormat) -> Self {
        Self::with_buffer(format, String::new())
    }

    /// An exposition written after the text already in `out` (a reused buffer).
    pub(crate) fn with_buffer(format: TextFormat, out: String) -> Self {
        TextEncoder {
            format,
            out,
            name: String::new(),
        }
    }

    /// Starts a family: its `# HELP` and `# TYPE` lines. Samples written next belong to it.
    ///
    /// # Errors
    /// [`ExportError::InvalidMetricName`].
    pub fn family(&mut self, name: &str, help: &str, kind: MetricKind) -> Result<(), ExportError> {
        check_metric_name(name)?;
        let stem = match (self.format, kind) {
            (TextFormat::OpenMetrics, MetricKind::Counter) => {
                name.strip_suffix("_total").unwrap_or(name)
            }
            _ => name,
        };
        self.name.clear();
        self.name.push_str(stem);
        if !help.is_empty() {
            let _ = match self.format {
                TextFormat::Prometheus => writeln!(self.out, "# HELP {stem} {}", EscapedHelp(help)),
                TextFormat::OpenMetrics => {
                    writeln!(self.out, "# HELP {stem} {}", EscapedValue(help))
                }
            };
        }
        let _ = writeln!(self.out, "# TYPE {stem} {}", kind.type_name());
        Ok(())
    }

    /// One classic histogram series of the current family.
    pub fn histogram(&mut self, labels: &Labels, h: &ClassicHistogram, timestamp_ms: Option<i64>) {
        for (le, n) in h.buckets() {
            self.sample(
                "_bucket",
                labels,
                Some(&le.to_string()),
                &n.to_string(),
                timestamp_ms,
            );
        }
        let count = h.count().to_string();
        self.sample("_bucket", labels, Some("+Inf"), &count, timestamp_ms);
        self.sample("_count", labels, None, &count, timestamp_ms);
        self.sample("_sum", labels, None, &float(h.sum()), timestamp_ms);
    }

    /// One counter series of the current family.
    pub fn counter(&mut self, labels: &Labels, value: u64, timestamp_ms: Option<i64>) {
        let suffix = match self.format {
            TextFormat::OpenMetrics => "_total",
            TextFormat::Prometheus => "",
        };
        self.sample(suffix, labels, None, &value.to_string(), timestamp_ms);
    }

    /// One gauge series of the current family.
    pub fn gauge(&mut self, labels: &Labels, value: f64, timestamp_ms: Option<i64>) {
        self.sample("", labels, None, &float(value), timestamp_ms);
    }

    fn sample(
        &mut self,
        suffix: &str,
        labels: &Labels,
        le: Option<&str>,
        value: &str,
        timestamp_ms: Option<i64>,
    ) {
        let out = &mut self.out;
        out.push_str(&self.name);
        out.push_str(suffix);
        if !labels.is_empty() || le.is_some() {
            out.push('{');
            for (i, (k, v)) in labels.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                let _ = write!(out, "{k}=\"{}\"", EscapedValue(v));
            }
            if let Some(le) = le {
                if !labels.is_empty() {
                    out.push(',');
                }
                let _ = write!(out, "le=\"{le}\"");
            }
            out.push('}');
        }
        out.push(' ');
        out.push_str(value);
        if let Some(ms) = timestamp_ms {
            let _ = match self.format {
                TextFormat::Prometheus => write!(out, " {ms}"),
                TextFormat::OpenMetrics => write!(
                    out,
                    " {}{}.{:03}",
                    if ms < 0 { "-" } else { "" },
                    ms.unsigned_abs() / 1000,
                    ms.unsigned_abs() % 1000
                ),
            };
        }
        out.push('\n');
    }

    /// Takes the text written so far, leaving the encoder empty but in the same family: a
    /// large exposition can be written out piece by piece (then [`TextEncoder::finish`]).
    pub fn take_text(&mut self) -> String {
        std::mem::take(&mut self.out)
    }

    /// The exposition (with `# EOF` for OpenMetrics).
    pub fn finish(mut self) -> String {
        if self.format == TextFormat::OpenMetrics {
            self.out.push_str("# EOF\n");
        }
        self.out
    }
}

/// A float as both formats spell it: `NaN`, `+Inf`, `-Inf`, or the shortest decimal that
/// reads back as the same `f64`.
pub(crate) fn float(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 { "+Inf" } else { "-Inf" }.into()
    } else {
        format!("{v}")
    }
}
