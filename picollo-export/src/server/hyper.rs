//! The `/metrics` endpoint on hyper 1 and tokio (feature `server-hyper`), for programs that
//! already run tokio, or that want hyper's HTTP/1.1 implementation: the same answers,
//! limits, deadlines, connection cap with eviction, allow-list and Unix socket as
//! [`MetricsServer`](super::MetricsServer), driven by [`ServerOptions`].
//!
//! - [`serve_tcp`] and [`serve_unix`] serve on a listener in the caller's runtime until a
//!   shutdown future completes;
//! - [`HyperMetricsServer`] runs them on a thread of its own with a current-thread runtime
//!   (one thread plus at most [`ServerOptions::workers`] render threads).
//!
//! Request heads are bounded by [`ServerOptions::max_head`] and
//! [`ServerOptions::max_headers`] (hyper answers 431; it counts the request line in the
//! head, so a long one gets 431 rather than 414); the head deadline is hyper's header read
//! timeout; request bodies are never stored: what a client sends of one is discarded (at
//! most 256 KiB, for at most 2 s, so that the close does not reset the response), the
//! response says `Connection: close` and the connection is closed; a response not taken within
//! [`ServerOptions::write_timeout`] of the first stalled write, or a connection that reads
//! nothing for [`ServerOptions::idle_timeout`], is closed. (hyper's head timer also runs
//! while a kept-alive connection waits for its next request: such a connection is closed
//! after [`ServerOptions::header_timeout`]; the scraper reconnects.)
//! [`ServerOptions::max_pending_bytes`] does not apply: each connection holds at most its
//! own response, and at most [`ServerOptions::max_connections`] are open. Renders run on tokio's blocking
//! pool, at most [`ServerOptions::workers`] at once; one that panics answers 500.
//!
//! ```no_run
//! use std::sync::Arc;
//! use picollo_export::server::{hyper::serve_tcp, ServerOptions};
//! use picollo_export::Registry;
//!
//! let registry = Arc::new(Registry::new());
//! // In a program that runs tokio already, only the `block_on` body is needed.
//! let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
//! runtime.block_on(async {
//!     let listener = tokio::net::TcpListener::bind("127.0.0.1:9464").await?;
//!     let (_stop, stopped) = tokio::sync::oneshot::channel::<()>();
//!     // Serves until `_stop` is sent to or dropped.
//!     serve_tcp(listener, registry, ServerOptions::new(), stopped).await
//! })?;
//! # Ok::<(), std::io::Error>(())
//! ```

use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::path::Path;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use ::hyper::body::Incoming;
use ::hyper::header::{
    HeaderValue, ALLOW, CONNECTION, CONTENT_LENGTH, CONTENT_TYPE, TRANSFER_ENCODING,
};
use ::hyper::server::conn::http1;
use ::hyper::service::service_fn;
use ::hyper::{Method, Request, Response, StatusCode};
use bytes::Bytes;
use http_body_util::Full;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::sync::Semaphore;
use tokio::time::Sleep;

use super::{http, negotiate, render, Endpoint, ServerOptions};
use crate::{ExportError, Registry};

/// One connection's activity, for eviction.
struct Activity {
    /// Nanoseconds since the server's epoch of the last byte read.
    last_read: AtomicU64,
    /// A scrape of this connection is rendering or being written.
    busy: AtomicBool,
}

struct Tracked {
    activity: Arc<Activity>,
    abort: tokio::task::AbortHandle,
}

/// What every connection of one server shares.
struct ServerState {
    registry: Arc<Registry>,
    options: ServerOptions,
    renders: Semaphore,
    epoch: Instant,
    conns: Mutex<HashMap<u64, Tracked>>,
    next_id: AtomicU64,
}

impl ServerState {
    fn now(&self) -> u64 {
        self.epoch.elapsed().as_nanos() as u64
    }

