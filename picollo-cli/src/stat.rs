//! `picollo stat`: runs commands N times with counters on them and prints, per command, each
//! counter's mean ± σ, median, range and percentiles, then every command against the
//! baseline with a verdict; or the percentile tables (`--table`), exports, gates and plots.
//!
//! - [`runner`] plans the commands (`:::`, parameter scans, the shell) and runs them;
//! - [`stats`] holds the statistics (bootstrap interval of the ratio of means, Mann–Whitney U,
//!   outliers), [`model`] the per-run values and comparisons;
//! - [`human`] prints the default report, [`export`](mod@export) the JSON/Markdown/CSV
//!   forms, [`gate`] checks `--fail-if-slower`, [`plot`] draws `--plot`.
//!
//! What is counted follows `perf stat`: user space and the kernel where this process may count
//! the kernel ([`counting_domain`]: privileged, or `perf_event_paranoid` ≤ 1, and no security
//! policy refusing it), else user space only with the reason on stderr; the header's
//! `counting:` line says which. perf's modifiers choose per event (`page-faults:u`, `cs:k`).
//! Every figure is kept in HdrHistogram(3)'s buckets, so `--hlog`/`--hgrm` read back as printed.

pub mod export;
pub mod gate;
pub mod human;
pub mod model;
pub mod plot;
pub mod runner;
pub mod stats;

use std::ffi::OsString;
use std::io::{BufWriter, IsTerminal, Write};
use std::path::{Path, PathBuf};

use clap::ValueEnum;

use picollo_alloc::hdr::interop::{export, ExportOptions};
use picollo_alloc::hdr::LogWriter;
use picollo_alloc::hdr::{interop as hdr_interop, HdrGeometry};
use picollo_alloc::hgrm::write_hgrm;
use picollo_alloc::{heap, HeapHistogram, SummaryExt};
use picollo_linux::caps::Capabilities;
use picollo_linux::event::{Event, EventSpec, SoftwareEvent};

use crate::error::{CliError, Result};
use crate::output::{self, Compared, Context, Format, Titled};

use self::model::{Comparison, Saved};

/// When to colour the human output.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum ColorWhen {
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
pub struct StatOptions {
    /// `-e` values, each a comma-separated list of perf event names.
    pub events: Vec<String>,
    /// Measured runs per command; `None`: automatic (at least `min_runs`, about 3 s).
    pub repeat: Option<u32>,
    /// Lower bound of the automatic run count.
    pub min_runs: u32,
    /// Upper bound of the automatic run count.
    pub max_runs: Option<u32>,
    /// Runs per command before the measured ones, not recorded.
    pub warmup: u32,
    /// The command to compare with, as one shell-like string.
    pub vs: Option<String>,
    /// Keep measuring when the command exits with a failure status.
    pub ignore_failure: bool,
    /// Send the command's standard output to standard error instead of discarding it.
    pub show_output: bool,
    /// Print the percentile tables in this format instead of the human report.
    pub format: Option<Format>,
    /// Print seed 000's percentile tables instead of the human report.
    pub table: bool,
    /// When to colour the human report.
    pub color: ColorWhen,
    /// Save every distribution to this HdrHistogram interval log, one tagged interval each.
    pub hlog: Option<PathBuf>,
    /// Save every distribution as an `.hgrm` percentile file, one per counter, named after
    /// this path.
    pub hgrm: Option<PathBuf>,
    /// The commands and their arguments, separated by `:::`.
    pub command: Vec<OsString>,
    /// Run command strings without a shell (split like a shell would).
    pub no_shell: bool,
    /// `-n` names of the commands, in order.
    pub names: Vec<String>,
    /// The shell for command strings.
    pub shell: String,
    /// `-P NAME MIN MAX`.
    pub scan: Option<Vec<String>>,
    /// `-D STEP` of the scan.
    pub scan_step: Option<String>,
    /// `-L NAME VALUES` pairs, flattened.
    pub lists: Vec<String>,
    /// Commands run once before each command's runs.
    pub setup: Vec<String>,
    /// Commands run before each run.
    pub prepare: Vec<String>,
    /// Commands run once after each command's runs.
    pub cleanup: Vec<String>,
    /// Run each command's runs in a block rather than interleaved.
    pub no_interleave: bool,
    /// `--fail-if-slower` thresholds.
    pub fail_if_slower: Vec<String>,
    /// Save the run (JSON) here.
    pub save: Option<PathBuf>,
    /// Compare with this saved run.
    pub baseline: Option<PathBuf>,
    /// Print this saved run instead of measuring.
    pub load: Option<PathBuf>,
    /// `--export-json` path.
    pub export_json: Option<PathBuf>,
    /// `--export-markdown` path.
    pub export_markdown: Option<PathBuf>,
    /// `--export-csv` path.
    pub export_csv: Option<PathBuf>,
    /// `--plot` path.
    pub plot: Option<PathBuf>,
}

