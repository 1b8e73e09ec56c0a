//! The server's threads: one I/O thread polling every socket without blocking, and a fixed
//! pool of workers rendering scrapes. Each connection is a state machine (`conn.rs`) that the
//! I/O thread advances when poll says its socket is ready; the poll timeout is the nearest
//! of their deadlines.

use std::collections::HashMap;
use std::io::{self, IoSlice, Read, Write};
use std::net::{IpAddr, Shutdown, TcpListener, TcpStream};
use std::os::unix::io::{AsRawFd, RawFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::conn::{
    bump, render_scrape, Conn, Counters, Ctx, Interest, Outcome, Response, Scrape, State, Transport,
};
use super::{http, stopping, ServerOptions, ServerStats};
use crate::{ExportError, Registry};

/// Connections accepted per poll round, so that accepting cannot starve the others.
const ACCEPT_BURST: usize = 256;
/// How long accepting pauses when the process is out of file descriptors.
const ACCEPT_PAUSE: Duration = Duration::from_millis(100);

/// A listening socket.
pub(super) enum Listener {
    Tcp(TcpListener),
    Unix(UnixListener),
}

impl Listener {
    fn accept(&self) -> io::Result<(Stream, Option<IpAddr>)> {
        match self {
            Self::Tcp(l) => {
                let (s, peer) = l.accept()?;
                // Small responses go out at once; failure only costs latency.
                let _ = s.set_nodelay(true);
                Ok((Stream::Tcp(s), Some(peer.ip())))
            }
            Self::Unix(l) => Ok((Stream::Unix(l.accept()?.0), None)),
        }
    }

    fn fd(&self) -> RawFd {
        match self {
            Self::Tcp(l) => l.as_raw_fd(),
            Self::Unix(l) => l.as_raw_fd(),
        }
    }

    fn set_nonblocking(&self) -> io::Result<()> {
        match self {
            Self::Tcp(l) => l.set_nonblocking(true),
            Self::Unix(l) => l.set_nonblocking(true),
        }
    }
}

/// A client connection.
enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Stream {
    fn fd(&self) -> RawFd {
        match self {
            Self::Tcp(s) => s.as_raw_fd(),
            Self::Unix(s) => s.as_raw_fd(),
        }
    }

    fn set_nonblocking(&self) -> io::Result<()> {
        match self {
            Self::Tcp(s) => s.set_nonblocking(true),
            Self::Unix(s) => s.set_nonblocking(true),
        }
    }
}

impl Transport for Stream {
    fn shutdown_write(&mut self) {
        let _ = match self {
            Self::Tcp(s) => s.shutdown(Shutdown::Write),
            Self::Unix(s) => s.shutdown(Shutdown::Write),
        };
    }

    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Self::Tcp(s) => s.read(buf),
            Self::Unix(s) => s.read(buf),
        }
    }

    /// `writev` without the signal: `sendmsg` with `MSG_NOSIGNAL`, so that a client that
    /// hung up gets `EPIPE` here instead of killing a process that has not ignored SIGPIPE
    /// (a C or Python host, or a Rust program that restored the default).
    fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        // SAFETY: msghdr is plain data; all-zero is a valid empty header.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        // IoSlice is ABI-compatible with iovec on Unix (std guarantees it); sendmsg only
        // reads through the pointer.
        msg.msg_iov = bufs.as_ptr() as *mut libc::iovec;
        msg.msg_iovlen = bufs.len() as _;
        loop {
            // SAFETY: `msg` points at `bufs.len()` valid iovecs that outlive the call; the
            // descriptor is this stream's own.
            let n = unsafe { libc::sendmsg(self.fd(), &msg, libc::MSG_NOSIGNAL) };
            if n >= 0 {
                return Ok(n as usize);
            }
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
    }
}

