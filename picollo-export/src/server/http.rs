//! HTTP/1.x request heads parsed from a bounded buffer, and the responses the server writes.
//!
//! Only what a `/metrics` endpoint needs: the method, the path, `Accept`, whether the
//! connection stays open, and whether a body follows (bodies are never read: the connection
//! is closed after the response instead). Every limit is checked before anything is stored.

use std::fmt::Write as _;

/// The limits on a request head.
#[derive(Clone, Copy, Debug)]
pub(crate) struct HeadLimits {
    /// The longest request line (method, target, version), CRLF excluded.
    pub(crate) request_line: usize,
    /// The longest head, request line and headers together.
    pub(crate) head: usize,
    /// The most header fields.
    pub(crate) headers: usize,
}

/// The request method, as far as the server cares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Method {
    /// `GET`.
    Get,
    /// `HEAD`.
    Head,
    /// Any other token.
    Other,
}

/// A parsed request head.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Head {
    /// The method.
    pub(crate) method: Method,
    /// The path of the target, query removed (absolute-form targets reduced to their path).
    pub(crate) path: String,
    /// The `Accept` header (several are joined with `,`), when it is valid UTF-8.
    pub(crate) accept: Option<String>,
    /// Whether the client asks to keep the connection open (HTTP/1.1 default; HTTP/1.0 only
    /// with `Connection: keep-alive`).
    pub(crate) keep_alive: bool,
    /// A body follows (`Content-Length` above 0 or any `Transfer-Encoding`): the server will
    /// not read it and closes the connection after its response.
    pub(crate) has_body: bool,
}

/// What the bytes received so far hold.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Parsed {
    /// No complete head yet, and no limit exceeded. `scanned` bytes need not be scanned
    /// again for the end of the head.
    Incomplete {
        /// Where the next scan for the end of the head starts.
        scanned: usize,
    },
    /// A head, and how many bytes of the buffer it took (the rest is the next request).
    Complete(Head, usize),
    /// A head the server refuses with this status; the connection is closed after it.
    Refused(u16),
}

/// Parses the head at the start of `buf`, scanning for its end from `scan_from` (a value a
/// previous `Incomplete` gave, or 0).
///
/// The end of the head is found here, incrementally (a client sending one byte at a time
/// costs one scan of each byte, not one parse of the whole buffer per byte), and the limits
/// are checked before anything is parsed; the complete head is then parsed by `httparse`
/// (the parser hyper uses), and only the fields the server needs are read from it.
pub(crate) fn parse(buf: &[u8], scan_from: usize, limits: &HeadLimits) -> Parsed {
    let skip = empty_lines(buf);
    let Some(end) = find_head_end(buf, scan_from.max(skip)) else {
        if request_line_len(&buf[skip..]) > limits.request_line {
            return Parsed::Refused(414);
        }
        if buf.len() >= limits.head {
            return Parsed::Refused(431);
        }
        // The end may straddle the bytes to come: rescan the last 3.
        return Parsed::Incomplete {
            scanned: buf.len().saturating_sub(3),
        };
    };
    if end > limits.head {
        return Parsed::Refused(431);
    }
    match parse_head(&buf[..end], skip, limits) {
        Ok(head) => Parsed::Complete(head, end),
        Err(status) => Parsed::Refused(status),
    }
}

/// The length of the empty lines (`\r\n` or `\n`) before a request line, which are ignored
/// (RFC 9112 §2.2), as `httparse` skips them.
fn empty_lines(buf: &[u8]) -> usize {
    let mut i = 0;
    loop {
        match buf.get(i..) {
            Some([b'\n', ..]) => i += 1,
            Some([b'\r', b'\n', ..]) => i += 2,
            _ => return i,
        }
    }
}

/// The length of the request line at the start of `buf`, its line ending excluded (a final
/// `\r` may be the start of one).
fn request_line_len(buf: &[u8]) -> usize {
    let line = &buf[..buf.iter().position(|&b| b == b'\n').unwrap_or(buf.len())];
    line.strip_suffix(b"\r").unwrap_or(line).len()
}

/// The index just past the empty line ending a head (`\n\r\n` or `\n\n`), searching from
/// `from`.
fn find_head_end(buf: &[u8], from: usize) -> Option<usize> {
    let mut i = from;
    while let Some(p) = buf
        .get(i..)
        .and_then(|s| s.iter().position(|&b| b == b'\n'))
    {
        let nl = i + p;
        match buf.get(nl + 1..nl + 3) {
            Some([b'\r', b'\n']) => return Some(nl + 3),
            Some([b'\n', _]) => return Some(nl + 2),
            None if buf.get(nl + 1) == Some(&b'\n') => return Some(nl + 2),
            _ => {}
        }
        i = nl + 1;
    }
    None
}

