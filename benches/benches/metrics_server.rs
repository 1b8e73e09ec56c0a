//! The `/metrics` servers under hostile load, wall clock: scrapes per second and scrape
//! latency (p50, p99, max) of one Prometheus-like client (keep-alive, protobuf, sequential
//! scrapes), on a quiet server and on a server holding 200 idle sockets and 1 slow reader (a
//! client that pipelines 50 GETs and reads 1 KiB every 10 ms, reconnecting when dropped);
//! picollo-export's server (`MetricsServer`: one poll loop, 2 render workers, default
//! `ServerOptions`) and `/metrics` mounted on a program's own hyper + tokio stack (the
//! exposition from `server::negotiate` and `server::render`, rendered on tokio's blocking
//! pool: what the server module's docs tell async programs to do) in the same run. The
//! registry: 20 thread-local histograms of the benchmark data of Picollo for .NET.
//!
//! Run: `cargo bench -p picollo-benches --bench metrics_server`.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use picollo_alloc::HistogramBuilder;
use picollo_benches::*;
use picollo_core::Window;
use picollo_export::server::{negotiate, render, MetricsServer};
use picollo_export::{Labels, Registry};

const SERIES: usize = 20;
/// How long each round scrapes (200 ms in a smoke run, `picollo_benches::smoke`).
fn run_length() -> Duration {
    Duration::from_millis(sized(1_500, 200))
}

/// Rounds per case (1 in a smoke run).
fn rounds() -> usize {
    sized(3, 1)
}
const IDLE: usize = 200;
const REQUEST: &[u8] = b"GET /metrics HTTP/1.1\r\nHost: bench\r\nAccept: \
    application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;\
    q=0.7,text/plain;version=0.0.4;q=0.3\r\n\r\n";

fn registry() -> Arc<Registry> {
    let registry = Arc::new(Registry::new());
    let values = seed_values(100_000);
    let window = Window::new(LAYOUT, 0, SEED_MAX).expect("0 <= max");
    for i in 0..SERIES {
        let h = Arc::new(
            HistogramBuilder::new()
                .layout(LAYOUT)
                .window(window)
                .thread_local()
                .unwrap(),
        );
        values
            .iter()
            .skip(i)
            .step_by(SERIES)
            .for_each(|&v| h.record(v));
        let labels = Labels::new([("series", i.to_string())]).expect("valid label");
        registry
            .register("bench_latency_nanoseconds", "bench", &labels, h)
            .expect("valid series");
    }
    registry
}

/// Reads one response (status 200 expected) from `s`, `buf` holding bytes read before;
/// returns the body length and whether the server closes the connection after it.
fn read_response(s: &mut TcpStream, buf: &mut Vec<u8>) -> io::Result<(usize, bool)> {
    let mut chunk = [0u8; 64 << 10];
    let end = loop {
        if let Some(p) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break p + 4;
        }
        let n = s.read(&mut chunk)?;
        if n == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
    assert!(head.starts_with("http/1.1 200"), "{head}");
    let len: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse().ok())
        .expect("content-length");
    buf.drain(..end);
    while buf.len() < len {
        let n = s.read(&mut chunk)?;
        if n == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    buf.drain(..len);
    Ok((len, head.contains("\r\nconnection: close")))
}

/// A client that pipelines 50 GETs and reads 1 KiB every 10 ms, until `stop`.
fn slow_reader(addr: SocketAddr, stop: Arc<AtomicBool>) -> thread::JoinHandle<u64> {
    thread::spawn(move || {
        let mut reconnects = 0;
        let mut chunk = [0u8; 1024];
        while !stop.load(Ordering::Relaxed) {
            let Ok(mut s) = TcpStream::connect(addr) else {
                thread::sleep(Duration::from_millis(10));
                continue;
            };
            reconnects += 1;
            let _ = s.set_read_timeout(Some(Duration::from_millis(100)));
            if s.write_all(&REQUEST.repeat(50)).is_err() {
                continue;
            }
            while !stop.load(Ordering::Relaxed) {
                match s.read(&mut chunk) {
                    Ok(0) => break,
                    Ok(_) => thread::sleep(Duration::from_millis(10)),
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                    Err(e) if e.kind() == io::ErrorKind::TimedOut => {}
                    Err(_) => break,
                }
            }
        }
        reconnects
    })
}