    /// Makes room for one more connection: closes the one idle longest; false when every
    /// connection is busy.
    fn admit(&self) -> bool {
        let mut conns = self.conns.lock().unwrap_or_else(|e| e.into_inner());
        if conns.len() < self.options.max_connections {
            return true;
        }
        let victim = conns
            .iter()
            .filter(|(_, t)| !t.activity.busy.load(Relaxed))
            .min_by_key(|(_, t)| t.activity.last_read.load(Relaxed))
            .map(|(&id, _)| id);
        let removed = victim.and_then(|id| conns.remove(&id));
        drop(conns);
        match removed {
            Some(t) => {
                t.abort.abort();
                true
            }
            None => false,
        }
    }

    fn forget(&self, id: u64) {
        self.conns
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&id);
    }
}

/// Removes a connection from the table when its task ends (or is aborted).
struct Forget(Arc<ServerState>, u64);

impl Drop for Forget {
    fn drop(&mut self) {
        self.0.forget(self.1);
    }
}

/// Serves `registry` on `listener` until `shutdown` completes; then open connections are
/// closed.
///
/// # Errors
/// Never in practice: accept errors (a client gone, descriptors exhausted) are waited out.
pub async fn serve_tcp(
    listener: tokio::net::TcpListener,
    registry: Arc<Registry>,
    options: ServerOptions,
    shutdown: impl Future,
) -> io::Result<()> {
    let ctx = context(registry, options);
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            _ = &mut shutdown => break,
            a = listener.accept() => a,
        };
        match accepted {
            Ok((stream, peer)) => {
                let _ = stream.set_nodelay(true);
                spawn_connection(&ctx, stream, Some(peer.ip())).await;
            }
            Err(e) => accept_failed(&ctx, e).await,
        }
    }
    close_all(&ctx);
    Ok(())
}

/// [`serve_tcp`] on a Unix socket (the allow-list does not apply). Bind the listener with
/// [`tokio::net::UnixListener::bind`].
///
/// # Errors
/// As [`serve_tcp`].
pub async fn serve_unix(
    listener: tokio::net::UnixListener,
    registry: Arc<Registry>,
    options: ServerOptions,
    shutdown: impl Future,
) -> io::Result<()> {
    let ctx = context(registry, options);
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            _ = &mut shutdown => break,
            a = listener.accept() => a,
        };
        match accepted {
            Ok((stream, _)) => spawn_connection(&ctx, stream, None).await,
            Err(e) => accept_failed(&ctx, e).await,
        }
    }
    close_all(&ctx);
    Ok(())
}

fn context(registry: Arc<Registry>, options: ServerOptions) -> Arc<ServerState> {
    Arc::new(ServerState {
        registry,
        renders: Semaphore::new(options.workers),
        options,
        epoch: Instant::now(),
        conns: Mutex::new(HashMap::new()),
        next_id: AtomicU64::new(0),
    })
}

