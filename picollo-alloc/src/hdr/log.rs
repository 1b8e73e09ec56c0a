//! HdrHistogram interval logs (`.hlog`): a streaming reader and a writer.
//!
//! The layout follows HdrHistogram (Java) `HistogramLogWriter` / `HistogramLogReader`:
//!
//! ```text
//! #[Histogram log format version 1.3]
//! #[StartTime: 1441812279.474 (seconds since epoch), Wed Sep 09 15:24:39 UTC 2015]
//! "StartTimestamp","Interval_Length","Interval_Max","Interval_Compressed_Histogram"
//! 0.127,1.007,2.769,HISTFAAAAEV42pNpmSzMwMCgyAABTBDKT4GBgdnNYMcCBvsPEBEJISEuATEZMQ4uASkhIR4nrxg9v2lMaxhvMekILGZkKmcCAEf2CsI=
//! Tag=A,0.127,1.007,2.769,HISTFAAAAEV42pNpmSzMwMCgyAABTBDKT4GBgdnNYMcCBvsPEBEJISEuATEZMQ4uASkhIR4nrxg9v2lMaxhvMekILGZkKmcCAEf2CsI=
//! ```
//!
//! Each interval line is `[Tag=<tag>,]<start>,<length>,<max>,<base64 of a V2+deflate blob>`,
//! with times in seconds (3 decimals) and the max column scaled by the writer's unit ratio
//! (1 000 000 by default: nanoseconds logged as milliseconds).

// The parts, each importing only those before it: `error` (a leaf), `line` (the line format
// and its parser), `reader`, `writer`.
mod error;
mod line;
mod reader;
mod writer;

pub use error::LogError;
pub use reader::{LogEntry, LogRange, LogReader, RangeMode};
pub use writer::{sanitize_tag, LogWriter};
