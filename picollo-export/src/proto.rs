//! Protobuf messages, declared by hand with `prost` (no `protoc` at build time): the parts of
//! Prometheus' `io.prometheus.client` exposition model and of the OTLP metrics protocol that
//! the exporter writes. Field numbers and types follow `metrics.proto` of
//! `prometheus/client_model` and `opentelemetry/proto/{collector/metrics,metrics,common,
//! resource}/v1/*.proto` of `open-telemetry/opentelemetry-proto`; the tests decode the bytes
//! with a real Prometheus server and, where installed, with the official Python bindings.
//!
//! The OTLP messages are public (the OTLP API hands them out and takes them); the Prometheus
//! ones are the crate's own: what a user gets is the registry's encoding, and the tests
//! decode it with a schema of their own (`tests/common/prometheus_pb.rs`).

/// Protobuf wire-format writing, for the hot path of a scrape: the Prometheus exposition is
/// written field by field into the output buffer (no message structs, no allocation per
/// series), with the bytes `prost` would write for the same messages (fields in tag order,
/// default scalars left out, packed repeated scalars); `tests/encode.rs` checks that.
pub(crate) mod wire {
    /// Wire type of varints.
    pub(crate) const VARINT: u32 = 0;
    /// Wire type of 64-bit fixed fields (`double`).
    pub(crate) const FIXED64: u32 = 1;
    /// Wire type of length-delimited fields (strings, messages, packed scalars).
    pub(crate) const LEN: u32 = 2;

    /// Appends `v` as a varint (one push for the common one-byte case).
    #[inline(always)]
    pub(crate) fn varint(out: &mut Vec<u8>, v: u64) {
        if v < 0x80 {
            out.push(v as u8);
        } else {
            varint_long(out, v);
        }
    }

    /// [`varint`] of two bytes or more.
    #[inline(never)]
    fn varint_long(out: &mut Vec<u8>, v: u64) {
        let mut bytes = [0u8; 10];
        let end = out.len() + put_varint(&mut bytes, v);
        // A copy of fixed size (no call), then cut back.
        out.extend_from_slice(&bytes);
        out.truncate(end);
    }

    /// Writes `v` as a varint at the start of `buf` (at least 10 bytes, or as many as the
    /// varint needs) and returns its length.
    #[inline(always)]
    pub(crate) fn put_varint(buf: &mut [u8], mut v: u64) -> usize {
        let mut n = 0;
        while v >= 0x80 {
            if let Some(b) = buf.get_mut(n) {
                *b = v as u8 | 0x80;
            }
            v >>= 7;
            n += 1;
        }
        if let Some(b) = buf.get_mut(n) {
            *b = v as u8;
        }
        n + 1
    }

    /// The bytes of `v` as a varint.
    #[inline]
    pub(crate) fn varint_len(v: u64) -> usize {
        // 1 byte per started 7 bits (at least one).
        (64 - (v | 1).leading_zeros()).div_ceil(7) as usize
    }

    /// ZigZag encoding of a signed value (`sint32`, `sint64`).
    #[inline]
    pub(crate) fn zigzag(v: i64) -> u64 {
        ((v << 1) ^ (v >> 63)) as u64
    }

    /// Appends a field key.
    #[inline]
    pub(crate) fn key(out: &mut Vec<u8>, field: u32, wire_type: u32) {
        varint(out, u64::from(field << 3 | wire_type));
    }

    /// Bytes of a field key.
    #[inline]
    pub(crate) fn key_len(field: u32) -> usize {
        varint_len(u64::from(field << 3))
    }

    /// A `uint64`/`int64`/`enum` field (left out when 0).
    #[inline]
    pub(crate) fn uint64(out: &mut Vec<u8>, field: u32, v: u64) {
        if v != 0 {
            key(out, field, VARINT);
            varint(out, v);
        }
    }

    /// Bytes of [`uint64`].
    #[inline]
    pub(crate) fn uint64_len(field: u32, v: u64) -> usize {
        if v == 0 {
            0
        } else {
            key_len(field) + varint_len(v)
        }
    }

    /// A `sint32`/`sint64` field (left out when 0).
    #[inline]
    pub(crate) fn sint(out: &mut Vec<u8>, field: u32, v: i64) {
        uint64(out, field, zigzag(v));
    }

    /// A `double` field (left out when 0, as `prost` does, `-0.0` included).
    #[inline]
    pub(crate) fn double(out: &mut Vec<u8>, field: u32, v: f64) {
        if v != 0.0 {
            key(out, field, FIXED64);
            out.extend_from_slice(&v.to_le_bytes());
        }
    }

    /// Bytes of [`double`].
    #[inline]
    pub(crate) fn double_len(field: u32, v: f64) -> usize {
        if v == 0.0 {
            0
        } else {
            key_len(field) + 8
        }
    }

