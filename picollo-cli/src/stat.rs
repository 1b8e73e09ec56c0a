//! `picollo stat`: runs commands N times with counters on them and prints, per command, each
//! counter's mean ± σ, median, range and percentiles, then every command against the
//! baseline with a verdict; or the percentile tables (`--table`), exports, gates and plots.
//!
//! - [`events`] chooses what is counted, [`words`] splits and quotes command strings;
//! - [`runner`] plans the commands (`:::`, parameter scans, the shell) and runs them;
//! - [`stats`] holds the statistics (bootstrap interval of the ratio of means, Mann–Whitney U,
//!   outliers), [`model`] the per-run values and comparisons;
//! - [`human`] prints the default report, [`export`](mod@export) the JSON/Markdown/CSV
//!   forms, [`gate`] checks `--fail-if-slower`, [`plot`] draws `--plot`;
//! - [`sides`] keeps each command's histograms and writes `--hlog`/`--hgrm` from them.
//!
//! What is counted follows `perf stat`: user space and the kernel where this process may count
//! the kernel ([`counting_domain`]: privileged, or `perf_event_paranoid` ≤ 1, and no security
//! policy refusing it), else user space only with the reason on stderr; the header's
//! `counting:` line says which. perf's modifiers choose per event (`page-faults:u`, `cs:k`).
//! Every figure is kept in HdrHistogram(3)'s buckets, so `--hlog`/`--hgrm` read back as printed.

mod events;
pub(crate) mod export;
pub(crate) mod gate;
pub(crate) mod human;
pub(crate) mod model;
pub(crate) mod plot;
pub(crate) mod runner;
mod sides;
pub(crate) mod stats;
mod words;

use std::ffi::OsString;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

use clap::ValueEnum;

use picollo_linux::caps::Capabilities;

use crate::error::{CliError, Result};
use crate::output::{self, Compared, Context, Format};

use self::events::{choose_events, counting_domain, domain_note};
use self::model::{Comparison, Saved};
use self::sides::{save_hgrm, save_hlog, Side};

/// When to colour the human output.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub(crate) enum ColorWhen {
    /// When standard output is a terminal and `NO_COLOR` is not set.
    #[default]
    Auto,
    /// Always.
    Always,
    /// Never.
    Never,
}

/// What `stat` was asked to do.
#[derive(Clone, Debug, Default)]
pub(crate) struct StatOptions {
    /// `-e` values, each a comma-separated list of perf event names.
    pub(crate) events: Vec<String>,
    /// Measured runs per command; `None`: automatic (at least `min_runs`, about 3 s).
    pub(crate) repeat: Option<u32>,
    /// Lower bound of the automatic run count.
    pub(crate) min_runs: u32,
    /// Upper bound of the automatic run count.
    pub(crate) max_runs: Option<u32>,
    /// Runs per command before the measured ones, not recorded.
    pub(crate) warmup: u32,
    /// The command to compare with, as one shell-like string.
    pub(crate) vs: Option<String>,
    /// Keep measuring when the command exits with a failure status.
    pub(crate) ignore_failure: bool,
    /// Send the command's standard output to standard error instead of discarding it.
    pub(crate) show_output: bool,
    /// Print the percentile tables in this format instead of the human report.
    pub(crate) format: Option<Format>,
    /// Print the percentile summary tables instead of the human report.
    pub(crate) table: bool,
    /// When to colour the human report.
    pub(crate) color: ColorWhen,
    /// Save every distribution to this HdrHistogram interval log, one tagged interval each.
    pub(crate) hlog: Option<PathBuf>,
    /// Save every distribution as an `.hgrm` percentile file, one per counter, named after
    /// this path.
    pub(crate) hgrm: Option<PathBuf>,
    /// The commands and their arguments, separated by `:::`.
    pub(crate) command: Vec<OsString>,
    /// Run command strings without a shell (split like a shell would).
    pub(crate) no_shell: bool,
    /// `-n` names of the commands, in order.
    pub(crate) names: Vec<String>,
    /// The shell for command strings.
    pub(crate) shell: String,
    /// `-P NAME MIN MAX`.
    pub(crate) scan: Option<Vec<String>>,
    /// `-D STEP` of the scan.
    pub(crate) scan_step: Option<String>,
    /// `-L NAME VALUES` pairs, flattened.
    pub(crate) lists: Vec<String>,
    /// Commands run once before each command's runs.
    pub(crate) setup: Vec<String>,
    /// Commands run before each run.
    pub(crate) prepare: Vec<String>,
    /// Commands run once after each command's runs.
    pub(crate) cleanup: Vec<String>,
    /// Run each command's runs in a block rather than interleaved.
    pub(crate) no_interleave: bool,
    /// `--fail-if-slower` thresholds.
    pub(crate) fail_if_slower: Vec<String>,
    /// Save the run (JSON) here.
    pub(crate) save: Option<PathBuf>,
    /// Compare with this saved run.
    pub(crate) baseline: Option<PathBuf>,
    /// Print this saved run instead of measuring.
    pub(crate) load: Option<PathBuf>,
    /// `--export-json` path.
    pub(crate) export_json: Option<PathBuf>,
    /// `--export-markdown` path.
    pub(crate) export_markdown: Option<PathBuf>,
    /// `--export-csv` path.
    pub(crate) export_csv: Option<PathBuf>,
    /// `--plot` path.
    pub(crate) plot: Option<PathBuf>,
}

