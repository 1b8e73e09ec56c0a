//! Runs the `picollo` binary: every command on real input, golden tables for the
//! deterministic ones (report and diff on the HdrHistogram vectors), and the error
//! paths (one line, exit status 1, never a panic).

use std::path::PathBuf;
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_picollo");
const JHICCUP: &str = "jHiccup-2.0.7S.logV2.hlog";
const TAGGED: &str = "tagged-Log.logV2.hlog";

/// The HdrHistogram vectors, in the repository: `picollo-alloc/tests/vectors/hdrhistogram`.
fn vectors() -> PathBuf {
    let dir = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../picollo-alloc/tests/vectors/hdrhistogram"
    ));
    assert!(
        dir.is_dir(),
        "HdrHistogram vectors not found at {}: they are part of the repository",
        dir.display()
    );
    dir
}

fn vector(name: &str) -> String {
    vectors().join(name).to_string_lossy().into_owned()
}

/// Runs `picollo args…` in the vectors directory.
fn picollo(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .current_dir(vectors())
        .output()
        .expect("run picollo")
}

struct Ran {
    code: i32,
    stdout: String,
    stderr: String,
}

fn run(args: &[&str]) -> Ran {
    let o = picollo(args);
    Ran {
        code: o.status.code().expect("picollo exited by a signal"),
        stdout: String::from_utf8(o.stdout).expect("stdout is UTF-8"),
        stderr: String::from_utf8(o.stderr).expect("stderr is UTF-8"),
    }
}

/// Runs a command that must succeed, and returns its stdout.
fn ok(args: &[&str]) -> Ran {
    let r = run(args);
    assert_eq!(r.code, 0, "picollo {args:?} failed: {}", r.stderr);
    r
}

/// Runs a command that must fail with one error line containing `expect`.
fn fails(args: &[&str], expect: &str) -> String {
    let r = run(args);
    assert_eq!(r.code, 1, "picollo {args:?}: {}{}", r.stdout, r.stderr);
    assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
    let errors: Vec<&str> = r
        .stderr
        .lines()
        .filter(|l| l.starts_with("picollo: error:"))
        .collect();
    assert_eq!(errors.len(), 1, "one error line: {}", r.stderr);
    assert!(
        errors[0].contains(expect),
        "error for {args:?} should contain {expect:?}: {}",
        errors[0]
    );
    assert!(r.stdout.is_empty(), "nothing on stdout: {}", r.stdout);
    errors[0].to_string()
}

fn golden(name: &str) -> String {
    let path = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden")).join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn no_pmu() -> bool {
    ok(&["counters"])
        .stdout
        .contains("Summary: no hardware PMU")
}

/// The `| Total: | N |` figure of every markdown table, in order.
fn totals(markdown: &str) -> Vec<String> {
    markdown
        .lines()
        .filter(|l| l.starts_with("| Precision:"))
        .map(|l| l.split('|').nth(4).unwrap().trim().to_string())
        .collect()
}

fn tmp(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("picollo-cli-{name}"))
}

// ----- counters -----

#[test]
fn counters_lists_capabilities_and_events() {
    let r = ok(&["counters"]);
    for needle in [
        "Capabilities",
        "hardware PMU:",
        "perf_event_paranoid",
        "software  task-clock",
        "software  page-faults",
        "hardware  cycles",
        "Summary:",
    ] {
        assert!(
            r.stdout.contains(needle),
            "missing {needle:?}:\n{}",
            r.stdout
        );
    }
    let task_clock = r
        .stdout
        .lines()
        .find(|l| l.contains(" task-clock "))
        .unwrap();
    assert!(task_clock.ends_with("available"), "{task_clock}");
    if r.stdout.contains("Summary: no hardware PMU") {
        let cycles = r.stdout.lines().find(|l| l.contains(" cycles ")).unwrap();
        assert!(cycles.contains("missing: not exposed"), "{cycles}");
        assert!(r
            .stdout
            .contains("`picollo stat` counts task-clock, page-faults and wall time"));
    }
}

// ----- stat -----

