//! The `/metrics` endpoint: a small hardened HTTP/1.1 server on `std::net` that serves a
//! [`Registry`], negotiating protobuf or text from the `Accept` header as Prometheus' client
//! libraries do.
//!
//! # Exposed to the network
//!
//! [`MetricsServer`] is built to face clients that misbehave, on purpose or not:
//!
//! - **No thread per connection.** One I/O thread polls every socket (non-blocking); a fixed
//!   pool of [`ServerOptions::workers`] threads renders scrapes. Idle sockets cost file
//!   descriptors, not threads.
//! - **A maintained parser.** Request heads are parsed by `httparse` (hyper's parser,
//!   fuzzed upstream) once their end has been found within the limits below; the server
//!   reads only the method, the target, `Accept`, `Connection` and the body's framing from
//!   them. The fuzz targets `http_head` and `http_conn` (`fuzz/`) check the parser and each
//!   connection's state machine on arbitrary bytes split at arbitrary points.
//! - **Bounded input.** The request line ([`ServerOptions::max_request_line`]) and the whole
//!   head ([`ServerOptions::max_head`], [`ServerOptions::max_headers`]) are bounded; past a
//!   limit the client gets 414 or 431 and the connection is closed. Request bodies are never
//!   read into memory: a request announcing one (`Content-Length` above 0, whatever its
//!   value, or `Transfer-Encoding`) gets its response, then the connection is closed after
//!   discarding at most 256 KiB for at most 2 s.
//! - **Deadlines.** A request head must arrive within [`ServerOptions::header_timeout`] of its
//!   first byte (slowloris), a response must be taken by the client within
//!   [`ServerOptions::write_timeout`] (a client that never reads), and a keep-alive connection
//!   idle for [`ServerOptions::idle_timeout`] is closed.
//! - **Bounded connections.** At [`ServerOptions::max_connections`], a new connection evicts
//!   the one that has waited longest for a complete request (an idle or trickling client);
//!   when every connection is busy, the newcomer gets 503. Responses waiting for their
//!   readers are bounded too ([`ServerOptions::max_pending_bytes`]): past the bound, the
//!   slowest readers are disconnected.
//! - **No request can stop the process or the server.** A panic while rendering (in an
//!   [`crate::Exported`] implementation, say) answers 500 and the worker lives on; parsing
//!   errors answer 4xx. Nothing allocates from a size a client sent.
//! - **Who may scrape.** [`ServerOptions::allow`] restricts TCP clients to address ranges
//!   (others get 403); [`MetricsServer::bind_unix`] serves on a Unix socket instead, guarded
//!   by file permissions.
//!
//! Bind `127.0.0.1` (the examples do) unless the endpoint must be reached from other machines;
//! to expose it, bind the interface Prometheus reaches (`10.0.0.5:9464`) or `0.0.0.0:9464`,
//! and restrict clients with [`ServerOptions::allow`] or a firewall. Serve HTTPS or
//! authentication through a reverse proxy; the server speaks plain HTTP/1.1.
//!
//! [`MetricsServer::stats`] counts what the server refused, evicted and timed out.
//!
//! # In your own HTTP stack
//!
//! There is one server, and no async runtime in it: a scrape endpoint needs one poll loop,
//! not a runtime. A program that already serves HTTP (hyper, axum, actix, a tokio runtime)
//! mounts `/metrics` on its own router instead, with the two functions the server uses:
//! [`negotiate`] picks the exposition from the `Accept` header and [`render`] makes the
//! body. The router then brings its own limits, TLS and authentication, and there is no
//! second listener to secure. Rendering reads every histogram, which takes milliseconds
//! for a few dozen: in an async handler, call it on a blocking thread
//! (`tokio::task::spawn_blocking`). `benches/benches/metrics_server.rs` mounts it on
//! hyper that way and compares it with [`MetricsServer`] under load (`benches/RESULTS.md`,
//! block `metrics-server`).
//!
//! ```
//! use picollo_export::server::{negotiate, render};
//! use picollo_export::Registry;
//!
//! /// The `/metrics` handler of any HTTP stack: the `Accept` header in, the `Content-Type`
//! /// and body out.
//! fn metrics(registry: &Registry, accept: Option<&str>) -> (&'static str, Vec<u8>) {
//!     let exposition = negotiate(accept);
//!     (exposition.content_type(), render(registry, exposition))
//! }
//!
//! let (content_type, _body) = metrics(&Registry::new(), Some("text/plain;version=0.0.4"));
//! assert_eq!(content_type, "text/plain; version=0.0.4; charset=utf-8");
//! ```

