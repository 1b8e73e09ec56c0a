//! The checks of [`fuzz_connection`](super::fuzz_connection).

use std::sync::{Arc, OnceLock};

use picollo_alloc::HistogramBuilder;

use super::super::http::{parse, HeadLimits, Method, Parsed};
use super::super::ServerOptions;
use super::connection::Connection;
use crate::{Labels, Registry};

/// Requests served on one connection.
const MAX_REQUESTS: u64 = 6;

/// Small limits, so that real requests reach them, and few requests per connection.
fn options() -> ServerOptions {
    ServerOptions::new()
        .max_request_line(512)
        .max_head(2048)
        .max_headers(24)
        .max_requests_per_connection(MAX_REQUESTS)
}

/// A registry with one histogram: scrapes have bodies of a few hundred bytes.
fn registry() -> Arc<Registry> {
    static REGISTRY: OnceLock<Arc<Registry>> = OnceLock::new();
    REGISTRY
        .get_or_init(|| {
            let registry = Arc::new(Registry::new());
            let h = Arc::new(HistogramBuilder::new().thread_local().expect("a histogram"));
            (1..=100u64).for_each(|v| h.record(v * 1_000));
            registry
                .register("fuzz_latency", "fuzz", &Labels::empty(), h)
                .expect("a series");
            registry
        })
        .clone()
}

/// xorshift64, seeded by the input's FNV-1a hash.
struct Rng(u64);

impl Rng {
    fn new(data: &[u8]) -> Rng {
        let h = data.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
            (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
        });
        Rng(h | 1)
    }

    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

/// [`fuzz_connection`](super::fuzz_connection)'s checks.
pub(super) fn check(data: &[u8]) {
    let limits = options().head_limits();
    let at_once = whole(data, &limits);
    let in_pieces = pieces(data, &limits);
    if at_once != in_pieces {
        let at = at_once
            .iter()
            .zip(&in_pieces)
            .take_while(|(a, b)| a == b)
            .count();
        panic!(
            "the pieces changed what was written: {} bytes at once, {} in pieces, the first \
             difference at byte {at}",
            at_once.len(),
            in_pieces.len()
        );
    }
    check_responses(data, &limits, &at_once);
}

/// The whole input at once, the client reading everything.
fn whole(data: &[u8], limits: &HeadLimits) -> Vec<u8> {
    let mut c = Connection::new(registry(), options());
    c.send(data);
    c.finish_sending();
    c.allow_writes(usize::MAX);
    assert!(
        !c.run(),
        "the connection closes once the client has sent everything"
    );
    assert!(c.buffered() <= limits.head);
    c.take_written()
}

/// The input in pieces, writes doled out in pieces.
fn pieces(data: &[u8], limits: &HeadLimits) -> Vec<u8> {
    let mut rng = Rng::new(data);
    let mut c = Connection::new(registry(), options());
    let mut out = Vec::new();
    let mut sent = 0;
    let mut open = true;
    while open && sent < data.len() {
        let n = match rng.below(8) {
            0 => data.len() - sent,
            1..=3 => 1 + rng.below(4),
            _ => 1 + rng.below(200),
        };
        let n = n.min(data.len() - sent);
        c.send(&data[sent..sent + n]);
        sent += n;
        c.allow_writes(rng.below(3) * rng.below(700));
        open = c.run();
        assert!(c.buffered() <= limits.head, "{} bytes held", c.buffered());
        out.extend(c.take_written());
    }
    c.finish_sending();
    for _ in 0..100_000 {
        if !open {
            break;
        }
        c.allow_writes(1 + rng.below(2_000));
        open = c.run();
        assert!(c.buffered() <= limits.head);
        out.extend(c.take_written());
    }
    assert!(
        !open,
        "the connection closes once the client has sent everything"
    );
    out
}

/// The responses written are those the requests in `data` ask for, well formed.
fn check_responses(data: &[u8], limits: &HeadLimits, written: &[u8]) {
    // What the head parser finds in the input, request after request: whether each
    // response is to a HEAD (no body) and keeps the connection open, until the one after
    // which the connection closes (or the input ends in an incomplete head).
    let mut expected: Vec<(bool, bool)> = Vec::new();
    let mut rest = data;
    loop {
        match parse(&rest[..rest.len().min(limits.head)], 0, limits) {
            Parsed::Complete(head, n) => {
                let keep =
                    head.keep_alive && !head.has_body && expected.len() + 1 < MAX_REQUESTS as usize;
                expected.push((head.method == Method::Head, keep));
                rest = &rest[n..];
                if !keep {
                    break;
                }
            }
            Parsed::Refused(_) => {
                expected.push((false, false));
                break;
            }
            Parsed::Incomplete { .. } => break,
        }
    }
    let mut out = written;
    for (i, &(head_only, keep)) in expected.iter().enumerate() {
        let mut fields = [httparse::EMPTY_HEADER; 8];
        let mut response = httparse::Response::new(&mut fields);
        let Ok(httparse::Status::Complete(n)) = response.parse(out) else {
            panic!("response {i} of {} is not a complete head", expected.len());
        };
        let status = response.code.expect("a status");
        assert!(
            matches!(status, 200 | 400 | 404 | 405 | 414 | 431 | 500 | 505),
            "{status}"
        );
        assert_eq!(response.version, Some(1));
        let field = |name: &str| {
            response
                .headers
                .iter()
                .find(|f| f.name.eq_ignore_ascii_case(name))
                .map(|f| std::str::from_utf8(f.value).expect("ASCII"))
        };
        let len: usize = field("content-length")
            .and_then(|v| v.parse().ok())
            .expect("a Content-Length");
        assert_eq!(
            field("connection"),
            Some(if keep { "keep-alive" } else { "close" }),
            "response {i} of {}",
            expected.len()
        );
        let body = if head_only { 0 } else { len };
        assert!(out.len() >= n + body, "response {i}: body cut short");
        out = &out[n + body..];
    }
    assert!(
        out.is_empty(),
        "{} bytes written past the last response",
        out.len()
    );
}