/// Parses a complete head (`head` ends with its empty line; its first `skip` bytes are empty
/// lines) within `limits`; the error is the status to refuse it with.
fn parse_head(head: &[u8], skip: usize, limits: &HeadLimits) -> Result<Head, u16> {
    if request_line_len(&head[skip..]) > limits.request_line {
        return Err(414);
    }
    // A field takes 3 bytes at least (`a:` and a newline): the slots are bounded by the head
    // as well as by the limit, which a caller may set as high as it likes.
    let mut fields = vec![httparse::EMPTY_HEADER; limits.headers.min(head.len() / 3 + 1)];
    let mut request = httparse::Request::new(&mut fields);
    match request.parse(head) {
        Ok(httparse::Status::Complete(n)) if n == head.len() => {}
        // A head ends at its first empty line, where the end was found: anything else is a
        // malformed head whose bytes merely contain an empty line.
        Ok(_) => return Err(400),
        Err(httparse::Error::TooManyHeaders) => return Err(431),
        Err(httparse::Error::Version) => return Err(505),
        Err(_) => return Err(400),
    }
    let minor = request.version.unwrap_or(1);
    let method = match request.method.unwrap_or("") {
        "GET" => Method::Get,
        "HEAD" => Method::Head,
        _ => Method::Other,
    };
    let path = request_path(request.path.unwrap_or("")).ok_or(400u16)?;

    let (mut accept, mut keep_alive, mut has_body) = (None::<String>, minor == 1, false);
    let mut content_length: Option<&[u8]> = None;
    for field in request.headers.iter() {
        let (name, value) = (field.name, trim(field.value));
        if name.eq_ignore_ascii_case("accept") {
            if let Ok(v) = std::str::from_utf8(value) {
                match &mut accept {
                    Some(a) => {
                        a.push(',');
                        a.push_str(v);
                    }
                    None => accept = Some(v.to_owned()),
                }
            }
        } else if name.eq_ignore_ascii_case("connection") {
            for token in value.split(|&b| b == b',').map(trim) {
                if token.eq_ignore_ascii_case(b"close") {
                    keep_alive = false;
                } else if token.eq_ignore_ascii_case(b"keep-alive") && minor == 0 {
                    keep_alive = true;
                }
            }
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            has_body = true;
        } else if name.eq_ignore_ascii_case("content-length") {
            // Digits only; two different values make the framing ambiguous (RFC 9112 §6.3).
            if value.is_empty() || !value.iter().all(u8::is_ascii_digit) {
                return Err(400);
            }
            if content_length.is_some_and(|c| c != value) {
                return Err(400);
            }
            content_length = Some(value);
            // Any number of digits: the length is never used, only whether it is 0.
            has_body |= value.iter().any(|&b| b != b'0');
        }
    }
    Ok(Head {
        method,
        path,
        accept,
        keep_alive: keep_alive && !has_body,
        has_body,
    })
}

/// The path of an origin-form (`/metrics?x`) or absolute-form (`http://h/metrics`) target.
fn request_path(target: &str) -> Option<String> {
    let target = match target.split_once("://") {
        Some((scheme, rest)) if scheme.eq_ignore_ascii_case("http") => {
            rest.find('/').map_or("/", |i| &rest[i..])
        }
        _ if target.starts_with('/') || target == "*" => target,
        _ => return None,
    };
    let path = target.split(['?', '#']).next().unwrap_or("");
    Some(path.to_owned())
}

fn trim(mut s: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = s {
        s = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = s {
        s = rest;
    }
    s
}

/// The reason phrase of the statuses the server sends.
pub(crate) fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        414 => "URI Too Long",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        505 => "HTTP Version Not Supported",
        _ => "",
    }
}

/// The text body of an error status.
pub(crate) fn error_text(status: u16) -> &'static str {
    match status {
        400 => "bad request: send GET /metrics HTTP/1.1\n",
        403 => "forbidden: this address is not on the server's allow-list\n",
        404 => "not found: the metrics are at /metrics\n",
        405 => "method not allowed: use GET\n",
        414 => "request line too long\n",
        431 => "request header fields too large\n",
        500 => "internal error while rendering the metrics\n",
        503 => "too many connections; retry later\n",
        505 => "HTTP version not supported: use HTTP/1.1\n",
        _ => "error\n",
    }
}

/// The status line and headers of a response with a body of `len` bytes.
pub(crate) fn response_head(
    status: u16,
    content_type: &str,
    len: usize,
    keep_alive: bool,
) -> Vec<u8> {
    let mut head = String::with_capacity(160);
    let _ = write!(
        head,
        "HTTP/1.1 {status} {}\r\nContent-Type: {content_type}\r\nContent-Length: {len}\r\n",
        reason(status)
    );
    if status == 405 {
        head.push_str("Allow: GET, HEAD\r\n");
    }
    head.push_str(if keep_alive {
        "Connection: keep-alive\r\n\r\n"
    } else {
        "Connection: close\r\n\r\n"
    });
    head.into_bytes()
}