async fn accept_failed(ctx: &ServerState, e: io::Error) {
    // Out of descriptors: make room, or wait rather than spin. Other errors concern one
    // client that went away.
    if matches!(
        e.raw_os_error(),
        Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM)
    ) {
        let removed = {
            let mut conns = ctx.conns.lock().unwrap_or_else(|e| e.into_inner());
            let victim = conns
                .iter()
                .filter(|(_, t)| !t.activity.busy.load(Relaxed))
                .min_by_key(|(_, t)| t.activity.last_read.load(Relaxed))
                .map(|(&id, _)| id);
            victim.and_then(|id| conns.remove(&id))
        };
        match removed {
            Some(t) => t.abort.abort(),
            None => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}

fn close_all(ctx: &ServerState) {
    let conns = std::mem::take(&mut *ctx.conns.lock().unwrap_or_else(|e| e.into_inner()));
    for t in conns.into_values() {
        t.abort.abort();
    }
}

async fn refuse<S: AsyncWrite + Unpin>(mut stream: S, status: u16) {
    let response = http::error_response(status, false, false);
    // Best effort, without waiting on the client.
    let _ = tokio::time::timeout(Duration::from_millis(100), async {
        let _ = stream.write_all(&response).await;
        let _ = stream.shutdown().await;
    })
    .await;
}

async fn spawn_connection<S>(ctx: &Arc<ServerState>, stream: S, peer: Option<IpAddr>)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    if peer.is_some_and(|ip| !ctx.options.allows(ip)) {
        tokio::spawn(refuse(stream, 403));
        return;
    }
    if !ctx.admit() {
        tokio::spawn(refuse(stream, 503));
        return;
    }
    let id = ctx.next_id.fetch_add(1, Relaxed);
    let activity = Arc::new(Activity {
        last_read: AtomicU64::new(ctx.now()),
        busy: AtomicBool::new(false),
    });
    let io = TimedIo {
        io: stream,
        ctx: ctx.clone(),
        activity: activity.clone(),
        read_sleep: None,
        write_sleep: None,
    };
    let service = {
        let (ctx, activity) = (ctx.clone(), activity.clone());
        service_fn(move |req| respond(ctx.clone(), activity.clone(), req))
    };
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(ctx.options.header_timeout)
        .max_header_size(ctx.options.max_head)
        // The read buffer (heads and pipelined requests; bodies are never read): twice the
        // head limit, at least hyper's minimum.
        .max_buf_size((2 * ctx.options.max_head).max(8 << 10))
        .max_headers(ctx.options.max_headers)
        // One flat buffer written with send(MSG_NOSIGNAL), never writev (see TimedIo).
        .writev(false)
        .keep_alive(true);
    let connection = builder.serve_connection(TokioIo::new(io), service);
    let forget = Forget(ctx.clone(), id);
    // Hold the table's lock until the task is in it, so that a quick end finds it there.
    let mut conns = ctx.conns.lock().unwrap_or_else(|e| e.into_inner());
    let task = tokio::spawn(async move {
        let _forget = forget;
        // A client error or timeout ends the connection; nothing to report.
        let _ = connection.await;
    });
    conns.insert(
        id,
        Tracked {
            activity,
            abort: task.abort_handle(),
        },
    );
}

async fn respond(
    ctx: Arc<ServerState>,
    activity: Arc<Activity>,
    req: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let has_body = req.headers().contains_key(TRANSFER_ENCODING)
        || req
            .headers()
            .get(CONTENT_LENGTH)
            .is_some_and(|v| v.as_bytes().iter().any(|&b| b != b'0'));
    // (hyper leaves the body out of HEAD responses itself.)
    let mut response = if req.uri().path() != "/metrics" {
        discard(req.into_body(), has_body).await;
        error(404)
    } else if !matches!(*req.method(), Method::GET | Method::HEAD) {
        discard(req.into_body(), has_body).await;
        error(405)
    } else {
        let accept = req
            .headers()
            .get_all(::hyper::header::ACCEPT)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .collect::<Vec<_>>()
            .join(",");
        let exposition = negotiate((!accept.is_empty()).then_some(accept.as_str()));
        discard(req.into_body(), has_body).await;
        activity.busy.store(true, Relaxed);
        let rendered = match ctx.renders.acquire().await {
            Ok(_permit) => {
                let registry = ctx.registry.clone();
                tokio::task::spawn_blocking(move || render(&registry, exposition)).await
            }
            Err(_) => {
                activity.busy.store(false, Relaxed);
                return Ok(error(503));
            }
        };
        activity.busy.store(false, Relaxed);
        match rendered {
            Ok(body) => {
                let mut r = Response::new(Full::new(Bytes::from(body)));
                r.headers_mut().insert(
                    CONTENT_TYPE,
                    HeaderValue::from_static(exposition.content_type()),
                );
                r
            }
            // A panic in an `Exported` implementation.
            Err(_) => error(500),
        }
    };
    if has_body {
        response
            .headers_mut()
            .insert(CONNECTION, HeaderValue::from_static("close"));
    }
    Ok(response)
}