/// Binds a Unix socket at `path`, replacing a stale socket file (nobody listening).
pub(super) fn bind_unix(path: &Path) -> Result<UnixListener, ExportError> {
    use std::os::unix::fs::FileTypeExt;
    let taken = |why: String| {
        ExportError::Io(io::Error::new(
            io::ErrorKind::AddrInUse,
            format!("cannot listen for /metrics on {}: {why}", path.display()),
        ))
    };
    match std::fs::symlink_metadata(path) {
        Ok(m) if !m.file_type().is_socket() => {
            return Err(taken("a file that is not a socket is there".into()))
        }
        Ok(_) => match UnixStream::connect(path) {
            Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => {
                // Left by a process that is gone.
                std::fs::remove_file(path)?;
            }
            Ok(_) => return Err(taken("another process listens there".into())),
            Err(e) => return Err(taken(e.to_string())),
        },
        Err(_) => {}
    }
    UnixListener::bind(path).map_err(|e| taken(e.to_string()))
}

/// What the server's threads share with its handle.
pub(super) struct Shared {
    pub stopping: AtomicBool,
    /// Written (one byte) to wake the I/O thread: a render is done, or the server stops.
    waker: UnixStream,
    counters: Counters,
}

impl Shared {
    pub(crate) fn wake(&self) {
        // A full pipe already holds a wake-up.
        let _ = (&self.waker).write(&[1]);
    }

    pub(crate) fn stats(&self) -> ServerStats {
        self.counters.stats()
    }
}

/// A scrape for a worker.
struct Job {
    conn: u64,
    scrape: Scrape,
}

/// A rendered response for the I/O thread.
struct Done {
    conn: u64,
    response: Response,
}

/// Starts the I/O thread and the workers.
pub(super) fn start(
    listener: Listener,
    registry: Arc<Registry>,
    options: ServerOptions,
) -> Result<(Arc<Shared>, Vec<JoinHandle<()>>), ExportError> {
    listener.set_nonblocking()?;
    let (waker, wakee) = UnixStream::pair()?;
    waker.set_nonblocking(true)?;
    wakee.set_nonblocking(true)?;
    let shared = Arc::new(Shared {
        stopping: AtomicBool::new(false),
        waker,
        counters: Counters::default(),
    });
    let (job_tx, job_rx) = mpsc::channel::<Job>();
    let (done_tx, done_rx) = mpsc::channel::<Done>();
    let job_rx = Arc::new(Mutex::new(job_rx));
    let mut threads = Vec::with_capacity(options.workers + 1);
    let spawned = (|| {
        for i in 0..options.workers {
            let (jobs, done, shared, registry) = (
                job_rx.clone(),
                done_tx.clone(),
                shared.clone(),
                registry.clone(),
            );
            threads.push(
                std::thread::Builder::new()
                    .name(format!("picollo-metrics-{i}"))
                    .spawn(move || worker(&jobs, &done, &shared, &registry))?,
            );
        }
        let io = IoLoop {
            listener,
            wakee,
            shared: shared.clone(),
            limits: options.head_limits(),
            options,
            conns: HashMap::new(),
            next_id: 0,
            jobs: job_tx,
            done: done_rx,
            accept_paused_until: None,
            scratch: vec![0; 64 << 10].into_boxed_slice(),
        };
        threads.push(
            std::thread::Builder::new()
                .name("picollo-metrics".into())
                .spawn(move || io.run())?,
        );
        Ok::<_, io::Error>(())
    })();
    if let Err(e) = spawned {
        // The workers started so far end when the job channel closes.
        shared
            .stopping
            .store(true, std::sync::atomic::Ordering::Release);
        return Err(e.into());
    }
    Ok((shared, threads))
}

fn worker(
    jobs: &Mutex<mpsc::Receiver<Job>>,
    done: &mpsc::Sender<Done>,
    shared: &Shared,
    registry: &Registry,
) {
    loop {
        let job = jobs.lock().unwrap_or_else(|e| e.into_inner()).recv();
        let Ok(job) = job else {
            return; // the I/O thread is gone
        };
        let response = render_scrape(registry, &job.scrape, &shared.counters);
        let response = Done {
            conn: job.conn,
            response,
        };
        if done.send(response).is_err() {
            return;
        }
        shared.wake();
    }
}

