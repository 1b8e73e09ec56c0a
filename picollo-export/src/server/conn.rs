//! One connection's state machine, apart from sockets and threads: the I/O thread
//! (`io.rs`) drives it over a socket when poll says the socket is ready, and
//! `server::testing` (the fuzz targets) drives the same code over an in-memory socket.
//!
//! A connection is in one of four states: reading a request head (into a buffer bounded by
//! the head limit), waiting for a worker (no I/O), writing a response, or lingering (its
//! write side shut, discarding what the client still sends for a bounded time before the
//! close, so that a client that sent a body reads its response rather than a reset). Each
//! state has a deadline, which the I/O thread enforces.

use std::io::{self, IoSlice};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

use super::http::{self, Head, HeadLimits, Method, Parsed};
use super::{negotiate, render, Exposition, ServerOptions, ServerStats};
use crate::Registry;

/// Bytes a closing connection may still send (discarded) before it is reset.
pub(super) const LINGER_BYTES: usize = 256 << 10;
/// How long a closing connection is given to stop sending.
pub(super) const LINGER_TIME: Duration = Duration::from_secs(2);

/// What a connection reads from and writes to, without blocking: a socket, or an in-memory
/// one in tests. `WouldBlock` means "not now"; the I/O thread retries when poll says so.
pub(super) trait Transport {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize>;
    fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize>;
    fn shutdown_write(&mut self);
}

/// What a server has done: the totals behind [`ServerStats`].
#[derive(Default)]
pub(super) struct Counters {
    pub connections: AtomicU64,
    pub open: AtomicU64,
    pub responses: AtomicU64,
    pub scrapes: AtomicU64,
    pub client_errors: AtomicU64,
    pub forbidden: AtomicU64,
    pub evicted: AtomicU64,
    pub overloaded: AtomicU64,
    pub timed_out: AtomicU64,
    pub panics: AtomicU64,
}

impl Counters {
    pub(crate) fn stats(&self) -> ServerStats {
        ServerStats {
            connections: self.connections.load(Relaxed),
            open: self.open.load(Relaxed),
            responses: self.responses.load(Relaxed),
            scrapes: self.scrapes.load(Relaxed),
            client_errors: self.client_errors.load(Relaxed),
            forbidden: self.forbidden.load(Relaxed),
            evicted: self.evicted.load(Relaxed),
            overloaded: self.overloaded.load(Relaxed),
            timed_out: self.timed_out.load(Relaxed),
            panics: self.panics.load(Relaxed),
        }
    }
}

pub(super) fn bump(c: &AtomicU64) {
    c.fetch_add(1, Relaxed);
}

/// A scrape a connection asks a worker for.
#[derive(Clone, Copy)]
pub(super) struct Scrape {
    pub exposition: Exposition,
    pub head_only: bool,
    pub keep_alive: bool,
}

/// A response for a connection to send.
pub(super) struct Response {
    pub head: Vec<u8>,
    pub body: Vec<u8>,
    pub keep_alive: bool,
}

/// Renders a scrape, as a worker does: a render that panics (in an [`crate::Exported`]
/// implementation, say) answers 500 and closes the connection.
pub(super) fn render_scrape(registry: &Registry, scrape: &Scrape, counters: &Counters) -> Response {
    let rendered = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        render(registry, scrape.exposition)
    }));
    match rendered {
        Ok(body) => {
            bump(&counters.scrapes);
            let head = http::response_head(
                200,
                scrape.exposition.content_type(),
                body.len(),
                scrape.keep_alive,
            );
            let body = if scrape.head_only { Vec::new() } else { body };
            Response {
                head,
                body,
                keep_alive: scrape.keep_alive,
            }
        }
        Err(_) => {
            bump(&counters.panics);
            Response {
                head: http::error_response(500, scrape.head_only, false),
                body: Vec::new(),
                keep_alive: false,
            }
        }
    }
}

