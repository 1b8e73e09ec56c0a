//! OpenTelemetry export: histograms as OTLP `ExponentialHistogram` data points (scale =
//! schema, bucket index = Prometheus index − 1, dense offset + counts, zero count), counters as
//! monotonic sums and gauges as gauges, with delta or cumulative temporality, sent as OTLP over
//! HTTP/protobuf ([`OtlpExporter::push`]) or written as OTLP/JSON ([`to_json`]).
//!
//! Delta temporality keeps a [`Snapshot`] per histogram and reports what was recorded since
//! the previous collection (see [`Snapshot::update`] for how a reset of the source is handled).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use picollo_alloc::Snapshot;
use picollo_core::{HistogramRead, Layout, Window};
use serde_json::{json, Value as Json};

use crate::native::{Mapping, NativeHistogram};
use crate::proto::otlp as pb;
use crate::registry::{Family, Value};
use crate::text::MetricKind;
use crate::{Exported, Labels, Registry};

/// How data points relate to time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Temporality {
    /// Each point holds what was recorded since the previous collection.
    Delta,
    /// Each point holds everything since the exporter started.
    Cumulative,
}

impl Temporality {
    fn proto(self) -> i32 {
        match self {
            Self::Delta => pb::AggregationTemporality::Delta as i32,
            Self::Cumulative => pb::AggregationTemporality::Cumulative as i32,
        }
    }
}

/// Nanoseconds since the Unix epoch (0 before it).
pub(crate) fn unix_nanos(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos().min(u64::MAX as u128) as u64)
}

/// An OTLP string attribute.
pub fn attribute(key: &str, value: &str) -> pb::KeyValue {
    pb::KeyValue {
        key: key.into(),
        value: Some(pb::AnyValue {
            value: Some(pb::any_value::Value::StringValue(value.into())),
        }),
    }
}

/// Prometheus labels as OTLP attributes.
pub fn attributes(labels: &Labels) -> Vec<pb::KeyValue> {
    labels.iter().map(|(k, v)| attribute(k, v)).collect()
}

/// One exponential histogram data point: scale = schema, positive buckets from offset
/// `offset - 1` (of [`NativeHistogram::dense`]) (OpenTelemetry numbers bucket `(base^i, base^(i+1)]` as `i`), zero
/// threshold 0 (only exact zeros, the SDK default; Picollo values are integers).
///
/// ```
/// use picollo_alloc::HistogramBuilder;
/// use picollo_export::{otlp, NativeHistogram};
///
/// let mut h = HistogramBuilder::new().relative_error(0.01).plain().unwrap();
/// h.record(0);
/// h.record(1);
/// h.record(2);
/// let native = NativeHistogram::from_histogram(&h);
/// let p = otlp::exponential_point(&native, Vec::new(), 0, 1);
/// assert_eq!((p.scale, p.count, p.zero_count), (6, 3, 1));
/// let b = p.positive.unwrap();
/// assert_eq!(b.offset, -1); // 1 is in Prometheus bucket 0 = OTel bucket -1: (2^(-1/64), 1]
/// assert_eq!(b.bucket_counts[0], 1);
/// assert_eq!(b.bucket_counts.iter().sum::<u64>(), 2);
/// ```
pub fn exponential_point(
    native: &NativeHistogram,
    attributes: Vec<pb::KeyValue>,
    start_time_unix_nano: u64,
    time_unix_nano: u64,
) -> pb::ExponentialHistogramDataPoint {
    pb::ExponentialHistogramDataPoint {
        attributes,
        start_time_unix_nano,
        time_unix_nano,
        count: native.count(),
        sum: Some(native.sum()),
        scale: native.schema().get() as i32,
        zero_count: native.zero_count(),
        positive: native.dense().map(|(offset, bucket_counts)| pb::Buckets {
            offset: offset.saturating_sub(1),
            bucket_counts,
        }),
        negative: None,
        flags: 0,
        zero_threshold: 0.0,
    }
}