mod allow;
mod conn;
mod http;
mod io;
#[cfg(feature = "testing")]
#[cfg_attr(docsrs, doc(cfg(feature = "testing")))]
pub mod testing;

use std::net::{SocketAddr, TcpListener, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

pub use allow::{AddrParseError, IpNet};

use crate::text::TextFormat;
use crate::{ExportError, Registry};

/// The media type of the delimited protobuf exposition.
pub const PROTOBUF_CONTENT_TYPE: &str =
    "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited";

/// An exposition format a scrape can get.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exposition {
    /// Length-delimited `io.prometheus.client.MetricFamily` messages: native histograms.
    Protobuf,
    /// A text format: classic histograms.
    Text(TextFormat),
}

impl Exposition {
    /// The HTTP `Content-Type`.
    pub fn content_type(self) -> &'static str {
        match self {
            Self::Protobuf => PROTOBUF_CONTENT_TYPE,
            Self::Text(f) => f.content_type(),
        }
    }
}

/// Picks the exposition for an `Accept` header, as client_golang's `expfmt.Negotiate` does
/// (plus OpenMetrics): media ranges in order of their `q` weight (ties in header order), the
/// first one served wins; text 0.0.4 when none is (or no header was sent).
///
/// - `application/vnd.google.protobuf` with `proto=io.prometheus.client.MetricFamily` and
///   `encoding=delimited`: protobuf;
/// - `application/openmetrics-text` (version 1.0.0, 0.0.1 or none): OpenMetrics;
/// - `text/plain` (version 0.0.4 or none): text.
///
/// ```
/// use picollo_export::server::{negotiate, Exposition};
/// use picollo_export::text::TextFormat;
///
/// // What Prometheus 2.42 sends, with --enable-feature=native-histograms and without
/// // (captured: fuzz/seeds/http/prometheus-2.42*):
/// let native = "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;\
///     encoding=delimited,application/openmetrics-text;version=1.0.0;q=0.8,\
///     application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
/// assert_eq!(negotiate(Some(native)), Exposition::Protobuf);
/// let classic = "application/openmetrics-text;version=1.0.0,\
///     application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
/// assert_eq!(negotiate(Some(classic)), Exposition::Text(TextFormat::OpenMetrics));
/// assert_eq!(negotiate(Some("application/openmetrics-text;version=1.0.0,text/plain;q=0.5")),
///            Exposition::Text(TextFormat::OpenMetrics));
/// assert_eq!(negotiate(None), Exposition::Text(TextFormat::Prometheus));
/// ```
pub fn negotiate(accept: Option<&str>) -> Exposition {
    let default = Exposition::Text(TextFormat::Prometheus);
    let Some(accept) = accept else {
        return default;
    };
    let mut ranges: Vec<(f64, usize, Option<Exposition>)> = Vec::new();
    for (order, range) in accept.split(',').enumerate() {
        let mut parts = range.split(';').map(str::trim);
        let media = parts.next().unwrap_or("").to_ascii_lowercase();
        let (mut q, mut proto, mut encoding, mut version) = (1.0f64, None, None, None);
        for p in parts {
            let Some((k, v)) = p.split_once('=') else {
                continue;
            };
            let v = v.trim().trim_matches('"');
            match k.trim().to_ascii_lowercase().as_str() {
                "q" => {
                    q = v
                        .parse()
                        .ok()
                        .filter(|q: &f64| q.is_finite())
                        .unwrap_or(0.0)
                }
                "proto" => proto = Some(v.to_owned()),
                "encoding" => encoding = Some(v.to_owned()),
                "version" => version = Some(v.to_owned()),
                _ => {}
            }
        }
        let served = match media.as_str() {
            "application/vnd.google.protobuf"
                if proto.as_deref() == Some("io.prometheus.client.MetricFamily")
                    && encoding.as_deref() == Some("delimited") =>
            {
                Some(Exposition::Protobuf)
            }
            "application/openmetrics-text"
                if matches!(version.as_deref(), None | Some("1.0.0") | Some("0.0.1")) =>
            {
                Some(Exposition::Text(TextFormat::OpenMetrics))
            }
            "text/plain" if matches!(version.as_deref(), None | Some("0.0.4")) => {
                Some(Exposition::Text(TextFormat::Prometheus))
            }
            _ => None,
        };
        if q > 0.0 {
            ranges.push((q, order, served));
        }
    }
    ranges.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    ranges
        .into_iter()
        .find_map(|(_, _, served)| served)
        .unwrap_or(default)
}