#[test]
fn stat_runs_the_command_n_times() {
    let r = ok(&["stat", "-r", "5", "--table", "--", "true"]);
    let tables: Vec<&str> = r
        .stdout
        .lines()
        .filter_map(|l| l.strip_prefix("##### "))
        .collect();
    assert!(tables.contains(&"task-clock (ns)"), "{}", r.stdout);
    assert!(tables.contains(&"page-faults"), "{}", r.stdout);
    assert_eq!(tables.last(), Some(&"wall-time (ns)"));
    assert!(r.stdout.starts_with("- command: true\n- counting: "));
    assert!(r.stdout.contains("\n- runs: 5\n"));
    assert_eq!(totals(&r.stdout), vec!["5"; tables.len()]);
    if no_pmu() {
        assert!(
            r.stderr.contains("no hardware PMU") && r.stderr.contains("task-clock and page-faults"),
            "the fallback is announced on stderr: {}",
            r.stderr
        );
    }
    // Not a terminal: no progress line.
    assert!(!r.stderr.contains("run 1/"), "{}", r.stderr);
}

#[test]
fn stat_counts_real_work_in_the_child() {
    let r = ok(&[
        "stat",
        "-r",
        "3",
        "--warmup",
        "1",
        "-e",
        "task-clock,page-faults",
        "--format",
        "json",
        "--",
        "sh",
        "-c",
        "i=0; while [ $i -lt 3000 ]; do i=$((i+1)); done",
    ]);
    let j = &r.stdout;
    assert!(j.starts_with("{\"command\":\"sh -c 'i=0;"), "{j}");
    assert!(j.contains("\"runs\":\"3\",\"warmup\":\"1\""), "{j}");
    for name in ["task-clock (ns)", "page-faults", "wall-time (ns)"] {
        let at = j
            .find(&format!("{{\"name\":\"{name}\",\"total\":3,"))
            .unwrap_or_else(|| panic!("{name} with 3 runs: {j}"));
        // The median is a real figure: the shell loop takes CPU time and faults pages.
        let p50 = &j[at..];
        let p50 = &p50[p50.find("{\"rank\":50,\"value\":").unwrap() + 19..];
        let v: u64 = p50[..p50.find(',').unwrap()].parse().unwrap();
        assert!(v > 10, "{name} p50 = {v}");
    }
    assert!(j.ends_with("]}\n"));
}

#[test]
fn stat_vs_alternates_and_diffs() {
    let r = ok(&[
        "stat",
        "-r",
        "3",
        "--vs",
        "sh -c 'exit 0'",
        "--format",
        "csv",
        "--",
        "true",
    ]);
    assert!(
        r.stdout.starts_with("name,row,a,b,delta_pct\n"),
        "{}",
        r.stdout
    );
    for name in ["task-clock (ns)", "wall-time (ns)"] {
        assert!(
            r.stdout.contains(&format!("{name},total,3,3,0.0000\n")),
            "{name}: {}",
            r.stdout
        );
        assert!(r.stdout.contains(&format!("{name},cohens_d,,,")));
    }
    let md = ok(&[
        "stat",
        "-r",
        "2",
        "--table",
        "--vs",
        "sh -c 'exit 0'",
        "--",
        "true",
    ]);
    assert!(md
        .stdout
        .starts_with("- A: true\n- B: sh -c 'exit 0'\n- counting: "));
    assert!(md.stdout.contains("\n- runs: 2\n"));
    assert!(md.stdout.contains("| Percentile | "), "{}", md.stdout);
    assert!(md.stdout.contains(" Δ% |"));
    assert!(md.stdout.contains("| D-value:"));
    assert!(md.stdout.contains("##### wall-time (ns)\n"));
}

#[test]
fn stat_errors_are_one_line() {
    fails(
        &["stat", "-e", "bogus", "--", "true"],
        "unknown event `bogus`",
    );
    fails(
        &["stat", "-r", "2", "--", "/no/such/command"],
        "cannot run `/no/such/command`",
    );
    fails(&["stat", "-r", "2", "--", "false"], "--ignore-failure");
    fails(
        &["stat", "--vs", "echo 'unclosed", "--", "true"],
        "unclosed quote",
    );
    ok(&["stat", "-r", "2", "-i", "--", "false"]);
    if no_pmu() {
        fails(
            &["stat", "-e", "cycles", "--", "true"],
            "none of the events can be counted here",
        );
        // A mix: the hardware event is dropped with a note, the software one is counted.
        let r = ok(&[
            "stat",
            "-r",
            "2",
            "--table",
            "-e",
            "cycles,page-faults",
            "--",
            "true",
        ]);
        assert!(r.stderr.contains("not counting `cycles`"), "{}", r.stderr);
        assert!(r.stdout.contains("##### page-faults"));
        assert!(!r.stdout.contains("##### cycles"));
    }
    // Usage errors come from clap, with status 2.
    assert_eq!(run(&["stat"]).code, 2);
    assert_eq!(run(&["stat", "-r", "0", "--", "true"]).code, 2);
}

