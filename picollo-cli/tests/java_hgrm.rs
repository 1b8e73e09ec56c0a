//! `.hgrm` files written by HdrHistogram Java's `HistogramLogProcessor` (the golden files in
//! `picollo-alloc/tests/data/hgrm/`) through `picollo report` and `picollo diff`: read (they
//! start with `#[…]` comment lines, which used to send them to the `.hlog` reader), with the
//! same totals, and at every summary rank where Java printed a step, the same bucket.

use std::path::PathBuf;
use std::process::Command;

use picollo_alloc::hdr::HdrCounts;
use picollo_alloc::hgrm::{parse_hgrm, HgrmFile};

const BIN: &str = env!("CARGO_BIN_EXE_picollo");

fn golden(name: &str) -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../picollo-alloc/tests/data/hgrm"
    ))
    .join(name)
}

fn run(args: &[&str]) -> (String, String) {
    let o = Command::new(BIN).args(args).output().unwrap();
    let (stdout, stderr) = (
        String::from_utf8(o.stdout).unwrap(),
        String::from_utf8(o.stderr).unwrap(),
    );
    assert!(o.status.success(), "picollo {args:?}: {stderr}");
    (stdout, stderr)
}

fn parsed(name: &str) -> HgrmFile {
    parse_hgrm(&std::fs::read_to_string(golden(name)).unwrap()).unwrap()
}

/// The step Java printed at exactly `rank` percent, if any.
fn step_at(file: &HgrmFile, rank: f64) -> Option<u64> {
    file.steps
        .iter()
        .find(|s| (s.percentile * 100.0 - rank).abs() < 1e-9)
        .map(|s| s.scaled)
}

#[test]
fn report_reads_java_files_with_the_same_steps() {
    for name in [
        "java-jhiccup-raw.hgrm",
        "java-jhiccup-ms.hgrm",
        "java-jhiccup-5-20-csv.hgrm",
        "java-tagged-A-us.hgrm",
    ] {
        let file = parsed(name);
        let path = golden(name);
        let (stdout, stderr) = run(&["report", path.to_str().unwrap(), "--format", "json"]);
        assert!(stderr.contains("rebuilt from its"), "{stderr}");
        let json: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
        let t = &json["tables"][0];
        assert_eq!(t["total"], file.total_count(), "{name}");
        let mut compared = 0;
        for p in t["percentiles"].as_array().unwrap() {
            let rank = p["rank"].as_f64().unwrap();
            let (value, half) = (
                p["value"].as_u64().unwrap(),
                p["half_width"].as_u64().unwrap(),
            );
            let Some(step) = step_at(&file, rank) else {
                continue;
            };
            // Java's step lies in the bucket Picollo reports (its value ± half its width).
            assert!(
                value.abs_diff(step) <= half,
                "{name} p{rank}: Java {step}, Picollo {value} ± {half}"
            );
            compared += 1;
        }
        // p0, p10, p25 (not a Java level), p50, p75, p90, p95, p97.5, p100 …
        assert!(compared >= 7, "{name}: {compared} ranks compared");
    }
}

#[test]
fn diff_of_java_hgrm_and_its_hlog() {
    let vectors = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../picollo-alloc/tests/vectors/hdrhistogram"
    ));
    let hlog = vectors.join("jHiccup-2.0.7S.logV2.hlog");
    assert!(
        hlog.is_file(),
        "HdrHistogram vectors missing at {}",
        hlog.display()
    );
    let file = parsed("java-jhiccup-raw.hgrm");
    let hgrm = golden("java-jhiccup-raw.hgrm");
    let (stdout, _) = run(&[
        "diff",
        hgrm.to_str().unwrap(),
        hlog.to_str().unwrap(),
        "--format",
        "csv",
    ]);
    // Java's histogram: the log's geometry (lowest discernible 20,000, 2 digits).
    let java = HdrCounts::new(20_000, 3_600_000_000_000, 2).unwrap();
    let g = java.geometry().unwrap();
    let mut compared = 0;
    for line in stdout.lines().skip(1) {
        let cols: Vec<&str> = line.split(',').collect();
        let Some(rank) = cols[1].strip_prefix('p') else {
            if cols[1] == "total" {
                assert_eq!((cols[2], cols[3]), ("48761", "48761"), "{line}");
            }
            continue;
        };
        let Some(step) = step_at(&file, rank.parse().unwrap()) else {
            continue;
        };
        let (a, b): (u64, u64) = (cols[2].parse().unwrap(), cols[3].parse().unwrap());
        // Both sides in Java's bucket ending at the step (B at 3 digits, by its midpoint).
        let lowest = g.lowest_equivalent(g.index_of(step).unwrap()).unwrap();
        for v in [a, b] {
            let slack = v / 500 + 1;
            assert!(
                v + slack >= lowest && v <= step + slack,
                "p{rank}: {v} outside Java's [{lowest}, {step}]: {line}"
            );
        }
        compared += 1;
    }
    assert!(compared >= 7, "{compared} ranks compared:\n{stdout}");
}
