//! `picollo convert run.bin`: a capture file (from `attach --output`) turned into CSV files,
//! the span tables, or JSON lines, on any machine: the file carries every ring's schema,
//! clock record and counter tables.

use std::fs::File;
use std::io::BufReader;
use std::path::PathBuf;

use clap::{ArgGroup, Args};

use crate::capture::{CaptureEvent, CaptureReader};
use picollo_spans::SpanAggregator;

use crate::attach::LiveFormat;
use crate::error::{CliError, Result};
use crate::frames::{csv_summary, spans_markdown, Sinks};
use crate::json;
use crate::live_json::{ConvertHead, Line, Spans};

/// The arguments of `convert`.
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("mode").required(true).multiple(true).args(["csv", "spans", "format"])))]
pub(crate) struct ConvertArgs {
    /// The capture file.
    pub(crate) file: PathBuf,
    /// Write every ring to `DIR/<ring>.csv`.
    #[arg(long, value_name = "DIR")]
    pub(crate) csv: Option<PathBuf>,
    /// Print the per-phase and counter-event tables of the span rings.
    #[arg(long)]
    pub(crate) spans: bool,
    /// json: every frame as a JSON line (alone), or the span report as JSON (with --spans).
    #[arg(long, value_enum)]
    pub(crate) format: Option<LiveFormat>,
}

/// Converts the capture; returns what goes to stdout.
///
/// # Errors
/// A missing, unreadable or damaged file; a directory that cannot be written.
pub(crate) fn run(o: &ConvertArgs) -> Result<String> {
    let shown = o.file.display().to_string();
    let file = File::open(&o.file)
        .map_err(|e| CliError::new(format!("cannot open {shown}: {e}; check the path")))?;
    let damaged = |e: &dyn std::fmt::Display| {
        CliError::new(format!(
            "{shown}: {e}; is this a capture from `picollo attach --output`?"
        ))
    };
    let mut reader = CaptureReader::new(BufReader::new(file)).map_err(|e| damaged(&e))?;
    let json_lines = o.csv.is_none() && !o.spans && o.format == Some(LiveFormat::Json);
    let mut sinks = Sinks::new();
    if let Some(dir) = &o.csv {
        sinks = sinks.csv(dir)?;
    }
    if o.spans {
        sinks = sinks.spans();
    }
    if json_lines {
        sinks = sinks.json_lines(Box::new(std::io::stdout()));
    }
    while let Some(event) = reader.next_event().map_err(|e| damaged(&e))? {
        feed(&mut sinks, event)?;
    }
    sinks.finish()?;
    if !reader.is_complete() {
        eprintln!(
            "picollo: {shown} was cut short (no end record: the attach was interrupted); \
             converted the {} frames it holds",
            reader.frames()
        );
    }
    let pid = reader.pid();
    let mut out = String::new();
    if json_lines {
        out.push_str(&json::to_line(&Line::End {
            pid,
            frames: reader.frames(),
            lost: reader.lost(),
            complete: reader.is_complete(),
        }));
        out.push('\n');
        return Ok(out);
    }
    if o.csv.is_some() {
        out.push_str(&csv_summary(&sinks.totals()));
    }
    if let Some(agg) = sinks.aggregator() {
        span_report(&mut out, o.format, &shown, pid, sinks.span_rings(), agg);
    }
    Ok(out)
}

/// Hands one capture event to the sinks.
fn feed(sinks: &mut Sinks, event: CaptureEvent<'_>) -> Result<()> {
    match event {
        CaptureEvent::Ring { id, name, info } => {
            // The reader numbers rings in file order, as the sinks do.
            let sink_id = sinks.add_ring(name, info)?;
            debug_assert_eq!(sink_id, id);
            Ok(())
        }
        CaptureEvent::Frame {
            ring,
            number,
            info,
            words,
        } => sinks.frame(ring, info, number, words),
        CaptureEvent::Lost { ring, count } => sinks.lost(ring, count),
        CaptureEvent::Counters { ring, info } => sinks.counters_changed(ring, info),
    }
}

/// Appends the span report of capture `shown` (process `pid`, `rings` span rings) to `out`:
/// one JSON line, or the Markdown table.
fn span_report(
    out: &mut String,
    format: Option<LiveFormat>,
    shown: &str,
    pid: u64,
    rings: usize,
    agg: &SpanAggregator,
) {
    if format == Some(LiveFormat::Json) {
        let head = ConvertHead {
            kind: "convert",
            file: shown,
            pid,
            rings,
        };
        out.push_str(&json::to_line(&Spans::new(head, agg)));
        out.push('\n');
        return;
    }
    if !out.is_empty() {
        out.push('\n');
    }
    out.push_str(&format!(
        "- capture: {shown}\n- process: {pid}\n- rings: {rings}\n- frames: {} ({} lost)\n\n{}",
        agg.accepted(),
        agg.lost(),
        spans_markdown(agg)
    ));
}