/// Reads a saved run.
fn load(path: &Path) -> Result<Saved> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        CliError::new(format!(
            "cannot read {}: {e}; give a file from `picollo stat --save`",
            path.display()
        ))
    })?;
    export::from_json(&text, &path.display().to_string())
}

/// Runs `stat` and returns what to print on standard output; diagnostics go to standard
/// error as they happen.
///
/// # Errors
/// A bad event or command, counters that cannot be opened, a failing command (unless
/// ignored), a file that cannot be read or written, or a regression past a
/// `--fail-if-slower` threshold (the report is printed first).
pub(crate) fn run(opts: &StatOptions) -> Result<String> {
    let thresholds = opts
        .fail_if_slower
        .iter()
        .map(|t| gate::parse(t))
        .collect::<Result<Vec<_>>>()?;
    // What was counted is known for a live run only (a saved run does not record it).
    let (saved, counting) = match &opts.load {
        Some(path) => (load(path)?, None),
        None => {
            let (saved, note) = measure(opts)?;
            (saved, Some(note))
        }
    };
    let baseline = match &opts.baseline {
        Some(p) => Some((p.display().to_string(), load(p)?)),
        None => None,
    };
    let comparisons = model::compare(&saved, baseline.as_ref().map(|(n, s)| (n.as_str(), s)));
    if let Some((name, b)) = &baseline {
        for bench in &saved.benches {
            if !comparisons
                .iter()
                .any(|c| c.baseline_label == bench.command)
                && b.benches.len() > 1
                && !b.benches.iter().any(|x| x.command == bench.command)
            {
                eprintln!(
                    "picollo: `{}` is not in {name}: not compared",
                    bench.label()
                );
            }
        }
    }
    if !thresholds.is_empty() && comparisons.is_empty() {
        return Err(CliError::new(
            "--fail-if-slower needs something to compare: a second command (-- A ::: B) or \
             --baseline FILE",
        ));
    }
    for w in human::outlier_warnings(&saved) {
        eprintln!("picollo: {w}");
    }
    let mut replaced: Option<String> = None;
    let json = || export::to_json(&saved, &comparisons);
    if let Some(p) = &opts.save {
        replaced = replaced.or(export::write(p, &json(), "--save")?);
    }
    if let Some(p) = &opts.export_json {
        replaced = replaced.or(export::write(p, &json(), "--export-json")?);
    }
    if let Some(p) = &opts.export_markdown {
        let md = export::to_markdown(&saved, &comparisons);
        replaced = replaced.or(export::write(p, &md, "--export-markdown")?);
    }
    if let Some(p) = &opts.export_csv {
        let csv = export::to_csv(&saved, &comparisons);
        replaced = replaced.or(export::write(p, &csv, "--export-csv")?);
    }
    let sides: Vec<Side> = saved
        .benches
        .iter()
        .enumerate()
        .map(|(i, b)| Side::from_bench(i, b))
        .collect();
    let commands: Vec<String> = saved.benches.iter().map(model::Bench::label).collect();
    if let Some(path) = &opts.hlog {
        save_hlog(path, &sides, saved.started_unix_ms, &commands.join(" ::: "))?;
    }
    if let Some(path) = &opts.hgrm {
        save_hgrm(path, &sides)?;
    }
    if let Some(path) = &opts.plot {
        let svg = plot::render(&saved, &comparisons, "picollo stat")?;
        crate::plot::write(path, &svg)?;
        eprintln!("picollo: wrote {}", path.display());
    }
    let text = match replaced {
        Some(t) => t,
        None if opts.table || opts.format.is_some() => tables(
            &saved,
            &sides,
            opts.format.unwrap_or_default(),
            counting.as_deref(),
        ),
        None => {
            let color = match opts.color {
                ColorWhen::Always => true,
                ColorWhen::Never => false,
                ColorWhen::Auto => {
                    std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none()
                }
            };
            let report = human::render(&saved, &comparisons, human::Style { color });
            match &counting {
                Some(c) => format!("Counting: {c}\n{report}"),
                None => report,
            }
        }
    };
    let failures = gate::check(&thresholds, &comparisons, |i| saved.benches[i].label())?;
    if failures.is_empty() {
        return Ok(text);
    }
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
    Err(CliError::new(format!(
        "regression: {}",
        failures.join("; ")
    )))
}

