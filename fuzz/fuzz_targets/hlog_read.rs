//! The `.hlog` interval-log reader on hostile text: every line parses or errors, iteration
//! terminates, and interval payloads decode or error.
#![no_main]

use libfuzzer_sys::fuzz_target;
use picollo_alloc::hdr::{DecodeLimits, LogReader};

fuzz_target!(|data: &[u8]| {
    let limits = DecodeLimits::default()
        .with_max_counts_len(1 << 16)
        .with_max_payload_len(1 << 20);
    let reader = LogReader::new(data).with_max_line_len(1 << 16);
    for entry in reader.take(10_000).flatten() {
        let _ = entry.decode_with_limits(&limits);
    }
});
