//! Every deterministic output of the binary, byte for byte: the tables, JSON, CSV and help
//! text of each command, on inputs whose numbers are fixed (the HdrHistogram vector logs, a
//! saved `stat` run, a capture file written here). Live counters, wall clocks and the
//! machine's events (`counters`, `attach`, `top`, a live `stat`) are checked by the other
//! test files.
//!
//! Set `PICOLLO_BLESS=1` to rewrite the goldens after an intended change of output (and say
//! so in the commit); without it every output must equal its golden.

use std::path::{Path, PathBuf};
use std::process::Command;

// The capture writer is the binary's (src/capture/): its format and writer, compiled here
// from the binary's own files to write the capture file that `convert` reads.
#[path = "../src/capture"]
#[allow(dead_code)]
mod capture {
    pub(crate) mod format;
    pub(crate) mod writer;
}
use capture::writer::CaptureWriter;
use picollo_ring::{
    required_words, AtomicU64, ClockInfo, ClockKind, CounterInfo, CounterInterval, Frame,
    FrameWriter, Label, RingOptions, RingReader, TimeInterval,
};

const BIN: &str = env!("CARGO_BIN_EXE_picollo");
const JHICCUP: &str = "jHiccup-2.0.7S.logV2.hlog";
const TAGGED: &str = "tagged-Log.logV2.hlog";
/// A saved `stat` run of three commands (written by `picollo stat --save`).
const SAVED: &str = "stat_run.json";

fn golden_dir() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden"))
}

/// The HdrHistogram vectors, in the repository.
fn vectors() -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../picollo-alloc/tests/vectors/hdrhistogram"
    ))
}

fn tmp(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("picollo-goldens-{name}"));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Runs `picollo args…` in `dir`; it must succeed. Returns its stdout.
fn stdout_in(dir: &Path, args: &[&str]) -> String {
    let o = Command::new(BIN)
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .output()
        .expect("run picollo");
    assert!(
        o.status.success(),
        "picollo {args:?} failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).expect("stdout is UTF-8")
}

/// Compares `got` with the golden `name` (or writes it, with `PICOLLO_BLESS=1`); returns
/// the name when they differ.
fn check(name: &str, got: &str) -> Option<String> {
    let path = golden_dir().join(name);
    if std::env::var_os("PICOLLO_BLESS").is_some() {
        std::fs::write(&path, got).unwrap();
        return None;
    }
    let want = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}; PICOLLO_BLESS=1 writes it", path.display()));
    if want == got {
        return None;
    }
    let line = want
        .lines()
        .zip(got.lines())
        .position(|(a, b)| a != b)
        .unwrap_or(want.lines().count().min(got.lines().count()));
    eprintln!(
        "{name}: differs at line {}:\n  want: {:?}\n  got:  {:?}",
        line + 1,
        want.lines().nth(line).unwrap_or(""),
        got.lines().nth(line).unwrap_or("")
    );
    Some(name.to_string())
}

/// Runs every `(args, golden)` case in `dir` and fails naming each output that differs.
fn check_all(dir: &Path, cases: &[(Vec<&str>, String)]) {
    let failed: Vec<String> = cases
        .iter()
        .filter_map(|(args, name)| check(name, &stdout_in(dir, args)))
        .collect();
    assert!(
        failed.is_empty(),
        "outputs differ from their goldens: {failed:?}"
    );
}

#[test]
fn help_of_every_command() {
    let mut cases: Vec<(Vec<&str>, String)> = vec![(vec!["--help"], "help.txt".into())];
    for c in [
        "counters", "stat", "report", "diff", "plot", "attach", "top", "convert", "export",
    ] {
        cases.push((vec![c, "--help"], format!("help_{c}.txt")));
    }
    check_all(&golden_dir(), &cases);
}

