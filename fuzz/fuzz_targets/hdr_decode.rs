//! The HdrHistogram V2 / V2+deflate decoder on hostile bytes: an error or a histogram, never a
//! panic, with memory bounded by the limits. Whatever decodes re-encodes and decodes the same.
#![no_main]

use libfuzzer_sys::fuzz_target;
use picollo_alloc::hdr::{decode_any_with_limits, DecodeLimits};

fuzz_target!(|data: &[u8]| {
    let limits = DecodeLimits::default()
        .with_max_counts_len(1 << 16)
        .with_max_payload_len(1 << 20);
    if let Ok(counts) = decode_any_with_limits(data, &limits) {
        if let Ok(encoded) = counts.encode_v2() {
            let again = decode_any_with_limits(&encoded, &DecodeLimits::default())
                .expect("own encoding decodes");
            assert!(again.same_content(&counts));
        }
    }
});
