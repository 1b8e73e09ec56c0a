//! A frame-ring reader on a hostile region: any bytes as the shared segment. Parsing the
//! header and draining must give an error or frames, never a panic or an out-of-bounds read,
//! and draining must terminate.
#![no_main]

use libfuzzer_sys::fuzz_target;
use picollo_ring::csv::FrameCsv;
use picollo_ring::RingReader;
use portable_atomic::AtomicU64;

fuzz_target!(|data: &[u8]| {
    let region: Vec<AtomicU64> = data
        .chunks(8)
        .map(|c| {
            let mut w = [0u8; 8];
            w[..c.len()].copy_from_slice(c);
            AtomicU64::new(u64::from_le_bytes(w))
        })
        .collect();
    let mut frames = 0u64;
    if let Ok(mut reader) = RingReader::inspect(&region) {
        let _ = reader.drain(|frame| {
            frames += 1;
            let mut csv = String::new();
            let _ = frame.to_csv(&mut csv, true);
        });
    }
    assert!(frames <= region.len() as u64);
});
