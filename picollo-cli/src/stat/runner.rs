//! Plans and runs the benchmarks: commands split at `:::`, parameter scans, the shell,
//! interleaved rounds, warm-up, `--setup`/`--prepare`/`--cleanup`, the automatic run count
//! and the progress bar.

use std::ffi::OsString;
use std::io::{IsTerminal, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use picollo_linux::event::EventSpec;
use picollo_linux::Count;

use super::model::{Bench, Saved};
use super::words::{show_command, split_command};
use super::StatArgs;
use crate::error::{CliError, Result};
use crate::spawn::{self, ChildOutput};

/// The separator between commands (GNU parallel's).
pub(crate) const SEPARATOR: &str = ":::";
/// Without `-r`, commands run for at least this long (hyperfine's default).
pub(crate) const AUTO_TIME: Duration = Duration::from_secs(3);

/// A command to benchmark, ready to run.
#[derive(Clone, Debug)]
pub(crate) struct Planned {
    /// As shown.
    pub(crate) name: String,
    /// What runs.
    pub(crate) argv: Vec<OsString>,
    /// Parameter values.
    pub(crate) parameters: Vec<(String, String)>,
    /// Runs once before this command's first run.
    pub(crate) setup: Option<Vec<OsString>>,
    /// Runs before each of this command's runs (warm-up included), not measured.
    pub(crate) prepare: Option<Vec<OsString>>,
    /// Runs once after this command's last run.
    pub(crate) cleanup: Option<Vec<OsString>>,
}

/// How command strings become argument vectors.
#[derive(Clone, Debug)]
pub(crate) struct Shell {
    /// The shell for command strings; `None` with `-N`: split, no shell.
    pub(crate) shell: Option<String>,
}

impl Shell {
    /// The argv of a command given as words: one word with spaces or shell syntax is a
    /// command line for the shell (as hyperfine takes it), or split like a shell would with
    /// `-N`; several words are run as they are.
    pub(crate) fn argv(&self, words: &[String]) -> Result<Vec<OsString>> {
        match words {
            [one]
                if one.contains(|c: char| {
                    c.is_whitespace() || "|&;<>()$`\\\"'*?[]#~".contains(c)
                }) =>
            {
                match &self.shell {
                    Some(sh) => Ok(vec![sh.into(), "-c".into(), one.into()]),
                    None => split_command(one, "the command"),
                }
            }
            _ => Ok(words.iter().map(OsString::from).collect()),
        }
    }

    /// The argv of a `--setup`/`--prepare`/`--cleanup` command line (always a line; `flag`
    /// names it in errors).
    pub(crate) fn line(&self, line: &str, flag: &str) -> Result<Vec<OsString>> {
        match &self.shell {
            Some(sh) => Ok(vec![sh.into(), "-c".into(), line.into()]),
            None => split_command(line, flag),
        }
    }
}

/// A parameter and its values (`-P N 1 8`, `-L compiler gcc,clang`).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Parameter {
    /// The name, used as `{name}` in commands.
    pub(crate) name: String,
    /// The values, in order.
    pub(crate) values: Vec<String>,
}

