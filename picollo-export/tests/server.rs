//! The `/metrics` server's HTTP behaviour on a live server on 127.0.0.1: negotiation,
//! keep-alive and pipelining, errors, the allow-list, the Unix socket, and a render that
//! panics. The hostile clients are in `server_attacks.rs`.

mod client;

use std::io::Write;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use client::*;
use picollo_alloc::{HistogramBuilder, Snapshot, ThreadLocalHistogram};
use picollo_export::server::{
    Endpoint, IpNet, MetricsServer, ServerOptions, PROTOBUF_CONTENT_TYPE,
};
use picollo_export::{
    ClassicBuckets, ClassicHistogram, Exported, Labels, NativeHistogram, Registry, Schema,
};

fn registry_with(values: u64) -> (Arc<Registry>, Arc<ThreadLocalHistogram<u64>>) {
    let registry = Arc::new(Registry::new());
    let h = Arc::new(HistogramBuilder::new().thread_local().unwrap());
    registry
        .register("test_latency", "test", &Labels::empty(), h.clone())
        .unwrap();
    (1..=values).for_each(|v| h.record(v * 1_000));
    (registry, h)
}

fn addr(server: &MetricsServer) -> std::net::SocketAddr {
    server.local_addr().expect("a TCP server")
}

#[test]
fn scrapes_negotiate_keep_alive_and_pipeline() {
    let (registry, _h) = registry_with(1_000);
    let server = MetricsServer::bind("127.0.0.1:0", registry).unwrap();
    assert!(server
        .endpoint()
        .to_string()
        .starts_with("http://127.0.0.1:"));
    let (r, _) = scrape(addr(&server));
    assert_eq!(r.status, 200);
    assert_eq!(sample(&r.text(), "test_latency_count"), Some(1_000));
    assert_eq!(r.header("connection"), Some("close"));

    // Three pipelined requests on one connection, answered in order, the connection kept.
    let mut s = connect(addr(&server));
    s.write_all(
        b"GET /metrics HTTP/1.1\r\nAccept: application/vnd.google.protobuf;\
          proto=io.prometheus.client.MetricFamily;encoding=delimited\r\n\r\n\
          HEAD /metrics HTTP/1.1\r\n\r\n\
          GET /nothing HTTP/1.1\r\n\r\n",
    )
    .unwrap();
    let mut buf = Vec::new();
    let proto = read_response(&mut s, &mut buf, false).unwrap();
    assert_eq!(
        (proto.status, proto.header("content-type")),
        (200, Some(PROTOBUF_CONTENT_TYPE))
    );
    assert!(!proto.body.is_empty());
    let head = read_response(&mut s, &mut buf, true).unwrap();
    assert_eq!(head.status, 200);
    assert!(
        head.header("content-length")
            .unwrap()
            .parse::<usize>()
            .unwrap()
            > 0
    );
    let missing = read_response(&mut s, &mut buf, false).unwrap();
    assert_eq!(
        (missing.status, missing.header("connection")),
        (404, Some("keep-alive"))
    );
    s.write_all(b"DELETE /metrics HTTP/1.1\r\n\r\n").unwrap();
    let r = read_response(&mut s, &mut buf, false).unwrap();
    assert_eq!((r.status, r.header("allow")), (405, Some("GET, HEAD")));
    s.write_all(b"GET /metrics HTTP/1.0\r\n\r\n").unwrap();
    let r = read_response(&mut s, &mut buf, false).unwrap();
    assert_eq!((r.status, r.header("connection")), (200, Some("close")));
    assert_eq!(
        closed_by_server(&mut s),
        (true, 0),
        "HTTP/1.0 without keep-alive closes"
    );

    let stats = server.stats();
    assert_eq!(
        (stats.scrapes, stats.client_errors, stats.panics),
        (4, 2, 0)
    );
    assert_eq!(stats.responses, 6);
    server.shutdown();
}

#[test]
fn requests_per_connection_are_bounded() {
    let (registry, _h) = registry_with(10);
    let options = ServerOptions::new().max_requests_per_connection(2);
    let server = MetricsServer::bind_with("127.0.0.1:0", registry, options).unwrap();
    let mut s = connect(addr(&server));
    s.write_all(b"GET /metrics HTTP/1.1\r\n\r\nGET /metrics HTTP/1.1\r\n\r\n")
        .unwrap();
    let mut buf = Vec::new();
    let first = read_response(&mut s, &mut buf, false).unwrap();
    let second = read_response(&mut s, &mut buf, false).unwrap();
    assert_eq!(first.header("connection"), Some("keep-alive"));
    assert_eq!(second.header("connection"), Some("close"));
    assert!(closed_by_server(&mut s).0, "closed after the last request");
}

