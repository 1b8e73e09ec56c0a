//! One server connection over an in-memory socket whose reads and writes the caller doles
//! out: the code the I/O thread runs for a socket (`conn.rs`), minus the guard that turns a
//! panic into a closed connection, so that a fuzzer sees the panic.

use std::collections::VecDeque;
use std::io::{self, IoSlice};
use std::sync::Arc;

use super::super::conn::{render_scrape, Conn, Counters, Ctx, Outcome, Transport};
use super::super::http::HeadLimits;
use super::super::ServerOptions;
use crate::Registry;

/// An in-memory socket: what the client sent and has not been read, and what the server
/// may still write before a write would block.
#[derive(Default)]
struct MemorySocket {
    inbound: VecDeque<u8>,
    /// The client sent its last byte (reads then return 0).
    eof: bool,
    writable: usize,
    written: Vec<u8>,
    write_shut: bool,
}

impl Transport for MemorySocket {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.inbound.is_empty() {
            return if self.eof {
                Ok(0)
            } else {
                Err(io::ErrorKind::WouldBlock.into())
            };
        }
        let n = buf.len().min(self.inbound.len());
        for (b, v) in buf.iter_mut().zip(self.inbound.drain(..n)) {
            *b = v;
        }
        Ok(n)
    }

    fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        if self.write_shut {
            return Err(io::ErrorKind::BrokenPipe.into());
        }
        if self.writable == 0 {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        let mut n = 0;
        for b in bufs {
            let take = b.len().min(self.writable - n);
            self.written.extend_from_slice(&b[..take]);
            n += take;
        }
        self.writable -= n;
        Ok(n)
    }

    fn shutdown_write(&mut self) {
        self.write_shut = true;
    }
}

/// One server connection over an in-memory socket, its scrapes rendered at once on the
/// calling thread (as a worker would render them).
pub(super) struct Connection {
    conn: Conn<MemorySocket>,
    registry: Arc<Registry>,
    options: ServerOptions,
    limits: HeadLimits,
    counters: Counters,
    scratch: Box<[u8]>,
    closed: bool,
}

impl Connection {
    /// A connection accepted by a server serving `registry` with `options`.
    pub(super) fn new(registry: Arc<Registry>, options: ServerOptions) -> Self {
        Connection {
            conn: Conn::new(MemorySocket::default()),
            registry,
            limits: options.head_limits(),
            options,
            counters: Counters::default(),
            // The I/O thread's size: reads are bounded by it and by the head limit.
            scratch: vec![0; 64 << 10].into_boxed_slice(),
            closed: false,
        }
    }

    /// The client sends `bytes` (the server reads them when it next runs).
    pub(super) fn send(&mut self, bytes: &[u8]) {
        self.conn.stream.inbound.extend(bytes);
    }

    /// The client has sent everything: once the server has read it, its reads see the end.
    pub(super) fn finish_sending(&mut self) {
        self.conn.stream.eof = true;
    }

    /// The server may write `bytes` more before its writes would block.
    pub(super) fn allow_writes(&mut self, bytes: usize) {
        let s = &mut self.conn.stream;
        s.writable = s.writable.saturating_add(bytes);
    }

    /// Runs the connection as the I/O thread would when its socket is ready, as far as it
    /// goes without blocking; a scrape is rendered at once. False once the server has
    /// closed the connection (and from then on).
    pub(super) fn run(&mut self) -> bool {
        while !self.closed {
            let mut cx = Ctx {
                options: &self.options,
                limits: &self.limits,
                counters: &self.counters,
                scratch: &mut self.scratch,
            };
            match self.conn.advance(&mut cx) {
                Outcome::Keep => break,
                Outcome::Close => self.closed = true,
                Outcome::Render(scrape) => {
                    let response = render_scrape(&self.registry, &scrape, &self.counters);
                    self.conn.respond(response);
                }
            }
        }
        !self.closed
    }

    /// What the server has written since the last call.
    pub(super) fn take_written(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.conn.stream.written)
    }

    /// Whether the server has shut its write side (it sends nothing more).
    #[cfg(test)]
    pub(super) fn write_shut(&self) -> bool {
        self.conn.stream.write_shut
    }

    /// Input bytes the server holds for this connection (a partial head, pipelined
    /// requests): never more than the head limit.
    pub(super) fn buffered(&self) -> usize {
        self.conn.buffered()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pipelined_requests_are_answered_in_order_then_closed() {
        let mut c = Connection::new(Arc::new(Registry::new()), ServerOptions::new());
        c.send(b"GET /metrics HTTP/1.1\r\n");
        assert!(c.run()); // a partial head: waiting for more
        c.send(b"\r\nGET /nowhere HTTP/1.1\r\nConnection: close\r\n\r\n");
        c.allow_writes(usize::MAX);
        assert!(c.run());
        // Both answered; the second asked to close: the server has shut its side and waits,
        // a short while, for the client to close its own.
        assert!(c.write_shut());
        let out = String::from_utf8(c.take_written()).unwrap();
        assert!(out.starts_with("HTTP/1.1 200 OK\r\n"));
        assert!(out.contains("HTTP/1.1 404 Not Found\r\n"));
        c.finish_sending();
        assert!(!c.run()); // closed
    }
}