/// Discards what the client sends of a body it announced, at most
/// [`LINGER_BYTES`](super::io::LINGER_BYTES) for at most [`LINGER_TIME`](super::io::LINGER_TIME)
/// (the connection is closed after the response), so that closing does not reset the
/// connection before the client reads the response. Nothing is kept.
async fn discard(mut body: Incoming, has_body: bool) {
    use http_body_util::BodyExt;
    if !has_body {
        return;
    }
    let mut left = super::io::LINGER_BYTES;
    let _ = tokio::time::timeout(super::io::LINGER_TIME, async {
        while let Some(Ok(frame)) = body.frame().await {
            let n = frame.data_ref().map_or(0, |d| d.len());
            if n >= left {
                break;
            }
            left -= n;
        }
    })
    .await;
}

fn error(status: u16) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from_static(
        http::error_text(status).as_bytes(),
    )));
    *r.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    r.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    if status == 405 {
        r.headers_mut()
            .insert(ALLOW, HeaderValue::from_static("GET, HEAD"));
    }
    r
}

/// A connection with deadlines: a read pending for the idle timeout, or writes stalled for
/// the write timeout without the response being flushed, fail with `TimedOut`.
struct TimedIo<S> {
    io: S,
    ctx: Arc<ServerState>,
    activity: Arc<Activity>,
    read_sleep: Option<Pin<Box<Sleep>>>,
    write_sleep: Option<Pin<Box<Sleep>>>,
}

fn expired(sleep: &mut Option<Pin<Box<Sleep>>>, limit: Duration, cx: &mut Context<'_>) -> bool {
    let s = sleep.get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
    s.as_mut().poll(cx).is_ready()
}

fn timed_out() -> io::Error {
    io::Error::new(io::ErrorKind::TimedOut, "client too slow")
}

