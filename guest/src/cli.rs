//! The `picollo` binary's checks: `stat` (exact counts, defaults, multiplexing) and `attach`
//! on a running spans program, compared with the library's exact counts.

use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};

use picollo_linux::event::HardwareEvent;
use picollo_linux::session::CounterSession;
use picollo_linux::Count;

use crate::model::{set_user_access, MAX_CONSTANT, MUX_BOUND_PERMILLE, PER_UNIT};
use crate::report::Report;

/// The events of the exact `picollo stat` checks. User-space counts only (`:u`): the exact
/// counts they are compared with exclude the kernel, which `stat` counts by default where
/// permitted, as `perf stat` does (the guest runs as root).
pub(crate) const STAT_EVENTS: &str = "instructions:u,cycles:u";

/// More hardware events than QEMU's PMU has counters (1 cycle counter, 6 event counters).
pub(crate) const STAT_MUX_EVENTS: &str =
    "cycles:u,instructions:u,r0000:u,r0001:u,r0002:u,r0003:u,r0004:u,r0005:u";

/// The CLI's machine-readable output, parsed in one place (the human formats may change).
pub(crate) mod cli_json {
    use serde_json::Value;

    /// `picollo stat --format json`: `(runs, p0 value, p100 value, half width of p100)` of
    /// the table whose name starts with `counter`.
    pub fn stat_min_max(json: &str, counter: &str) -> Option<(u64, u64, u64, u64)> {
        let v: Value = serde_json::from_str(json).ok()?;
        let table = v["tables"]
            .as_array()?
            .iter()
            .find(|t| t["name"].as_str().is_some_and(|n| n.starts_with(counter)))?;
        let ps = table["percentiles"].as_array()?;
        let first = ps.first()?;
        let last = ps.last()?;
        Some((
            table["total"].as_u64()?,
            first["value"].as_u64()?,
            last["value"].as_u64()?,
            last["half_width"].as_u64()?,
        ))
    }

    /// `picollo attach --spans --format json`: `(spans, sum)` of `counter` in phase `phase`
    /// of the last line that has it: the spans the counter covers, not the phase's `n` (spans
    /// saved between the attach and the counter request count nothing).
    pub fn attach_sum(out: &str, phase: &str, counter: &str) -> Option<(u64, u64)> {
        out.lines().rev().find_map(|line| {
            let v: Value = serde_json::from_str(line).ok()?;
            let p = v["spans"]["phases"]
                .as_array()?
                .iter()
                .find(|p| p["name"] == phase)?
                .clone();
            // cycles and instructions are columns of their own; other counters are in
            // `counters` with their own span counts.
            match counter {
                "instructions" | "cycles" => Some((
                    p[format!("{counter}_spans")].as_u64()?,
                    p[counter].as_u64()?,
                )),
                _ => {
                    let c = &p["counters"][counter];
                    Some((c["spans"].as_u64()?, c["sum"].as_u64()?))
                }
            }
        })
    }
}

pub(crate) fn run(cmd: &mut Command) -> Result<String, String> {
    let out = cmd.output().map_err(|e| format!("{cmd:?}: {e}"))?;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    if !out.status.success() {
        return Err(format!(
            "{cmd:?}: {}: {}{}",
            out.status,
            String::from_utf8_lossy(&out.stderr),
            stdout
        ));
    }
    Ok(stdout)
}

