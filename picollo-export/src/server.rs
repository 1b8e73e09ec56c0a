//! The `/metrics` endpoint: a small HTTP server (tiny_http) that serves a [`Registry`],
//! negotiating protobuf or text from the `Accept` header as Prometheus' client libraries do.

use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::Arc;
use std::thread::JoinHandle;

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
/// // What Prometheus 2.42 sends with --enable-feature=native-histograms:
/// let prom = "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;\
///             encoding=delimited;q=0.7,text/plain;version=0.0.4;q=0.3,*/*;q=0.2";
/// assert_eq!(negotiate(Some(prom)), Exposition::Protobuf);
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

/// A running `/metrics` endpoint. Stops when dropped (or by [`MetricsServer::shutdown`]).
///
/// One thread serves the requests one at a time: a scrape reads every histogram without
/// stalling its recorders, and Prometheus scrapes an endpoint at most once at a time.
/// `GET /metrics` gets the exposition; other paths 404, other methods 405.
///
/// ```no_run
/// use std::sync::Arc;
/// use picollo_export::{server::MetricsServer, Registry};
///
/// let registry = Arc::new(Registry::new());
/// let server = MetricsServer::bind("127.0.0.1:9464", registry.clone())?;
/// println!("serving on http://{}/metrics", server.local_addr());
/// # Ok::<(), picollo_export::ExportError>(())
/// ```
pub struct MetricsServer {
    server: Arc<tiny_http::Server>,
    addr: SocketAddr,
    thread: Option<JoinHandle<()>>,
}

impl MetricsServer {
    /// Listens on `addr` (port 0 picks a free port; see [`MetricsServer::local_addr`]) and
    /// serves `registry`.
    ///
    /// # Errors
    /// [`ExportError::Io`] when the address cannot be bound.
    pub fn bind(addr: impl ToSocketAddrs, registry: Arc<Registry>) -> Result<Self, ExportError> {
        let server = tiny_http::Server::http(addr).map_err(|e| {
            ExportError::Io(std::io::Error::other(format!(
                "cannot listen for /metrics: {e}"
            )))
        })?;
        let addr = server.server_addr().to_ip().ok_or_else(|| {
            ExportError::Io(std::io::Error::other(
                "the /metrics listener has no IP address",
            ))
        })?;
        let server = Arc::new(server);
        let serving = server.clone();
        let thread = std::thread::Builder::new()
            .name("picollo-metrics".into())
            .spawn(move || {
                for request in serving.incoming_requests() {
                    respond(&registry, request);
                }
            })?;
        Ok(MetricsServer {
            server,
            addr,
            thread: Some(thread),
        })
    }

    /// The address it listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops serving and waits for the serving thread.
    pub fn shutdown(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        self.server.unblock();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl core::fmt::Debug for MetricsServer {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("MetricsServer")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl Drop for MetricsServer {
    fn drop(&mut self) {
        self.stop();
    }
}

fn respond(registry: &Registry, request: tiny_http::Request) {
    let path = request.url().split('?').next().unwrap_or("");
    let response = if path != "/metrics" {
        plain(404, "not found: the metrics are at /metrics\n")
    } else if !matches!(
        request.method(),
        tiny_http::Method::Get | tiny_http::Method::Head
    ) {
        plain(405, "method not allowed: use GET\n")
    } else {
        let accept = request
            .headers()
            .iter()
            .find(|h| h.field.equiv("Accept"))
            .map(|h| h.value.as_str().to_owned());
        let exposition = negotiate(accept.as_deref());
        let body = render(registry, exposition);
        tiny_http::Response::from_data(body).with_header(header(exposition.content_type()))
    };
    // A client that hung up is not an error the server can do anything about.
    let _ = request.respond(response);
}

fn plain(status: u16, text: &str) -> tiny_http::Response<std::io::Cursor<Vec<u8>>> {
    tiny_http::Response::from_data(text.as_bytes().to_vec())
        .with_status_code(status)
        .with_header(header("text/plain; charset=utf-8"))
}

fn header(content_type: &str) -> tiny_http::Header {
    // Both parts are ASCII constants.
    tiny_http::Header::from_bytes(&b"Content-Type"[..], content_type.as_bytes())
        .unwrap_or_else(|()| unreachable!("ASCII header"))
}