/// What a connection is doing.
pub(super) enum State {
    /// Waiting for (the rest of) a request head. `scanned`: bytes of `buf` already searched
    /// for the end of the head.
    Reading { scanned: usize },
    /// A worker renders its scrape.
    Rendering,
    /// Sending `head` then `body`; `sent` bytes of both are out.
    Writing {
        head: Vec<u8>,
        body: Vec<u8>,
        sent: usize,
        keep_alive: bool,
    },
    /// Write side shut; discarding input until the client closes or the linger ends.
    Lingering { discarded: usize },
}

/// What a connection waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Interest {
    Read,
    Write,
    /// Its render: no I/O.
    Nothing,
}

/// What the connections of one server share while they advance.
pub(super) struct Ctx<'a> {
    pub options: &'a ServerOptions,
    pub limits: &'a HeadLimits,
    pub counters: &'a Counters,
    /// Where input is read before it is kept, and discarded input goes.
    pub scratch: &'a mut [u8],
}

/// What became of a connection after it advanced.
pub(super) enum Outcome {
    /// It waits for its socket ([`Conn::interest`]).
    Keep,
    /// It is done: drop it.
    Close,
    /// It waits for this scrape; give the response to [`Conn::respond`].
    Render(Scrape),
}

pub(super) struct Conn<S> {
    pub stream: S,
    /// Received bytes not yet parsed: a partial head, or pipelined requests.
    buf: Vec<u8>,
    pub state: State,
    /// When the current state's clock started: the wait for the next request, the first
    /// byte of a head, the start of a response or of the linger.
    pub since: Instant,
    /// Whether `Reading` has received a byte of the current head (then the head timeout
    /// applies instead of the idle timeout).
    pub started: bool,
    requests: u64,
}

impl<S: Transport> Conn<S> {
    pub(crate) fn new(stream: S) -> Self {
        Conn {
            stream,
            buf: Vec::new(),
            state: State::Reading { scanned: 0 },
            since: Instant::now(),
            started: false,
            requests: 0,
        }
    }

    /// When the current state times out (never while rendering).
    pub(crate) fn deadline(&self, o: &ServerOptions) -> Option<Instant> {
        let limit = match self.state {
            State::Reading { .. } if self.started => o.header_timeout,
            State::Reading { .. } => o.idle_timeout,
            State::Rendering => return None,
            State::Writing { .. } => o.write_timeout,
            State::Lingering { .. } => LINGER_TIME,
        };
        Some(self.since + limit)
    }

    pub(crate) fn interest(&self) -> Interest {
        match self.state {
            State::Reading { .. } | State::Lingering { .. } => Interest::Read,
            State::Writing { .. } => Interest::Write,
            State::Rendering => Interest::Nothing,
        }
    }

    /// Input bytes held (a partial head, pipelined requests): at most the head limit.
    #[cfg(feature = "testing")]
    pub(crate) fn buffered(&self) -> usize {
        self.buf.len()
    }

    /// Response bytes still to send.
    pub(crate) fn pending(&self) -> usize {
        match &self.state {
            State::Writing {
                head, body, sent, ..
            } => head.len() + body.len() - sent,
            _ => 0,
        }
    }

    /// Starts sending the response to the scrape it waited for; [`Conn::advance`] sends it.
    pub(crate) fn respond(&mut self, r: Response) {
        self.state = State::Writing {
            head: r.head,
            body: r.body,
            sent: 0,
            keep_alive: r.keep_alive,
        };
        self.since = Instant::now();
    }

    /// Runs the connection as far as it can go without blocking.
    pub(crate) fn advance(&mut self, cx: &mut Ctx<'_>) -> Outcome {
        loop {
            let step = match self.state {
                State::Reading { .. } => self.read_step(cx),
                State::Rendering => Some(Outcome::Keep),
                State::Writing { .. } => self.write_step(cx),
                State::Lingering { .. } => Some(self.linger(cx)),
            };
            if let Some(outcome) = step {
                return outcome;
            }
        }
    }

