//! The server's network-facing code on hostile bytes, without the network (feature
//! `testing`): the two entry points of the fuzz targets `http_head` and `http_conn` (`fuzz/`),
//! each of which panics when a property of the server's request-head parser or of one
//! connection's state machine does not hold. Not for production use.
//!
//! ```
//! use picollo_export::server::testing::{fuzz_connection, fuzz_head};
//!
//! let request = b"GET /metrics HTTP/1.1\r\nHost: a\r\n\r\nGET /nowhere HTTP/1.0\r\n\r\n";
//! fuzz_head(request);
//! fuzz_connection(request);
//! ```

mod connection;
mod exchange;
mod head;

/// Checks the `/metrics` server's request-head parser on `data` (hostile bytes), against
/// `httparse` on the same bytes and against itself fed in pieces, and panics unless:
///
/// - the parser does not panic, and a head it completes is never longer than the head limit;
/// - it accepts what `httparse` accepts and rejects what `httparse` rejects: a head that
///   `httparse` completes within the limits is complete here at the same length (or refused
///   for a reason of ours: a bad `Content-Length`, a target that is not a path), and a head
///   `httparse` rejects or has not finished is never complete here;
/// - fed in pieces, as a socket delivers it (each parse resuming the scan where the previous
///   one stopped), it gives what it gives on the whole: a complete head in a prefix is the
///   same head in the whole, and a refused prefix is refused in the whole.
///
/// Each input runs under the server's default limits and under small ones (request line 64,
/// head 256, 4 fields), so that real requests reach the limits too.
pub fn fuzz_head(data: &[u8]) {
    head::check_all(data)
}

/// Runs one `/metrics` connection's state machine (the code the server's I/O thread runs for
/// each socket) on `data` (hostile bytes), sent in pieces of arbitrary sizes while the
/// server's writes are doled out in pieces of arbitrary sizes (a slow reader), as a socket
/// would deliver them, and panics unless the properties below hold. The input is what the
/// client sends; the cut points and write allowances come from a generator seeded by the
/// input.
///
/// - The connection does not panic, and never holds more input than the head limit.
/// - Every request gets its response, in order, or the connection closes: the responses are
///   exactly those the head parser finds in the input, one after the other, until one that
///   closes the connection (`Connection: close`, HTTP/1.0, a body, a refused head, the
///   request limit); each is a well-formed HTTP/1.1 response with a `Content-Length` its
///   body matches (none after `HEAD`), and says `Connection: close` exactly when it is
///   that last one.
/// - Once the client has sent everything and reads, the connection closes.
/// - The pieces do not matter: the bytes written are those written when the whole input
///   arrives at once and the client reads everything.
pub fn fuzz_connection(data: &[u8]) {
    exchange::check(data)
}