/// The values of `-P NAME MIN MAX` with step `-D` (integers, or decimals when any is).
///
/// # Errors
/// A bound or step that is not a number, a step that is not positive, or more than 100,000
/// values.
pub(crate) fn scan(name: &str, min: &str, max: &str, step: Option<&str>) -> Result<Parameter> {
    let num = |s: &str, what: &str| {
        s.parse::<f64>()
            .ok()
            .filter(|v| v.is_finite())
            .ok_or_else(|| CliError::new(format!("-P {name}: {what} `{s}` is not a number")))
    };
    let (lo, hi) = (num(min, "the minimum")?, num(max, "the maximum")?);
    let st = step.map_or(Ok(1.0), |s| num(s, "the step (-D)"))?;
    if st.is_nan() || st <= 0.0 {
        return Err(CliError::new(format!(
            "-P {name}: the step (-D) must be positive"
        )));
    }
    if hi < lo {
        return Err(CliError::new(format!(
            "-P {name}: the maximum {max} is below the minimum {min}"
        )));
    }
    let count = ((hi - lo) / st + 1e-9).floor() + 1.0;
    if count > 100_000.0 {
        return Err(CliError::new(format!(
            "-P {name} {min} {max} gives {count} values; use a larger step (-D)"
        )));
    }
    let integral = [min, max]
        .iter()
        .chain(step.as_ref())
        .all(|s| s.parse::<i64>().is_ok());
    let decimals = [min, max]
        .iter()
        .chain(step.as_ref())
        .map(|s| s.split_once('.').map_or(0, |(_, f)| f.len()))
        .max()
        .unwrap_or(0);
    let values = (0..count as u64)
        .map(|i| {
            let v = lo + st * i as f64;
            if integral {
                format!("{}", v.round() as i64)
            } else {
                format!("{v:.decimals$}")
            }
        })
        .collect();
    Ok(Parameter {
        name: name.to_string(),
        values,
    })
}

/// Replaces `{name}` by each parameter's value.
fn substitute(s: &str, values: &[(String, String)]) -> String {
    let mut out = s.to_string();
    for (n, v) in values {
        out = out.replace(&format!("{{{n}}}"), v);
    }
    out
}

/// Every combination of the parameters' values, the first parameter varying slowest.
fn combinations(params: &[Parameter]) -> Vec<Vec<(String, String)>> {
    let mut out = vec![Vec::new()];
    for p in params {
        let mut next = Vec::new();
        for prefix in &out {
            for v in &p.values {
                let mut c: Vec<(String, String)> = prefix.clone();
                c.push((p.name.clone(), v.clone()));
                next.push(c);
            }
        }
        out = next;
    }
    out
}

/// The per-command hook: one value for every command, or one per command.
fn hook(list: &[String], i: usize, commands: usize, flag: &str) -> Result<Option<String>> {
    match list.len() {
        0 => Ok(None),
        1 => Ok(Some(list[0].clone())),
        n if n == commands => Ok(Some(list[i].clone())),
        n => Err(CliError::new(format!(
            "{n} {flag} commands for {commands} commands; give one for all, or one per command"
        ))),
    }
}

/// The commands to benchmark: `words` split at [`SEPARATOR`], `vs` appended, each expanded
/// for every combination of `params`.
///
/// # Errors
/// An empty command, a bad `--vs`, hooks that do not match the commands.
#[allow(clippy::too_many_arguments)]
pub(crate) fn plan(
    words: &[OsString],
    vs: Option<&str>,
    params: &[Parameter],
    shell: &Shell,
    setup: &[String],
    prepare: &[String],
    cleanup: &[String],
) -> Result<Vec<Planned>> {
    let mut templates: Vec<Vec<String>> = vec![Vec::new()];
    for w in words {
        let w = w.to_string_lossy();
        if w == SEPARATOR {
            templates.push(Vec::new());
        } else {
            if let Some(t) = templates.last_mut() {
                t.push(w.into_owned());
            }
        }
    }
    if templates.iter().any(Vec::is_empty) {
        return Err(CliError::new(format!(
            "an empty command around `{SEPARATOR}`; give commands as -- A {SEPARATOR} B"
        )));
    }
    let mut vs_argv = None;
    if let Some(vs) = vs {
        let argv = split_command(vs, "--vs")?;
        templates.push(
            argv.iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect(),
        );
        vs_argv = Some(argv);
    }
    let n_templates = templates.len();
    let combos = combinations(params);
    let mut out = Vec::new();
    for (t, template) in templates.iter().enumerate() {
        for combo in &combos {
            let words: Vec<String> = template.iter().map(|w| substitute(w, combo)).collect();
            let argv = match (&vs_argv, t + 1 == n_templates) {
                // --vs is split already and runs without a shell, as it always has.
                (Some(_), true) if vs.is_some() => words.iter().map(OsString::from).collect(),
                _ => shell.argv(&words)?,
            };
            let name = if words.len() == 1 {
                words[0].clone()
            } else {
                show_command(&argv)
            };
            out.push((t, name, argv, combo.clone()));
        }
    }
    let total = out.len();
    out.into_iter()
        .enumerate()
        .map(|(i, (t, name, argv, combo))| {
            // A hook list matches either the templates or the expanded commands.
            let pick = |list: &[String], flag: &str| -> Result<Option<Vec<OsString>>> {
                let h = if list.len() == n_templates && n_templates != total {
                    hook(list, t, n_templates, flag)?
                } else {
                    hook(list, i, total, flag)?
                };
                h.map(|l| shell.line(&substitute(&l, &combo), flag))
                    .transpose()
            };
            Ok(Planned {
                name,
                argv,
                parameters: combo.clone(),
                setup: pick(setup, "--setup")?,
                prepare: pick(prepare, "--prepare")?,
                cleanup: pick(cleanup, "--cleanup")?,
            })
        })
        .collect()
}

