//! A capture-file reader on hostile bytes: any file given to `picollo convert`. Reading must
//! give events or an error, never a panic, and memory stays bounded (one record of at most
//! 1 MiB, which the reader checks before allocating).
#![no_main]

use libfuzzer_sys::fuzz_target;
use picollo_alloc::csv::FrameCsv;
use picollo_linux::capture::{CaptureEvent, CaptureReader};

fuzz_target!(|data: &[u8]| {
    let Ok(mut reader) = CaptureReader::new(data) else {
        return;
    };
    let mut events = 0usize;
    while let Ok(Some(event)) = reader.next_event() {
        events += 1;
        if let CaptureEvent::Frame { info, words, .. } = event {
            assert_eq!(words.len(), info.payload_words());
            let f = picollo_core::ring::DynamicFrame::new(info, 0, words);
            let mut csv = String::new();
            let _ = f.to_csv(&mut csv, true);
        }
    }
    // Each event consumed input: frames at least 8 bytes, records 16.
    assert!(events <= data.len());
});
