//! `picollo`: distributions, not averages, from the command line.
//!
//! - `picollo counters`: what this machine can count, and what is missing and why;
//! - `picollo stat -- A ::: B`: benchmarks commands with counters on them: mean ± σ, median,
//!   range and percentiles per counter, verdicts against the first command (bootstrap
//!   interval of the ratio of means, Mann–Whitney U), regression gates, exports and plots;
//! - `picollo report FILE.hlog`: summary tables of an HdrHistogram interval log;
//! - `picollo diff A.hlog B.hlog`: diff tables with Δ% and Cohen's d;
//! - `picollo plot FILES… -o out.svg`: the percentile-distribution plot;
//! - `picollo attach PID --csv DIR | --spans | --output run.bin`: a running process's rings
//!   to CSV, its spans to the per-phase table, or its frames to a capture file; `-e` picks
//!   the counters its spans sample, without restarting it;
//! - `picollo top PID`: the live span table;
//! - `picollo convert run.bin --csv DIR | --spans | --format json`: a capture, later, on any
//!   machine.
//!
//! Tables go to standard output, progress and diagnostics to standard error. Errors are one
//! line naming what to do, with exit status 1 (2 for usage errors).
//!
//! Modules, one per command and one per shared concern:
//!
//! - `counters`, `stat` (with `stat/`: the runner, statistics, verdicts, gates, exports and
//!   plots), `report` and `diff` (here), `export` and `plot`, all four over `hlog` (histogram
//!   files, told apart by content), `attach` (and `top`), `convert`;
//! - `spawn`: one run of a command with counters on it; `frames`: where ring frames go (CSV,
//!   the span table, a capture file); `capture`: the capture file format, its writer and its
//!   checking reader; `output`: the printed forms of summaries and diffs;
//!   `json`: the JSON writer of every output, `live_json`: the JSON of attach, top and
//!   convert; `error`: the tool's one error type.

// A binary exports nothing: items are `pub(crate)` at most, and this lint keeps them so.
#![warn(unreachable_pub)]

mod attach;
mod capture;
mod convert;
mod counters;
mod error;
mod export;
mod frames;
mod hlog;
mod json;
mod live_json;
mod output;
mod plot;
mod spawn;
mod stat;

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

use crate::error::{CliError, Result};
use crate::hlog::SelectArgs;
use crate::output::{Compared, Context, Format, Titled};