    /// A `string` field (left out when empty).
    #[inline]
    pub(crate) fn string(out: &mut Vec<u8>, field: u32, s: &str) {
        if !s.is_empty() {
            key(out, field, LEN);
            varint(out, s.len() as u64);
            out.extend_from_slice(s.as_bytes());
        }
    }

    /// Bytes of [`string`].
    #[inline]
    pub(crate) fn string_len(field: u32, s: &str) -> usize {
        if s.is_empty() {
            0
        } else {
            key_len(field) + varint_len(s.len() as u64) + s.len()
        }
    }

    /// The key and length of an embedded message (or packed field) of `len` bytes, whose
    /// bytes the caller writes next.
    #[inline]
    pub(crate) fn message_header(out: &mut Vec<u8>, field: u32, len: usize) {
        key(out, field, LEN);
        varint(out, len as u64);
    }

    /// Bytes of an embedded message of `len` bytes, header included.
    #[inline]
    pub(crate) fn message_len(field: u32, len: usize) -> usize {
        key_len(field) + varint_len(len as u64) + len
    }

    /// Appends many small fields to a `Vec<u8>` through a stack buffer, copied over in large
    /// pieces: each write checks for room once and takes fixed positions, and varints below
    /// 2^14 (nearly every span and delta of a native histogram) are written without a branch
    /// on their length (which would mispredict between one and two bytes).
    pub(crate) struct Batch<'a> {
        out: &'a mut Vec<u8>,
        buf: [u8; Batch::SIZE],
        at: usize,
    }

    impl<'a> Batch<'a> {
        const SIZE: usize = 1024;
        /// Room one write may take (a key, a length and two varints).
        const WRITE: usize = 24;

        pub(crate) fn new(out: &'a mut Vec<u8>) -> Self {
            Batch {
                out,
                buf: [0; Batch::SIZE],
                at: 0,
            }
        }

        /// [`Batch::WRITE`] bytes of room at the current position.
        #[inline(always)]
        fn room(&mut self) -> &mut [u8; Batch::WRITE] {
            if self.at > Self::SIZE - Self::WRITE {
                self.flush();
            }
            let at = self.at.min(Self::SIZE - Self::WRITE);
            match <&mut [u8; Batch::WRITE]>::try_from(&mut self.buf[at..at + Self::WRITE]) {
                Ok(room) => room,
                Err(_) => unreachable!("a slice of WRITE bytes"),
            }
        }

        fn flush(&mut self) {
            self.out.extend_from_slice(&self.buf[..self.at]);
            self.at = 0;
        }

        /// Appends `v` as a varint.
        #[inline(always)]
        pub(crate) fn varint(&mut self, v: u64) {
            let n = small_varint(self.room(), 0, v);
            self.at += n;
        }

        /// Appends an embedded message (field `field < 16`) of at most two fields, both
        /// varints (left out when 0): the shape of `BucketSpan`.
        #[inline(always)]
        pub(crate) fn pair(&mut self, field: u32, first: u64, second: u64) {
            let room = self.room();
            if first.wrapping_sub(1) < 0x7F && second.wrapping_sub(1) < 0x7F {
                // Both in 1..=127, one byte each: the span of a sparse histogram's lone
                // bucket (a short gap, length 1), written as one fixed six-byte copy.
                let key = (field << 3 | LEN) as u8;
                room[..6].copy_from_slice(&[key, 4, 1 << 3, first as u8, 2 << 3, second as u8]);
                self.at += 6;
                return;
            }
            room[0] = (field << 3 | LEN) as u8;
            let mut at = 2;
            for (f, v) in [(1u8, first), (2, second)] {
                if v != 0 {
                    room[at] = f << 3; // wire type VARINT
                    at += 1 + small_varint(room, at + 1, v);
                }
            }
            room[1] = (at - 2) as u8;
            self.at += at;
        }

        /// Copies what is left into the `Vec`.
        pub(crate) fn finish(mut self) {
            self.flush();
        }
    }

    /// Writes `v` as a varint at `room[at..]` (`at + 10 <= room.len()`), returns its length;
    /// below 2^14 without a branch on the length.
    #[inline(always)]
    fn small_varint(room: &mut [u8], at: usize, v: u64) -> usize {
        if v < 1 << 14 {
            let two = u8::from(v >= 0x80);
            if let Some([b0, b1]) = room.get_mut(at..at + 2) {
                *b0 = (v as u8 & 0x7F) | (two << 7);
                *b1 = (v >> 7) as u8;
            }
            1 + usize::from(two)
        } else {
            room.get_mut(at..).map_or(0, |r| put_varint(r, v))
        }
    }

    /// Appends a length-delimited message whose body `body` writes, when its length is not
    /// known in advance: one byte is reserved for the length, and the body moves when the
    /// length needs more.
    pub(crate) fn delimited(out: &mut Vec<u8>, body: impl FnOnce(&mut Vec<u8>)) {
        let at = out.len();
        out.push(0);
        body(out);
        let len = out.len() - at - 1;
        if len < 0x80 {
            out[at] = len as u8;
        } else {
            let mut header = Vec::with_capacity(10);
            varint(&mut header, len as u64);
            out.splice(at..at + 1, header);
        }
    }
}

