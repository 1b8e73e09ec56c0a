//! V2 and V2+deflate encoding and decoding.

// The parts: `format` (the public constants, a leaf), `decode` and `encode` (each importing
// only `format`; neither uses the other).
mod decode;
mod encode;
mod format;

pub use decode::{decode_any, decode_any_with_limits, DecodeLimits};
pub(super) use encode::{deflate_v2, encode_v2, CountsSource, PayloadWriter, V2Fields};
pub use format::{BEST_COMPRESSION, DEFAULT_COMPRESSION};
pub(crate) use format::{V2_COOKIE, V2_DEFLATE_COOKIE};