/// Cycle-precise measurement from the command line: distributions, not averages.
#[derive(Debug, Parser)]
#[command(name = "picollo", version, about, long_about = None)]
#[command(
    after_help = "Tables go to stdout; progress and diagnostics to stderr. \
    Errors are one line with exit status 1.\n\
    Examples:\n  picollo counters\n  picollo stat -r 20 -- gzip -k -f big.txt\n  \
    picollo stat -- 'gzip -k -f big.txt' ::: 'zstd -k -f big.txt'\n  \
    picollo stat --fail-if-slower 5% --baseline main.json -- ./bench\n  \
    picollo report latency.hlog --unit us\n  picollo diff before.hlog after.hlog\n  \
    picollo plot before.hlog after.hlog -o latency.svg"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// List the capabilities and the events available here, and what is missing and why.
    Counters,
    /// Benchmark commands with counters on them: mean ± σ, median, range, percentiles, and
    /// a verdict for every command against the first.
    ///
    /// Counters are opened on each child from its exec and follow its children (inherit);
    /// wall time runs from the exec to the exit. Without a hardware PMU the default events are
    /// task-clock and page-faults (a note on stderr says so). The command's stdout is
    /// discarded unless --show-output, its stderr passed through, its stdin empty.
    ///
    /// Commands are separated by `:::` (-- 'gzip -k f' ::: 'zstd -k f'); a single quoted
    /// string runs in the shell (--shell, or -N for none), several words run as they are.
    /// -P/-L scan parameters into `{NAME}`. Runs are interleaved (ABCABC…) so drift hits every
    /// command alike (--no-interleave for blocks), after --warmup runs (3 by default). Without
    /// -r, each command runs at least --min-runs times and about 3 s.
    ///
    /// The report shows, per command and counter, mean ± σ, median, min … max, and p90/p99
    /// when the run count resolves them (10 and 100 runs), in ns/µs/ms/s or k/M/G. Each other
    /// command is compared with the first (or with --baseline FILE) per counter: the ratio of
    /// means with a 95% percentile-bootstrap interval (10,000 resamples, fixed seed), and a
    /// two-sided Mann–Whitney U test (SciPy's method): "B is 1.31× faster than A (95% CI
    /// 1.22–1.40, p = 0.002)" when p < 0.05 and the interval excludes 1, else "no significant
    /// difference". Statistical outliers (modified Z-score > 14, as hyperfine) are flagged on
    /// stderr.
    ///
    /// --fail-if-slower 5% exits with status 1 and a one-line reason when the lower bound of
    /// a ratio's interval is above 1.05. --save FILE keeps the run (the JSON of
    /// --export-json), --baseline FILE compares with it (or with hyperfine's JSON), --load FILE
    /// prints it again. --table prints the percentile summary tables instead (--format
    /// markdown|text|csv|json; with --vs or several commands, Δ% and Cohen's d per rank).
    Stat(Box<stat::StatArgs>),
    /// Print summary tables of a histogram file (.hlog, .hgrm, .hist, .histz).
    ///
    /// The file is an HdrHistogram interval log (one table per tag), an .hgrm percentile
    /// file, or one encoded histogram (V2, plain or compressed, binary or base64), told
    /// apart by content.
    ///
    /// The selected intervals of each tag are added up (at 3 significant digits, or the
    /// log's if finer) and printed as one table. Values are printed as logged; --unit
    /// assumes the log is in nanoseconds and prints the same buckets divided, with the
    /// decimals the unit needs (16,384 ns is 16.384 us: nothing is rounded).
    Report(ReportArgs),
    /// Compare two histogram files: Δ% per percentile and Cohen's d.
    ///
    /// Interval logs, .hgrm files and encoded histograms, in any mix.
    ///
    /// Tags present in both logs are compared (untagged with untagged); tags in only one
    /// log are reported on stderr. Selection and units as for `report`.
    Diff(DiffArgs),
    /// Plot the percentile distribution of histogram files as SVG.
    ///
    /// Interval logs, .hgrm files and encoded histograms, in any mix.
    ///
    /// The classic HdrHistogram plot: value against percentile, with the x axis 1/(1-p) on
    /// a log scale (90%, 99%, 99.9%, …). One line per file, and per tag in tagged logs.
    Plot(PlotArgs),
    /// Read a running process's shared-memory rings: to CSV files, a capture file, or spans
    /// to tables.
    ///
    /// --csv DIR drains every ring of the process (its `picollo-*` memfds in /proc/PID/fd) to `DIR/<ring>.csv`
    /// (frame number, then the frame's fields; a ring whose counters change mid-way continues
    /// in `DIR/<ring>.2.csv`, …), picking up rings created later, and prints each file's frame
    /// and loss counts. --output FILE writes the same frames, with each ring's schema, clock
    /// and counter tables, to a capture file for `picollo convert`. --spans aggregates the
    /// span rings into the per-phase table (N, time, %, counters) and the table of counter
    /// events (`counter!`). They combine. All run until --duration elapses or the process
    /// exits. Frames are recorded only while a reader is attached.
    ///
    /// -e asks the process's span threads to sample other counters, without restarting it:
    /// each thread switches at its next outermost span and reports what it could open;
    /// counters it cannot count are shown unavailable with the reason (no hardware PMU,
    /// perf_event_paranoid, unknown name). --format json prints one JSON object instead of
    /// the tables: {"type":"attach","pid","seconds","rings":[{"ring","frames","lost","csv"}],
    /// "capture","counter_request","spans":{"rings","frames","clock","unavailable","phases",
    /// "events","notes"}}.
    Attach(attach::AttachArgs),
    /// Live view of a process's spans: the per-phase table of the last interval.
    ///
    /// Every --interval seconds the screen is redrawn (when stdout is a terminal) with the
    /// span tables of that interval only (deltas) and the totals since start; with --format
    /// json, one JSON object per interval on its own line ({"type":"top","refresh",
    /// "interval_s","uptime_s","rings","total",…} and the fields of attach's "spans"). -e as
    /// for attach. Time is what the spans spent inside the interval (a span that began
    /// earlier counts from the interval's start); % is the share of the outermost spans, so
    /// nested spans are part of their parent's, not added to it. Stops after --count
    /// refreshes, when the process exits, when q is typed, or on Ctrl-C.
    Top(attach::TopArgs),
    /// Convert a capture file (from `attach --output`) to CSV files, the span tables or JSON.
    ///
    /// Works on any machine: the capture holds every ring's schema, clock record and counter
    /// tables. --csv DIR writes `DIR/<ring>.csv` as `attach --csv` would have; --spans prints
    /// the per-phase and counter-event tables (as JSON with --format json); --format json
    /// alone prints one JSON object per line: {"type":"ring","ring","schema","clock",
    /// "counters"}, {"type":"frame","ring","frame","fields":{…}}, {"type":"counters","ring",
    /// "since","counters"}, {"type":"lost","ring","count"}, then {"type":"end","pid",
    /// "frames","lost","complete"}. A damaged file is an error naming the byte; a file cut
    /// short converts what it holds, with a warning.
    Convert(convert::ConvertArgs),
    /// Convert an HdrHistogram interval log for fleet systems: Prometheus text, OpenMetrics
    /// (promtool backfill) or OTLP/JSON exponential histograms.
    ///
    /// Logs of any length are read as a stream (one interval at a time, plus a sparse sum per
    /// tag); openmetrics and otlp-json output is staged in an unlinked file in $TMPDIR and
    /// written once the whole log has converted, so an error leaves stdout empty. Logs with
    /// more tags than --max-tags (100,000) are refused.
    Export(export::ExportArgs),
}