#[test]
fn slow_readers_cannot_make_the_server_hold_a_response_each() {
    // A text scrape of about 0.85 MB (20,000 classic buckets), 50 of them asked for by each
    // of 5 clients that never read; the server keeps no more than one response waiting (a
    // limit of 1 byte), so each slow reader is disconnected when a newer one stalls. A reader
    // stalls once the kernel's socket buffers hold a few of its responses: on a loaded
    // machine the renders take long enough that this was not the case 500 ms in (20 of the
    // 250 responses rendered, none evicted), so the test waits for the evictions themselves,
    // up to 60 s.
    let bounds = (1..=20_000u64).map(|i| i * 1_000).collect();
    let registry = Arc::new(Registry::with_options(
        picollo_export::ExportOptions::new().classic(ClassicBuckets::explicit(bounds).unwrap()),
    ));
    let h = Arc::new(HistogramBuilder::new().thread_local().unwrap());
    registry
        .register("test_latency", "test", &Labels::empty(), h.clone())
        .unwrap();
    (0..50_000u64).for_each(|v| h.record(v * 400));
    let options = ServerOptions::new().max_pending_bytes(1);
    let server = MetricsServer::bind_with("127.0.0.1:0", registry, options).unwrap();
    let pipelined = "GET /metrics HTTP/1.1\r\nAccept: text/plain\r\n\r\n".repeat(50);
    let mut slow: Vec<_> = (0..5)
        .map(|_| {
            let mut s = connect(addr(&server));
            s.write_all(pipelined.as_bytes()).unwrap();
            s
        })
        .collect();
    let waited = std::time::Instant::now();
    while server.stats().evicted < 4 && waited.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(50));
    }
    let stats = server.stats();
    assert!(stats.evicted >= 4, "{stats:?} after {:?}", waited.elapsed());
    let (r, _) = scrape(addr(&server));
    assert_eq!(r.status, 200);
    assert_eq!(sample(&r.text(), "test_latency_count"), Some(50_000));
    let closed = slow
        .iter_mut()
        .map(|s| closed_by_server(s).0)
        .filter(|&c| c)
        .count();
    assert!(closed >= 4, "{closed} of 5 slow readers disconnected");
}

#[test]
fn the_allow_list_refuses_other_addresses() {
    let (registry, _h) = registry_with(10);
    let elsewhere = ServerOptions::new().allow(["10.0.0.0/8".parse::<IpNet>().unwrap()]);
    let server = MetricsServer::bind_with("127.0.0.1:0", registry.clone(), elsewhere).unwrap();
    let r = request(addr(&server), b"GET /metrics HTTP/1.1\r\n\r\n").unwrap();
    assert_eq!(r.status, 403);
    assert_eq!(server.stats().forbidden, 1);
    assert_eq!(server.stats().scrapes, 0);

    let here = ServerOptions::new().allow([
        "10.0.0.0/8".parse().unwrap(),
        "127.0.0.0/8".parse().unwrap(),
    ]);
    let server = MetricsServer::bind_with("127.0.0.1:0", registry, here).unwrap();
    assert_eq!(scrape(addr(&server)).0.status, 200);
}

#[test]
fn serves_on_a_unix_socket() {
    let dir = std::env::temp_dir().join(format!("picollo-export-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("metrics.sock");
    let _ = std::fs::remove_file(&path);
    let (registry, _h) = registry_with(500);

    // A socket file left by a process that is gone is replaced.
    drop(std::os::unix::net::UnixListener::bind(&path).unwrap());
    let server = MetricsServer::bind_unix(&path, registry.clone()).unwrap();
    assert_eq!(server.endpoint(), &Endpoint::Unix(path.clone()));
    assert_eq!(server.local_addr(), None);
    // A live one is not.
    let err = MetricsServer::bind_unix(&path, registry.clone()).unwrap_err();
    assert!(
        err.to_string().contains("another process listens there"),
        "{err}"
    );

    let mut s = UnixStream::connect(&path).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(b"GET /metrics HTTP/1.1\r\nAccept: text/plain\r\n\r\n")
        .unwrap();
    let r = read_response(&mut s, &mut Vec::new(), false).unwrap();
    assert_eq!(r.status, 200);
    assert_eq!(sample(&r.text(), "test_latency_count"), Some(500));
    drop(s);
    server.shutdown();
    assert!(!path.exists(), "the socket is removed on shutdown");

    // Not a socket: refused, left alone.
    std::fs::write(&path, "data").unwrap();
    let err = MetricsServer::bind_unix(&path, registry).unwrap_err();
    assert!(err.to_string().contains("not a socket"), "{err}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "data");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A source whose read panics while `armed`.
struct Panicky {
    inner: ThreadLocalHistogram<u64>,
    armed: AtomicBool,
}

impl Panicky {
    fn check(&self) {
        if self.armed.swap(false, Ordering::Relaxed) {
            panic!("a source that panics while read (expected by the test)");
        }
    }
}

impl Exported for Panicky {
    fn fill_native(&self, out: &mut NativeHistogram, schema: Option<Schema>) {
        self.check();
        self.inner.fill_native(out, schema)
    }
    fn fill_classic(&self, out: &mut ClassicHistogram, buckets: &ClassicBuckets) {
        self.check();
        self.inner.fill_classic(out, buckets)
    }
    fn fill_snapshot(&self, snapshot: &mut Snapshot, deltas: bool) -> Option<u128> {
        self.check();
        self.inner.fill_snapshot(snapshot, deltas)
    }
}

#[test]
fn a_panicking_render_answers_500_and_the_server_lives_on() {
    let registry = Arc::new(Registry::new());
    let source = Arc::new(Panicky {
        inner: HistogramBuilder::new().thread_local().unwrap(),
        armed: AtomicBool::new(true),
    });
    source.inner.record(42);
    registry
        .register("panicky", "test", &Labels::empty(), source.clone())
        .unwrap();
    // One worker: the one that caught the panic serves the next scrape.
    let options = ServerOptions::new().workers(1);
    let server = MetricsServer::bind_with("127.0.0.1:0", registry, options).unwrap();
    let (r, _) = scrape(addr(&server));
    assert_eq!(r.status, 500);
    let (r, _) = scrape(addr(&server));
    assert_eq!(r.status, 200);
    assert_eq!(sample(&r.text(), "panicky_count"), Some(1));
    assert_eq!(server.stats().panics, 1);
}