/// The name of the wall-time row.
pub const WALL_TIME: &str = "wall-time";

/// Splits a comma-separated event list, keeping commas inside `pmu/…/` terms.
pub fn split_events(spec: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut slashes = 0;
    for c in spec.chars() {
        match c {
            '/' => {
                slashes += 1;
                cur.push(c);
            }
            ',' if slashes % 2 == 0 => out.push(core::mem::take(&mut cur)),
            c => cur.push(c),
        }
    }
    out.push(cur);
    out.into_iter()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

/// Whether `e` is a clock event, which must lead its group to be read up to date.
fn is_clock(e: &EventSpec) -> bool {
    matches!(
        e.event,
        Event::Software(SoftwareEvent::TaskClock | SoftwareEvent::CpuClock)
    )
}

/// What events without modifiers count, as `perf stat` decides: user space and the kernel
/// where this process may count the kernel (`Ok`), else user space only with the reason
/// (`Err`). Events written with modifiers (`page-faults:u`) count what they say.
pub fn counting_domain(caps: &Capabilities) -> std::result::Result<(), String> {
    caps.kernel_counting()?;
    // The rule allows it; a security module (seccomp, SELinux) may still refuse: ask the
    // kernel once, with a software event on this thread.
    let probe = picollo_linux::CounterSession::builder()
        .exclude_kernel(false)
        .exclude_hv(false)
        .software(SoftwareEvent::TaskClock)
        .build();
    match probe {
        Err(picollo_linux::PerfError::PermissionDenied { errno, .. }) => Err(format!(
            "counting user space only: the kernel refused to count itself (errno {errno}) \
             although perf_event_paranoid allows it; a security policy limits perf events"
        )),
        _ => Ok(()),
    }
}

/// The header line saying what events without modifiers count.
pub fn domain_note(domain: &std::result::Result<(), String>) -> String {
    match domain {
        Ok(()) => {
            "user space and the kernel (as perf stat; :u or :k after an event chooses)".to_string()
        }
        Err(why) => why.trim_start_matches("counting ").to_string(),
    }
}

/// The events to count: the `-e` lists parsed (a clock moved first, duplicates removed), or
/// the defaults for this machine. Diagnostics go to `notes`.
///
/// # Errors
/// An event name that does not parse.
pub fn choose_events(
    specs: &[String],
    caps: &Capabilities,
    notes: &mut Vec<String>,
) -> Result<Vec<EventSpec>> {
    let mut events: Vec<EventSpec> = Vec::new();
    if specs.is_empty() {
        let names: &[&str] = if caps.has_hardware_pmu() {
            &[
                "task-clock",
                "cycles",
                "instructions",
                "branch-misses",
                "page-faults",
            ]
        } else {
            notes.push(format!(
                "{}; counting the software events task-clock and page-faults, and wall time",
                caps.no_pmu_reason()
                    .unwrap_or_else(|| "no hardware PMU".into())
                    .split(';')
                    .next()
                    .unwrap_or("no hardware PMU")
            ));
            &["task-clock", "page-faults"]
        };
        for n in names {
            events.push(n.parse().map_err(|e| CliError::new(format!("{e}")))?);
        }
        return Ok(events);
    }
    for spec in specs {
        for name in split_events(spec) {
            let e: EventSpec = name.parse().map_err(|e| {
                CliError::new(format!(
                    "unknown event `{name}`: {e}; run `picollo counters` for the events \
                     available here"
                ))
            })?;
            if !events.contains(&e) {
                events.push(e);
            }
        }
    }
    if events.is_empty() {
        return Err(CliError::new(
            "-e names no event; give perf event names such as -e task-clock,page-faults",
        ));
    }
    let clocks: Vec<usize> = (0..events.len())
        .filter(|&i| is_clock(&events[i]))
        .collect();
    if let Some(&first) = clocks.first() {
        let clock = events.remove(first);
        events.insert(0, clock);
        if clocks.len() > 1 {
            notes.push(
                "more than one clock event: only the first is read up to date (clocks update \
                 on a group read only when they lead the group)"
                    .into(),
            );
        }
    }
    if !caps.has_hardware_pmu() && events.iter().any(|e| e.event.needs_hardware_pmu()) {
        let reason = caps.no_pmu_reason().unwrap_or_default();
        notes.push(format!(
            "{}; hardware, cache and raw events are dropped",
            reason.split(';').next().unwrap_or("no hardware PMU")
        ));
    }
    Ok(events)
}

/// Splits a command line as a POSIX shell would split words: whitespace separates, single
/// quotes keep everything, double quotes keep everything but `\"` and `\\`, a backslash
/// outside quotes escapes the next character. No expansion of any kind.
///
/// # Errors
/// An unclosed quote or a trailing backslash, or an empty command.
pub fn split_command(s: &str) -> Result<Vec<OsString>> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = s.chars();
    let unclosed = || CliError::new(format!("unclosed quote in --vs {s:?}; close it"));
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => cur.push(c),
                        None => return Err(unclosed()),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c @ ('"' | '\\')) => cur.push(c),
                            Some(c) => {
                                cur.push('\\');
                                cur.push(c);
                            }
                            None => return Err(unclosed()),
                        },
                        Some(c) => cur.push(c),
                        None => return Err(unclosed()),
                    }
                }
            }
            '\\' => match chars.next() {
                Some(c) => {
                    in_word = true;
                    cur.push(c);
                }
                None => {
                    return Err(CliError::new(format!(
                        "trailing backslash in --vs {s:?}; remove it"
                    )))
                }
            },
            c if c.is_whitespace() => {
                if in_word {
                    words.push(OsString::from(core::mem::take(&mut cur)));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                cur.push(c);
            }
        }
    }
    if in_word {
        words.push(OsString::from(cur));
    }
    if words.is_empty() {
        return Err(CliError::new(
            "--vs is empty; give the other command, quoted: --vs 'sleep 0.1'",
        ));
    }
    Ok(words)
}