/// One OTLP metric with exponential histogram points.
pub fn exponential_metric(
    name: &str,
    description: &str,
    unit: &str,
    temporality: Temporality,
    data_points: Vec<pb::ExponentialHistogramDataPoint>,
) -> pb::Metric {
    pb::Metric {
        name: name.into(),
        description: description.into(),
        unit: unit.into(),
        data: Some(pb::metric::Data::ExponentialHistogram(
            pb::ExponentialHistogram {
                data_points,
                aggregation_temporality: temporality.proto(),
            },
        )),
    }
}

/// A request holding `metrics` for one resource and one instrumentation scope (`picollo`).
pub fn request(
    resource: Vec<pb::KeyValue>,
    metrics: Vec<pb::Metric>,
) -> pb::ExportMetricsServiceRequest {
    pb::ExportMetricsServiceRequest {
        resource_metrics: vec![pb::ResourceMetrics {
            resource: Some(pb::Resource {
                attributes: resource,
                dropped_attributes_count: 0,
            }),
            scope_metrics: vec![pb::ScopeMetrics {
                scope: Some(pb::InstrumentationScope {
                    name: "picollo".into(),
                    version: env!("CARGO_PKG_VERSION").into(),
                }),
                metrics,
                schema_url: String::new(),
            }],
            schema_url: String::new(),
        }],
    }
}

/// Per-series state of delta temporality.
#[derive(Default)]
struct Previous {
    snapshot: Option<Snapshot>,
    exact_sum: Option<u128>,
    counter: u64,
}

impl Previous {
    /// A counter's increase since the last collection, `now` being its value; a counter
    /// below its previous value was reset, and is reported whole.
    fn counter_delta(&mut self, now: u64) -> u64 {
        let d = now.checked_sub(self.counter).unwrap_or(now);
        self.counter = now;
        d
    }
}

struct State {
    /// The end of the previous collection (the start of the next delta interval).
    last: SystemTime,
    previous: HashMap<u64, Previous>,
    native: NativeHistogram,
}

/// Collects a [`Registry`] as OTLP requests, and pushes them to a receiver.
///
/// ```
/// use std::sync::Arc;
/// use picollo_alloc::HistogramBuilder;
/// use picollo_export::otlp::{OtlpExporter, Temporality};
/// use picollo_export::proto::otlp::metric::Data;
/// use picollo_export::{Labels, Registry};
///
/// let registry = Arc::new(Registry::new());
/// let h = Arc::new(HistogramBuilder::new().relative_error(0.01).thread_local().unwrap());
/// registry.register("db_query_nanoseconds", "DB query time", &Labels::empty(), h.clone())?;
/// let exporter = OtlpExporter::new(registry, Temporality::Delta)
///     .resource_attribute("service.name", "checkout");
///
/// h.record(40_000);
/// h.record(41_000);
/// let first = exporter.collect();
/// h.record(90_000);
/// let second = exporter.collect(); // only what came since the first
/// let count = |r: &picollo_export::proto::otlp::ExportMetricsServiceRequest| {
///     match &r.resource_metrics[0].scope_metrics[0].metrics[0].data {
///         Some(Data::ExponentialHistogram(e)) => e.data_points[0].count,
///         _ => unreachable!(),
///     }
/// };
/// assert_eq!((count(&first), count(&second)), (2, 1));
/// # Ok::<(), picollo_export::ExportError>(())
/// ```
pub struct OtlpExporter {
    registry: Arc<Registry>,
    temporality: Temporality,
    resource: Vec<pb::KeyValue>,
    start: SystemTime,
    state: Mutex<State>,
}

impl core::fmt::Debug for OtlpExporter {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("OtlpExporter")
            .field("temporality", &self.temporality)
            .field("start", &self.start)
            .finish_non_exhaustive()
    }
}

