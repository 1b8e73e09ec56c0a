//! `picollo stat` as users run it: the human report, several commands, the habits (warm-up,
//! hooks, no shell, empty stdin, parameter scans), the exports against goldens (from a saved
//! run, so they are deterministic), the statistics against SciPy and NumPy, and the
//! regression gate on `sleep` commands.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_picollo");

fn golden_dir() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden"))
}

fn golden(name: &str) -> String {
    let p = golden_dir().join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn tmp(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("picollo-stat-{name}"));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

struct Ran {
    code: i32,
    stdout: String,
    stderr: String,
}

/// Runs `picollo args…` in `dir`.
fn run_in(dir: &Path, args: &[&str]) -> Ran {
    let o = Command::new(BIN)
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run picollo");
    Ran {
        code: o.status.code().expect("picollo exited by a signal"),
        stdout: String::from_utf8(o.stdout).expect("stdout is UTF-8"),
        stderr: String::from_utf8(o.stderr).expect("stderr is UTF-8"),
    }
}

fn ok_in(dir: &Path, args: &[&str]) -> Ran {
    let r = run_in(dir, args);
    assert_eq!(r.code, 0, "picollo {args:?} failed: {}", r.stderr);
    r
}

// ----- goldens: a saved run printed and exported -----

const SAVED: &str = "stat_run.json";

#[test]
fn human_report_golden() {
    let r = ok_in(
        &golden_dir(),
        &["stat", "--load", SAVED, "--color", "never"],
    );
    assert_eq!(r.stdout, golden("stat_human.txt"));
    // The cold first run of the baseline is flagged, with the likely cause.
    assert!(
        r.stderr.contains(
            "`sort -n data.txt`: statistical outliers (modified Z-score > 14): 1 of 12 runs in \
             wall-time"
        ) && r.stderr.contains("run 1 at 85.40 ms")
            && r.stderr.contains("--warmup"),
        "{}",
        r.stderr
    );
    // Colour only when asked (not a terminal here).
    let c = ok_in(
        &golden_dir(),
        &["stat", "--load", SAVED, "--color", "always"],
    );
    assert!(c.stdout.contains("\x1b[32m"), "green means");
    assert!(!ok_in(&golden_dir(), &["stat", "--load", SAVED])
        .stdout
        .contains('\x1b'));
}

#[test]
fn export_goldens() {
    let d = golden_dir();
    for (flag, name) in [
        ("--export-markdown", "stat_export.md"),
        ("--export-csv", "stat_export.csv"),
        ("--export-json", "stat_export.json"),
    ] {
        let r = ok_in(&d, &["stat", "--load", SAVED, flag, "-"]);
        assert_eq!(r.stdout, golden(name), "{flag}");
    }
    // To files, all at once, with the report on stdout.
    let t = tmp("exports");
    let saved = d.join(SAVED);
    let r = ok_in(
        &t,
        &[
            "stat",
            "--load",
            saved.to_str().unwrap(),
            "--export-json",
            "a.json",
            "--export-markdown",
            "a.md",
            "--export-csv",
            "a.csv",
            "--color",
            "never",
        ],
    );
    assert_eq!(r.stdout, golden("stat_human.txt"));
    assert_eq!(
        std::fs::read_to_string(t.join("a.md")).unwrap(),
        golden("stat_export.md")
    );
    assert_eq!(
        std::fs::read_to_string(t.join("a.csv")).unwrap(),
        golden("stat_export.csv")
    );
    // The JSON reads back to the same document.
    let again = ok_in(&t, &["stat", "--load", "a.json", "--export-json", "-"]);
    assert_eq!(again.stdout, golden("stat_export.json"));
}

#[test]
fn json_is_typed_and_reads_like_hyperfine() {
    let r = ok_in(
        &golden_dir(),
        &["stat", "--load", SAVED, "--export-json", "-"],
    );
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v["schema"], "picollo-stat");
    assert_eq!(v["version"], 1);
    let results = v["results"].as_array().unwrap();
    assert_eq!(results.len(), 3);
    for res in results {
        // hyperfine's fields, in seconds, numbers not strings.
        for k in ["mean", "stddev", "median", "user", "system", "min", "max"] {
            assert!(res[k].is_f64(), "{k}: {}", res[k]);
        }
        let times = res["times"].as_array().unwrap();
        assert_eq!(times.len(), 12);
        assert!(times.iter().all(|t| t.as_f64().unwrap() > 0.03));
        assert!(res["exit_codes"].as_array().unwrap().iter().all(|c| c == 0));
        assert!(res["parameters"].is_object());
        // picollo's counters: integers per run.
        let counters = res["counters"].as_array().unwrap();
        assert_eq!(counters[0]["name"], "wall-time");
        assert_eq!(counters[0]["unit"], "ns");
        for c in counters {
            assert_eq!(c["values"].as_array().unwrap().len(), 12);
        }
        let wall: Vec<u64> = counters[0]["values"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_u64().unwrap())
            .collect();
        let mean = wall.iter().sum::<u64>() as f64 / 12.0 / 1e9;
        assert!((res["mean"].as_f64().unwrap() - mean).abs() < 1e-12);
    }
    // The task-clock run that was not counted stays a null, in its place.
    assert!(results[1]["counters"][1]["values"][11].is_null());
    let cmp = v["comparisons"].as_array().unwrap();
    assert_eq!(cmp.len(), 6);
    assert_eq!(cmp[0]["counter"], "wall-time");
    assert_eq!(cmp[0]["verdict"], "faster");
    assert_eq!(cmp[0]["test"], "mann-whitney-u");
    assert!(cmp[0]["p_value"].as_f64().unwrap() < 0.001);
    assert_eq!(cmp[3]["verdict"], "no significant difference");
}