pub(crate) fn cli(r: &mut Report, picollo: &str, span_constant: Option<u64>) {
    let me = std::env::current_exe()
        .map_or_else(|_| "/bin/picollo-guest".into(), |p| p.display().to_string());
    // `picollo counters`: the capabilities and the PMU's own events from sysfs.
    match run(Command::new(picollo).arg("counters")) {
        Ok(out) => {
            let sysfs = std::fs::read_dir("/sys/bus/event_source/devices/armv8_pmuv3/events")
                .map(|d| {
                    d.filter_map(|e| e.ok()?.file_name().into_string().ok())
                        .collect::<Vec<_>>()
                })
                .unwrap_or_default();
            let listed = sysfs
                .iter()
                .filter(|e| out.contains(&format!("armv8_pmuv3/{e}/")))
                .count();
            r.check(
                "cli-counters",
                out.contains("hardware PMU: available")
                    && out.contains("rdpmc: usable")
                    && !sysfs.is_empty()
                    && listed == sysfs.len(),
                format!("lists {listed} of the {} events in sysfs", sysfs.len()),
            );
        }
        Err(e) => r.error("cli-counters", e),
    }
    // With user access off, `picollo counters` says so and how to turn it on.
    if set_user_access(false).is_ok() {
        let out = run(Command::new(picollo).arg("counters"));
        let _ = set_user_access(true);
        match out {
            Ok(o) => {
                let line = o
                    .lines()
                    .find(|l| l.contains("rdpmc:"))
                    .unwrap_or("")
                    .trim();
                r.check(
                    "cli-counters-user-access-off",
                    line.contains("kernel.perf_user_access = 0")
                        && line.contains("sysctl kernel.perf_user_access=1"),
                    line,
                );
            }
            Err(e) => r.error("cli-counters-user-access-off", e),
        }
    }
    // `picollo stat -e instructions,cycles -r 10`: every run of the same command counts the
    // same, and the difference between two sizes is exactly the model's.
    let events = STAT_EVENTS;
    let mut values = Vec::new();
    let mut exacts = Vec::new();
    for n in [1_000u64, 5_000] {
        let out = run(Command::new(picollo)
            .args(["stat", "-e", events, "-r", "10", "--format", "json", "--"])
            .arg(&me)
            .args(["chain", &n.to_string()]));
        match out.map(|o| {
            (
                cli_json::stat_min_max(&o, "instructions"),
                cli_json::stat_min_max(&o, "cycles"),
                o,
            )
        }) {
            Ok((Some((runs, min, max, half)), cycles, o)) => {
                let cycles_ok = cycles.is_some_and(|(_, cmin, cmax, _)| cmin == min && cmax == max);
                let exact = exact_process_count(&me, n);
                let within = exact
                    .as_ref()
                    .is_ok_and(|&e| min.abs_diff(e) <= half && max.abs_diff(e) <= half);
                r.check(
                    &format!("cli-stat-{n}"),
                    runs == 10 && min == max && cycles_ok && within,
                    format!(
                        "10 runs: instructions min = max = {max} ± {half} (the histogram's \
                         0.1%), the exact count {exact:?}; cycles {cycles:?}"
                    ),
                );
                if let Ok(e) = exact {
                    exacts.push((n, e));
                }
                if runs != 10 || min != max {
                    println!("{o}");
                }
                values.push((n, max, half));
            }
            Ok((None, _, o)) => r.check(
                &format!("cli-stat-{n}"),
                false,
                format!("no instructions table: {o}"),
            ),
            Err(e) => r.error(&format!("cli-stat-{n}"), e),
        }
    }
    if let [(n1, v1, h1), (n2, v2, h2)] = values[..] {
        let model = PER_UNIT * (n2 - n1);
        let diff = v2.abs_diff(v1);
        r.check(
            "cli-stat-model",
            diff.abs_diff(model) <= h1 + h2,
            format!("stat({n2}) − stat({n1}) = {diff}, model 258·{} = {model}, within the two half widths", n2 - n1),
        );
    }
    if let [(n1, e1), (n2, e2)] = exacts[..] {
        r.check(
            "exact-process",
            e2 - e1 == PER_UNIT * (n2 - n1),
            format!(
                "the whole `chain` process from exec to exit (inherit, enable_on_exec): \
                 {e1} and {e2}, exactly 258·{} apart",
                n2 - n1
            ),
        );
    }
    stat_multiplexed(r, picollo, &me);
    stat_defaults(r, picollo, &me);
    attach(r, picollo, &me, span_constant);
}

/// The exact user-space instructions of `picollo-guest chain n` from its exec to its exit, as
/// `picollo stat` counts a command, through the library: a disabled `instructions` counter on
/// this thread with `inherit` and `enable_on_exec`, which the child inherits and which starts
/// counting at the child's exec (this thread never execs, so its own copy stays off).
pub(crate) fn exact_process_count(me: &str, n: u64) -> Result<u64, String> {
    let mut s = CounterSession::builder()
        .event(HardwareEvent::Instructions)
        .enabled(false)
        .enable_on_exec(true)
        .inherit(true)
        .build()
        .map_err(|e| e.to_string())?;
    let status = Command::new(me)
        .args(["chain", &n.to_string()])
        .status()
        .map_err(|e| e.to_string())?;
    if !status.success() {
        return Err(format!("chain {n}: {status}"));
    }
    s.read(true).map_err(|e| e.to_string())?;
    match s.counters()[0].value() {
        Some(Count::Exact(v)) => Ok(v),
        other => Err(format!("chain {n}: counted {other:?}")),
    }
}

/// `picollo stat -- CMD` with no `-e`, what a user runs first: the defaults for a machine
/// with a PMU, the ones QEMU's PMU lacks (`branch-misses`) left out with a note, the others
/// counted.
pub(crate) fn stat_defaults(r: &mut Report, picollo: &str, me: &str) {
    let out = Command::new(picollo)
        .args(["stat", "-r", "3", "--format", "json", "--"])
        .arg(me)
        .args(["chain", "1000"])
        .output();
    match out {
        Ok(o) => {
            let json = String::from_utf8_lossy(&o.stdout);
            let stderr = String::from_utf8_lossy(&o.stderr);
            let counted: Vec<&str> = ["task-clock", "cycles", "instructions", "page-faults"]
                .into_iter()
                .filter(|t| cli_json::stat_min_max(&json, t).is_some_and(|(runs, ..)| runs == 3))
                .collect();
            r.check(
                "cli-stat-defaults",
                o.status.success() && counted.len() == 4 && stderr.contains("`branch-misses`"),
                format!(
                    "counted {counted:?}; notes: {}",
                    stderr.trim().replace('\n', " | ")
                ),
            );
        }
        Err(e) => r.error("cli-stat-defaults", e),
    }
}