/// One round of one case: scrape durations, wall time, bytes per scrape.
struct Round {
    times: Vec<Duration>,
    elapsed: Duration,
    bytes: usize,
}

/// Sequential keep-alive scrapes for [`run_length`].
fn scrape_for(addr: SocketAddr) -> Round {
    let connect = || {
        let s = TcpStream::connect(addr).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        s.set_nodelay(true).unwrap();
        s
    };
    let mut s = connect();
    let mut buf = Vec::new();
    let mut times = Vec::new();
    let mut bytes = 0;
    // One scrape, reconnecting (timed) when the server closed the connection after a
    // response, as Prometheus does (the std server closes after 1,000 requests).
    let mut scrape = |s: &mut TcpStream| {
        s.write_all(REQUEST).expect("send a scrape");
        let (len, close) = read_response(s, &mut buf).expect("a scrape");
        if close {
            *s = connect();
            buf.clear();
        }
        len
    };
    for _ in 0..5 {
        scrape(&mut s); // warm-up
    }
    let run_length = run_length();
    let start = Instant::now();
    while start.elapsed() < run_length {
        let t = Instant::now();
        bytes = scrape(&mut s);
        times.push(t.elapsed());
    }
    Round {
        times,
        elapsed: start.elapsed(),
        bytes,
    }
}

/// `/metrics` on a hyper + tokio stack of the program's own, on a thread running a
/// current-thread runtime: `negotiate` and `render`, and hyper's defaults for the rest.
/// Returns its address and the sender that stops it.
fn hyper_mount(registry: Arc<Registry>) -> (SocketAddr, tokio::sync::oneshot::Sender<()>) {
    use http_body_util::Full;
    use hyper::body::{Bytes, Incoming};
    use hyper::{header, Request, Response, StatusCode};

    async fn metrics(
        registry: Arc<Registry>,
        req: Request<Incoming>,
    ) -> Result<Response<Full<Bytes>>, std::convert::Infallible> {
        if req.uri().path() != "/metrics" {
            let mut r = Response::new(Full::new(Bytes::new()));
            *r.status_mut() = StatusCode::NOT_FOUND;
            return Ok(r);
        }
        let accept = req
            .headers()
            .get(header::ACCEPT)
            .and_then(|v| v.to_str().ok());
        let exposition = negotiate(accept);
        let body = tokio::task::spawn_blocking(move || render(&registry, exposition))
            .await
            .expect("render");
        let mut r = Response::new(Full::new(Bytes::from(body)));
        r.headers_mut().insert(
            header::CONTENT_TYPE,
            header::HeaderValue::from_static(exposition.content_type()),
        );
        Ok(r)
    }

    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.set_nonblocking(true).expect("non-blocking");
    let addr = listener.local_addr().expect("address");
    let (stop, mut stopped) = tokio::sync::oneshot::channel::<()>();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()
        .expect("runtime");
    thread::spawn(move || {
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
            loop {
                let (stream, _) = tokio::select! {
                    _ = &mut stopped => return,
                    a = listener.accept() => match a {
                        Ok(a) => a,
                        Err(_) => continue,
                    },
                };
                let _ = stream.set_nodelay(true);
                let registry = registry.clone();
                let service = hyper::service::service_fn(move |req| metrics(registry.clone(), req));
                tokio::spawn(async move {
                    let io = hyper_util::rt::TokioIo::new(stream);
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(io, service)
                        .await;
                });
            }
        })
    });
    (addr, stop)
}

/// Threads of this process named by the server (`picollo-metrics*`).
fn server_threads() -> usize {
    std::fs::read_dir("/proc/self/task")
        .map(|tasks| {
            tasks
                .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
                .filter(|comm| comm.starts_with("picollo-metrics"))
                .count()
        })
        .unwrap_or(0)
}

/// Hostile load on one server: idle sockets and a slow reader, until dropped.
struct Load {
    _idle: Vec<TcpStream>,
    stop: Arc<AtomicBool>,
    slow: Option<thread::JoinHandle<u64>>,
}