/// The body of a scrape in `exposition`.
pub fn render(registry: &Registry, exposition: Exposition) -> Vec<u8> {
    match exposition {
        Exposition::Protobuf => {
            let mut out = Vec::new();
            registry.encode_protobuf(&mut out);
            out
        }
        Exposition::Text(f) => registry.encode_text(f).into_bytes(),
    }
}

/// How a [`MetricsServer`] treats its clients: limits, deadlines and who may connect.
///
/// The defaults suit a Prometheus server or two scraping every few seconds, and bound what
/// any other client can take: 2 workers, 512 connections, heads of at most 16 KiB (request
/// line 8 KiB, 100 fields), 10 s to send a head or take a response (Prometheus' default
/// scrape timeout), 75 s idle keep-alive (above the default 60 s scrape interval, so the
/// scraper keeps its connection), 1,000 requests per connection, 256 MiB of responses
/// waiting to be sent, every client address.
///
/// ```no_run
/// use std::sync::Arc;
/// use std::time::Duration;
/// use picollo_export::server::{MetricsServer, ServerOptions};
/// use picollo_export::Registry;
///
/// let registry = Arc::new(Registry::new());
/// let options = ServerOptions::new()
///     .allow(["10.0.0.0/8".parse()?, "127.0.0.1".parse()?])
///     .write_timeout(Duration::from_secs(5));
/// // Reachable from the 10/8 network; other clients get 403.
/// let _server = MetricsServer::bind_with("0.0.0.0:9464", registry, options)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct ServerOptions {
    workers: usize,
    max_connections: usize,
    max_request_line: usize,
    max_head: usize,
    max_headers: usize,
    header_timeout: Duration,
    write_timeout: Duration,
    idle_timeout: Duration,
    max_requests_per_connection: u64,
    max_pending_bytes: usize,
    allow: Option<Vec<IpNet>>,
}

impl Default for ServerOptions {
    fn default() -> Self {
        Self::new()
    }
}

impl ServerOptions {
    /// The defaults (see the type's docs).
    pub fn new() -> Self {
        ServerOptions {
            workers: 2,
            max_connections: 512,
            max_request_line: 8 << 10,
            max_head: 16 << 10,
            max_headers: 100,
            header_timeout: Duration::from_secs(10),
            write_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(75),
            max_requests_per_connection: 1_000,
            max_pending_bytes: 256 << 20,
            allow: None,
        }
    }

    /// Threads rendering scrapes concurrently (at least 1; default 2). Connections never
    /// hold one while they wait for the network.
    pub fn workers(mut self, n: usize) -> Self {
        self.workers = n.max(1);
        self
    }

    /// Open connections at most (at least 1; default 512). Each costs a file descriptor and
    /// at most [`ServerOptions::max_head`] bytes of buffer, plus its response while sent.
    pub fn max_connections(mut self, n: usize) -> Self {
        self.max_connections = n.max(1);
        self
    }

    /// The longest request line in bytes (default 8 KiB; longer: 414).
    pub fn max_request_line(mut self, bytes: usize) -> Self {
        self.max_request_line = bytes.max(16);
        self
    }

    /// The longest request head in bytes, request line and header fields together (default
    /// 16 KiB; longer: 431).
    pub fn max_head(mut self, bytes: usize) -> Self {
        self.max_head = bytes.max(32);
        self
    }

    /// The most header fields in a request (default 100; more: 431).
    pub fn max_headers(mut self, n: usize) -> Self {
        self.max_headers = n;
        self
    }