impl OtlpExporter {
    /// An exporter of `registry`; cumulative points start now.
    pub fn new(registry: Arc<Registry>, temporality: Temporality) -> Self {
        let start = SystemTime::now();
        OtlpExporter {
            registry,
            temporality,
            resource: Vec::new(),
            start,
            state: Mutex::new(State {
                last: start,
                previous: HashMap::new(),
                native: NativeHistogram::default(),
            }),
        }
    }

    /// Adds a resource attribute (`service.name`, `host.name`, …).
    pub fn resource_attribute(mut self, key: &str, value: &str) -> Self {
        self.resource.push(attribute(key, value));
        self
    }

    /// The temporality.
    pub fn temporality(&self) -> Temporality {
        self.temporality
    }

    /// Reads every series now and builds the request. With delta temporality this starts
    /// the next interval: call it once per export.
    pub fn collect(&self) -> pb::ExportMetricsServiceRequest {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let now = SystemTime::now();
        let start = match self.temporality {
            Temporality::Delta => state.last,
            Temporality::Cumulative => self.start,
        };
        let (start, time) = (unix_nanos(start), unix_nanos(now));
        let families = self.registry.families();
        let mut metrics = Vec::with_capacity(families.len());
        let live: Vec<u64> = families
            .iter()
            .flat_map(|f| f.series.iter().map(|s| s.id))
            .collect();
        state.previous.retain(|id, _| live.contains(id));
        for family in families.iter() {
            metrics.push(self.metric(family, &mut state, start, time));
        }
        state.last = now;
        request(self.resource.clone(), metrics)
    }

    fn metric(&self, family: &Family, state: &mut State, start: u64, time: u64) -> pb::Metric {
        let delta = self.temporality == Temporality::Delta;
        let State {
            previous, native, ..
        } = state;
        let mut histogram_points = Vec::new();
        let mut number_points = Vec::new();
        for s in &family.series {
            let prev = previous.entry(s.id).or_default();
            let attributes = attributes(&s.labels);
            let number = |value| pb::NumberDataPoint {
                attributes: attributes.clone(),
                start_time_unix_nano: start,
                time_unix_nano: time,
                value: Some(value),
            };
            match &s.value {
                Value::Counter(c) => {
                    let now = c.get();
                    let v = if delta { prev.counter_delta(now) } else { now };
                    number_points.push(number(pb::number_data_point::Value::AsInt(
                        v.min(i64::MAX as u64) as i64,
                    )));
                }
                Value::Gauge(g) => {
                    number_points.push(number(pb::number_data_point::Value::AsDouble(g.get())))
                }
                Value::Histogram(h) => {
                    self.fill_native(&**h, prev, native);
                    histogram_points.push(exponential_point(native, attributes, start, time));
                }
            }
        }
        let data = match family.kind {
            MetricKind::Histogram => {
                return exponential_metric(
                    &family.name,
                    &family.help,
                    "",
                    self.temporality,
                    histogram_points,
                )
            }
            MetricKind::Counter => pb::metric::Data::Sum(pb::Sum {
                data_points: number_points,
                aggregation_temporality: self.temporality.proto(),
                is_monotonic: true,
            }),
            MetricKind::Gauge => pb::metric::Data::Gauge(pb::Gauge {
                data_points: number_points,
            }),
        };
        pb::Metric {
            name: family.name.clone(),
            description: family.help.clone(),
            unit: String::new(),
            data: Some(data),
        }
    }