struct IoLoop {
    listener: Listener,
    wakee: UnixStream,
    shared: Arc<Shared>,
    options: ServerOptions,
    limits: http::HeadLimits,
    conns: HashMap<u64, Conn<Stream>>,
    next_id: u64,
    jobs: mpsc::Sender<Job>,
    done: mpsc::Receiver<Done>,
    accept_paused_until: Option<Instant>,
    /// Where discarded input goes.
    scratch: Box<[u8]>,
}

impl IoLoop {
    fn run(mut self) {
        let mut fds: Vec<libc::pollfd> = Vec::new();
        let mut ids: Vec<u64> = Vec::new();
        while !stopping(&self.shared.stopping) {
            let now = Instant::now();
            if self.accept_paused_until.is_some_and(|t| t <= now) {
                self.accept_paused_until = None;
            }
            fds.clear();
            ids.clear();
            let pollfd = |fd, events| libc::pollfd {
                fd,
                events,
                revents: 0,
            };
            fds.push(pollfd(self.wakee.as_raw_fd(), libc::POLLIN));
            let listen_events = if self.accept_paused_until.is_none() {
                libc::POLLIN
            } else {
                0
            };
            fds.push(pollfd(self.listener.fd(), listen_events));
            let mut next = self.accept_paused_until;
            for (&id, c) in &self.conns {
                let events = match c.interest() {
                    Interest::Read => libc::POLLIN,
                    Interest::Write => libc::POLLOUT,
                    Interest::Nothing => 0,
                };
                if events != 0 {
                    fds.push(pollfd(c.stream.fd(), events));
                    ids.push(id);
                }
                if let Some(d) = c.deadline(&self.options) {
                    next = Some(next.map_or(d, |n| n.min(d)));
                }
            }
            let timeout = next.map_or(-1, |d| {
                // Rounded up, so that the deadline has passed when poll returns.
                let ms = d.saturating_duration_since(now).as_micros().div_ceil(1000);
                ms.min(60_000) as libc::c_int
            });
            let nfds = fds.len() as libc::nfds_t;
            // SAFETY: `fds` is a valid, initialized array of `nfds` pollfd structs that lives
            // across the call; poll writes only their `revents` fields.
            let n = unsafe { libc::poll(fds.as_mut_ptr(), nfds, timeout) };
            if n < 0 {
                let e = io::Error::last_os_error();
                if e.kind() != io::ErrorKind::Interrupted {
                    // Not expected with valid descriptors; avoid spinning on it.
                    std::thread::sleep(Duration::from_millis(10));
                }
                continue;
            }
            if fds[0].revents != 0 {
                let mut sink = [0u8; 64];
                while matches!((&self.wakee).read(&mut sink), Ok(n) if n > 0) {}
            }
            self.finish_renders();
            for (i, &id) in ids.iter().enumerate() {
                let revents = fds[i + 2].revents;
                if revents != 0 {
                    self.on_event(id);
                }
            }
            if fds[1].revents != 0 {
                self.accept();
            }
            self.expire(Instant::now());
        }
        self.shared.counters.open.store(0, Relaxed);
    }

    /// Puts every rendered response on its connection and starts writing it.
    fn finish_renders(&mut self) {
        while let Ok(done) = self.done.try_recv() {
            let Some(c) = self.conns.get_mut(&done.conn) else {
                continue; // closed meanwhile
            };
            c.respond(done.response);
            self.on_event(done.conn);
        }
        self.bound_pending_bytes();
    }

    /// Keeps the responses still to be sent under [`ServerOptions::max_pending_bytes`] by
    /// closing the connections that have been taking theirs longest (the slowest readers),
    /// so that slow clients cannot make the server hold a response each.
    fn bound_pending_bytes(&mut self) {
        let mut total: usize = self.conns.values().map(Conn::pending).sum();
        while total > self.options.max_pending_bytes {
            let mut writing = self
                .conns
                .iter()
                .filter(|(_, c)| matches!(c.state, State::Writing { .. }));
            let (Some(first), Some(_)) = (writing.next(), writing.next()) else {
                return; // the last response is always kept
            };
            let slowest = self
                .conns
                .iter()
                .filter(|(_, c)| matches!(c.state, State::Writing { .. }))
                .min_by_key(|(_, c)| c.since)
                .map_or(*first.0, |(&id, _)| id);
            let Some(c) = self.conns.remove(&slowest) else {
                return;
            };
            total -= c.pending();
            bump(&self.shared.counters.evicted);
            self.close(c);
        }
    }