/// Gives the commands the `-n` names, in order (`{VAR}` replaced by the command's parameter
/// values; one name for a scanned command template names each of its expansions).
///
/// # Errors
/// More names than commands.
pub(crate) fn name(planned: &mut [Planned], names: &[String]) -> Result<()> {
    if names.len() > planned.len() {
        return Err(CliError::new(format!(
            "{} names (-n) for {} commands; give at most one per command",
            names.len(),
            planned.len()
        )));
    }
    // A name with `{VAR}` names a template: all its parameter combinations.
    let mut combos: Vec<&Vec<(String, String)>> = Vec::new();
    for p in planned.iter() {
        if !combos.contains(&&p.parameters) {
            combos.push(&p.parameters);
        }
    }
    let group = if names.iter().any(|n| n.contains('{')) {
        combos.len().max(1)
    } else {
        1
    };
    for (i, p) in planned.iter_mut().enumerate() {
        if let Some(n) = names.get(i / group) {
            p.name = substitute(n, &p.parameters);
        }
    }
    Ok(())
}

/// The progress bar on standard error (a terminal only): done/total, the command, an ETA.
struct Progress {
    on: bool,
    start: Instant,
}

impl Progress {
    fn show(&self, done: u64, total: u64, label: &str) {
        if !self.on {
            return;
        }
        let width = 24;
        let filled = (done * width).checked_div(total).unwrap_or(0) as usize;
        let eta = if done == 0 {
            String::new()
        } else {
            let left = self.start.elapsed().as_secs_f64() / done as f64 * (total - done) as f64;
            format!(" ETA {}", eta_text(left))
        };
        // One terminal line: a long command is cut, so that `\r` redraws it in place.
        let label: String = if label.chars().count() > 40 {
            format!("{}…", label.chars().take(39).collect::<String>())
        } else {
            label.to_string()
        };
        let mut e = std::io::stderr().lock();
        let _ = write!(
            e,
            "\r\x1b[2Kpicollo: [{}{}] {done}/{total}{eta}  {label}",
            "#".repeat(filled),
            "-".repeat(width as usize - filled),
        );
        let _ = e.flush();
    }

    fn clear(&self) {
        if self.on {
            let mut e = std::io::stderr().lock();
            let _ = write!(e, "\r\x1b[2K");
            let _ = e.flush();
        }
    }
}

/// `12 s`, `3 min 05 s`.
fn eta_text(s: f64) -> String {
    if s < 60.0 {
        format!("{s:.0} s")
    } else {
        format!("{} min {:02} s", (s / 60.0) as u64, (s % 60.0) as u64)
    }
}

