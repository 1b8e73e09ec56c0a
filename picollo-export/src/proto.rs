//! Protobuf messages, declared by hand with `prost` (no `protoc` at build time): the parts of
//! Prometheus' `io.prometheus.client` exposition model and of the OTLP metrics protocol that
//! the exporter writes. Field numbers and types follow `metrics.proto` of
//! `prometheus/client_model` and `opentelemetry/proto/{collector/metrics,metrics,common,
//! resource}/v1/*.proto` of `open-telemetry/opentelemetry-proto`; the tests decode the bytes
//! with a real Prometheus server and, where installed, with the official Python bindings.

/// `io.prometheus.client`: the Prometheus protobuf exposition format.
pub mod prometheus {
    /// `MetricType`.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
    #[repr(i32)]
    pub enum MetricType {
        /// A counter (`Metric.counter`).
        Counter = 0,
        /// A gauge (`Metric.gauge`).
        Gauge = 1,
        /// A summary.
        Summary = 2,
        /// Untyped.
        Untyped = 3,
        /// A histogram (`Metric.histogram`).
        Histogram = 4,
        /// A gauge histogram.
        GaugeHistogram = 5,
    }

    /// `MetricFamily`: one name, one type, many label sets.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct MetricFamily {
        /// The family name.
        #[prost(string, tag = "1")]
        pub name: String,
        /// The help text.
        #[prost(string, tag = "2")]
        pub help: String,
        /// The type.
        #[prost(enumeration = "MetricType", tag = "3")]
        pub r#type: i32,
        /// The series.
        #[prost(message, repeated, tag = "4")]
        pub metric: Vec<Metric>,
        /// The unit.
        #[prost(string, tag = "5")]
        pub unit: String,
    }

    /// `LabelPair`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct LabelPair {
        /// Label name.
        #[prost(string, tag = "1")]
        pub name: String,
        /// Label value.
        #[prost(string, tag = "2")]
        pub value: String,
    }

    /// `Gauge`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Gauge {
        /// The value.
        #[prost(double, tag = "1")]
        pub value: f64,
    }

    /// `Counter`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Counter {
        /// The value.
        #[prost(double, tag = "1")]
        pub value: f64,
    }

    /// `Bucket`: one classic bucket.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Bucket {
        /// Values at or below `upper_bound`.
        #[prost(uint64, tag = "1")]
        pub cumulative_count: u64,
        /// The inclusive upper bound.
        #[prost(double, tag = "2")]
        pub upper_bound: f64,
    }

    /// `BucketSpan`: consecutive native buckets.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct BucketSpan {
        /// Gap to the previous span, or the first bucket's index for the first span.
        #[prost(sint32, tag = "1")]
        pub offset: i32,
        /// Buckets in the span.
        #[prost(uint32, tag = "2")]
        pub length: u32,
    }

    /// `Histogram`: classic buckets and/or native (sparse) buckets.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Histogram {
        /// Values observed.
        #[prost(uint64, tag = "1")]
        pub sample_count: u64,
        /// Their sum.
        #[prost(double, tag = "2")]
        pub sample_sum: f64,
        /// Classic buckets.
        #[prost(message, repeated, tag = "3")]
        pub bucket: Vec<Bucket>,
        /// Native schema.
        #[prost(sint32, tag = "5")]
        pub schema: i32,
        /// Half-width of the zero bucket.
        #[prost(double, tag = "6")]
        pub zero_threshold: f64,
        /// Values in the zero bucket.
        #[prost(uint64, tag = "7")]
        pub zero_count: u64,
        /// Negative spans (unused: Picollo values are unsigned).
        #[prost(message, repeated, tag = "9")]
        pub negative_span: Vec<BucketSpan>,
        /// Negative deltas (unused).
        #[prost(sint64, repeated, tag = "10")]
        pub negative_delta: Vec<i64>,
        /// Positive spans.
        #[prost(message, repeated, tag = "12")]
        pub positive_span: Vec<BucketSpan>,
        /// Positive bucket counts, each as the difference to the previous bucket's.
        #[prost(sint64, repeated, tag = "13")]
        pub positive_delta: Vec<i64>,
    }

    /// `Metric`: one labelled series.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Metric {
        /// Labels.
        #[prost(message, repeated, tag = "1")]
        pub label: Vec<LabelPair>,
        /// Gauge value.
        #[prost(message, optional, tag = "2")]
        pub gauge: Option<Gauge>,
        /// Counter value.
        #[prost(message, optional, tag = "3")]
        pub counter: Option<Counter>,
        /// Histogram value.
        #[prost(message, optional, tag = "7")]
        pub histogram: Option<Histogram>,
        /// Milliseconds since the epoch; 0 for "now".
        #[prost(int64, tag = "6")]
        pub timestamp_ms: i64,
    }
}