/// `picollo stat` with more hardware events than the PMU has counters (cycles, instructions
/// and six raw events for six event counters): the kernel refuses them as one group, so stat
/// opens one group per event and they multiplex; the scaled instructions must stay within
/// [`MUX_BOUND_PERMILLE`] of the exact count ([`exact_process_count`]).
pub(crate) fn stat_multiplexed(r: &mut Report, picollo: &str, me: &str) {
    const N: u64 = 400_000; // 103 M instructions: about 25 rotations of 4 ms
    let exact = match exact_process_count(me, N) {
        Ok(e) => e,
        Err(e) => return r.error("cli-stat-multiplexed", e),
    };
    let out = Command::new(picollo)
        .args(["stat", "-e", STAT_MUX_EVENTS])
        .args(["-r", "3", "--format", "json", "--"])
        .arg(me)
        .args(["chain", &N.to_string()])
        .output();
    let out = match out {
        Ok(o) if o.status.success() => o,
        Ok(o) => {
            return r.check(
                "cli-stat-multiplexed",
                false,
                format!("{}: {}", o.status, String::from_utf8_lossy(&o.stderr)),
            )
        }
        Err(e) => return r.error("cli-stat-multiplexed", e),
    };
    let json = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let tables = ["cycles", "r0000", "r0005"]
        .iter()
        .all(|t| cli_json::stat_min_max(&json, t).is_some());
    match cli_json::stat_min_max(&json, "instructions") {
        Some((runs, min, max, _)) => {
            let worst = min.abs_diff(exact).max(max.abs_diff(exact)) * 1000 / exact;
            r.check(
                "cli-stat-multiplexed",
                runs == 3
                    && tables
                    && stderr.contains("multiplexed")
                    && worst <= MUX_BOUND_PERMILLE,
                format!(
                    "8 events for 7 counters: one group each, multiplexed ({}); instructions \
                     in [{min}, {max}], {worst}‰ from {exact} (bound {MUX_BOUND_PERMILLE}‰); \
                     every event has a table: {tables}",
                    stderr
                        .lines()
                        .find(|l| l.contains("multiplexed"))
                        .unwrap_or("no note")
                ),
            );
            r.figure("stat_mux_worst_permille", worst);
        }
        None => r.check("cli-stat-multiplexed", false, format!("{json}{stderr}")),
    }
}

/// `picollo attach PID --spans -e instructions` on a running spans program: its spans of
/// `add_chain_256(1000)` count `258,000 + C` each, `C` as the in-process span check measured
/// (`span_constant`), except for at most [`MAX_CONSTANT`] instructions in all (the first span
/// after the counters are switched on reads its start through a path of its own).
pub(crate) fn attach(r: &mut Report, picollo: &str, me: &str, span_constant: Option<u64>) {
    let child = Command::new(me)
        .args(["spans", "6"])
        .stdout(Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => return r.error("cli-attach", e),
    };
    let mut line = String::new();
    let pid = child.stdout.take().and_then(|out| {
        let mut reader = BufReader::new(out);
        reader.read_line(&mut line).ok()?;
        // Keep draining so the child never blocks on a full pipe.
        std::thread::spawn(move || {
            let mut sink = Vec::new();
            let _ = reader.read_to_end(&mut sink);
        });
        line.trim().strip_prefix("ready ")?.parse::<i32>().ok()
    });
    let Some(pid) = pid else {
        let _ = child.kill();
        return r.error(
            "cli-attach",
            format!("the spans program did not start: {line:?}"),
        );
    };
    let out = run(Command::new(picollo).args([
        "attach",
        &pid.to_string(),
        "--spans",
        "-e",
        "instructions",
        "--duration",
        "2",
        "--format",
        "json",
    ]));
    let _ = child.kill();
    let _ = child.wait();
    match out {
        Ok(o) => match cli_json::attach_sum(&o, "chain1000", "instructions") {
            Some((spans, sum)) if spans > 0 => {
                let c = span_constant.unwrap_or(0);
                let model = spans * (PER_UNIT * 1000 + c);
                let excess = sum.wrapping_sub(model);
                r.check(
                    "cli-attach",
                    span_constant.is_some() && spans >= 100 && excess <= MAX_CONSTANT,
                    format!(
                        "attach -e instructions on pid {pid}: {spans} spans, sum {sum} = spans × \
                         (258,000 + {c}) + {excess}"
                    ),
                );
            }
            other => r.check(
                "cli-attach",
                false,
                format!("no instructions in the span table ({other:?}): {o}"),
            ),
        },
        Err(e) => r.error("cli-attach", e),
    }
}