// ----- report -----

#[test]
fn report_jhiccup_golden() {
    let r = ok(&["report", JHICCUP]);
    assert_eq!(r.stdout, golden("report_jhiccup.md"));
    // HdrHistogram's own figures for this log: total 48,761; p99.9 1,745,879,039 and max
    // 1,796,210,687 (highest equivalent values; the table prints bucket midpoints ± half).
    assert!(r
        .stdout
        .contains("| Precision: |       0.0488% | Total:   |         48,761 |"));
    assert!(r
        .stdout
        .contains("| 99.9       | 1,745,354,752 | ±524,288 |"));
    assert!(r
        .stdout
        .contains("| 100        | 1,795,686,400 | ±524,288 |"));
    assert_eq!(1_745_354_752 + 524_288 - 1, 1_745_879_039);
    assert_eq!(1_795_686_400 + 524_288 - 1, 1_796_210_687);
    let j = ok(&["report", &vector(JHICCUP), "--format", "json"]).stdout;
    assert!(j.contains("\"total\":48761,"), "{j}");
    assert!(j.contains("\"max\":1796210687,"), "{j}");
}

#[test]
fn report_tagged_log_per_tag() {
    let r = ok(&["report", TAGGED, "--format", "text"]);
    assert_eq!(r.stdout, golden("report_tagged.txt"));
    let md = ok(&["report", TAGGED]).stdout;
    assert_eq!(totals(&md), ["16,145", "16,145"]);
    assert!(md.contains("##### tagged-Log.logV2.hlog, untagged (21 intervals)\n"));
    assert!(md.contains("##### tagged-Log.logV2.hlog, tag A (21 intervals)\n"));
    let a = ok(&["report", TAGGED, "--tag", "A"]).stdout;
    assert_eq!(totals(&a), ["16,145"]);
    assert!(a.contains(", tag A (21 intervals)"));
    let untagged = ok(&["report", TAGGED, "--tag", ""]).stdout;
    assert!(untagged.contains(", untagged (21 intervals)"));
    assert_eq!(totals(&untagged), ["16,145"]);
}

#[test]
fn report_time_range_and_unit() {
    // HdrHistogram's nextIntervalHistogram(5, 20): 15 intervals, total 11,664, max
    // 1,544,552,447 ns.
    let j = ok(&[
        "report", JHICCUP, "--from", "5", "--to", "20", "--format", "json",
    ])
    .stdout;
    assert!(
        j.contains("\"name\":\"jHiccup-2.0.7S.logV2.hlog (15 intervals)\""),
        "{j}"
    );
    assert!(j.contains("\"total\":11664,"), "{j}");
    assert!(j.contains("\"max\":1544552447,"), "{j}");
    let ms = ok(&[
        "report", JHICCUP, "--from", "5", "--to", "20", "--unit", "ms", "--format", "json",
    ])
    .stdout;
    assert_eq!(ms, golden("report_jhiccup_5_20_ms.json"));
    // Milliseconds with the decimals they need: the same buckets, divided, not rounded.
    assert!(ms.contains("\"max\":1544.552447,"), "{ms}");
    assert!(ms.contains("{\"rank\":50,\"value\":0.360576,\"half_width\":0.000128,"));
    let csv = ok(&["report", JHICCUP, "--format", "csv"]).stdout;
    let mut lines = csv.lines();
    assert_eq!(
        lines.next(),
        Some("name,percentile,value,half_width,count,total,underflow,overflow,mean,stdev")
    );
    assert_eq!(lines.count(), 16);
    assert!(csv.contains(
        "\njHiccup-2.0.7S.logV2.hlog (62 intervals),100,1795686400,524288,48761,48761,0,0,"
    ));
}

/// Java's single encoded histograms (0..100,000 each once), binary and compressed: read by
/// content, whatever the name.
#[test]
fn report_encoded_histograms() {
    for name in ["seq-nums.hist", "seq-nums.histz"] {
        let out = ok(&["report", name, "--format", "json"]).stdout;
        assert!(out.contains("\"total\":100000,"), "{out}");
        assert!(
            out.contains(&format!("\"name\":\"{name} (one histogram)\"")),
            "{out}"
        );
    }
    let d = ok(&["diff", "seq-nums.hist", "seq-nums.histz"]).stdout;
    assert!(d.contains("- A: seq-nums.hist (one histogram)"), "{d}");
    assert!(d.contains("| D-value:"), "{d}");
}

