//! `picollo stat` counts what `perf stat` counts: the same workload, run under both, gives
//! the same page faults and context switches, with and without the kernel (`:u`).
//!
//! The two tools run interleaved, one run each in turn, and their medians are compared, so
//! that a load that comes and goes (other builds on the machine) falls on both alike; and
//! each counter is compared on a workload that load cannot move:
//! - page faults on `seq | sort`, which touches the same fresh pages whatever the load:
//!   within 3 % plus 20 (a run's faults vary by a few pages with the environment and
//!   address-space layout);
//! - context switches on eight `sleep`s, whose switches are voluntary (each `sleep` and the
//!   shell waiting for it) and which spends almost no time on a CPU, where a loaded
//!   machine would preempt it: within 30 % plus 10. (On `seq | sort`, preemption under load
//!   added up to 180 switches to a run of 60 at a load average of 18; the sleeps gave 25
//!   to 31 there.)
//!
//! User-only context switches are exactly 0 on both sides. Needs `perf` (Debian `linux-perf`,
//! which CI installs: the test fails under `CI` without it, and skips with the reason
//! elsewhere) and permission to count the kernel (skips with the reason where
//! `perf_event_paranoid` refuses it, as perf itself would then count user space only).

use std::process::Command;

use picollo_linux::caps::Capabilities;

const BIN: &str = env!("CARGO_BIN_EXE_picollo");
/// Runs of each tool on each workload, interleaved.
const ROUNDS: usize = 7;
/// Page faults from sort's buffers.
const FAULTS: &str = "seq 100000 | sort -rn > /dev/null";
/// Context switches from eight sleeps, off the CPU.
const SWITCHES: &str = "for i in 1 2 3 4 5 6 7 8; do sleep 0.001; done";
const EVENTS: &str = "page-faults,context-switches,page-faults:u,context-switches:u";

/// Whether `perf stat` runs here; under `CI` its absence fails the test.
fn perf_available() -> bool {
    let ok = Command::new("perf")
        .args(["stat", "-x,", "-e", "task-clock", "--", "true"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            std::env::var_os("CI").is_none(),
            "perf is missing or does not run (CI installs linux-perf: .ci/install.d/50-perf.sh)"
        );
        eprintln!("skip: perf is not installed or does not run (apt-get install linux-perf)");
    }
    ok
}

/// One run of `workload` under `perf stat -x,`: counts by event name.
fn perf_run(workload: &str) -> Vec<(String, f64)> {
    let out = Command::new("perf")
        .args(["stat", "-x,", "-e", EVENTS, "--", "sh", "-c", workload])
        .output()
        .expect("run perf stat");
    assert!(out.status.success(), "perf stat failed: {out:?}");
    // CSV on stderr: value,unit,event,…
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            let value = f.first()?.trim().parse::<f64>().ok()?;
            Some((f.get(2)?.trim().to_string(), value))
        })
        .collect()
}

