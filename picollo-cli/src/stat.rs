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
mod schema;
mod sides;
pub(crate) mod stats;
mod words;

use std::ffi::OsString;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};

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

/// The arguments of `stat`.
#[derive(Debug, Args)]
#[allow(clippy::struct_excessive_bools)]
pub(crate) struct StatArgs {
    /// Events to count, comma-separated perf names (repeatable): task-clock, page-faults,
    /// cycles, instructions, L1-dcache-load-misses, rNNNN, pmu/event=0x3c/…
    #[arg(short = 'e', long = "events", value_name = "EVENTS")]
    pub(crate) events: Vec<String>,
    /// Measured runs of each command [default: automatic, at least --min-runs and about 3 s
    /// of each command].
    #[arg(short = 'r', long = "runs", visible_alias = "repeat", value_name = "N",
          value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) repeat: Option<u32>,
    /// The fewest runs the automatic run count makes.
    #[arg(short = 'm', long, value_name = "N", default_value_t = 10,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) min_runs: u32,
    /// The most runs the automatic run count makes.
    #[arg(short = 'M', long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) max_runs: Option<u32>,
    /// Runs of each command before the measured ones, not recorded: they fill the page
    /// cache, load the binaries and libraries, and train the branch predictors (3 by
    /// default; 0 to measure cold runs).
    #[arg(short = 'w', long, value_name = "K", default_value_t = 3)]
    pub(crate) warmup: u32,
    /// Another command to compare with, as one quoted string (split like a shell would,
    /// without expansion): --vs 'gzip -9 -k -f big.txt'. Same as `-- A ::: B`.
    #[arg(long, value_name = "OTHER CMD")]
    pub(crate) vs: Option<String>,
    /// Run every command's runs in one block (AAA…BBB…) rather than interleaved (ABAB…).
    #[arg(long)]
    pub(crate) no_interleave: bool,
    /// Keep measuring when a command exits with a failure status.
    #[arg(short = 'i', long)]
    pub(crate) ignore_failure: bool,
    /// Send the commands' stdout (and the hooks') to stderr instead of discarding it.
    #[arg(long)]
    pub(crate) show_output: bool,
    /// A name for a command, shown and exported instead of its text (repeatable, in order of
    /// the commands; `{VAR}` takes parameter values).
    #[arg(short = 'n', long, value_name = "NAME")]
    pub(crate) command_name: Vec<String>,
    /// Run command strings without a shell: split them like a shell would, no expansion.
    #[arg(short = 'N', long)]
    pub(crate) no_shell: bool,
    /// The shell that runs command strings (a single quoted word with spaces or shell
    /// syntax) and the --setup/--prepare/--cleanup commands.
    #[arg(short = 'S', long, value_name = "SHELL", default_value = "sh")]
    pub(crate) shell: String,
    /// A command run once before each command's first run (once for all, or once per
    /// command, in order).
    #[arg(short = 's', long, value_name = "CMD")]
    pub(crate) setup: Vec<String>,
    /// A command run before every run of each command, warm-up included, not measured
    /// (once for all, or once per command): clear a cache, reset a file.
    #[arg(short = 'p', long, value_name = "CMD")]
    pub(crate) prepare: Vec<String>,
    /// A command run once after each command's last run (once for all, or once per
    /// command).
    #[arg(short = 'c', long, value_name = "CMD")]
    pub(crate) cleanup: Vec<String>,
    /// Scan a parameter: one command per value from MIN to MAX, `{VAR}` in the commands
    /// replaced by it (-P threads 1 8 -- 'make -j {threads}').
    #[arg(short = 'P', long, num_args = 3, value_names = ["VAR", "MIN", "MAX"])]
    pub(crate) parameter_scan: Option<Vec<String>>,
    /// The step of --parameter-scan [default: 1].
    #[arg(short = 'D', long, value_name = "STEP", requires = "parameter_scan")]
    pub(crate) parameter_step_size: Option<String>,
    /// A parameter with a list of values, comma-separated (-L cc gcc,clang); repeatable,
    /// every combination is run.
    #[arg(short = 'L', long, num_args = 2, value_names = ["VAR", "VALUES"], action = clap::ArgAction::Append)]
    pub(crate) parameter_list: Vec<String>,
    /// Fail (exit status 1, one line naming the regression) when a command is worse than the
    /// baseline by more than PCT on the lower bound of the ratio's 95% interval: on every
    /// counter (5%), or on one (wall-time=5%); repeatable.
    #[arg(long, value_name = "[COUNTER=]PCT")]
    pub(crate) fail_if_slower: Vec<String>,
    /// Save the run (the JSON of --export-json) for a later --baseline, --load or plot.
    #[arg(long, value_name = "FILE")]
    pub(crate) save: Option<PathBuf>,
    /// Compare every command with a saved run (--save, or hyperfine's --export-json): the
    /// saved command with the same text, or the saved run's only command, is its baseline.
    #[arg(long, value_name = "FILE")]
    pub(crate) baseline: Option<PathBuf>,
    /// Print a saved run (from --save) instead of measuring: the report, comparisons,
    /// exports, gates and plot, as if it had just run.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["command", "vs"])]
    pub(crate) load: Option<PathBuf>,
    /// Write the run as JSON (schema picollo-stat version 1: hyperfine's fields plus every
    /// counter's per-run values); `-` for stdout.
    #[arg(long, value_name = "FILE")]
    pub(crate) export_json: Option<PathBuf>,
    /// Write hyperfine-style Markdown tables, one per counter, with the ratio's interval.
    #[arg(long, value_name = "FILE")]
    pub(crate) export_markdown: Option<PathBuf>,
    /// Write one CSV row per command and counter (summary, ratio, interval, p-value).
    #[arg(long, value_name = "FILE")]
    pub(crate) export_csv: Option<PathBuf>,
    /// Draw each counter's distribution per command, with the ratio's interval, as SVG.
    #[arg(long, value_name = "OUT.svg")]
    pub(crate) plot: Option<PathBuf>,
    /// Print the percentile summary tables (every rank, --format) instead of the report.
    #[arg(long)]
    pub(crate) table: bool,
    /// Print the percentile tables in this format (implies --table).
    #[arg(long, value_enum)]
    pub(crate) format: Option<Format>,
    /// Colour the report: auto (a terminal, and NO_COLOR unset), always, never.
    #[arg(long, value_enum, default_value_t = ColorWhen::Auto)]
    pub(crate) color: ColorWhen,
    /// Also save every distribution to this HdrHistogram interval log (one interval per
    /// counter, tagged with its name; `A.`/`B.`/… prefixes with several commands), for
    /// report, diff, plot.
    #[arg(long, value_name = "FILE")]
    pub(crate) hlog: Option<PathBuf>,
    /// Also save every distribution as an .hgrm percentile file: FILE with `.<counter>`
    /// inserted before `.hgrm` (out.hgrm: out.task-clock.hgrm, out.wall-time.hgrm, …).
    #[arg(long, value_name = "FILE")]
    pub(crate) hgrm: Option<PathBuf>,
    /// The commands (after `--`), separated by `:::`: each is a program and its arguments,
    /// or one quoted string run by the shell ('seq 100 | sort').
    #[arg(
        value_name = "CMD",
        required_unless_present = "load",
        trailing_var_arg = true,
        allow_hyphen_values = true
    )]
    pub(crate) command: Vec<OsString>,
}