    /// Reading: parses what is buffered first (pipelined requests), then reads more. `None`
    /// when the connection can go on at once (a request answered, bytes read).
    fn read_step(&mut self, cx: &mut Ctx<'_>) -> Option<Outcome> {
        let State::Reading { scanned } = &mut self.state else {
            return None;
        };
        match http::parse(&self.buf, *scanned, cx.limits) {
            Parsed::Complete(head, used) => {
                self.buf.drain(..used);
                return self.dispatch(head, cx).map(Outcome::Render);
            }
            Parsed::Refused(status) => {
                bump(&cx.counters.client_errors);
                self.buf.clear();
                self.respond(error(status, false, false));
                return None;
            }
            Parsed::Incomplete { scanned: s } => *scanned = s,
        }
        // At most up to the head limit: a full buffer is refused above.
        let room = (cx.limits.head - self.buf.len()).min(cx.scratch.len());
        match self.stream.read(&mut cx.scratch[..room]) {
            Ok(0) => Some(Outcome::Close),
            Ok(n) => {
                self.buf.extend_from_slice(&cx.scratch[..n]);
                if !self.started {
                    self.started = true;
                    self.since = Instant::now();
                }
                None
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Some(Outcome::Keep),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => None,
            Err(_) => Some(Outcome::Close),
        }
    }

    /// Writing: sends what is left of the response, then reads the next request (keep-alive)
    /// or shuts its side and lingers. `None` when the response went out whole.
    fn write_step(&mut self, cx: &mut Ctx<'_>) -> Option<Outcome> {
        let State::Writing {
            head,
            body,
            sent,
            keep_alive,
        } = &mut self.state
        else {
            return None;
        };
        let total = head.len() + body.len();
        while *sent < total {
            let slices = if *sent < head.len() {
                [IoSlice::new(&head[*sent..]), IoSlice::new(body)]
            } else {
                [IoSlice::new(&body[*sent - head.len()..]), IoSlice::new(&[])]
            };
            match self.stream.write_vectored(&slices) {
                Ok(0) => return Some(Outcome::Close),
                Ok(n) => *sent += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Some(Outcome::Keep),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return Some(Outcome::Close),
            }
        }
        let keep_alive = *keep_alive;
        bump(&cx.counters.responses);
        self.requests += 1;
        if keep_alive && self.requests < cx.options.max_requests_per_connection {
            self.state = State::Reading { scanned: 0 };
            self.started = !self.buf.is_empty();
        } else {
            self.buf = Vec::new();
            self.stream.shutdown_write();
            self.state = State::Lingering { discarded: 0 };
        }
        self.since = Instant::now();
        None
    }

    /// Lingering: reads and discards what the client still sends until it closes (or sends
    /// too much).
    fn linger(&mut self, cx: &mut Ctx<'_>) -> Outcome {
        let State::Lingering { discarded } = &mut self.state else {
            return Outcome::Keep;
        };
        loop {
            match self.stream.read(cx.scratch) {
                Ok(0) => return Outcome::Close,
                Ok(n) => {
                    *discarded += n;
                    if *discarded > LINGER_BYTES {
                        return Outcome::Close;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Outcome::Keep,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return Outcome::Close,
            }
        }
    }

    /// Answers a complete request head: a scrape is returned for a worker (the connection
    /// then waits in `Rendering`), anything else is answered here.
    fn dispatch(&mut self, head: Head, cx: &Ctx<'_>) -> Option<Scrape> {
        let head_only = head.method == Method::Head;
        // The connection stays open only if the client wants it and sent no body (which is
        // never read: the rest of the input is discarded while lingering).
        let keep_alive = head.keep_alive
            && !head.has_body
            && self.requests + 1 < cx.options.max_requests_per_connection;
        if head.has_body {
            self.buf.clear();
        }
        let status = if head.path != "/metrics" {
            404
        } else if !matches!(head.method, Method::Get | Method::Head) {
            405
        } else {
            self.state = State::Rendering;
            return Some(Scrape {
                exposition: negotiate(head.accept.as_deref()),
                head_only,
                keep_alive,
            });
        };
        bump(&cx.counters.client_errors);
        self.respond(error(status, head_only, keep_alive));
        None
    }
}

/// An error response, in one buffer.
fn error(status: u16, head_only: bool, keep_alive: bool) -> Response {
    Response {
        head: http::error_response(status, head_only, keep_alive),
        body: Vec::new(),
        keep_alive,
    }
}
