//! A log is the run: what `stat --hlog` (and `--hgrm`) saves, `report` reads back with the
//! same values, `±`, precision, counts, mean, standard deviation and maximum as `stat`
//! printed, in every format.

use std::path::PathBuf;
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_picollo");
/// Page faults in the thousands and a wall time in milliseconds: values in buckets wider
/// than 1, where a change of geometry would show.
const WORKLOAD: &[&str] = &["sh", "-c", "seq 20000 | sort -rn > /dev/null"];

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("picollo-roundtrip-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn picollo(args: &[&str]) -> String {
    let out = Command::new(BIN).args(args).output().expect("run picollo");
    assert!(
        out.status.success(),
        "picollo {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8")
}

/// CSV rows without the name column, grouped per table (name → rows).
fn csv_tables(csv: &str) -> Vec<(String, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    for line in csv.lines().skip(1) {
        // The name is the first field, quoted when it holds a comma (`log, tag T`).
        let (name, rest) = match line.strip_prefix('"') {
            Some(quoted) => {
                let end = quoted.find("\",").expect("closing quote");
                (&quoted[..end], &quoted[end + 2..])
            }
            None => line.split_once(',').expect("a name field"),
        };
        match out.last_mut() {
            Some((n, rows)) if n == name => rows.push(rest.to_string()),
            _ => out.push((name.to_string(), vec![rest.to_string()])),
        }
    }
    out
}

/// `(max, precision)` of each table of a JSON report, in order.
fn json_extremes(json: &str) -> Vec<(u64, f64)> {
    let v: serde_json::Value = serde_json::from_str(json).expect("JSON");
    v["tables"]
        .as_array()
        .expect("tables")
        .iter()
        .map(|t| {
            (
                t["max"].as_u64().expect("max"),
                t["precision"].as_f64().expect("precision"),
            )
        })
        .collect()
}

#[test]
fn stat_hlog_reads_back_as_printed() {
    let log = tmp("run.hlog");
    let log_s = log.to_str().unwrap();
    let hgrm = tmp("run.hgrm");
    let hgrm_s = hgrm.to_str().unwrap();
    let mut args = vec![
        "stat",
        "-r",
        "6",
        "-e",
        "task-clock,page-faults",
        "--hlog",
        log_s,
        "--hgrm",
        hgrm_s,
        "--format",
        "csv",
        "--",
    ];
    args.extend_from_slice(WORKLOAD);
    let printed = csv_tables(&picollo(&args));
    let read = csv_tables(&picollo(&["report", log_s, "--format", "csv"]));
    assert_eq!(printed.len(), 3, "task-clock, page-faults, wall time");
    assert_eq!(read.len(), printed.len());
    for ((pn, prows), (rn, rrows)) in printed.iter().zip(&read) {
        let tag = pn.split(" (").next().unwrap();
        assert!(rn.contains(&format!("tag {tag}")), "{rn} is {pn}");
        assert_eq!(prows, rrows, "{pn}: stat printed, report read back");
    }
    // The .hgrm files have a step per recorded bucket: read back, the same tables too.
    for (pn, prows) in &printed {
        let tag = pn.split(" (").next().unwrap();
        let file = tmp(&format!("run.{tag}.hgrm"));
        let read = csv_tables(&picollo(&[
            "report",
            file.to_str().unwrap(),
            "--format",
            "csv",
        ]));
        assert_eq!(read.len(), 1);
        assert_eq!(prows, &read[0].1, "{pn}: stat printed, its .hgrm read back");
        let _ = std::fs::remove_file(&file);
    }
    // The same maximum and precision (JSON carries both), in a second run: the log must
    // match its own run, whatever the values.
    args[10] = "json";
    let printed = json_extremes(&picollo(&args));
    let read = json_extremes(&picollo(&["report", log_s, "--format", "json"]));
    assert_eq!(printed, read);
    for (max, precision) in &printed {
        assert!(*max > 0);
        assert!(
            (*precision - 1.0 / 2048.0).abs() < 1e-12,
            "HdrHistogram(3)'s precision, read back as such: {precision}"
        );
    }
    let _ = std::fs::remove_file(&log);
}
