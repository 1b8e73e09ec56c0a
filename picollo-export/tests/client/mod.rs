//! A minimal HTTP/1.1 client for the server tests: requests written by hand (so that they can
//! be malformed), responses read with a deadline.

#![allow(dead_code)] // each test file uses part of it

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// A response: status, header block (lowercase names), body.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// Reads one response from `s` (which has a read timeout set), `buf` holding bytes read
/// before; leaves the bytes after it in `buf`. A HEAD response has no body.
pub fn read_response(
    s: &mut impl Read,
    buf: &mut Vec<u8>,
    head_only: bool,
) -> io::Result<Response> {
    let mut chunk = [0u8; 16 << 10];
    let end = loop {
        if let Some(p) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break p + 4;
        }
        let n = s.read(&mut chunk)?;
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "closed before a response",
            ));
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..end]).into_owned();
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or("");
    let status = status_line
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| io::Error::other(format!("bad status line {status_line:?}")))?;
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let len: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .ok_or_else(|| io::Error::other("no content-length"))?;
    buf.drain(..end);
    let len = if head_only { 0 } else { len };
    while buf.len() < len {
        let n = s.read(&mut chunk)?;
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "closed inside a body",
            ));
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let body = buf.drain(..len).collect();
    Ok(Response {
        status,
        headers,
        body,
    })
}

/// Connects with 5 s timeouts.
pub fn connect(addr: SocketAddr) -> TcpStream {
    let s = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.set_write_timeout(Some(Duration::from_secs(5))).unwrap();
    s
}

/// Sends `request` on a new connection and reads the response.
pub fn request(addr: SocketAddr, request: &[u8]) -> io::Result<Response> {
    let mut s = connect(addr);
    s.write_all(request)?;
    read_response(&mut s, &mut Vec::new(), request.starts_with(b"HEAD"))
}

/// A text scrape of `/metrics` on a new connection: the response and how long it took.
pub fn scrape(addr: SocketAddr) -> (Response, Duration) {
    let t = Instant::now();
    let r = request(
        addr,
        b"GET /metrics HTTP/1.1\r\nHost: x\r\nAccept: text/plain\r\nConnection: close\r\n\r\n",
    )
    .expect("a scrape gets a response");
    (r, t.elapsed())
}

/// The value of the sample line `name value` in a text exposition.
pub fn sample(text: &str, name: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let (n, v) = l.split_once(' ')?;
        (n == name).then(|| v.trim().parse().ok())?
    })
}

/// Whether the server closed `s` (end of stream or reset) within its read timeout, after
/// any bytes it still had to deliver; the number of bytes read before.
pub fn closed_by_server(s: &mut TcpStream) -> (bool, usize) {
    let mut chunk = [0u8; 64 << 10];
    let mut total = 0;
    loop {
        match s.read(&mut chunk) {
            Ok(0) => return (true, total),
            Ok(n) => total += n,
            Err(e) if e.kind() == io::ErrorKind::ConnectionReset => return (true, total),
            Err(_) => return (false, total),
        }
    }
}