/// Runs a hook command, unmeasured; its failure is an error.
fn run_hook(argv: &[OsString], flag: &str, show_output: bool) -> Result<()> {
    let (program, args) = argv
        .split_first()
        .ok_or_else(|| CliError::new(format!("{flag} is empty")))?;
    let mut cmd = Command::new(program);
    cmd.args(args).stdin(Stdio::null());
    if show_output {
        cmd.stdout(std::io::stderr());
    } else {
        cmd.stdout(Stdio::null());
    }
    let status = cmd.status().map_err(|e| {
        CliError::new(format!(
            "cannot run the {flag} command `{}`: {e}",
            show_command(argv)
        ))
    })?;
    if !status.success() {
        return Err(CliError::new(format!(
            "the {flag} command `{}` failed ({status}); fix it",
            show_command(argv)
        )));
    }
    Ok(())
}

/// User and system CPU time of the waited-for children so far, in ns.
fn children_times() -> (u64, u64) {
    // SAFETY: getrusage writes one `rusage` into the zeroed value we pass.
    let mut ru: libc::rusage = unsafe { core::mem::zeroed() };
    // SAFETY: `ru` is a valid, writable rusage.
    let r = unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) };
    if r != 0 {
        return (0, 0);
    }
    let ns = |t: libc::timeval| {
        u64::try_from(t.tv_sec).unwrap_or(0) * 1_000_000_000
            + u64::try_from(t.tv_usec).unwrap_or(0) * 1000
    };
    (ns(ru.ru_utime), ns(ru.ru_stime))
}

/// Runs every planned command as `args` say and returns the measurements; the first
/// dropped-event notes and warnings go to standard error. `kernel`: events without modifiers
/// count the kernel too (perf stat's default where permitted).
///
/// # Errors
/// A command or hook that cannot run or fails (unless `--ignore-failure`), counters that
/// cannot be opened.
pub(crate) fn run(
    planned: &[Planned],
    events: &[EventSpec],
    args: &StatArgs,
    kernel: bool,
) -> Result<Saved> {
    let started_unix_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
    let mut benches: Vec<Bench> = planned
        .iter()
        .map(|p| {
            Bench::new(
                p.name.clone(),
                p.argv
                    .iter()
                    .map(|a| a.to_string_lossy().into_owned())
                    .collect(),
                p.parameters.clone(),
            )
        })
        .collect();
    let progress = Progress {
        on: std::io::stderr().is_terminal(),
        start: Instant::now(),
    };
    let mut state = RunState {
        events,
        args,
        kernel,
        output: if args.show_output {
            ChildOutput::ToStderr
        } else {
            ChildOutput::Discard
        },
        progress: &progress,
        dropped_reported: false,
        done: 0,
    };
    let result = if args.no_interleave {
        state.blocks(planned, &mut benches)
    } else {
        state.interleaved(planned, &mut benches)
    };
    progress.clear();
    result?;
    Ok(Saved {
        started_unix_ms,
        warmup: args.warmup,
        interleaved: !args.no_interleave,
        benches,
    })
}

/// The automatic run count: enough runs for each of the `k` commands of a round taking
/// `round` to fill [`AUTO_TIME`], within `--min-runs` and `--max-runs`.
fn auto_runs(round: Duration, k: u64, min_runs: u32, max_runs: Option<u32>) -> u32 {
    let secs = (round.as_secs_f64() / k.max(1) as f64).max(1e-6);
    let want = (AUTO_TIME.as_secs_f64() / secs)
        .ceil()
        .min(f64::from(u32::MAX)) as u32;
    let want = want.max(min_runs);
    max_runs.map_or(want, |m| want.min(m)).max(1)
}

/// What every run needs.
struct RunState<'a> {
    events: &'a [EventSpec],
    args: &'a StatArgs,
    kernel: bool,
    output: ChildOutput,
    progress: &'a Progress,
    dropped_reported: bool,
    done: u64,
}