#[derive(Debug, Args)]
struct ReportArgs {
    /// The histogram file (.hlog, .hgrm, .hist, .histz).
    file: PathBuf,
    #[command(flatten)]
    select: SelectArgs,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Markdown)]
    format: Format,
}

#[derive(Debug, Args)]
struct DiffArgs {
    /// The baseline file (A).
    a: PathBuf,
    /// The file to compare with it (B).
    b: PathBuf,
    #[command(flatten)]
    select: SelectArgs,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Markdown)]
    format: Format,
}

#[derive(Debug, Args)]
struct PlotArgs {
    /// Histogram files to plot.
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// The SVG file to write (SVG only: another extension, such as .png, is refused).
    #[arg(short = 'o', long = "output", value_name = "OUT.svg")]
    output: PathBuf,
    /// The plot's title.
    #[arg(long, default_value = "Percentile distribution")]
    title: String,
    /// The value axis: log where a panel's values span two decades or more (auto), or
    /// always linear or log.
    #[arg(long, value_enum, default_value_t = plot::YScale::Auto)]
    y_scale: plot::YScale,
    #[command(flatten)]
    select: SelectArgs,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(text) => {
            let mut out = std::io::stdout().lock();
            match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
                Ok(()) => ExitCode::SUCCESS,
                // A closed pipe (`| head`) is not an error worth reporting.
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("picollo: error: cannot write to stdout: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        Err(e) => {
            eprintln!("picollo: error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Runs the command and returns what goes to stdout.
fn run(cli: Cli) -> Result<String> {
    match cli.command {
        Command::Counters => Ok(counters::report()),
        Command::Stat(a) => stat::run(&a),
        Command::Report(a) => report(&a),
        Command::Diff(a) => diff(&a),
        Command::Plot(a) => plot(&a),
        Command::Attach(a) => attach::attach(&a),
        Command::Top(a) => attach::top(&a),
        Command::Convert(a) => convert::run(&a),
        Command::Export(a) => export::run(&a),
    }
}

fn report(a: &ReportArgs) -> Result<String> {
    let log = hlog::load(&a.file, &a.select.selection()?)?;
    let mut tables = Vec::with_capacity(log.groups.len());
    for g in &log.groups {
        tables.push(Titled {
            title: log.title(g, a.select.unit),
            summary: hlog::summary(g, a.select.unit)?,
        });
    }
    Ok(output::summaries(a.format, &Context::new(), &tables))
}

fn diff(a: &DiffArgs) -> Result<String> {
    let selection = a.select.selection()?;
    let la = hlog::load(&a.a, &selection)?;
    let lb = hlog::load(&a.b, &selection)?;
    let unit = a.select.unit;
    let mut tables = Vec::new();
    let in_a: HashSet<&Option<String>> = la.groups.iter().map(|g| &g.tag).collect();
    let in_b: HashMap<&Option<String>, &hlog::Group> =
        lb.groups.iter().map(|g| (&g.tag, g)).collect();
    for ga in &la.groups {
        let Some(&gb) = in_b.get(&ga.tag) else {
            eprintln!(
                "picollo: {} is only in {}: not compared",
                tag_name(&ga.tag),
                la.name
            );
            continue;
        };
        let title = match &ga.tag {
            Some(t) => format!("tag {t}"),
            None if la.has_tags || lb.has_tags => "untagged".to_string(),
            None if la.source != hlog::Source::Hlog || lb.source != hlog::Source::Hlog => {
                "histogram".to_string()
            }
            None => "all intervals".to_string(),
        };
        let title = match unit {
            Some(u) => format!("{title} ({})", u.symbol()),
            None => title,
        };
        tables.push(Compared {
            title,
            before: hlog::summary(ga, unit)?,
            after: hlog::summary(gb, unit)?,
        });
    }
    for gb in &lb.groups {
        if !in_a.contains(&gb.tag) {
            eprintln!(
                "picollo: {} is only in {}: not compared",
                tag_name(&gb.tag),
                lb.name
            );
        }
    }
    if tables.is_empty() {
        return Err(CliError::new(format!(
            "{} and {} share no tag; select one tag in each with --tag, or compare logs of \
             the same kind",
            la.name, lb.name
        )));
    }
    let context: Context = vec![("A", la.describe()), ("B", lb.describe())];
    Ok(output::diffs(a.format, &context, &tables))
}

fn tag_name(tag: &Option<String>) -> String {
    match tag {
        Some(t) => format!("tag {t}"),
        None => "the untagged data".to_string(),
    }
}

/// The counter a tag of `picollo stat`'s logs names when it counts events rather than time
/// (`page-faults`, `A.context-switches:u`, a PMU event), or `None` for times (`task-clock`,
/// `wall-time`) and tags of other logs, whose values are taken to be nanoseconds.
fn counted_event(tag: Option<&str>) -> Option<String> {
    let tag = tag?;
    let name = tag
        .strip_prefix("A.")
        .or_else(|| tag.strip_prefix("B."))
        .unwrap_or(tag);
    if name.contains('/') {
        return Some(name.to_string());
    }
    let spec: picollo_linux::EventSpec = name.parse().ok()?;
    let clock = matches!(
        spec.event,
        picollo_linux::Event::Software(
            picollo_linux::event::SoftwareEvent::TaskClock
                | picollo_linux::event::SoftwareEvent::CpuClock
        )
    );
    (!clock).then(|| name.to_string())
}

fn plot(a: &PlotArgs) -> Result<String> {
    if let [file] = a.files.as_slice() {
        if stat_json(file) {
            stat::plot_saved(file, &a.output, &a.title)?;
            return Ok(String::new());
        }
    }
    plot::check_output(&a.output)?;
    let selection = a.select.selection()?;
    let unit = a.select.unit;
    let mut series = Vec::new();
    for f in &a.files {
        let log = hlog::load(f, &selection)?;
        for g in &log.groups {
            let label = match (&g.tag, log.has_tags) {
                (Some(t), _) => format!("{}, tag {t}", log.name),
                (None, true) => format!("{}, untagged", log.name),
                (None, false) => log.name.clone(),
            };
            // Counts keep their own axis and are never converted; times take --unit.
            let (y_desc, divisor) = match counted_event(g.tag.as_deref()) {
                Some(event) => (format!("{event} (count)"), 1.0),
                None => match unit {
                    Some(u) => (format!("Value ({})", u.symbol()), u.divisor() as f64),
                    None => ("Value (as logged)".to_string(), 1.0),
                },
            };
            series.push(plot::Series::from_counts(
                label,
                y_desc,
                &g.counts()?,
                divisor,
            ));
        }
    }
    let svg = plot::render(&series, &a.title, a.y_scale)?;
    plot::write(&a.output, &svg)?;
    eprintln!(
        "picollo: wrote {} ({} line{})",
        a.output.display(),
        series.len(),
        if series.len() == 1 { "" } else { "s" }
    );
    Ok(String::new())
}

/// Whether `path` is a saved `stat` run (JSON) rather than a histogram file.
fn stat_json(path: &std::path::Path) -> bool {
    use std::io::Read as _;
    let mut head = [0u8; 64];
    let n = std::fs::File::open(path)
        .and_then(|mut f| f.read(&mut head))
        .unwrap_or(0);
    head[..n]
        .iter()
        .find(|b| !b.is_ascii_whitespace())
        .is_some_and(|&b| b == b'{')
}
