//! `.hgrm` percentile files and single encoded histograms (`.hist`, `.histz`, binary or
//! base64) on hostile bytes: what `picollo report`, `diff` and `plot` read by content. Every
//! input gives a histogram or an error, never a panic, with bounded memory.
#![no_main]

use libfuzzer_sys::fuzz_target;
use picollo_alloc::hdr::decode_blob;
use picollo_alloc::hgrm::parse_hgrm;

fuzz_target!(|data: &[u8]| {
    if let Ok(Some((counts, _))) = decode_blob(data) {
        let _ = counts.value_at_percentile(99.0);
    }
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(file) = parse_hgrm(text) {
            assert!(file.steps.len() <= text.lines().count());
            if let Ok(counts) = file.to_counts() {
                assert_eq!(counts.total_count(), file.total_count());
            }
        }
    }
});