impl RunState<'_> {
    /// Every command's runs in interleaved rounds (ABCABC…), warm-up rounds first; without
    /// `-r`, the first measured round sets the run count.
    fn interleaved(&mut self, planned: &[Planned], benches: &mut [Bench]) -> Result<()> {
        let a = self.args;
        for p in planned {
            if let Some(s) = &p.setup {
                run_hook(s, "--setup", a.show_output)?;
            }
        }
        let k = planned.len() as u64;
        let mut repeat = a.repeat;
        let mut round = 0u32;
        loop {
            let warm = round < a.warmup;
            let measured_round = round.saturating_sub(a.warmup);
            if repeat.is_some_and(|r| !warm && measured_round >= r) {
                break;
            }
            let total = k * u64::from(a.warmup + repeat.unwrap_or(a.min_runs));
            let t0 = Instant::now();
            for (p, bench) in planned.iter().zip(benches.iter_mut()) {
                self.one(p, bench, warm, total, measured_round)?;
            }
            // The first measured round sets the automatic run count (warm-up rounds are
            // the slow, cold ones).
            if repeat.is_none() && round == a.warmup {
                repeat = Some(auto_runs(t0.elapsed(), k, a.min_runs, a.max_runs));
            }
            round += 1;
        }
        for p in planned {
            if let Some(c) = &p.cleanup {
                run_hook(c, "--cleanup", a.show_output)?;
            }
        }
        Ok(())
    }

    /// Each command's runs in one block (AAA…BBB…), with its own setup, warm-up, run count
    /// and cleanup.
    fn blocks(&mut self, planned: &[Planned], benches: &mut [Bench]) -> Result<()> {
        let a = self.args;
        let k = planned.len() as u64;
        let mut total = 0u64;
        for (i, (p, bench)) in planned.iter().zip(benches.iter_mut()).enumerate() {
            if let Some(s) = &p.setup {
                run_hook(s, "--setup", a.show_output)?;
            }
            let mut this = a.repeat;
            let mut round = 0u32;
            loop {
                let warm = round < a.warmup;
                let measured = round.saturating_sub(a.warmup);
                if this.is_some_and(|r| !warm && measured >= r) {
                    break;
                }
                let guess =
                    total + u64::from(a.warmup + this.unwrap_or(a.min_runs)) * (k - i as u64);
                let t0 = Instant::now();
                self.one(p, bench, warm, guess, measured)?;
                if this.is_none() && round == a.warmup {
                    this = Some(auto_runs(t0.elapsed(), 1, a.min_runs, a.max_runs));
                }
                round += 1;
            }
            total += u64::from(a.warmup + this.unwrap_or(0));
            if let Some(c) = &p.cleanup {
                run_hook(c, "--cleanup", a.show_output)?;
            }
        }
        Ok(())
    }

    /// One run of `p` (prepare, then the measured run), recorded unless warm-up.
    fn one(
        &mut self,
        p: &Planned,
        bench: &mut Bench,
        warm: bool,
        total: u64,
        measured_round: u32,
    ) -> Result<()> {
        self.progress.show(
            self.done,
            total.max(self.done + 1),
            &format!("{}{}", if warm { "warm-up: " } else { "" }, p.name),
        );
        self.done += 1;
        if let Some(prep) = &p.prepare {
            run_hook(prep, "--prepare", self.args.show_output)?;
        }
        let (u0, s0) = children_times();
        let run = spawn::run(&p.argv, self.events, self.kernel, self.output)?;
        let (u1, s1) = children_times();
        if !self.dropped_reported {
            for d in &run.dropped {
                self.progress.clear();
                eprintln!(
                    "picollo: not counting `{}`: {}",
                    d.event,
                    crate::counters::short_reason(&d.error)
                );
            }
            self.dropped_reported = true;
        }
        if !run.status.success() && !self.args.ignore_failure {
            self.progress.clear();
            return Err(CliError::new(format!(
                "`{}` failed ({}) on {} run {}; fix the command, or pass --ignore-failure (-i) \
                 to measure it anyway",
                p.name,
                run.status,
                if warm { "warm-up" } else { "measured" },
                measured_round + 1
            )));
        }
        if !warm {
            let counts: Vec<(String, Option<u64>, bool)> = run
                .counts
                .iter()
                .map(|(n, c)| match c {
                    Count::Exact(v) => (n.clone(), Some(*v), false),
                    Count::Scaled { value, .. } => (n.clone(), Some(*value), true),
                    Count::NotCounted => (n.clone(), None, false),
                })
                .collect();
            bench.record(
                run.wall_ns,
                &counts,
                run.status.code(),
                u1.saturating_sub(u0),
                s1.saturating_sub(s0),
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(v: &[&str]) -> Vec<OsString> {
        v.iter().map(OsString::from).collect()
    }

    #[test]
    fn automatic_run_count() {
        // 3 s of a 10 ms command; two commands in a 20 ms round are 10 ms each.
        assert_eq!(auto_runs(Duration::from_millis(10), 1, 10, None), 300);
        assert_eq!(auto_runs(Duration::from_millis(20), 2, 10, None), 300);
        assert_eq!(
            auto_runs(Duration::from_secs(2), 1, 10, None),
            10,
            "--min-runs"
        );
        assert_eq!(auto_runs(Duration::from_millis(1), 1, 10, Some(50)), 50);
    }

    #[test]
    fn scans_and_substitution() {
        assert_eq!(
            scan("N", "1", "4", None).unwrap().values,
            ["1", "2", "3", "4"]
        );
        assert_eq!(
            scan("t", "0.1", "0.3", Some("0.1")).unwrap().values,
            ["0.1", "0.2", "0.3"]
        );
        assert!(scan("N", "5", "1", None).is_err());
        assert!(scan("N", "1", "x", None).is_err());
        assert!(scan("N", "1", "5", Some("0")).is_err());
        let sh = Shell {
            shell: Some("sh".into()),
        };
        let p = plan(
            &os(&["sleep", "0.{N}", ":::", "echo {N} | cat"]),
            None,
            &[scan("N", "1", "2", None).unwrap()],
            &sh,
            &[],
            &["echo prep {N}".into()],
            &[],
        )
        .unwrap();
        let names: Vec<&str> = p.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(
            names,
            ["sleep 0.1", "sleep 0.2", "echo 1 | cat", "echo 2 | cat"]
        );
        assert_eq!(p[0].argv, os(&["sleep", "0.1"]));
        assert_eq!(p[3].argv, os(&["sh", "-c", "echo 2 | cat"]));
        assert_eq!(p[1].prepare, Some(os(&["sh", "-c", "echo prep 2"])));
        let mut named = p.clone();
        name(&mut named, &["n={N}".into()]).unwrap();
        let names: Vec<&str> = named.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["n=1", "n=2", "echo 1 | cat", "echo 2 | cat"]);
        name(&mut named, &["a {N}".into(), "b {N}".into()]).unwrap();
        let names: Vec<&str> = named.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["a 1", "a 2", "b 1", "b 2"]);
        assert!(name(&mut named, &vec!["x".to_string(); 5]).is_err());
        let no_shell = Shell { shell: None };
        let p = plan(
            &os(&["sleep 0.1"]),
            Some("true x"),
            &[],
            &no_shell,
            &[],
            &[],
            &[],
        )
        .unwrap();
        assert_eq!(p[0].argv, os(&["sleep", "0.1"]));
        assert_eq!(p[1].argv, os(&["true", "x"]));
        assert!(plan(&os(&["a", ":::"]), None, &[], &sh, &[], &[], &[]).is_err());
        assert!(plan(
            &os(&["a", ":::", "b", ":::", "c"]),
            None,
            &[],
            &sh,
            &["x".into(), "y".into()],
            &[],
            &[]
        )
        .is_err());
    }
}