#[test]
fn report_and_diff_in_every_format() {
    let mut cases: Vec<(Vec<&str>, String)> = Vec::new();
    for format in ["markdown", "text", "csv", "json"] {
        cases.push((
            vec!["report", JHICCUP, "--format", format],
            format!("report_jhiccup.{format}"),
        ));
        cases.push((
            vec!["report", TAGGED, "--unit", "us", "--format", format],
            format!("report_tagged_us.{format}"),
        ));
        cases.push((
            vec!["diff", JHICCUP, TAGGED, "--format", format],
            format!("diff_jhiccup_tagged.{format}"),
        ));
        cases.push((
            vec![
                "diff",
                "seq-nums.hist",
                "seq-nums.histz",
                "--format",
                format,
            ],
            format!("diff_seq_nums.{format}"),
        ));
    }
    check_all(&vectors(), &cases);
}

#[test]
fn export_in_every_format() {
    let cases = [
        (TAGGED, "prom-text", None, "export_tagged.prom"),
        (
            JHICCUP,
            "openmetrics",
            Some("3"),
            "export_jhiccup_3s.openmetrics",
        ),
        (TAGGED, "otlp-json", Some("2"), "export_tagged_2s.otlp.json"),
    ];
    let cases: Vec<(Vec<&str>, String)> = cases
        .iter()
        .map(|&(log, format, to, name)| {
            let mut args = vec!["export", log, "--format", format];
            args.extend(to.map(|to| ["--to", to]).into_iter().flatten());
            (args, name.to_string())
        })
        .collect();
    check_all(&vectors(), &cases);
}

#[test]
fn saved_stat_run_in_every_form() {
    let mut cases: Vec<(Vec<&str>, String)> = vec![
        (vec!["stat", "--load", SAVED], "stat_human.txt".into()),
        (
            vec!["stat", "--load", SAVED, "--export-json", "-"],
            "stat_export.json".into(),
        ),
        (
            vec!["stat", "--load", SAVED, "--export-markdown", "-"],
            "stat_export.md".into(),
        ),
        (
            vec!["stat", "--load", SAVED, "--export-csv", "-"],
            "stat_export.csv".into(),
        ),
        (
            vec!["stat", "--load", SAVED, "--color", "always"],
            "stat_human_color.txt".into(),
        ),
        (
            vec!["stat", "--load", SAVED, "--baseline", SAVED],
            "stat_human_baseline.txt".into(),
        ),
        (
            vec![
                "stat",
                "--load",
                SAVED,
                "--baseline",
                SAVED,
                "--export-json",
                "-",
            ],
            "stat_export_baseline.json".into(),
        ),
    ];
    for format in ["markdown", "text", "csv", "json"] {
        cases.push((
            vec!["stat", "--load", SAVED, "--format", format],
            format!("stat_table.{format}"),
        ));
    }
    check_all(&golden_dir(), &cases);
}

#[test]
fn saved_stat_run_to_hgrm_files() {
    let t = tmp("hgrm");
    let saved = golden_dir().join(SAVED);
    stdout_in(
        &t,
        &[
            "stat",
            "--load",
            saved.to_str().unwrap(),
            "--hgrm",
            "run.hgrm",
        ],
    );
    let mut names: Vec<String> = std::fs::read_dir(&t)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names.len(), 9, "{names:?}");
    let failed: Vec<String> = ["run.A.wall-time.hgrm", "run.B.page-faults.hgrm"]
        .iter()
        .filter_map(|n| {
            let text = std::fs::read_to_string(t.join(n)).unwrap();
            check(&format!("stat_{n}"), &text)
        })
        .collect();
    assert!(failed.is_empty(), "{failed:?}");
}

picollo_ring::frame! {
    #[derive(Clone, Copy, Debug, Default, PartialEq)]
    struct Op {
        name: Label,
        bytes: u32,
        t: TimeInterval,
        pmc: CounterInterval<2>,
    }
}