#[test]
fn hyperfine_json_is_a_baseline() {
    let t = tmp("hyperfine");
    std::fs::write(
        t.join("hf.json"),
        r#"{"results":[{"command":"sleep 0.1","mean":0.1,"stddev":0.001,"median":0.1,
        "user":0.0,"system":0.0,"min":0.099,"max":0.102,
        "times":[0.1,0.101,0.099,0.102,0.1,0.1,0.101,0.099],"exit_codes":[0,0,0,0,0,0,0,0]}]}"#,
    )
    .unwrap();
    let saved = golden_dir().join(SAVED);
    let r = ok_in(
        &t,
        &[
            "stat",
            "--load",
            saved.to_str().unwrap(),
            "--baseline",
            "hf.json",
            "--color",
            "never",
        ],
    );
    assert!(
        r.stdout.contains("Comparison with the saved run hf.json"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout
            .contains("`sort -n data.txt` is 1.79× faster than `sleep 0.1`"),
        "{}",
        r.stdout
    );
}

// ----- the statistics against SciPy and NumPy -----

/// Python with SciPy and NumPy, or a reason it is missing.
fn python() -> Result<(), String> {
    let o = Command::new("python3")
        .args(["-c", "import scipy, numpy"])
        .output()
        .map_err(|e| format!("python3 not found ({e})"))?;
    if o.status.success() {
        Ok(())
    } else {
        Err(format!(
            "python3 has no scipy/numpy ({}); pip install scipy numpy",
            String::from_utf8_lossy(&o.stderr)
                .lines()
                .last()
                .unwrap_or("")
        ))
    }
}

fn close(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * a.abs().max(b.abs()).max(1e-300)
}

