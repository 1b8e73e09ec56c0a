//! OTLP against an independent decoder: a local OTLP/HTTP receiver
//! (`tests/otlp_receiver.py`) decodes what the exporter pushes with the official OpenTelemetry
//! protobuf bindings, so a wrong field number or type in our hand-declared messages fails here.
//! It also parses our OTLP/JSON with the bindings' strict JSON parser.
//!
//! Needs `python3` with `opentelemetry-proto` (`pip install opentelemetry-proto`). Without it
//! the tests print why and return; with `CI` set they fail instead.

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use picollo_alloc::HistogramBuilder;
use picollo_core::Layout;
use picollo_export::otlp::{self, OtlpExporter, Temporality};
use picollo_export::{ExportError, Labels, Mapping, NativeHistogram, Registry};
use serde_json::Value;

struct Receiver {
    child: Child,
    dir: PathBuf,
    port: u16,
}

impl Receiver {
    fn start() -> Option<Receiver> {
        let have = Command::new("python3")
            .args([
                "-c",
                "import opentelemetry.proto.collector.metrics.v1.metrics_service_pb2",
            ])
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !have {
            if std::env::var_os("CI").is_some() {
                panic!("python3 with opentelemetry-proto is missing (CI installs it: .ci/install.d/30-prometheus.sh)");
            }
            eprintln!("skip: python3 with opentelemetry-proto is missing (pip install opentelemetry-proto)");
            return None;
        }
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let dir = std::env::temp_dir().join(format!("picollo-otlp-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/otlp_receiver.py");
        let mut child = Command::new("python3")
            .arg(script)
            .arg(port.to_string())
            .arg(&dir)
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3 runs");
        let mut line = String::new();
        let stdout = child.stdout.take().expect("piped");
        BufReader::new(stdout)
            .read_line(&mut line)
            .expect("receiver output");
        assert_eq!(line.trim(), "ready", "receiver did not start");
        Some(Receiver { child, dir, port })
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// The `n`-th request the receiver decoded, as the bindings print it.
    fn request(&self, n: usize) -> Value {
        let path = self.dir.join(format!("request-{n}.json"));
        let start = Instant::now();
        while !path.exists() {
            assert!(start.elapsed() < Duration::from_secs(10), "no request {n}");
            std::thread::sleep(Duration::from_millis(20));
        }
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The `(index, count)` buckets of a decoded data point, in Prometheus numbering.
fn decoded_buckets(point: &Value) -> Vec<(i32, u64)> {
    let positive = &point["positive"];
    let offset = positive["offset"].as_i64().unwrap_or(0) as i32;
    positive["bucketCounts"]
        .as_array()
        .map(|a| {
            a.iter()
                .enumerate()
                .filter_map(|(i, c)| {
                    let c: u64 = c.as_str().and_then(|s| s.parse().ok())?;
                    (c != 0).then_some((offset + i as i32 + 1, c))
                })
                .collect()
        })
        .unwrap_or_default()
}

fn number(v: &Value) -> u64 {
    v.as_str().and_then(|s| s.parse().ok()).unwrap_or(0)
}

#[test]
fn the_official_bindings_decode_what_we_push() {
    let Some(receiver) = Receiver::start() else {
        return;
    };
    let registry = Arc::new(Registry::new());
    let layout = Layout::DEFAULT;
    let h = Arc::new(
        HistogramBuilder::new()
            .layout(layout)
            .thread_local()
            .unwrap(),
    );
    let labels = Labels::new([("route", "/checkout")]).unwrap();
    registry
        .register("rpc_latency_nanoseconds", "RPC latency", &labels, h.clone())
        .unwrap();
    registry
        .counter("rpc_total", "RPCs", &labels)
        .unwrap()
        .add(7);
    registry
        .gauge("inflight", "In flight", &labels)
        .unwrap()
        .set(2.5);
    for v in [0, 0, 1, 2, 3, 1_000, 123_456_789, u64::MAX] {
        h.record(v);
    }
    let exporter = OtlpExporter::new(registry.clone(), Temporality::Delta)
        .resource_attribute("service.name", "picollo-test");
    exporter.push(&receiver.url("/v1/metrics")).unwrap();

    let r = receiver.request(1);
    let rm = &r["resourceMetrics"][0];
    assert_eq!(
        rm["resource"]["attributes"][0]["value"]["stringValue"],
        "picollo-test"
    );
    let metrics = &rm["scopeMetrics"][0]["metrics"];
    assert_eq!(metrics[0]["name"], "rpc_latency_nanoseconds");
    let e = &metrics[0]["exponentialHistogram"];
    assert_eq!(e["aggregationTemporality"], "AGGREGATION_TEMPORALITY_DELTA");
    let p = &e["dataPoints"][0];
    let ours = NativeHistogram::from_histogram(&*h);
    assert_eq!(number(&p["count"]), 8);
    assert_eq!(number(&p["zeroCount"]), 2);
    assert_eq!(p["scale"], 8);
    // The bindings print doubles with 17 significant digits at most: compare to 1e-15.
    let sum = p["sum"].as_f64().unwrap();
    assert!(
        (sum - ours.sum()).abs() <= 1e-15 * ours.sum(),
        "{sum} vs {}",
        ours.sum()
    );
    assert_eq!(decoded_buckets(p), ours.buckets().collect::<Vec<_>>());
    assert_eq!(p["attributes"][0]["value"]["stringValue"], "/checkout");
    assert!(number(&p["startTimeUnixNano"]) <= number(&p["timeUnixNano"]));
    assert_eq!(metrics[1]["sum"]["isMonotonic"], true);
    assert_eq!(number(&metrics[1]["sum"]["dataPoints"][0]["asInt"]), 7);
    assert_eq!(metrics[2]["gauge"]["dataPoints"][0]["asDouble"], 2.5);

    // The next delta holds only what came after.
    h.record(5_000);
    exporter.push(&receiver.url("/v1/metrics")).unwrap();
    let p = &receiver.request(2)["resourceMetrics"][0]["scopeMetrics"][0]["metrics"][0]
        ["exponentialHistogram"]["dataPoints"][0];
    assert_eq!(number(&p["count"]), 1);
    let j = Mapping::for_layout(layout).native_index(layout.index_of(5_000));
    assert_eq!(decoded_buckets(p), vec![(j.unwrap(), 1)]);
}

#[test]
fn the_official_bindings_parse_our_json() {
    let Some(receiver) = Receiver::start() else {
        return;
    };
    let registry = Arc::new(Registry::new());
    let layout = Layout::from_block_scale(4).unwrap();
    let h = Arc::new(
        HistogramBuilder::new()
            .layout(layout)
            .dense()
            .atomic()
            .unwrap(),
    );
    (1..=100u64).for_each(|v| h.record(v * v));
    registry
        .register("sq", "squares", &Labels::empty(), h.clone())
        .unwrap();
    let exporter = OtlpExporter::new(registry, Temporality::Cumulative);
    let json = otlp::to_json(&exporter.collect());
    let status = ureq::post(receiver.url("/v1/metrics"))
        .header("Content-Type", "application/json")
        .send(json.as_bytes())
        .map(|r| r.status().as_u16())
        .unwrap_or_else(|e| panic!("the bindings refused our JSON: {e}\n{json}"));
    assert_eq!(status, 200);
    let p = &receiver.request(1)["resourceMetrics"][0]["scopeMetrics"][0]["metrics"][0]
        ["exponentialHistogram"]["dataPoints"][0];
    let ours = NativeHistogram::from_histogram(&*h);
    assert_eq!(number(&p["count"]), 100);
    assert_eq!(p["scale"], 4);
    assert_eq!(decoded_buckets(p), ours.buckets().collect::<Vec<_>>());
}

#[test]
fn a_refusing_receiver_is_a_clear_error() {
    let Some(receiver) = Receiver::start() else {
        return;
    };
    let exporter = OtlpExporter::new(Arc::new(Registry::new()), Temporality::Cumulative);
    match exporter.push(&receiver.url("/reject")) {
        Err(ExportError::Rejected { status, message }) => {
            assert_eq!(status, 400);
            assert!(message.contains("rejected on purpose"), "{message}");
        }
        other => panic!("expected a rejection, got {other:?}"),
    }
    // Nobody listening: an I/O error naming the endpoint.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}/v1/metrics");
    let e = exporter.push(&url).unwrap_err();
    assert!(
        matches!(e, ExportError::Io(_)) && e.to_string().contains(&url),
        "{e}"
    );
}
