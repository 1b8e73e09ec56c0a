//! A capture-file reader on hostile bytes: any file given to `picollo convert`. Reading must
//! give events or an error, never a panic, and memory stays bounded (one record of at most
//! 1 MiB, which the reader checks before allocating).
#![no_main]

use libfuzzer_sys::fuzz_target;
use picollo_ring::csv::FrameCsv;

// The capture format is the `picollo` command's (picollo-cli/src/capture/): its reader and
// format, compiled here from the CLI's own files.
#[path = "../../picollo-cli/src/capture"]
#[allow(dead_code)]
mod capture {
    pub(crate) mod format;
    pub(crate) mod reader;
}
use capture::reader::{CaptureEvent, CaptureReader};

fuzz_target!(|data: &[u8]| {
    let Ok(mut reader) = CaptureReader::new(data) else {
        return;
    };
    let mut events = 0usize;
    while let Ok(Some(event)) = reader.next_event() {
        events += 1;
        if let CaptureEvent::Frame { info, words, .. } = event {
            assert_eq!(words.len(), info.payload_words());
            let f = picollo_ring::DynamicFrame::new(info, 0, words);
            let mut csv = String::new();
            let _ = f.to_csv(&mut csv, true);
        }
    }
    // Each event consumed input: frames at least 8 bytes, records 16.
    assert!(events <= data.len());
});