/// A command line for display: arguments with spaces or quotes are single-quoted.
pub fn show_command(argv: &[OsString]) -> String {
    argv.iter()
        .map(|a| {
            let a = a.to_string_lossy();
            if a.is_empty() || a.contains(|c: char| c.is_whitespace() || "'\"\\$`".contains(c)) {
                format!("'{}'", a.replace('\'', "'\\''"))
            } else {
                a.into_owned()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// One command's distributions, for the percentile tables and the saved logs.
struct Side {
    label: String,
    /// Per counter, in order of first appearance; wall time is kept apart.
    counters: Vec<(String, HeapHistogram<u64>, u64)>,
    wall: HeapHistogram<u64>,
}

impl Side {
    /// The histograms of `bench`'s per-run values; `label` is `A`, `B`, … `Z`, then `C27`, ….
    fn from_bench(i: usize, bench: &model::Bench) -> Self {
        let label = if i < 26 {
            char::from(b'A' + i as u8).to_string()
        } else {
            format!("C{}", i + 1)
        };
        let mut side = Side {
            label,
            counters: Vec::new(),
            wall: run_histogram(),
        };
        for s in &bench.series {
            let mut h = run_histogram();
            for v in s.values.iter().flatten() {
                h.record(*v);
            }
            if s.name == WALL_TIME {
                side.wall = h;
            } else {
                side.counters.push((s.name.clone(), h, s.missed() as u64));
            }
        }
        side
    }

    /// Each counter's histogram with its name, then the wall time's.
    fn histograms(&self) -> impl Iterator<Item = (&str, &HeapHistogram<u64>)> {
        self.counters
            .iter()
            .map(|(n, h, _)| (n.as_str(), h))
            .chain([(WALL_TIME, &self.wall)])
    }

    /// The titled summaries: each counter, then the wall time.
    fn tables(&self) -> Vec<Titled> {
        let mut out: Vec<Titled> = self
            .counters
            .iter()
            .map(|(name, h, _)| Titled {
                title: title(name),
                summary: h.summary(),
            })
            .collect();
        out.push(Titled {
            title: title(WALL_TIME),
            summary: self.wall.summary(),
        });
        out
    }
}

/// HdrHistogram's `new Histogram(3)`: 1 ..= 2^63 - 1 at 3 significant digits.
fn log_geometry() -> HdrGeometry {
    HdrGeometry::new(1, i64::MAX as u64, 3).expect("a valid HdrHistogram geometry")
}

/// The histogram of one figure over the runs: the layout and window of HdrHistogram's
/// `new Histogram(3)` (0.0488 % precision), so that `--hlog` writes it index for index and
/// `report`, `diff`, `plot` and `export` read back the same buckets: the same values, `±`,
/// precision and min/max as printed here. (Values above 2^63 - 1, which no counter reaches,
/// would be counted as overflow, as a log could not hold them.)
fn run_histogram() -> HeapHistogram<u64> {
    let g = log_geometry();
    heap::plain(hdr_interop::layout_for(&g), hdr_interop::window_for(&g))
}

/// A counter's title with its unit.
fn title(name: &str) -> String {
    match model::Kind::of(name) {
        model::Kind::Time => format!("{name} (ns)"),
        model::Kind::Count => name.to_string(),
    }
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
pub fn run(opts: &StatOptions) -> Result<String> {
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

/// Seed 000's tables: one command's summaries, or for several the diff of each against the
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
pub fn plot_saved(path: &Path, out: &Path, title: &str) -> Result<()> {
    let saved = load(path)?;
    let comparisons: Vec<Comparison> = model::compare(&saved, None);
    let svg = plot::render(&saved, &comparisons, title)?;
    crate::plot::write(out, &svg)?;
    eprintln!("picollo: wrote {}", out.display());
    Ok(())
}

/// A tag for an interval log: the counter's name (prefixed `A.`/`B.` with `--vs`), made a
/// valid tag by [`picollo_alloc::hdr::sanitize_tag`].
fn log_tag(side: &Side, sides: usize, counter: &str) -> String {
    let name = picollo_alloc::hdr::sanitize_tag(counter);
    if sides > 1 {
        format!("{}.{name}", side.label)
    } else {
        name
    }
}

/// The HdrHistogram counts of a stat histogram: 3 significant digits (finer than the
/// histogram's 0.1%), nothing dropped (per-run totals are far below `i64::MAX`).
fn hdr_counts(h: &HeapHistogram<u64>, what: &str) -> Result<picollo_alloc::hdr::HdrCounts> {
    export(h, &ExportOptions::new().significant_digits(3))
        .map(|e| e.counts)
        .map_err(|e| CliError::new(format!("cannot save {what}: {e}")))
}

/// Writes every distribution to an interval log at `path`: one interval per counter (and
/// side), tagged with its name, spanning the runs.
fn save_hlog(path: &Path, sides: &[Side], started_ms: i64, command: &str) -> Result<()> {
    let shown = path.display();
    let file = std::fs::File::create(path)
        .map_err(|e| CliError::new(format!("cannot create {shown}: {e}; give a writable path")))?;
    let mut w = LogWriter::new(BufWriter::new(file));
    let err = |e: picollo_alloc::hdr::LogError| CliError::new(format!("{shown}: {e}"));
    w.write_comment(&format!("picollo stat -- {command}"))
        .map_err(err)?;
    w.write_log_format_version().map_err(err)?;
    w.write_start_time(started_ms).map_err(err)?;
    w.write_legend().map_err(err)?;
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
    let seconds = (now_ms - started_ms).max(0) as f64 / 1000.0;
    for side in sides {
        for (name, h) in side.histograms() {
            let counts = hdr_counts(h, name)?;
            w.write_interval(
                Some(&log_tag(side, sides.len(), name)),
                0.0,
                seconds,
                &counts,
            )
            .map_err(err)?;
        }
    }
    w.flush().map_err(err)?;
    eprintln!("picollo: wrote {shown}");
    Ok(())
}

/// The `.hgrm` file of one counter: `PATH` with `.<counter>` inserted before `.hgrm` (and
/// `.A`/`.B` with `--vs`).
fn hgrm_path(path: &Path, side: &Side, sides: usize, counter: &str) -> PathBuf {
    let stem = match path.extension() {
        Some(e) if e == "hgrm" => path.with_extension(""),
        _ => path.to_owned(),
    };
    let tag = log_tag(side, sides, counter).replace('/', "_");
    let mut name = stem.into_os_string();
    name.push(format!(".{tag}.hgrm"));
    PathBuf::from(name)
}

/// Percentile steps per halving of an `.hgrm` file: enough that every recorded bucket is a
/// step of its own (one run in `total` moves the percentile by `100 / total`, and the steps
/// near 0 are `ln 2 / ticks` apart), so the file read back holds every bucket the run had;
/// at least HdrHistogram's usual 5, at most 1,000 (the rows grow with the runs).
fn hgrm_ticks(h: &HeapHistogram<u64>) -> u32 {
    use picollo_core::ReadExt;
    let total = h.total();
    u32::try_from(total.saturating_mul(2))
        .unwrap_or(u32::MAX)
        .clamp(5, 1_000)
}

/// Writes every distribution as an `.hgrm` percentile file (5 steps per halving, values as
/// counted), one per counter and side.
fn save_hgrm(path: &Path, sides: &[Side]) -> Result<()> {
    for side in sides {
        for (name, h) in side.histograms() {
            let p = hgrm_path(path, side, sides.len(), name);
            let shown = p.display();
            let file = std::fs::File::create(&p).map_err(|e| {
                CliError::new(format!("cannot create {shown}: {e}; give a writable path"))
            })?;
            let mut out = BufWriter::new(file);
            write_hgrm(h, &mut out, hgrm_ticks(h), 1.0)
                .and_then(|()| out.flush())
                .map_err(|e| CliError::new(format!("{shown}: {e}")))?;
            eprintln!("picollo: wrote {shown}");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_lists_keep_pmu_terms() {
        assert_eq!(
            split_events("task-clock, cpu/event=0x3c,umask=0x00/,page-faults,"),
            ["task-clock", "cpu/event=0x3c,umask=0x00/", "page-faults"]
        );
    }

    #[test]
    fn saved_file_names() {
        let a = Side::from_bench(0, &model::Bench::new(String::new(), vec![], vec![]));
        assert_eq!(
            log_tag(&a, 1, "cpu/event=0x3c,umask=0/"),
            "cpu/event=0x3c_umask=0/"
        );
        assert_eq!(log_tag(&a, 2, "cycles"), "A.cycles");
        assert_eq!(
            hgrm_path(Path::new("out/run.hgrm"), &a, 1, "task-clock"),
            Path::new("out/run.task-clock.hgrm")
        );
        assert_eq!(
            hgrm_path(Path::new("run"), &a, 2, "pmu/x/"),
            Path::new("run.A.pmu_x_.hgrm")
        );
    }

    #[test]
    fn commands_split_like_a_shell() {
        let w = split_command(r#"sh -c 'echo "a b"' x\ y "q\"z""#).unwrap();
        assert_eq!(w, ["sh", "-c", "echo \"a b\"", "x y", "q\"z"]);
        assert!(split_command("echo 'oops").is_err());
        assert!(split_command("   ").is_err());
        assert_eq!(show_command(&w), r#"sh -c 'echo "a b"' 'x y' 'q"z'"#);
    }
}