impl Load {
    fn start(addr: SocketAddr) -> Load {
        let idle = (0..IDLE)
            .map(|_| TcpStream::connect(addr).expect("connect"))
            .collect();
        let stop = Arc::new(AtomicBool::new(false));
        let slow = Some(slow_reader(addr, stop.clone()));
        Load {
            _idle: idle,
            stop,
            slow,
        }
    }

    /// Stops the slow reader: how many times it connected.
    fn stop(mut self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        self.slow
            .take()
            .map_or(0, |t| t.join().expect("slow reader"))
    }
}

fn main() {
    let registry = registry();
    let std_server = MetricsServer::bind("127.0.0.1:0", registry.clone()).expect("bind");
    let (hyper_addr, hyper_stop) = hyper_mount(registry);
    let servers = [
        (
            "std (`MetricsServer`)",
            std_server.local_addr().expect("TCP"),
        ),
        ("hyper + tokio (`negotiate` + `render`)", hyper_addr),
    ];
    // Cases: (server, loaded), rounds interleaved: quiet rounds first, then the same
    // rounds with both servers under load.
    let mut rounds: Vec<Vec<Round>> = (0..4).map(|_| Vec::new()).collect();
    let mut threads = [0usize; 2];
    for _ in 0..self::rounds() {
        for (i, (_, addr)) in servers.iter().enumerate() {
            rounds[2 * i].push(scrape_for(*addr));
        }
    }
    let loads: Vec<Load> = servers.iter().map(|(_, a)| Load::start(*a)).collect();
    thread::sleep(Duration::from_millis(200));
    for _ in 0..self::rounds() {
        for (i, (_, addr)) in servers.iter().enumerate() {
            rounds[2 * i + 1].push(scrape_for(*addr));
        }
    }
    threads[1] = server_threads();
    let reconnects: Vec<u64> = loads.into_iter().map(Load::stop).collect();
    drop(std_server);
    let _ = hyper_stop.send(());
    threads[0] = server_threads();

    let _b = report::Block::begin("metrics-server");
    println!(
        "`/metrics` on 127.0.0.1: picollo-export's `MetricsServer` (default `ServerOptions`, 2 \
         render workers) and a program's own hyper + tokio stack serving `negotiate` + \
         `render` (renders on tokio's blocking pool); one client scraping sequentially on a keep-alive connection; {SERIES} \
         thread-local histograms as protobuf ({} bytes per scrape); loaded: {IDLE} idle \
         sockets + 1 slow reader (50 pipelined GETs, 1 KiB read per 10 ms) on each server; \
         {} interleaved rounds of {} s per case: scrapes/s of the median round, \
         latency percentiles over every scrape of the case",
        rounds[0][0].bytes,
        self::rounds(),
        run_length().as_secs_f64()
    );
    report::header(&[
        "server, load",
        "scrapes",
        "scrapes/s",
        "p50 ms",
        "p99 ms",
        "max ms",
    ]);
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    for (c, case) in rounds.iter().enumerate() {
        let mut rates: Vec<f64> = case
            .iter()
            .map(|r| r.times.len() as f64 / r.elapsed.as_secs_f64())
            .collect();
        rates.sort_by(f64::total_cmp);
        let mut times: Vec<Duration> = case.iter().flat_map(|r| r.times.iter().copied()).collect();
        times.sort();
        let at = |q: f64| times[((times.len() as f64 * q) as usize).min(times.len() - 1)];
        let load = if c % 2 == 0 { "quiet" } else { "loaded" };
        println!(
            "| {:<46} | {:>6} | {:>8.0} | {:>7.3} | {:>7.3} | {:>7.3} |",
            format!("{}, {load}", servers[c / 2].0),
            times.len(),
            rates[rates.len() / 2],
            ms(at(0.50)),
            ms(at(0.99)),
            ms(*times.last().expect("a scrape"))
        );
    }
    println!(
        "threads named `picollo-metrics*` (`MetricsServer`, loaded): {} (1 I/O thread + 2 \
         render threads); after it stopped: {}; the slow readers connected {} and {} time(s)",
        threads[1], threads[0], reconnects[0], reconnects[1]
    );
}