#[test]
fn statistics_match_scipy_and_numpy() {
    if let Err(why) = python() {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI needs the reference: {why}"
        );
        eprintln!("skipped: {why}");
        return;
    }
    // Integer per-run values (as counters are), from a small LCG: with and without ties,
    // small samples (exact U distribution) and large (normal approximation).
    let mut x: u64 = 12345;
    let mut draw = |n: usize, base: u64, spread: u64| -> Vec<u64> {
        (0..n)
            .map(|_| {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                base + (x >> 33) % spread
            })
            .collect()
    };
    let cases: Vec<(Vec<u64>, Vec<Vec<u64>>)> = vec![
        // baseline, then the compared commands
        (
            draw(5, 1_000_000, 1_000_000),
            vec![draw(5, 1_400_000, 1_000_000), draw(7, 900_000, 1_000_000)],
        ),
        (draw(7, 50, 8), vec![draw(12, 52, 8), draw(30, 50, 8)]),
        (
            draw(40, 10_000_000, 3_000_000),
            vec![
                draw(35, 10_500_000, 3_000_000),
                draw(3, 9_000_000, 5_000_000),
            ],
        ),
        (draw(3, 100, 1_000_000), vec![draw(20, 200_000, 1_000_000)]),
    ];
    let t = tmp("scipy");
    let mut reference_cases = Vec::new();
    let mut picollo = Vec::new();
    for (k, (base, others)) in cases.iter().enumerate() {
        let result = |name: &str, v: &[u64]| {
            serde_json::json!({
                "command": name,
                "counters": [{"name": "wall-time", "values": v}],
            })
        };
        let mut results = vec![result("a", base)];
        for (i, o) in others.iter().enumerate() {
            results.push(result(&format!("b{i}"), o));
            reference_cases.push(serde_json::json!({"a": base, "b": o}));
        }
        let doc = serde_json::json!({"schema": "picollo-stat", "version": 1, "results": results});
        let f = t.join(format!("case{k}.json"));
        std::fs::write(&f, doc.to_string()).unwrap();
        let r = ok_in(
            &t,
            &["stat", "--load", f.to_str().unwrap(), "--export-json", "-"],
        );
        let v: Value = serde_json::from_str(&r.stdout).unwrap();
        for c in v["comparisons"].as_array().unwrap() {
            let i = c["command"].as_u64().unwrap() as usize;
            picollo.push((c.clone(), v["results"][i]["counters"][0].clone()));
        }
    }
    let mut child = Command::new("python3")
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/stat_reference.py"
        ))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(
            serde_json::json!({"cases": reference_cases})
                .to_string()
                .as_bytes(),
        )
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let reference: Value = serde_json::from_slice(&out.stdout).unwrap();
    let reference = reference["results"].as_array().unwrap();
    assert_eq!(reference.len(), picollo.len());
    let mut methods = Vec::new();
    for (i, (want, (cmp, counter))) in reference.iter().zip(&picollo).enumerate() {
        let f = |v: &Value, k: &str| v[k].as_f64().unwrap_or_else(|| panic!("case {i} {k}: {v}"));
        assert_eq!(cmp["method"], want["method"], "case {i}");
        methods.push(want["method"].as_str().unwrap().to_string());
        assert_eq!(f(cmp, "u"), f(want, "u"), "case {i}: U");
        assert!(
            close(f(cmp, "p_value"), f(want, "p"), 1e-9),
            "case {i}: p {} vs {}",
            cmp["p_value"],
            want["p"]
        );
        for (k, w) in [
            ("ratio", "ratio"),
            ("ci_low", "ci_low"),
            ("ci_high", "ci_high"),
        ] {
            assert!(
                close(f(cmp, k), f(want, w), 1e-9),
                "case {i}: {k} {} vs {}",
                cmp[k],
                want[w]
            );
        }
        for k in ["mean", "stddev", "median", "min", "max"] {
            assert!(close(f(counter, k), f(want, k), 1e-12), "case {i}: {k}");
        }
        match want["p90"].as_f64() {
            Some(p90) => assert!(close(f(counter, "p90"), p90, 1e-12), "case {i}: p90"),
            None => assert!(counter["p90"].is_null(), "case {i}: p90 needs 10 runs"),
        }
    }
    assert!(methods.iter().any(|m| m == "exact") && methods.iter().any(|m| m == "asymptotic"));
}

// ----- running commands -----

fn stat(dir: &Path, args: &[&str]) -> Ran {
    let mut all = vec!["stat", "-e", "task-clock", "--color", "never"];
    all.extend_from_slice(args);
    run_in(dir, &all)
}