#[test]
fn report_errors_are_one_line() {
    fails(&["report", "missing.hlog"], "cannot open missing.hlog");
    fails(
        &["report", "seq-nums.hist", "--tag", "A"],
        "not an interval log",
    );
    fails(
        &["report", "README.md"],
        "is this an HdrHistogram interval log",
    );
    fails(
        &["report", TAGGED, "--tag", "B"],
        "tags present: '' (untagged), A",
    );
    fails(
        &["report", JHICCUP, "--from", "100"],
        "from 0.127 to 61.131 s",
    );
    fails(
        &["report", JHICCUP, "--from", "20", "--to", "5"],
        "is after --to",
    );
    fails(&["report", JHICCUP, "--from", "inf"], "finite");
    // A log whose histogram is corrupt.
    let corrupt = tmp("corrupt.hlog");
    std::fs::write(
        &corrupt,
        "#[StartTime: 1441812279.474 (seconds since epoch)]\n0.127,1.007,2.769,HISTFAAAAEV42pNpmSzMwMCgyAAB\n",
    )
    .unwrap();
    fails(
        &["report", corrupt.to_str().unwrap()],
        "line 2: cannot decode the histogram",
    );
    let empty = tmp("empty.hlog");
    std::fs::write(&empty, "#[Histogram log format version 1.3]\n").unwrap();
    fails(
        &["report", empty.to_str().unwrap()],
        "holds no interval lines",
    );
    assert_eq!(run(&["report"]).code, 2);
    assert_eq!(run(&["report", JHICCUP, "--unit", "h"]).code, 2);
}

// ----- diff -----

#[test]
fn diff_golden() {
    let r = ok(&["diff", JHICCUP, TAGGED]);
    assert_eq!(r.stdout, golden("diff_jhiccup_tagged.md"));
    assert_eq!(
        r.stderr,
        "picollo: tag A is only in tagged-Log.logV2.hlog: not compared\n"
    );
    let csv = ok(&["diff", JHICCUP, TAGGED, "--format", "csv"]).stdout;
    assert_eq!(csv, golden("diff_jhiccup_tagged.csv"));
}

#[test]
fn diff_of_a_log_with_itself_is_zero() {
    let r = ok(&["diff", TAGGED, TAGGED, "--format", "text"]);
    assert!(r.stderr.is_empty(), "{}", r.stderr);
    assert_eq!(r.stdout.matches("\nuntagged\n").count(), 1, "{}", r.stdout);
    assert_eq!(r.stdout.matches("\ntag A\n").count(), 1);
    for l in r
        .stdout
        .lines()
        .filter(|l| l.starts_with("  9") || l.starts_with("  mean"))
    {
        assert!(l.ends_with("0.0%"), "{l}");
    }
    let d: Vec<Vec<&str>> = r
        .stdout
        .lines()
        .filter(|l| l.contains("cohen's d"))
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(d, [["cohen's", "d", "0.00"]; 2]);
    let j = ok(&["diff", JHICCUP, JHICCUP, "--format", "json"]).stdout;
    assert!(j.contains("\"cohens_d\":0}"), "{j}");
    assert!(j.contains("\"p99.9\":0.0000"), "{j}");
}

#[test]
fn diff_errors() {
    fails(
        &["diff", JHICCUP, "missing.hlog"],
        "cannot open missing.hlog",
    );
    fails(
        &["diff", JHICCUP, TAGGED, "--tag", "A"],
        "no interval of jHiccup-2.0.7S.logV2.hlog matches tag \"A\"",
    );
}

// ----- plot -----