/// `opentelemetry.proto.*.v1`: the OTLP metrics export request.
pub mod otlp {
    /// `ExportMetricsServiceRequest`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ExportMetricsServiceRequest {
        /// Metrics per resource.
        #[prost(message, repeated, tag = "1")]
        pub resource_metrics: Vec<ResourceMetrics>,
    }

    /// `ExportMetricsServiceResponse`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ExportMetricsServiceResponse {
        /// Set when some points were rejected.
        #[prost(message, optional, tag = "1")]
        pub partial_success: Option<ExportMetricsPartialSuccess>,
    }

    /// `ExportMetricsPartialSuccess`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ExportMetricsPartialSuccess {
        /// Data points the receiver dropped.
        #[prost(int64, tag = "1")]
        pub rejected_data_points: i64,
        /// Why.
        #[prost(string, tag = "2")]
        pub error_message: String,
    }

    /// `ResourceMetrics`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ResourceMetrics {
        /// The producing resource.
        #[prost(message, optional, tag = "1")]
        pub resource: Option<Resource>,
        /// Metrics per instrumentation scope.
        #[prost(message, repeated, tag = "2")]
        pub scope_metrics: Vec<ScopeMetrics>,
        /// Schema URL.
        #[prost(string, tag = "3")]
        pub schema_url: String,
    }

    /// `Resource`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Resource {
        /// Attributes such as `service.name`.
        #[prost(message, repeated, tag = "1")]
        pub attributes: Vec<KeyValue>,
        /// Attributes dropped.
        #[prost(uint32, tag = "2")]
        pub dropped_attributes_count: u32,
    }

    /// `ScopeMetrics`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ScopeMetrics {
        /// The instrumentation scope.
        #[prost(message, optional, tag = "1")]
        pub scope: Option<InstrumentationScope>,
        /// The metrics.
        #[prost(message, repeated, tag = "2")]
        pub metrics: Vec<Metric>,
        /// Schema URL.
        #[prost(string, tag = "3")]
        pub schema_url: String,
    }

    /// `InstrumentationScope`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct InstrumentationScope {
        /// Scope name.
        #[prost(string, tag = "1")]
        pub name: String,
        /// Scope version.
        #[prost(string, tag = "2")]
        pub version: String,
    }

    /// `KeyValue`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct KeyValue {
        /// The key.
        #[prost(string, tag = "1")]
        pub key: String,
        /// The value.
        #[prost(message, optional, tag = "2")]
        pub value: Option<AnyValue>,
    }

    /// `AnyValue`, restricted to the kinds the exporter writes.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct AnyValue {
        /// The value.
        #[prost(oneof = "any_value::Value", tags = "1, 3")]
        pub value: Option<any_value::Value>,
    }

    /// The `AnyValue` oneof.
    pub mod any_value {
        /// `AnyValue.value`.
        #[derive(Clone, PartialEq, prost::Oneof)]
        pub enum Value {
            /// A string.
            #[prost(string, tag = "1")]
            StringValue(String),
            /// A signed integer.
            #[prost(int64, tag = "3")]
            IntValue(i64),
        }
    }

    /// `AggregationTemporality`.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
    #[repr(i32)]
    pub enum AggregationTemporality {
        /// Must not be used.
        Unspecified = 0,
        /// Each point covers the interval since the previous one.
        Delta = 1,
        /// Each point covers the interval since a fixed start.
        Cumulative = 2,
    }

    /// `Metric`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Metric {
        /// The name.
        #[prost(string, tag = "1")]
        pub name: String,
        /// The description.
        #[prost(string, tag = "2")]
        pub description: String,
        /// The unit (UCUM).
        #[prost(string, tag = "3")]
        pub unit: String,
        /// The data.
        #[prost(oneof = "metric::Data", tags = "5, 7, 10")]
        pub data: Option<metric::Data>,
    }

    /// The `Metric` oneof.
    pub mod metric {
        /// `Metric.data`, restricted to the kinds the exporter writes.
        #[derive(Clone, PartialEq, prost::Oneof)]
        pub enum Data {
            /// A gauge.
            #[prost(message, tag = "5")]
            Gauge(super::Gauge),
            /// A sum (a counter when monotonic).
            #[prost(message, tag = "7")]
            Sum(super::Sum),
            /// An exponential histogram.
            #[prost(message, tag = "10")]
            ExponentialHistogram(super::ExponentialHistogram),
        }
    }

    /// `Gauge`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Gauge {
        /// The points.
        #[prost(message, repeated, tag = "1")]
        pub data_points: Vec<NumberDataPoint>,
    }

    /// `Sum`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Sum {
        /// The points.
        #[prost(message, repeated, tag = "1")]
        pub data_points: Vec<NumberDataPoint>,
        /// Delta or cumulative.
        #[prost(enumeration = "AggregationTemporality", tag = "2")]
        pub aggregation_temporality: i32,
        /// Whether the sum only grows (a counter).
        #[prost(bool, tag = "3")]
        pub is_monotonic: bool,
    }

    /// `NumberDataPoint`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct NumberDataPoint {
        /// Attributes (Prometheus labels).
        #[prost(message, repeated, tag = "7")]
        pub attributes: Vec<KeyValue>,
        /// Start of the interval, ns since the epoch.
        #[prost(fixed64, tag = "2")]
        pub start_time_unix_nano: u64,
        /// End of the interval, ns since the epoch.
        #[prost(fixed64, tag = "3")]
        pub time_unix_nano: u64,
        /// The value.
        #[prost(oneof = "number_data_point::Value", tags = "4, 6")]
        pub value: Option<number_data_point::Value>,
    }

    /// The `NumberDataPoint` oneof.
    pub mod number_data_point {
        /// `NumberDataPoint.value`.
        #[derive(Clone, Copy, PartialEq, prost::Oneof)]
        pub enum Value {
            /// A double.
            #[prost(double, tag = "4")]
            AsDouble(f64),
            /// An integer.
            #[prost(sfixed64, tag = "6")]
            AsInt(i64),
        }
    }

    /// `ExponentialHistogram`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ExponentialHistogram {
        /// The points.
        #[prost(message, repeated, tag = "1")]
        pub data_points: Vec<ExponentialHistogramDataPoint>,
        /// Delta or cumulative.
        #[prost(enumeration = "AggregationTemporality", tag = "2")]
        pub aggregation_temporality: i32,
    }

    /// `ExponentialHistogramDataPoint`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ExponentialHistogramDataPoint {
        /// Attributes (Prometheus labels).
        #[prost(message, repeated, tag = "1")]
        pub attributes: Vec<KeyValue>,
        /// Start of the interval, ns since the epoch.
        #[prost(fixed64, tag = "2")]
        pub start_time_unix_nano: u64,
        /// End of the interval, ns since the epoch.
        #[prost(fixed64, tag = "3")]
        pub time_unix_nano: u64,
        /// Values in the point.
        #[prost(fixed64, tag = "4")]
        pub count: u64,
        /// Their sum.
        #[prost(double, optional, tag = "5")]
        pub sum: Option<f64>,
        /// The scale (Prometheus' schema).
        #[prost(sint32, tag = "6")]
        pub scale: i32,
        /// Values in the zero bucket.
        #[prost(fixed64, tag = "7")]
        pub zero_count: u64,
        /// Positive buckets.
        #[prost(message, optional, tag = "8")]
        pub positive: Option<Buckets>,
        /// Negative buckets (unused: Picollo values are unsigned).
        #[prost(message, optional, tag = "9")]
        pub negative: Option<Buckets>,
        /// Flags.
        #[prost(uint32, tag = "10")]
        pub flags: u32,
        /// Half-width of the zero bucket.
        #[prost(double, tag = "14")]
        pub zero_threshold: f64,
    }

    /// `ExponentialHistogramDataPoint.Buckets`: dense counts from an offset.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Buckets {
        /// Index of the first count (OTel numbering: Prometheus index − 1).
        #[prost(sint32, tag = "1")]
        pub offset: i32,
        /// Counts.
        #[prost(uint64, repeated, tag = "2")]
        pub bucket_counts: Vec<u64>,
    }
}