/// Runs the commands; returns the run and what its events without modifiers counted.
fn measure(opts: &StatOptions) -> Result<(Saved, String)> {
    if opts.command.is_empty() {
        return Err(CliError::new(
            "no command given; put it after `--`: picollo stat -- sleep 0.1",
        ));
    }
    let caps = Capabilities::detect();
    let mut notes = Vec::new();
    let events = choose_events(&opts.events, &caps, &mut notes)?;
    let domain = counting_domain(&caps);
    if let Err(why) = &domain {
        notes.push(why.clone());
    }
    for n in &notes {
        eprintln!("picollo: {n}");
    }
    let mut params = Vec::new();
    if let Some(scan) = &opts.scan {
        if let [name, min, max] = scan.as_slice() {
            params.push(runner::scan(name, min, max, opts.scan_step.as_deref())?);
        }
    }
    for pair in opts.lists.chunks(2) {
        if let [name, values] = pair {
            params.push(runner::Parameter {
                name: name.clone(),
                values: values.split(',').map(String::from).collect(),
            });
        }
    }
    let shell = runner::Shell {
        shell: (!opts.no_shell).then(|| opts.shell.clone()),
    };
    let mut planned = runner::plan(
        &opts.command,
        opts.vs.as_deref(),
        &params,
        &shell,
        &opts.setup,
        &opts.prepare,
        &opts.cleanup,
    )?;
    runner::name(&mut planned, &opts.names)?;
    let saved = runner::run(
        &planned,
        &events,
        &runner::RunOptions {
            repeat: opts.repeat,
            min_runs: opts.min_runs,
            max_runs: opts.max_runs,
            warmup: opts.warmup,
            interleave: !opts.no_interleave,
            ignore_failure: opts.ignore_failure,
            show_output: opts.show_output,
            kernel: domain.is_ok(),
        },
    )?;
    for b in &saved.benches {
        for s in &b.series {
            let missed = s.missed();
            if missed > 0 {
                eprintln!(
                    "picollo: {} was not counted in {missed} of {} runs of `{}` (no counter \
                     was free)",
                    s.name,
                    s.values.len(),
                    b.label()
                );
            }
            if s.scaled_runs > 0 {
                eprintln!(
                    "picollo: {} of `{}` was multiplexed in {} runs: those values are scaled \
                     estimates",
                    s.name,
                    b.label(),
                    s.scaled_runs
                );
            }
        }
    }
    Ok((saved, domain_note(&domain)))
}

/// The summary tables: one command's summaries, or for several the diff of each against the
/// first (one document per pair; CSV and JSON print one per line).
fn tables(saved: &Saved, sides: &[Side], format: Format, counting: Option<&str>) -> String {
    let mut context: Context = Vec::new();
    if sides.len() == 1 {
        context.push(("command", saved.benches[0].label()));
        if let Some(c) = counting {
            context.push(("counting", c.to_string()));
        }
    }
    let runs = saved.benches.first().map_or(0, model::Bench::runs);
    if sides.len() == 1 {
        context.push(("runs", runs.to_string()));
        context.push(("warmup", saved.warmup.to_string()));
        return output::summaries(format, &context, &sides[0].tables());
    }
    let mut out = String::new();
    for (i, side) in sides.iter().enumerate().skip(1) {
        let mut context: Context = vec![
            ("A", saved.benches[0].label()),
            ("B", saved.benches[i].label()),
            ("runs", runs.to_string()),
            ("warmup", saved.warmup.to_string()),
        ];
        if let Some(c) = counting {
            context.insert(2, ("counting", c.to_string()));
        }
        let (a, b) = (sides[0].tables(), side.tables());
        let compared: Vec<Compared> = a
            .into_iter()
            .filter_map(|ta| {
                let tb = b.iter().find(|tb| tb.title == ta.title)?;
                Some(Compared {
                    title: ta.title,
                    before: ta.summary,
                    after: tb.summary.clone(),
                })
            })
            .collect();
        if i > 1 && matches!(format, Format::Markdown | Format::Text) {
            out.push('\n');
        }
        out.push_str(&output::diffs(format, &context, &compared));
    }
    out
}

/// Comparisons of a saved run, for `picollo plot run.json`.
pub(crate) fn plot_saved(path: &Path, out: &Path, title: &str) -> Result<()> {
    let saved = load(path)?;
    let comparisons: Vec<Comparison> = model::compare(&saved, None);
    let svg = plot::render(&saved, &comparisons, title)?;
    crate::plot::write(out, &svg)?;
    eprintln!("picollo: wrote {}", out.display());
    Ok(())
}