    /// How long a client may take to send a request head, from its first byte (default
    /// 10 s); then the connection is closed.
    pub fn header_timeout(mut self, t: Duration) -> Self {
        self.header_timeout = t;
        self
    }

    /// How long a client may take to receive a whole response (default 10 s); then the
    /// connection is closed.
    pub fn write_timeout(mut self, t: Duration) -> Self {
        self.write_timeout = t;
        self
    }

    /// How long a connection may wait for its next request (default 75 s); then it is
    /// closed.
    pub fn idle_timeout(mut self, t: Duration) -> Self {
        self.idle_timeout = t;
        self
    }

    /// Requests served on one connection before the server closes it (at least 1; default
    /// 1,000).
    pub fn max_requests_per_connection(mut self, n: u64) -> Self {
        self.max_requests_per_connection = n.max(1);
        self
    }

    /// The most bytes of responses waiting to be sent, all connections together (default
    /// 256 MiB; at least one response is always kept). Past it, the connections that have
    /// been taking their response longest (the slowest readers) are closed: many clients
    /// that ask and never read cannot make the server hold a scrape for each.
    pub fn max_pending_bytes(mut self, bytes: usize) -> Self {
        self.max_pending_bytes = bytes;
        self
    }

    /// Serves only TCP clients whose address is in one of `nets`; the others get 403 and
    /// are disconnected without their request being read. Adds to earlier calls. Unix-socket
    /// clients are not concerned (the socket's file permissions decide).
    pub fn allow(mut self, nets: impl IntoIterator<Item = IpNet>) -> Self {
        self.allow.get_or_insert_with(Vec::new).extend(nets);
        self
    }

    /// Whether a TCP client at `ip` may connect.
    pub fn allows(&self, ip: std::net::IpAddr) -> bool {
        self.allow
            .as_ref()
            .is_none_or(|nets| nets.iter().any(|n| n.contains(ip)))
    }

    fn head_limits(&self) -> http::HeadLimits {
        http::HeadLimits {
            request_line: self.max_request_line,
            head: self.max_head.max(self.max_request_line + 4),
            headers: self.max_headers,
        }
    }
}

/// What a [`MetricsServer`] has done since it started: totals, read with relaxed loads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServerStats {
    /// Connections accepted (allowed or not).
    pub connections: u64,
    /// Connections open now.
    pub open: u64,
    /// Responses sent completely (any status).
    pub responses: u64,
    /// Scrapes rendered (`GET` or `HEAD /metrics`).
    pub scrapes: u64,
    /// Requests refused with a 4xx status (bad, too long, wrong path or method).
    pub client_errors: u64,
    /// Connections refused by the allow-list (403).
    pub forbidden: u64,
    /// Idle or trickling connections closed to make room for a new one.
    pub evicted: u64,
    /// New connections refused with 503, every connection being busy.
    pub overloaded: u64,
    /// Connections closed because a head, a response or the next request took too long.
    pub timed_out: u64,
    /// Renders that panicked (answered 500).
    pub panics: u64,
}

/// Where a [`MetricsServer`] listens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Endpoint {
    /// A TCP address.
    Tcp(SocketAddr),
    /// A Unix socket path.
    Unix(PathBuf),
}

impl core::fmt::Display for Endpoint {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Self::Tcp(a) => write!(f, "http://{a}/metrics"),
            Self::Unix(p) => write!(f, "unix:{}", p.display()),
        }
    }
}

/// A running `/metrics` endpoint. Stops when dropped (or by [`MetricsServer::shutdown`]).
///
/// `GET` (or `HEAD`) `/metrics` gets the exposition negotiated from `Accept`; other paths
/// 404, other methods 405. HTTP/1.0 and 1.1, keep-alive and pipelining. One I/O thread and
/// [`ServerOptions::workers`] render threads, whatever the number of clients: see the
/// [module docs](self) for what it withstands. A scrape reads every histogram without
/// stalling its recorders.
///
/// ```no_run
/// use std::sync::Arc;
/// use picollo_export::{server::MetricsServer, Registry};
///
/// let registry = Arc::new(Registry::new());
/// // Local scrapers only; see the module docs to expose it.
/// let server = MetricsServer::bind("127.0.0.1:9464", registry.clone())?;
/// println!("serving on {}", server.endpoint());
/// # Ok::<(), picollo_export::ExportError>(())
/// ```
pub struct MetricsServer {
    endpoint: Endpoint,
    shared: Arc<io::Shared>,
    threads: Vec<JoinHandle<()>>,
}