impl<S: AsyncRead + Unpin> AsyncRead for TimedIo<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        let before = buf.filled().len();
        match Pin::new(&mut this.io).poll_read(cx, buf) {
            Poll::Ready(r) => {
                this.read_sleep = None;
                if buf.filled().len() > before {
                    this.activity.last_read.store(this.ctx.now(), Relaxed);
                }
                Poll::Ready(r)
            }
            Poll::Pending => {
                if expired(&mut this.read_sleep, this.ctx.options.idle_timeout, cx) {
                    Poll::Ready(Err(timed_out()))
                } else {
                    Poll::Pending
                }
            }
        }
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for TimedIo<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        match Pin::new(&mut this.io).poll_write(cx, buf) {
            Poll::Pending if expired(&mut this.write_sleep, this.ctx.options.write_timeout, cx) => {
                Poll::Ready(Err(timed_out()))
            }
            other => other,
        }
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        match Pin::new(&mut this.io).poll_write_vectored(cx, bufs) {
            Poll::Pending if expired(&mut this.write_sleep, this.ctx.options.write_timeout, cx) => {
                Poll::Ready(Err(timed_out()))
            }
            other => other,
        }
    }

    fn is_write_vectored(&self) -> bool {
        // hyper then writes with `send(MSG_NOSIGNAL)` (tokio's TCP `poll_write`), not
        // `writev`: a client that hung up cannot raise SIGPIPE. (On a Unix socket tokio
        // writes with `write`; Rust programs ignore SIGPIPE unless they ask otherwise.)
        false
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        match Pin::new(&mut this.io).poll_flush(cx) {
            Poll::Ready(r) => {
                // The response is out: the next one gets a fresh deadline.
                this.write_sleep = None;
                Poll::Ready(r)
            }
            Poll::Pending if expired(&mut this.write_sleep, this.ctx.options.write_timeout, cx) => {
                Poll::Ready(Err(timed_out()))
            }
            Poll::Pending => Poll::Pending,
        }
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

/// A `/metrics` endpoint on hyper, on a thread of its own running a current-thread tokio
/// runtime. Stops when dropped (or by [`HyperMetricsServer::shutdown`]).
///
/// ```no_run
/// use std::sync::Arc;
/// use picollo_export::server::{hyper::HyperMetricsServer, ServerOptions};
/// use picollo_export::Registry;
///
/// let registry = Arc::new(Registry::new());
/// let server = HyperMetricsServer::bind_with("127.0.0.1:9464", registry, ServerOptions::new())?;
/// println!("serving on {}", server.endpoint());
/// # Ok::<(), picollo_export::ExportError>(())
/// ```
pub struct HyperMetricsServer {
    endpoint: Endpoint,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl HyperMetricsServer {
    /// Listens on `addr` and serves `registry` with `options`.
    ///
    /// # Errors
    /// [`ExportError::Io`] when the address cannot be bound or the runtime cannot start.
    pub fn bind_with(
        addr: impl ToSocketAddrs,
        registry: Arc<Registry>,
        options: ServerOptions,
    ) -> Result<Self, ExportError> {
        let listener = std::net::TcpListener::bind(addr).map_err(|e| {
            ExportError::Io(io::Error::new(
                e.kind(),
                format!("cannot listen for /metrics: {e}"),
            ))
        })?;
        listener.set_nonblocking(true)?;
        let endpoint = Endpoint::Tcp(listener.local_addr()?);
        Self::start(endpoint, options.workers, move |stop| async move {
            let listener = tokio::net::TcpListener::from_std(listener)?;
            serve_tcp(listener, registry, options, stop).await
        })
    }

    /// Listens on the Unix socket `path` (a stale socket file is replaced, as by
    /// [`MetricsServer::bind_unix`](super::MetricsServer::bind_unix)) and serves `registry`
    /// with `options`. The socket is removed when the server stops.
    ///
    /// # Errors
    /// [`ExportError::Io`] when the path is taken or cannot be bound.
    pub fn bind_unix_with(
        path: impl AsRef<Path>,
        registry: Arc<Registry>,
        options: ServerOptions,
    ) -> Result<Self, ExportError> {
        let path = path.as_ref();
        let listener = super::io::bind_unix(path)?;
        listener.set_nonblocking(true)?;
        Self::start(
            Endpoint::Unix(path.to_owned()),
            options.workers,
            move |stop| async move {
                let listener = tokio::net::UnixListener::from_std(listener)?;
                serve_unix(listener, registry, options, stop).await
            },
        )
    }

    fn start<F, Fut>(endpoint: Endpoint, workers: usize, serve: F) -> Result<Self, ExportError>
    where
        F: FnOnce(tokio::sync::oneshot::Receiver<()>) -> Fut + Send + 'static,
        Fut: Future<Output = io::Result<()>>,
    {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .max_blocking_threads(workers)
            .thread_name("picollo-metrics-render")
            .build()?;
        let (stop, stopped) = tokio::sync::oneshot::channel();
        let thread = std::thread::Builder::new()
            .name("picollo-metrics".into())
            .spawn(move || {
                if let Err(e) = runtime.block_on(serve(stopped)) {
                    eprintln!("picollo-export: the /metrics server stopped: {e}");
                }
            })?;
        Ok(HyperMetricsServer {
            endpoint,
            stop: Some(stop),
            thread: Some(thread),
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

    /// Stops serving and waits for the server's thread.
    pub fn shutdown(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        if let Endpoint::Unix(path) = &self.endpoint {
            let _ = std::fs::remove_file(path);
        }
    }
}

impl core::fmt::Debug for HyperMetricsServer {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("HyperMetricsServer")
            .field("endpoint", &self.endpoint)
            .finish_non_exhaustive()
    }
}

impl Drop for HyperMetricsServer {
    fn drop(&mut self) {
        self.stop();
    }
}