#[test]
fn several_commands_with_hooks_in_interleaved_rounds() {
    let t = tmp("hooks");
    let r = stat(
        &t,
        &[
            "-r",
            "3",
            "-w",
            "1",
            "--setup",
            "echo setup-{n} >> log",
            "--prepare",
            "echo prepare-{n} >> log",
            "--cleanup",
            "echo cleanup-{n} >> log",
            "-L",
            "n",
            "a,b",
            "--",
            "sh -c 'echo run-{n} >> log'",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let log = std::fs::read_to_string(t.join("log")).unwrap();
    let lines: Vec<&str> = log.lines().collect();
    // Setups first, then (prepare, run) rounds ABAB…, warm-up included, then cleanups.
    let mut want = vec!["setup-a", "setup-b"];
    for _ in 0..4 {
        want.extend(["prepare-a", "run-a", "prepare-b", "run-b"]);
    }
    want.extend(["cleanup-a", "cleanup-b"]);
    assert_eq!(lines, want);
    assert!(
        r.stdout.contains("Benchmark 1: sh -c 'echo run-a >> log'"),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("Benchmark 2: sh -c 'echo run-b >> log'"));
    assert!(r.stdout.contains("3 runs; 1 warm-up"));
    assert!(r
        .stdout
        .contains("Comparison with `sh -c 'echo run-a >> log'`"));

    // Blocks instead of rounds, and -P scans.
    let t = tmp("blocks");
    let r = stat(
        &t,
        &[
            "-r",
            "2",
            "-w",
            "0",
            "--no-interleave",
            "-P",
            "n",
            "1",
            "2",
            "--",
            "echo {n} >> log",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        std::fs::read_to_string(t.join("log")).unwrap(),
        "1\n1\n2\n2\n"
    );
    assert!(r.stdout.contains("Benchmark 2: echo 2 >> log"));
}

#[test]
fn shell_strings_no_shell_output_and_stdin() {
    let t = tmp("shell");
    // A string runs in the shell; with -N it is split and run directly (`>` is an argument).
    let r = stat(
        &t,
        &["-r", "1", "-w", "0", "--show-output", "--", "echo hi > out"],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(std::fs::read_to_string(t.join("out")).unwrap(), "hi\n");
    let r = stat(
        &t,
        &[
            "-r",
            "1",
            "-w",
            "0",
            "-N",
            "--show-output",
            "--",
            "echo hi > out2",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(!t.join("out2").exists());
    assert!(
        r.stderr.contains("hi > out2\n"),
        "--show-output: {}",
        r.stderr
    );
    // A command that reads stdin gets an empty one, even when ours stays open.
    let mut child = Command::new(BIN)
        .args([
            "stat",
            "-e",
            "task-clock",
            "-r",
            "2",
            "-w",
            "0",
            "--",
            "cat",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break Some(s);
        }
        if start.elapsed() > Duration::from_secs(20) {
            child.kill().unwrap();
            break None;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    assert!(status.is_some_and(|s| s.success()), "cat waited on stdin");
}

#[test]
fn errors_and_usage() {
    let t = tmp("errors");
    let r = stat(&t, &["-r", "1", "--fail-if-slower", "5%", "--", "true"]);
    assert_eq!(r.code, 1);
    assert!(
        r.stderr
            .contains("--fail-if-slower needs something to compare"),
        "{}",
        r.stderr
    );
    let r = stat(&t, &["--fail-if-slower", "fast", "--", "true"]);
    assert!(
        r.code == 1 && r.stderr.contains("give a percentage"),
        "{}",
        r.stderr
    );
    let r = stat(&t, &["-r", "1", "--prepare", "exit 3", "--", "true"]);
    assert!(
        r.code == 1 && r.stderr.contains("the --prepare command"),
        "{}",
        r.stderr
    );
    let r = stat(&t, &["--", "true", ":::"]);
    assert!(
        r.code == 1 && r.stderr.contains("empty command"),
        "{}",
        r.stderr
    );
    let r = stat(&t, &["--load", "missing.json"]);
    assert!(
        r.code == 1 && r.stderr.contains("cannot read missing.json"),
        "{}",
        r.stderr
    );
    std::fs::write(
        t.join("bad.json"),
        r#"{"schema":"picollo-stat","version":9,"results":[]}"#,
    )
    .unwrap();
    let r = stat(&t, &["--load", "bad.json"]);
    assert!(
        r.code == 1 && r.stderr.contains("schema version 9"),
        "{}",
        r.stderr
    );
    assert_eq!(
        stat(&t, &["-P", "n", "1", "--", "true"]).code,
        2,
        "-P takes 3 values"
    );
}

// ----- the regression gate -----

#[test]
fn gate_fails_a_slower_command_and_passes_an_equal_one() {
    // On a loaded 2-core machine starting a process adds up to about 90 ms: at a load average
    // of 17 to 26 (the workspace's tests beside a release build), a 10 ms sleep took 41 to
    // 98 ms and a 50 ms one 66 to 107 ms, no significant difference in six runs. The slower
    // command sleeps 250 ms, more than load adds to either (about 3 s in all).
    let t = tmp("gate");
    let (fast, slow) = ("sleep 0.01", "sleep 0.25");
    let runs = ["-r", "6", "-w", "1"];
    let gate = |extra: &[&str]| {
        let mut a: Vec<&str> = runs.to_vec();
        a.extend_from_slice(extra);
        stat(&t, &a)
    };
    // 5× slower in wall time: fails, with the report on stdout and one error line.
    let r = gate(&["--fail-if-slower", "5%", "--", fast, ":::", slow]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    let errors: Vec<&str> = r
        .stderr
        .lines()
        .filter(|l| l.starts_with("picollo: error:"))
        .collect();
    assert_eq!(errors.len(), 1, "{}", r.stderr);
    assert!(
        errors[0].contains("regression: `sleep 0.25` wall-time is")
            && errors[0].contains("the baseline `sleep 0.01`")
            && errors[0].contains("over the 5% allowed"),
        "{}",
        errors[0]
    );
    assert!(r.stdout.contains("`sleep 0.25` is"), "{}", r.stdout);
    assert!(
        r.stdout.contains("slower than `sleep 0.01`"),
        "{}",
        r.stdout
    );
    // The same command twice: passes. The allowance is wide (the lower bound of the ratio's
    // interval must pass 2×) because six runs of a 10 ms sleep on a loaded 2-core machine can
    // differ by 1.7× between two commands that are the same; the slower command above is 25×.
    let r = gate(&[
        "--fail-if-slower",
        "wall-time=100%",
        "--",
        fast,
        ":::",
        fast,
    ]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    // Against a saved run: save the fast one, gate the slow one on it.
    let r = gate(&["--save", "base.json", "--", fast]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let r = gate(&[
        "--baseline",
        "base.json",
        "--fail-if-slower",
        "wall-time=5%",
        "--",
        slow,
    ]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("regression: `sleep 0.25` wall-time"),
        "{}",
        r.stderr
    );
    assert!(
        r.stdout.contains("Comparison with the saved run base.json"),
        "{}",
        r.stdout
    );
}

// ----- the plot -----

#[test]
fn plot_of_a_run_and_of_a_saved_run() {
    let t = tmp("plot");
    let saved = golden_dir().join(SAVED);
    ok_in(
        &t,
        &["stat", "--load", saved.to_str().unwrap(), "--plot", "a.svg"],
    );
    let svg = std::fs::read_to_string(t.join("a.svg")).unwrap();
    assert!(svg.starts_with("<svg"));
    for needle in [
        "(baseline)",
        "95% CI",
        "wall-time (ms)",
        "page-faults",
        "Percentile of runs",
    ] {
        assert!(svg.contains(needle), "{needle}");
    }
    let r = ok_in(&t, &["plot", saved.to_str().unwrap(), "-o", "b.svg"]);
    assert!(r.stderr.contains("wrote b.svg"));
    let b = std::fs::read_to_string(t.join("b.svg")).unwrap();
    assert!(b.starts_with("<svg") && b.contains("(baseline)"), "{b}");
}

#[test]
fn help_documents_the_benchmark_options() {
    let r = ok_in(&golden_dir(), &["stat", "--help"]);
    for needle in [
        ":::",
        "--runs",
        "--warmup",
        "3 by default",
        "--no-interleave",
        "--setup",
        "--prepare",
        "--cleanup",
        "--parameter-scan",
        "--parameter-list",
        "--no-shell",
        "--show-output",
        "--command-name",
        "--fail-if-slower",
        "--save",
        "--baseline",
        "--load",
        "--export-json",
        "--export-markdown",
        "--export-csv",
        "--plot",
        "--table",
        "Mann–Whitney U",
        "bootstrap",
        "outliers",
    ] {
        assert!(r.stdout.contains(needle), "{needle} in stat --help");
    }
}