/// `io.prometheus.client`: the Prometheus protobuf exposition format (what the registry
/// encodes; its decoding is Prometheus' business).
pub(crate) mod prometheus {
    /// `MetricType`.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
    #[repr(i32)]
    pub(crate) enum MetricType {
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
    pub(crate) struct MetricFamily {
        /// The family name.
        #[prost(string, tag = "1")]
        pub(crate) name: String,
        /// The help text.
        #[prost(string, tag = "2")]
        pub(crate) help: String,
        /// The type.
        #[prost(enumeration = "MetricType", tag = "3")]
        pub(crate) r#type: i32,
        /// The series.
        #[prost(message, repeated, tag = "4")]
        pub(crate) metric: Vec<Metric>,
        /// The unit.
        #[prost(string, tag = "5")]
        pub(crate) unit: String,
    }

    /// `LabelPair`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub(crate) struct LabelPair {
        /// Label name.
        #[prost(string, tag = "1")]
        pub(crate) name: String,
        /// Label value.
        #[prost(string, tag = "2")]
        pub(crate) value: String,
    }

    /// `Gauge`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub(crate) struct Gauge {
        /// The value.
        #[prost(double, tag = "1")]
        pub(crate) value: f64,
    }

    /// `Counter`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub(crate) struct Counter {
        /// The value.
        #[prost(double, tag = "1")]
        pub(crate) value: f64,
    }

    /// `Bucket`: one classic bucket.
    #[derive(Clone, PartialEq, prost::Message)]
    pub(crate) struct Bucket {
        /// Values at or below `upper_bound`.
        #[prost(uint64, tag = "1")]
        pub(crate) cumulative_count: u64,
        /// The inclusive upper bound.
        #[prost(double, tag = "2")]
        pub(crate) upper_bound: f64,
    }

    /// `BucketSpan`: consecutive native buckets.
    #[derive(Clone, PartialEq, prost::Message)]
    pub(crate) struct BucketSpan {
        /// Gap to the previous span, or the first bucket's index for the first span.
        #[prost(sint32, tag = "1")]
        pub(crate) offset: i32,
        /// Buckets in the span.
        #[prost(uint32, tag = "2")]
        pub(crate) length: u32,
    }

    /// `Histogram`: classic buckets and/or native (sparse) buckets.
    #[derive(Clone, PartialEq, prost::Message)]
    pub(crate) struct Histogram {
        /// Values observed.
        #[prost(uint64, tag = "1")]
        pub(crate) sample_count: u64,
        /// Their sum.
        #[prost(double, tag = "2")]
        pub(crate) sample_sum: f64,
        /// Classic buckets.
        #[prost(message, repeated, tag = "3")]
        pub(crate) bucket: Vec<Bucket>,
        /// Native schema.
        #[prost(sint32, tag = "5")]
        pub(crate) schema: i32,
        /// Half-width of the zero bucket.
        #[prost(double, tag = "6")]
        pub(crate) zero_threshold: f64,
        /// Values in the zero bucket.
        #[prost(uint64, tag = "7")]
        pub(crate) zero_count: u64,
        /// Negative spans (unused: Picollo values are unsigned).
        #[prost(message, repeated, tag = "9")]
        pub(crate) negative_span: Vec<BucketSpan>,
        /// Negative deltas (unused).
        #[prost(sint64, repeated, tag = "10")]
        pub(crate) negative_delta: Vec<i64>,
        /// Positive spans.
        #[prost(message, repeated, tag = "12")]
        pub(crate) positive_span: Vec<BucketSpan>,
        /// Positive bucket counts, each as the difference to the previous bucket's.
        #[prost(sint64, repeated, tag = "13")]
        pub(crate) positive_delta: Vec<i64>,
    }

    /// `Metric`: one labelled series.
    #[derive(Clone, PartialEq, prost::Message)]
    pub(crate) struct Metric {
        /// Labels.
        #[prost(message, repeated, tag = "1")]
        pub(crate) label: Vec<LabelPair>,
        /// Gauge value.
        #[prost(message, optional, tag = "2")]
        pub(crate) gauge: Option<Gauge>,
        /// Counter value.
        #[prost(message, optional, tag = "3")]
        pub(crate) counter: Option<Counter>,
        /// Histogram value.
        #[prost(message, optional, tag = "7")]
        pub(crate) histogram: Option<Histogram>,
        /// Milliseconds since the epoch; 0 for "now".
        #[prost(int64, tag = "6")]
        pub(crate) timestamp_ms: i64,
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