    /// Fills `native` with histogram `h`'s point: its counts since the last collection
    /// (`prev` keeps the snapshot they are taken against) with delta temporality, its totals
    /// with cumulative.
    fn fill_native(&self, h: &dyn Exported, prev: &mut Previous, native: &mut NativeHistogram) {
        let schema = self.registry.options().schema_override();
        if self.temporality != Temporality::Delta {
            h.fill_native(native, schema);
            return;
        }
        let snapshot = prev.snapshot.get_or_insert_with(|| {
            // Re-shaped by the first update (one cell until then).
            let tiny = Layout::from_block_scale(1).unwrap_or(Layout::DEFAULT);
            Snapshot::empty(tiny, Window::from_indices(tiny, 0, 1))
        });
        // The first update of an empty snapshot gives the totals (re-shaped to the source's
        // layout and window).
        let exact = h.fill_snapshot(snapshot, true);
        let layout = snapshot.layout();
        let mapping = schema.map_or(Mapping::for_layout(layout), |s| Mapping::new(layout, s));
        native.fill_from(&*snapshot, mapping);
        if let Some(sum) = exact {
            let before = prev.exact_sum.unwrap_or(0);
            native.set_exact_sum(sum.checked_sub(before).unwrap_or(sum));
            prev.exact_sum = Some(sum);
        }
    }

    /// Collects ([`OtlpExporter::collect`]) and sends the request to an OTLP/HTTP receiver,
    /// `endpoint` being its full metrics URL (`http://127.0.0.1:4318/v1/metrics`). Plain HTTP
    /// only (no TLS): point it at a local collector or agent.
    ///
    /// # Errors
    /// [`crate::ExportError::Io`] when the receiver cannot be reached,
    /// [`crate::ExportError::Rejected`] for an error status or rejected data points. With
    /// delta temporality the collected interval is gone either way (as with any delta
    /// exporter); use cumulative temporality where a lost push must not lose data.
    #[cfg(feature = "otlp-http")]
    #[cfg_attr(docsrs, doc(cfg(feature = "otlp-http")))]
    pub fn push(&self, endpoint: &str) -> Result<(), crate::ExportError> {
        use prost::Message as _;
        let body = self.collect().encode_to_vec();
        send_protobuf(endpoint, &body)
    }
}

/// POSTs an encoded `ExportMetricsServiceRequest` to an OTLP/HTTP receiver and checks the
/// answer (status and partial success).
///
/// # Errors
/// As [`OtlpExporter::push`].
#[cfg(feature = "otlp-http")]
#[cfg_attr(docsrs, doc(cfg(feature = "otlp-http")))]
pub(crate) fn send_protobuf(endpoint: &str, body: &[u8]) -> Result<(), crate::ExportError> {
    use crate::ExportError;
    use prost::Message as _;
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(std::time::Duration::from_secs(10)))
        .build()
        .into();
    let mut response = agent
        .post(endpoint)
        .header("Content-Type", "application/x-protobuf")
        .send(body)
        .map_err(|e| {
            ExportError::Io(std::io::Error::other(format!(
                "cannot send OTLP to {endpoint}: {e}"
            )))
        })?;
    let status = response.status().as_u16();
    let bytes = response
        .body_mut()
        .with_config()
        .limit(1 << 20)
        .read_to_vec()
        .unwrap_or_default();
    if !(200..300).contains(&status) {
        return Err(ExportError::Rejected {
            status,
            message: String::from_utf8_lossy(&bytes).chars().take(500).collect(),
        });
    }
    if let Ok(answer) = pb::ExportMetricsServiceResponse::decode(&bytes[..]) {
        if let Some(p) = answer.partial_success {
            if p.rejected_data_points > 0 {
                return Err(ExportError::Rejected {
                    status,
                    message: format!(
                        "{} data points rejected: {}",
                        p.rejected_data_points, p.error_message
                    ),
                });
            }
        }
    }
    Ok(())
}