#[test]
fn plot_writes_an_svg_with_a_line_per_series() {
    let out = tmp("plot.svg");
    let _ = std::fs::remove_file(&out);
    let r = ok(&[
        "plot",
        JHICCUP,
        TAGGED,
        "-o",
        out.to_str().unwrap(),
        "--unit",
        "ms",
    ]);
    assert!(r.stdout.is_empty());
    assert!(r.stderr.contains("(3 lines)"), "{}", r.stderr);
    let svg = std::fs::read_to_string(&out).unwrap();
    assert!(
        svg.starts_with("<svg ") || svg.starts_with("<?xml"),
        "{}",
        &svg[..80]
    );
    assert!(svg.trim_end().ends_with("</svg>"));
    assert_eq!(svg.matches("<svg").count(), 1);
    assert_eq!(svg.matches("<text").count(), svg.matches("</text>").count());
    // Each series: its curve (many points) and its legend sample, at stroke width 2.
    let curves: Vec<&str> = svg
        .split("<polyline")
        .skip(1)
        .filter(|p| p.contains("stroke-width=\"2\""))
        .collect();
    assert_eq!(curves.len(), 6, "3 curves and 3 legend samples");
    assert_eq!(
        curves
            .iter()
            .filter(|c| c.split("points=\"").nth(1).unwrap().split(' ').count() > 100)
            .count(),
        3
    );
    for label in [
        "jHiccup-2.0.7S.logV2.hlog",
        "tagged-Log.logV2.hlog, untagged",
        "tagged-Log.logV2.hlog, tag A",
        "90%",
        "99%",
        "99.9%",
        "99.99%",
        "Percentile",
        // jHiccup's values span five decades: the value axis is logarithmic by default.
        "Value (ms) (log scale)",
        "1",
        "10",
        "100",
        "1,000",
    ] {
        assert!(svg.contains(&format!("\n{label}\n")), "label {label:?}");
    }
    // --y-scale linear keeps the linear axis.
    ok(&[
        "plot",
        JHICCUP,
        "-o",
        out.to_str().unwrap(),
        "--unit",
        "ms",
        "--y-scale",
        "linear",
    ]);
    let svg = std::fs::read_to_string(&out).unwrap();
    assert!(svg.contains("\nValue (ms)\n"));
    assert!(!svg.contains("log scale"));
}

#[test]
fn plot_gives_each_unit_its_own_axis() {
    // A stat log: a time (task-clock), a count (page-faults) and the wall time.
    let log = tmp("units.hlog");
    ok(&[
        "stat",
        "-r",
        "3",
        "-e",
        "task-clock,page-faults",
        "--hlog",
        log.to_str().unwrap(),
        "--",
        "true",
    ]);
    let out = tmp("units.svg");
    let r = ok(&[
        "plot",
        log.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--unit",
        "us",
        "--y-scale",
        "linear",
    ]);
    assert!(r.stderr.contains("(3 lines)"), "{}", r.stderr);
    let svg = std::fs::read_to_string(&out).unwrap();
    // Two panels: times in µs (task-clock and wall time), page faults as counted.
    assert_eq!(
        svg.matches("\nPercentile\n").count(),
        2,
        "one x axis per panel"
    );
    assert_eq!(svg.matches("\nValue (us)\n").count(), 1);
    assert_eq!(svg.matches("\npage-faults (count)\n").count(), 1);
    let _ = std::fs::remove_file(&log);
}

#[test]
fn plot_errors() {
    fails(
        &["plot", "missing.hlog", "-o", "x.svg"],
        "cannot open missing.hlog",
    );
    fails(
        &["plot", JHICCUP, "-o", "/no/such/dir/x.svg"],
        "cannot write /no/such/dir/x.svg",
    );
    assert_eq!(run(&["plot", JHICCUP]).code, 2, "-o is required");
    // SVG only: a .png name is refused before anything is written, with the way to a PNG.
    let png = tmp("refused.png");
    let _ = std::fs::remove_file(&png);
    let r = run(&["plot", JHICCUP, "-o", png.to_str().unwrap()]);
    assert_eq!(r.code, 1);
    assert!(
        r.stderr.contains("plot writes SVG only, not .png") && r.stderr.contains("rsvg-convert"),
        "{}",
        r.stderr
    );
    assert!(!png.exists(), "nothing written under a PNG name");
}

#[test]
fn help_documents_every_command() {
    let h = ok(&["--help"]).stdout;
    for c in [
        "counters", "stat", "report", "diff", "plot", "attach", "top", "convert",
    ] {
        assert!(h.contains(&format!("  {c} ")), "{c} in --help:\n{h}");
    }
    let s = ok(&["stat", "--help"]).stdout;
    for flag in [
        "--events",
        "--repeat",
        "--warmup",
        "--vs",
        "--format",
        "task-clock",
        "--hlog",
        "--hgrm",
    ] {
        assert!(s.contains(flag), "{flag} in stat --help");
    }
    let a = ok(&["attach", "--help"]).stdout;
    for flag in [
        "--csv", "--spans", "--output", "--events", "--format", "json",
    ] {
        assert!(a.contains(flag), "{flag} in attach --help");
    }
    let c = ok(&["convert", "--help"]).stdout;
    for flag in ["--csv", "--spans", "--format", "\"type\":\"frame\""] {
        assert!(c.contains(flag), "{flag} in convert --help");
    }
    let r = ok(&["report", "--help"]).stdout;
    for flag in ["--tag", "--from", "--to", "--unit", "nanoseconds"] {
        assert!(r.contains(flag), "{flag} in report --help");
    }
}