/// An error response: head and text body in one buffer.
pub(crate) fn error_response(status: u16, head_only: bool, keep_alive: bool) -> Vec<u8> {
    let text = error_text(status);
    let mut out = response_head(status, "text/plain; charset=utf-8", text.len(), keep_alive);
    if !head_only {
        out.extend_from_slice(text.as_bytes());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: HeadLimits = HeadLimits {
        request_line: 64,
        head: 256,
        headers: 4,
    };

    fn complete(buf: &[u8]) -> (Head, usize) {
        match parse(buf, 0, &LIMITS) {
            Parsed::Complete(h, n) => (h, n),
            other => panic!("{other:?} for {:?}", String::from_utf8_lossy(buf)),
        }
    }

    #[test]
    fn heads() {
        let (h, n) = complete(b"GET /metrics?x=1 HTTP/1.1\r\nAccept: text/plain\r\n\r\nGET");
        assert_eq!(n, 49);
        assert_eq!(
            h,
            Head {
                method: Method::Get,
                path: "/metrics".into(),
                accept: Some("text/plain".into()),
                keep_alive: true,
                has_body: false
            }
        );
        let (h, _) = complete(b"\r\nHEAD http://x:1/metrics HTTP/1.0\nConnection: keep-alive\n\n");
        assert_eq!(
            (h.method, h.path.as_str(), h.keep_alive),
            (Method::Head, "/metrics", true)
        );
        let (h, _) = complete(b"GET / HTTP/1.0\r\n\r\n");
        assert!(!h.keep_alive);
        let (h, _) = complete(b"GET / HTTP/1.1\r\nConnection: Close\r\n\r\n");
        assert!(!h.keep_alive);
        let (h, _) = complete(b"GET / HTTP/1.1\r\nAccept: a\r\naccept:  b \r\n\r\n");
        assert_eq!(h.accept.as_deref(), Some("a,b"));
    }

    #[test]
    fn bodies_are_flagged_never_sized() {
        for (req, body) in [
            (
                &b"POST /metrics HTTP/1.1\r\nContent-Length: 99999999999\r\n\r\n"[..],
                true,
            ),
            (
                b"GET /metrics HTTP/1.1\r\nContent-Length: 99999999999999999999999999\r\n\r\n",
                true,
            ),
            (b"GET /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n", false),
            (
                b"GET /metrics HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n",
                true,
            ),
        ] {
            let (h, _) = complete(req);
            assert_eq!(h.has_body, body);
            assert_eq!(h.keep_alive, !body);
        }
        for req in [
            &b"GET / HTTP/1.1\r\nContent-Length: -1\r\n\r\n"[..],
            b"GET / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
        ] {
            assert_eq!(parse(req, 0, &LIMITS), Parsed::Refused(400));
        }
    }

    #[test]
    fn limits_and_bad_heads() {
        let long = format!("GET /{} HTTP/1.1", "a".repeat(100));
        assert_eq!(parse(long.as_bytes(), 0, &LIMITS), Parsed::Refused(414));
        let big = format!("GET / HTTP/1.1\r\nX: {}", "a".repeat(300));
        assert_eq!(parse(big.as_bytes(), 0, &LIMITS), Parsed::Refused(431));
        let many = "GET / HTTP/1.1\r\n".to_owned() + &"A: b\r\n".repeat(5) + "\r\n";
        assert_eq!(parse(many.as_bytes(), 0, &LIMITS), Parsed::Refused(431));
        for bad in [
            &b"GET /\r\n\r\n"[..],
            b"GET / HTTP/2.0\r\n\r\n",
            b"GET  / HTTP/1.1\r\n\r\n",
            b"GET / HTTP/1.1\r\n folded\r\n\r\n",
            b"GET / HTTP/1.1\r\nBad Name: x\r\n\r\n",
            b"G(T / HTTP/1.1\r\n\r\n",
            b"GET metrics HTTP/1.1\r\n\r\n",
        ] {
            assert!(
                matches!(parse(bad, 0, &LIMITS), Parsed::Refused(400 | 505)),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn a_request_line_at_the_limit_is_measured_without_its_line_ending() {
        let line = format!("GET /{} HTTP/1.1", "a".repeat(LIMITS.request_line - 14));
        assert_eq!(line.len(), LIMITS.request_line);
        let req = line.clone() + "\r\n\r\n";
        // No prefix is refused (the `\r` may start the line ending), and the whole completes.
        let mut scanned = 0;
        for n in 1..req.len() {
            match parse(&req.as_bytes()[..n], scanned, &LIMITS) {
                Parsed::Incomplete { scanned: s } => scanned = s,
                other => panic!("{n}: {other:?}"),
            }
        }
        assert!(matches!(
            parse(req.as_bytes(), 0, &LIMITS),
            Parsed::Complete(..)
        ));
        let longer = line + "a\r\n\r\n";
        assert_eq!(parse(longer.as_bytes(), 0, &LIMITS), Parsed::Refused(414));
    }

    #[test]
    fn incremental_scan_finds_a_split_end() {
        let req = b"GET / HTTP/1.1\r\nA: b\r\n\r\n";
        let mut scanned = 0;
        for n in 1..req.len() {
            match parse(&req[..n], scanned, &LIMITS) {
                Parsed::Incomplete { scanned: s } => scanned = s,
                other => panic!("{n}: {other:?}"),
            }
        }
        assert!(matches!(
            parse(req, scanned, &LIMITS),
            Parsed::Complete(_, 24)
        ));
    }
}
