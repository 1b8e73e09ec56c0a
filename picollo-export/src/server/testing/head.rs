//! The checks of [`fuzz_head`](super::fuzz_head).

use super::super::http::{parse, HeadLimits, Method, Parsed};

/// The server's default limits, and small ones that real requests reach.
const LIMITS: [HeadLimits; 2] = [
    HeadLimits {
        request_line: 8 << 10,
        head: 16 << 10,
        headers: 100,
    },
    HeadLimits {
        request_line: 64,
        head: 256,
        headers: 4,
    },
];

/// [`fuzz_head`](super::fuzz_head)'s checks under each of [`LIMITS`].
pub(super) fn check_all(data: &[u8]) {
    for limits in &LIMITS {
        check(data, limits);
    }
}

fn check(data: &[u8], limits: &HeadLimits) {
    // As the server holds it: never more than the head limit.
    let data = &data[..data.len().min(limits.head)];
    let whole = parse(data, 0, limits);
    match &whole {
        Parsed::Complete(_, n) => assert!(*n <= data.len() && *n <= limits.head),
        Parsed::Refused(status) => assert!(matches!(status, 400 | 414 | 431 | 505), "{status}"),
        Parsed::Incomplete { scanned } => assert!(*scanned <= data.len()),
    }
    against_httparse(data, limits, &whole);
    in_pieces(data, limits, &whole);
}

fn against_httparse(data: &[u8], limits: &HeadLimits, ours: &Parsed) {
    let mut fields = vec![httparse::EMPTY_HEADER; limits.headers];
    let mut request = httparse::Request::new(&mut fields);
    match request.parse(data) {
        Ok(httparse::Status::Complete(n)) => {
            let skip = data
                .iter()
                .position(|&b| b != b'\r' && b != b'\n')
                .unwrap_or(0);
            let line = data[skip..].iter().position(|&b| b == b'\n').unwrap_or(0);
            let line = line - usize::from(line > 0 && data[skip + line - 1] == b'\r');
            if n > limits.head || line > limits.request_line {
                return; // refused here for its size, which httparse does not bound
            }
            match ours {
                Parsed::Complete(head, used) => {
                    assert_eq!(*used, n, "the head ends where httparse ends it");
                    let method = match request.method {
                        Some("GET") => Method::Get,
                        Some("HEAD") => Method::Head,
                        _ => Method::Other,
                    };
                    assert_eq!(head.method, method);
                    assert!(head.path == "*" || head.path.starts_with('/'), "{head:?}");
                }
                // A `Content-Length` that is not digits or differs from another, or a
                // target that is neither a path nor an http URL.
                Parsed::Refused(400) => {}
                other => panic!("httparse completes {n} bytes, we say {other:?}"),
            }
        }
        Ok(httparse::Status::Partial) | Err(_) => {
            assert!(
                !matches!(ours, Parsed::Complete(..)),
                "httparse does not complete this head, we do: {ours:?}"
            );
        }
    }
}

fn in_pieces(data: &[u8], limits: &HeadLimits, whole: &Parsed) {
    // Up to 16 cut points, spread by the bytes themselves.
    let mut scanned = 0;
    let mut at = 0;
    for (i, &b) in data.iter().enumerate().take(16) {
        at = (at + 1 + (b as usize + i) % 61).min(data.len());
        match parse(&data[..at], scanned, limits) {
            Parsed::Incomplete { scanned: s } => {
                assert!(s <= at);
                scanned = s;
            }
            Parsed::Complete(head, n) => {
                assert_eq!(whole, &Parsed::Complete(head, n), "prefix {at}");
                return;
            }
            Parsed::Refused(_) => {
                assert!(
                    matches!(whole, Parsed::Refused(_)),
                    "prefix {at}: {whole:?}"
                );
                return;
            }
        }
        if at == data.len() {
            break;
        }
    }
    // The whole, resuming the scan from the last piece.
    assert_eq!(
        &parse(data, scanned, limits),
        whole,
        "resumed from {scanned}"
    );
}