/// The OTLP/JSON form of a request (the encoding OTLP/HTTP accepts with
/// `Content-Type: application/json`): lowerCamelCase field names, 64-bit integers as decimal
/// strings, enums as numbers.
pub fn to_json(request: &pb::ExportMetricsServiceRequest) -> String {
    let resource_metrics: Vec<Json> = request
        .resource_metrics
        .iter()
        .map(|rm| {
            json!({
                "resource": {
                    "attributes": rm.resource.as_ref().map_or(vec![], |r| kvs(&r.attributes)),
                },
                "scopeMetrics": rm.scope_metrics.iter().map(|sm| json!({
                    "scope": sm.scope.as_ref().map(|s| json!({
                        "name": s.name, "version": s.version,
                    })),
                    "metrics": sm.metrics.iter().map(metric_json).collect::<Vec<_>>(),
                })).collect::<Vec<_>>(),
            })
        })
        .collect();
    json!({ "resourceMetrics": resource_metrics }).to_string()
}

fn kvs(attributes: &[pb::KeyValue]) -> Vec<Json> {
    attributes
        .iter()
        .map(|kv| {
            let value = match kv.value.as_ref().and_then(|v| v.value.as_ref()) {
                Some(pb::any_value::Value::StringValue(s)) => json!({ "stringValue": s }),
                Some(pb::any_value::Value::IntValue(i)) => json!({ "intValue": i.to_string() }),
                None => json!({}),
            };
            json!({ "key": kv.key, "value": value })
        })
        .collect()
}

fn metric_json(m: &pb::Metric) -> Json {
    let mut out = json!({ "name": m.name, "description": m.description, "unit": m.unit });
    let numbers = |points: &[pb::NumberDataPoint]| -> Vec<Json> {
        points
            .iter()
            .map(|p| {
                let mut j = json!({
                    "attributes": kvs(&p.attributes),
                    "startTimeUnixNano": p.start_time_unix_nano.to_string(),
                    "timeUnixNano": p.time_unix_nano.to_string(),
                });
                match p.value {
                    Some(pb::number_data_point::Value::AsDouble(d)) => {
                        j["asDouble"] = json_double(d)
                    }
                    Some(pb::number_data_point::Value::AsInt(i)) => {
                        j["asInt"] = json!(i.to_string())
                    }
                    None => {}
                }
                j
            })
            .collect()
    };
    match &m.data {
        Some(pb::metric::Data::ExponentialHistogram(e)) => {
            out["exponentialHistogram"] = json!({
                "aggregationTemporality": e.aggregation_temporality,
                "dataPoints": e.data_points.iter().map(|p| {
                    let mut j = json!({
                        "attributes": kvs(&p.attributes),
                        "startTimeUnixNano": p.start_time_unix_nano.to_string(),
                        "timeUnixNano": p.time_unix_nano.to_string(),
                        "count": p.count.to_string(),
                        "scale": p.scale,
                        "zeroCount": p.zero_count.to_string(),
                        "zeroThreshold": p.zero_threshold,
                    });
                    if let Some(sum) = p.sum {
                        j["sum"] = json_double(sum);
                    }
                    if let Some(b) = &p.positive {
                        j["positive"] = json!({
                            "offset": b.offset,
                            "bucketCounts": b.bucket_counts.iter().map(u64::to_string)
                                .collect::<Vec<_>>(),
                        });
                    }
                    j
                }).collect::<Vec<_>>(),
            });
        }
        Some(pb::metric::Data::Sum(s)) => {
            out["sum"] = json!({
                "aggregationTemporality": s.aggregation_temporality,
                "isMonotonic": s.is_monotonic,
                "dataPoints": numbers(&s.data_points),
            });
        }
        Some(pb::metric::Data::Gauge(g)) => {
            out["gauge"] = json!({ "dataPoints": numbers(&g.data_points) });
        }
        None => {}
    }
    out
}

/// A double as proto3 JSON spells it: non-finite values as the strings `NaN`, `Infinity`,
/// `-Infinity` (gauges only: histogram sums are always finite).
fn json_double(v: f64) -> Json {
    if v.is_nan() {
        json!("NaN")
    } else if v.is_infinite() {
        json!(if v > 0.0 { "Infinity" } else { "-Infinity" })
    } else {
        json!(v)
    }
}