/// A capture file of pid 77: two rings, a counter-table change, frames lost.
fn capture() -> Vec<u8> {
    let region = |n: usize| -> Vec<AtomicU64> { (0..n).map(|_| AtomicU64::new(0)).collect() };
    let slots = [CounterInfo::unused(); 2];
    let opts = RingOptions::new(4)
        .with_counters(&slots)
        .with_clock(ClockInfo::nanoseconds(ClockKind::MonotonicNs));
    let mut a = region(required_words(&Op::SCHEMA, 2, 4));
    let mut b = region(required_words(&Op::SCHEMA, 2, 4));
    let mut wa = FrameWriter::<Op>::new(&mut a, &opts).unwrap();
    let mut wb = FrameWriter::<Op>::new(&mut b, &opts).unwrap();
    let mut ra = RingReader::attach(wa.ring().region()).unwrap();
    let mut rb = RingReader::attach(wb.ring().region()).unwrap();
    let mut out = CaptureWriter::new(Vec::new(), 77).unwrap();
    let ia = out.add_ring("ops", ra.info()).unwrap();
    let ib = out.add_ring("other, \"quoted\"", rb.info()).unwrap();
    let op = |n: u64| Op {
        name: Label::new(if n.is_multiple_of(2) {
            "read"
        } else {
            "write \"x\""
        }),
        bytes: n as u32 * 512,
        t: TimeInterval::new(n * 100, n * 100 + 37),
        pmc: CounterInterval {
            start: [n, 1000 + n],
            end: [n + 5, 1003 + n],
        },
    };
    for n in 0..3 {
        wa.save(&op(n));
    }
    let drained = ra
        .drain(|f| out.frame(ia, f.info(), f.number(), f.words()).unwrap())
        .unwrap();
    out.lost(ia, drained.lost).unwrap();
    wa.ring_mut()
        .set_counters(&[
            CounterInfo::measured("page-faults"),
            CounterInfo::unavailable_because("cycles", 2),
        ])
        .unwrap();
    for n in 3..10 {
        wa.save(&op(n)); // 7 frames into 4 slots: 3 lost
    }
    wb.save(&op(100));
    for (id, r) in [(ia, &mut ra), (ib, &mut rb)] {
        let d = r
            .drain(|f| out.frame(id, f.info(), f.number(), f.words()).unwrap())
            .unwrap();
        out.lost(id, d.lost).unwrap();
    }
    out.finish().unwrap()
}

#[test]
fn capture_converts_to_json_lines_and_csv() {
    let t = tmp("convert");
    std::fs::write(t.join("run.bin"), capture()).unwrap();
    let mut failed = Vec::new();
    failed.extend(check(
        "convert_json_lines.jsonl",
        &stdout_in(&t, &["convert", "run.bin", "--format", "json"]),
    ));
    let summary = stdout_in(&t, &["convert", "run.bin", "--csv", "csv"]);
    failed.extend(check("convert_csv.txt", &summary));
    for (file, name) in [
        ("ops.csv", "convert_ops.csv"),
        ("ops.2.csv", "convert_ops.2.csv"),
        ("other, \"quoted\".csv", "convert_other.csv"),
    ] {
        let text = std::fs::read_to_string(t.join("csv").join(file))
            .unwrap_or_else(|e| panic!("{file}: {e}; convert wrote {summary}"));
        failed.extend(check(name, &text));
    }
    assert!(failed.is_empty(), "{failed:?}");
}

#[test]
fn plots_of_a_saved_run_and_of_logs() {
    let t = tmp("plot");
    let saved = golden_dir().join(SAVED);
    let saved = saved.to_str().unwrap();
    let jhiccup = vectors().join(JHICCUP);
    let tagged = vectors().join(TAGGED);
    stdout_in(&t, &["plot", saved, "-o", "run.svg"]);
    stdout_in(
        &t,
        &[
            "stat",
            "--load",
            saved,
            "--plot",
            "stat.svg",
            "--export-csv",
            "-",
        ],
    );
    stdout_in(
        &t,
        &[
            "plot",
            jhiccup.to_str().unwrap(),
            tagged.to_str().unwrap(),
            "--unit",
            "ms",
            "-o",
            "logs.svg",
        ],
    );
    let failed: Vec<String> = [
        ("run.svg", "plot_saved_run.svg"),
        ("stat.svg", "plot_stat_run.svg"),
        ("logs.svg", "plot_logs_ms.svg"),
    ]
    .iter()
    .filter_map(|(file, name)| check(name, &std::fs::read_to_string(t.join(file)).unwrap()))
    .collect();
    assert!(failed.is_empty(), "{failed:?}");
}
