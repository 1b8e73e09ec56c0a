//! `io.prometheus.client`, the Prometheus protobuf exposition format, written from Prometheus'
//! `metrics.proto` for the tests alone: the tests decode what the registry encodes with their
//! own schema (and re-encode it with prost, byte for byte), not with the crate's.
#![allow(dead_code)] // the schema is whole; a test reads some of its fields

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum MetricType {
    Counter = 0,
    Gauge = 1,
    Summary = 2,
    Untyped = 3,
    Histogram = 4,
    GaugeHistogram = 5,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct MetricFamily {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub help: String,
    #[prost(enumeration = "MetricType", tag = "3")]
    pub r#type: i32,
    #[prost(message, repeated, tag = "4")]
    pub metric: Vec<Metric>,
    #[prost(string, tag = "5")]
    pub unit: String,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct LabelPair {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub value: String,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Gauge {
    #[prost(double, tag = "1")]
    pub value: f64,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Counter {
    #[prost(double, tag = "1")]
    pub value: f64,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Bucket {
    #[prost(uint64, tag = "1")]
    pub cumulative_count: u64,
    #[prost(double, tag = "2")]
    pub upper_bound: f64,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct BucketSpan {
    #[prost(sint32, tag = "1")]
    pub offset: i32,
    #[prost(uint32, tag = "2")]
    pub length: u32,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Histogram {
    #[prost(uint64, tag = "1")]
    pub sample_count: u64,
    #[prost(double, tag = "2")]
    pub sample_sum: f64,
    #[prost(message, repeated, tag = "3")]
    pub bucket: Vec<Bucket>,
    #[prost(sint32, tag = "5")]
    pub schema: i32,
    #[prost(double, tag = "6")]
    pub zero_threshold: f64,
    #[prost(uint64, tag = "7")]
    pub zero_count: u64,
    #[prost(message, repeated, tag = "9")]
    pub negative_span: Vec<BucketSpan>,
    #[prost(sint64, repeated, tag = "10")]
    pub negative_delta: Vec<i64>,
    #[prost(message, repeated, tag = "12")]
    pub positive_span: Vec<BucketSpan>,
    #[prost(sint64, repeated, tag = "13")]
    pub positive_delta: Vec<i64>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Metric {
    #[prost(message, repeated, tag = "1")]
    pub label: Vec<LabelPair>,
    #[prost(message, optional, tag = "2")]
    pub gauge: Option<Gauge>,
    #[prost(message, optional, tag = "3")]
    pub counter: Option<Counter>,
    #[prost(message, optional, tag = "7")]
    pub histogram: Option<Histogram>,
    #[prost(int64, tag = "6")]
    pub timestamp_ms: i64,
}