    /// Runs a connection as far as it can go without blocking; closes it when it is done.
    fn on_event(&mut self, id: u64) {
        let Some(mut c) = self.conns.remove(&id) else {
            return;
        };
        let mut cx = Ctx {
            options: &self.options,
            limits: &self.limits,
            counters: &self.shared.counters,
            scratch: &mut self.scratch,
        };
        // No input can make the I/O thread unwind (the fuzz target `http_conn` drives this
        // state machine without the guard); if a bug did, only this connection ends.
        let outcome = catch_unwind(AssertUnwindSafe(|| c.advance(&mut cx)));
        match outcome {
            Ok(Outcome::Keep) => {
                self.conns.insert(id, c);
            }
            // The workers outlive the I/O thread: the send fails only if they all died.
            Ok(Outcome::Render(scrape)) if self.jobs.send(Job { conn: id, scrape }).is_ok() => {
                self.conns.insert(id, c);
            }
            _ => self.close(c),
        }
    }

    fn close(&self, c: Conn<Stream>) {
        drop(c);
        self.shared.counters.open.fetch_sub(1, Relaxed);
    }

    fn accept(&mut self) {
        for _ in 0..ACCEPT_BURST {
            let (stream, peer) = match self.listener.accept() {
                Ok(accepted) => accepted,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if is_out_of_descriptors(&e) => {
                    // Make room, or stop accepting for a while rather than spin.
                    if !self.evict_one() {
                        self.accept_paused_until = Some(Instant::now() + ACCEPT_PAUSE);
                        return;
                    }
                    continue;
                }
                // The client went away before being accepted, and the like.
                Err(_) => continue,
            };
            bump(&self.shared.counters.connections);
            if stream.set_nonblocking().is_err() {
                continue;
            }
            if peer.is_some_and(|ip| !self.options.allows(ip)) {
                bump(&self.shared.counters.forbidden);
                refuse(stream, 403);
                continue;
            }
            if self.conns.len() >= self.options.max_connections && !self.evict_one() {
                bump(&self.shared.counters.overloaded);
                refuse(stream, 503);
                continue;
            }
            let id = self.next_id;
            self.next_id += 1;
            self.conns.insert(id, Conn::new(stream));
            self.shared.counters.open.fetch_add(1, Relaxed);
        }
    }

    /// Closes the connection that has waited longest for a complete request (or one that is
    /// lingering); false when every connection is rendering or writing.
    fn evict_one(&mut self) -> bool {
        let victim = self
            .conns
            .iter()
            .filter_map(|(&id, c)| match c.state {
                State::Lingering { .. } => Some((0, c.since, id)),
                State::Reading { .. } => Some((1, c.since, id)),
                _ => None,
            })
            .min()
            .map(|(_, _, id)| id);
        match victim.and_then(|id| self.conns.remove(&id)) {
            Some(c) => {
                bump(&self.shared.counters.evicted);
                self.close(c);
                true
            }
            None => false,
        }
    }

    /// Closes the connections past their deadline.
    fn expire(&mut self, now: Instant) {
        let late: Vec<u64> = self
            .conns
            .iter()
            .filter(|(_, c)| c.deadline(&self.options).is_some_and(|d| d <= now))
            .map(|(&id, _)| id)
            .collect();
        for id in late {
            if let Some(c) = self.conns.remove(&id) {
                // A keep-alive connection closing when idle is no fault.
                if matches!(c.state, State::Writing { .. })
                    || matches!(c.state, State::Reading { .. } if c.started)
                {
                    bump(&self.shared.counters.timed_out);
                }
                self.close(c);
            }
        }
    }
}

/// Answers a connection that will not be served with `status`, as far as its send buffer
/// takes it at once, and closes it without reading anything.
fn refuse(mut stream: Stream, status: u16) {
    let response = http::error_response(status, false, false);
    let _ = stream.write_vectored(&[IoSlice::new(&response)]);
    stream.shutdown_write();
}

fn is_out_of_descriptors(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM)
    )
}