impl MetricsServer {
    /// Listens on `addr` (port 0 picks a free port; see [`MetricsServer::local_addr`]) and
    /// serves `registry` with the default [`ServerOptions`].
    ///
    /// # Errors
    /// [`ExportError::Io`] when the address cannot be bound.
    pub fn bind(addr: impl ToSocketAddrs, registry: Arc<Registry>) -> Result<Self, ExportError> {
        Self::bind_with(addr, registry, ServerOptions::new())
    }

    /// [`MetricsServer::bind`] with `options`.
    ///
    /// # Errors
    /// [`ExportError::Io`] when the address cannot be bound or a thread cannot start.
    pub fn bind_with(
        addr: impl ToSocketAddrs,
        registry: Arc<Registry>,
        options: ServerOptions,
    ) -> Result<Self, ExportError> {
        let listener = TcpListener::bind(addr).map_err(|e| {
            ExportError::Io(std::io::Error::new(
                e.kind(),
                format!("cannot listen for /metrics: {e}"),
            ))
        })?;
        let endpoint = Endpoint::Tcp(listener.local_addr()?);
        Self::start(io::Listener::Tcp(listener), endpoint, registry, options)
    }

    /// Listens on the Unix socket `path` and serves `registry` with the default
    /// [`ServerOptions`]. A socket file left there by a process that is gone is replaced;
    /// any other file, or a socket someone listens on, is an error. The socket is removed
    /// when the server stops. Who may scrape is decided by the file's permissions (set them
    /// with [`std::fs::set_permissions`], or create it in a directory only the scraper can
    /// enter).
    ///
    /// # Errors
    /// [`ExportError::Io`] when the path is taken or cannot be bound.
    pub fn bind_unix(path: impl AsRef<Path>, registry: Arc<Registry>) -> Result<Self, ExportError> {
        Self::bind_unix_with(path, registry, ServerOptions::new())
    }

    /// [`MetricsServer::bind_unix`] with `options` (the allow-list does not apply).
    ///
    /// # Errors
    /// As [`MetricsServer::bind_unix`].
    pub fn bind_unix_with(
        path: impl AsRef<Path>,
        registry: Arc<Registry>,
        options: ServerOptions,
    ) -> Result<Self, ExportError> {
        let path = path.as_ref();
        let listener = io::bind_unix(path)?;
        Self::start(
            io::Listener::Unix(listener),
            Endpoint::Unix(path.to_owned()),
            registry,
            options,
        )
    }

    fn start(
        listener: io::Listener,
        endpoint: Endpoint,
        registry: Arc<Registry>,
        options: ServerOptions,
    ) -> Result<Self, ExportError> {
        let (shared, threads) = io::start(listener, registry, options)?;
        Ok(MetricsServer {
            endpoint,
            shared,
            threads,
        })
    }

    /// The TCP address it listens on (`None` on a Unix socket).
    pub fn local_addr(&self) -> Option<SocketAddr> {
        match self.endpoint {
            Endpoint::Tcp(a) => Some(a),
            Endpoint::Unix(_) => None,
        }
    }

    /// Where it listens.
    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    /// What the server has done so far.
    pub fn stats(&self) -> ServerStats {
        self.shared.stats()
    }

    /// Stops serving (open connections are closed, a scrape being rendered is finished) and
    /// waits for the server's threads.
    pub fn shutdown(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        self.shared.stopping.store(true, Ordering::Release);
        self.shared.wake();
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
        if let Endpoint::Unix(path) = &self.endpoint {
            let _ = std::fs::remove_file(path);
        }
    }
}

impl core::fmt::Debug for MetricsServer {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("MetricsServer")
            .field("endpoint", &self.endpoint)
            .finish_non_exhaustive()
    }
}

impl Drop for MetricsServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Whether the server is stopping (shared with its threads).
fn stopping(flag: &AtomicBool) -> bool {
    flag.load(Ordering::Acquire)
}