/// One run of `workload` under `picollo stat -r 1 --warmup 0 --format csv`: counts by counter
/// name (the `mean` column of one run).
fn picollo_run(workload: &str) -> Vec<(String, f64)> {
    let out = Command::new(BIN)
        .args(["stat", "-r", "1", "--warmup", "0", "--format", "csv"])
        .args(["-e", EVENTS, "--", "sh", "-c", workload])
        .output()
        .expect("run picollo stat");
    assert!(
        out.status.success(),
        "picollo stat failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).expect("UTF-8");
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().expect("a header row").split(',').collect();
    let name = header
        .iter()
        .position(|&h| h == "name")
        .expect("name column");
    let mean = header
        .iter()
        .position(|&h| h == "mean")
        .expect("mean column");
    let mut counts: Vec<(String, f64)> = Vec::new();
    for l in lines {
        let f: Vec<&str> = l.split(',').collect();
        if counts.iter().any(|(n, _)| n == f[name]) {
            continue;
        }
        counts.push((f[name].to_string(), f[mean].parse().expect("a number")));
    }
    counts
}

fn get(counts: &[(String, f64)], name: &str, side: &str) -> f64 {
    counts
        .iter()
        .find(|(n, _)| n == name)
        .unwrap_or_else(|| panic!("{side} printed no {name}: {counts:?}"))
        .1
}

/// Each tool's runs of `workload`, interleaved (perf first in even rounds, picollo first in
/// odd ones): per event, perf's counts and picollo's.
fn interleaved(workload: &str) -> Vec<(&'static str, Vec<f64>, Vec<f64>)> {
    let events = [
        "page-faults",
        "context-switches",
        "page-faults:u",
        "context-switches:u",
    ];
    let mut runs: Vec<(&'static str, Vec<f64>, Vec<f64>)> = events
        .iter()
        .map(|&e| (e, Vec::new(), Vec::new()))
        .collect();
    for round in 0..ROUNDS {
        let (perf, ours) = if round % 2 == 0 {
            let perf = perf_run(workload);
            (perf, picollo_run(workload))
        } else {
            let ours = picollo_run(workload);
            (perf_run(workload), ours)
        };
        for (event, p, o) in &mut runs {
            p.push(get(&perf, event, "perf"));
            o.push(get(&ours, event, "picollo"));
        }
    }
    eprintln!("{workload}: (event, perf stat runs, picollo stat runs) {runs:?}");
    runs
}

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The medians of `event` in `runs` agree within `rel` × perf's plus `abs`.
fn assert_agree(runs: &[(&str, Vec<f64>, Vec<f64>)], event: &str, rel: f64, abs: f64) {
    let (_, perf, ours) = runs.iter().find(|(e, ..)| *e == event).expect("an event");
    let (p, o) = (median(perf), median(ours));
    assert!(
        (p - o).abs() <= rel * p + abs,
        "{event}: perf stat median {p}, picollo stat median {o} (tolerance {}% + {abs}); \
         runs: perf {perf:?}, picollo {ours:?}",
        rel * 100.0
    );
}

#[test]
fn page_faults_and_context_switches_agree_with_perf_stat() {
    if !perf_available() {
        return;
    }
    if let Err(why) = Capabilities::detect().kernel_counting() {
        picollo_linux::skip::hardware(
            "page_faults_and_context_switches_agree_with_perf_stat",
            &why,
        );
        return;
    }
    let faults = interleaved(FAULTS);
    assert_agree(&faults, "page-faults", 0.03, 20.0);
    assert_agree(&faults, "page-faults:u", 0.03, 20.0);
    // The kernel is counted by default: more faults than user space alone.
    let all = &faults[0].2;
    let user = &faults[2].2;
    assert!(median(all) > median(user), "{all:?} against :u {user:?}");

    let switches = interleaved(SWITCHES);
    assert_agree(&switches, "context-switches", 0.30, 10.0);
    assert!(median(&switches[1].2) >= 8.0, "eight sleeps: {switches:?}");
    for (event, perf, ours) in faults.iter().chain(&switches) {
        if *event == "context-switches:u" {
            assert!(
                perf.iter().chain(ours).all(|&c| c == 0.0),
                "{perf:?} {ours:?}"
            );
        }
    }
}

#[test]
fn the_header_says_what_is_counted() {
    let out = Command::new(BIN)
        .args(["stat", "-r", "1", "-e", "page-faults", "--", "true"])
        .output()
        .expect("run picollo stat");
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find(|l| l.to_ascii_lowercase().contains("counting:"))
        .unwrap_or_else(|| panic!("no `counting:` line in the header:\n{text}"));
    match Capabilities::detect().kernel_counting() {
        Ok(()) => assert!(line.contains("user space and the kernel"), "{line}"),
        Err(why) => {
            assert!(line.contains("user space only"), "{line}");
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(err.contains(&why), "the reason is printed: {err}");
        }
    }
}

#[test]
fn modifiers_are_accepted_and_bad_ones_explained() {
    let out = Command::new(BIN)
        .args(["stat", "-r", "1", "-e", "page-faults:uk,cs:u", "--", "true"])
        .output()
        .expect("run picollo stat");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("page-faults:uk"), "{text}");
    assert!(text.contains("context-switches:u"), "{text}");
    let out = Command::new(BIN)
        .args(["stat", "-r", "1", "-e", "cycles:pp", "--", "true"])
        .output()
        .expect("run picollo stat");
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("do not apply to counting"), "{err}");
}
