//! Converts an HdrHistogram interval log (`.hlog`) into Picollo summary tables, one per tag.
//!
//! ```text
//! cargo run --release -p picollo-alloc --example hlog_summary [-- LOG.hlog [DIGITS]]
//! ```
//!
//! Every interval is decoded and added into a Picollo histogram per tag, at the layout that
//! matches HdrHistogram's `new Histogram(DIGITS)` (default 3: block size 1024), which is how
//! HdrHistogram's own tools accumulate logs. Each tag then gets its total, the percentiles the
//! way HdrHistogram reports them (upper equivalent values), and Picollo's summary table
//! (midpoint values, with the `±` of each bucket). Without arguments it reads the jHiccup
//! vector `picollo-alloc/tests/vectors/hdrhistogram/jHiccup-2.0.7S.logV2.hlog` (in the
//! repository).
//!
//! Malformed lines and undecodable intervals are reported on stderr and skipped.

use std::error::Error;
use std::fs::File;
use std::io::BufReader;
use std::path::PathBuf;
use std::process::ExitCode;

use picollo_alloc::hdr::{add_hdr, interop, HdrGeometry, Import, LogReader};
use picollo_alloc::Summary;
use picollo_alloc::{HeapHistogram, HistogramBuilder};
use picollo_core::fmt::Grouped;
use picollo_core::{EquivalentValue, ReadExt};

/// The intervals of one tag, accumulated.
struct Group {
    tag: Option<String>,
    histogram: HeapHistogram<u64>,
    import: Import,
    intervals: usize,
}

fn default_log() -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/vectors/hdrhistogram/jHiccup-2.0.7S.logV2.hlog"
    ))
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("hlog_summary: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), Box<dyn Error>> {
    let mut args = std::env::args_os().skip(1);
    let path = args.next().map(PathBuf::from).unwrap_or_else(default_log);
    let digits = match args.next() {
        None => 3,
        Some(a) => a
            .to_str()
            .and_then(|s| s.parse::<u8>().ok())
            .filter(|d| (1..=5).contains(d))
            .ok_or("DIGITS must be a number from 1 to 5")?,
    };
    let layout = interop::layout_for(&HdrGeometry::new(1, i64::MAX as u64, digits)?);

    let file = File::open(&path).map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    let mut reader = LogReader::new(BufReader::new(file));
    let mut groups: Vec<Group> = Vec::new();
    let mut skipped = 0usize;
    for entry in reader.by_ref() {
        let entry = match entry {
            Ok(entry) => entry,
            Err(e) => {
                eprintln!("skipped: {e}");
                skipped += 1;
                continue;
            }
        };
        let counts = match entry.decode() {
            Ok(counts) => counts,
            Err(e) => {
                eprintln!("line {}: skipped: {e}", entry.line);
                skipped += 1;
                continue;
            }
        };
        let i = match groups.iter().position(|g| g.tag == entry.tag) {
            Some(i) => i,
            None => {
                groups.push(Group {
                    tag: entry.tag.clone(),
                    histogram: HistogramBuilder::new()
                        .layout(layout)
                        .dense()
                        .plain()
                        .unwrap(),
                    import: Import::default(),
                    intervals: 0,
                });
                groups.len() - 1
            }
        };
        let group = &mut groups[i];
        match add_hdr(&mut group.histogram, &counts) {
            Ok(import) => {
                group.import.merge(&import);
                group.intervals += 1;
            }
            Err(e) => {
                eprintln!("line {}: skipped: {e}", entry.line);
                skipped += 1;
            }
        }
    }

    println!("# {}", path.display());
    if let Some(start) = reader.start_time_sec() {
        println!("Start time: {start:.3} s since the epoch");
    }
    println!(
        "Accumulated as HdrHistogram `new Histogram({digits})`: Picollo block size {}",
        layout.block_size()
    );
    if skipped > 0 {
        println!("{skipped} lines or intervals skipped (see stderr)");
    }
    if groups.is_empty() {
        println!("No intervals.");
    }
    for g in &groups {
        print_group(g);
    }
    Ok(())
}

fn print_group(g: &Group) {
    let title = match &g.tag {
        Some(tag) => format!("Tag={tag}"),
        None => "(untagged)".to_owned(),
    };
    let h = &g.histogram;
    println!();
    println!(
        "## {title}: {} intervals, total {}",
        g.intervals,
        Grouped(h.total())
    );
    let mapping = &g.import.mapping;
    if mapping.is_exact() {
        println!("Converted exactly.");
    } else {
        // Each count sits inside its HdrHistogram bucket; the import reports how far off that
        // can be from the recorded values.
        let mut bound = Vec::new();
        if mapping.max_relative_error > 0.0 {
            bound.push(format!(
                "relative error at most {:.3}%",
                mapping.max_relative_error * 100.0
            ));
        }
        if mapping.max_linear_error > 0 {
            bound.push(format!(
                "absolute error at most {} where the source's resolution is absolute",
                Grouped(mapping.max_linear_error)
            ));
        }
        println!(
            "Re-bucketed: every count inside its HdrHistogram bucket ({}).",
            bound.join("; ")
        );
    }
    // The percentiles as HdrHistogram prints them: the highest value of each bucket.
    let ranks = [50.0, 90.0, 99.0, 99.9];
    let mut line = String::from("HdrHistogram values:");
    for rank in ranks {
        if let Ok(p) = h.percentile(rank, EquivalentValue::Upper) {
            line.push_str(&format!(" p{rank}={}", Grouped(p.value)));
        }
    }
    if let Some(max) = h.max() {
        line.push_str(&format!(" max={}", Grouped(max)));
    }
    println!("{line}");
    println!();
    print!("{}", Summary::from_histogram(h).table(&title));
}