/// Reads a saved run.
fn load(path: &Path) -> Result<Saved> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        CliError::new(format!(
            "cannot read {}: {e}; give a file from `picollo stat --save`",
            path.display()
        ))
    })?;
    schema::from_json(&text, &path.display().to_string())
}

/// Runs `stat` and returns what to print on standard output; diagnostics go to standard
/// error as they happen.
///
/// # Errors
/// A bad event or command, counters that cannot be opened, a failing command (unless
/// ignored), a file that cannot be read or written, or a regression past a
/// `--fail-if-slower` threshold (the report is printed first).
pub(crate) fn run(opts: &StatArgs) -> Result<String> {
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
        report_unmatched(&saved, &comparisons, name, b);
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
    let sides: Vec<Side> = saved
        .benches
        .iter()
        .enumerate()
        .map(|(i, b)| Side::from_bench(i, b))
        .collect();
    let to_stdout = write_files(opts, &saved, &comparisons, &sides)?;
    let text = match to_stdout {
        Some(t) => t,
        None if opts.table || opts.format.is_some() => tables(
            &saved,
            &sides,
            opts.format.unwrap_or_default(),
            counting.as_deref(),
        ),
        None => report(opts.color, &saved, &comparisons, counting.as_deref()),
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

/// Says which commands a `--baseline` file of several commands does not have.
fn report_unmatched(saved: &Saved, comparisons: &[Comparison], name: &str, baseline: &Saved) {
    for bench in &saved.benches {
        if !comparisons
            .iter()
            .any(|c| c.baseline_label == bench.command)
            && baseline.benches.len() > 1
            && !baseline.benches.iter().any(|x| x.command == bench.command)
        {
            eprintln!(
                "picollo: `{}` is not in {name}: not compared",
                bench.label()
            );
        }
    }
}

/// Writes the files asked for (`--save`, the exports, `--hlog`, `--hgrm`, `--plot`); returns
/// the first export asked for on standard output (`-`), which replaces the report.
fn write_files(
    opts: &StatArgs,
    saved: &Saved,
    comparisons: &[Comparison],
    sides: &[Side],
) -> Result<Option<String>> {
    let mut to_stdout: Option<String> = None;
    let json = || schema::to_json(saved, comparisons);
    if let Some(p) = &opts.save {
        to_stdout = to_stdout.or(export::write(p, &json(), "--save")?);
    }
    if let Some(p) = &opts.export_json {
        to_stdout = to_stdout.or(export::write(p, &json(), "--export-json")?);
    }
    if let Some(p) = &opts.export_markdown {
        let md = export::to_markdown(saved, comparisons);
        to_stdout = to_stdout.or(export::write(p, &md, "--export-markdown")?);
    }
    if let Some(p) = &opts.export_csv {
        let csv = export::to_csv(saved, comparisons);
        to_stdout = to_stdout.or(export::write(p, &csv, "--export-csv")?);
    }
    let commands: Vec<String> = saved.benches.iter().map(model::Bench::label).collect();
    if let Some(path) = &opts.hlog {
        save_hlog(path, sides, saved.started_unix_ms, &commands.join(" ::: "))?;
    }
    if let Some(path) = &opts.hgrm {
        save_hgrm(path, sides)?;
    }
    if let Some(path) = &opts.plot {
        let svg = plot::render(saved, comparisons, "picollo stat")?;
        crate::plot::write(path, &svg)?;
        eprintln!("picollo: wrote {}", path.display());
    }
    Ok(to_stdout)
}

/// The human report, coloured as `--color` says, under the counting domain of a live run.
fn report(
    color: ColorWhen,
    saved: &Saved,
    comparisons: &[Comparison],
    counting: Option<&str>,
) -> String {
    let color = match color {
        ColorWhen::Always => true,
        ColorWhen::Never => false,
        ColorWhen::Auto => {
            std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none()
        }
    };
    let report = human::render(saved, comparisons, human::Style { color });
    match counting {
        Some(c) => format!("Counting: {c}\n{report}"),
        None => report,
    }
}

/// Runs the commands; returns the run and what its events without modifiers counted.
fn measure(opts: &StatArgs) -> Result<(Saved, String)> {
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
    if let Some(scan) = &opts.parameter_scan {
        if let [name, min, max] = scan.as_slice() {
            params.push(runner::scan(
                name,
                min,
                max,
                opts.parameter_step_size.as_deref(),
            )?);
        }
    }
    for pair in opts.parameter_list.chunks(2) {
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
    runner::name(&mut planned, &opts.command_name)?;
    let saved = runner::run(&planned, &events, opts, domain.is_ok())?;
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
