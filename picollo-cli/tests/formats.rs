//! The histogram file formats `report`, `diff` and `plot` read by content (interval logs,
//! `.hgrm` percentile files, encoded histograms as bytes or base64), and what `stat --hlog`
//! and `--hgrm` save. Files are made here, so these tests need nothing beside the checkout.

use std::path::PathBuf;
use std::process::Command;

use base64_free::encode as b64;
use picollo_alloc::hdr::HdrCounts;

const BIN: &str = env!("CARGO_BIN_EXE_picollo");

/// Base64 without a dependency: the test only needs to write it.
mod base64_free {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

    pub fn encode(bytes: &[u8]) -> String {
        let mut out = String::new();
        for c in bytes.chunks(3) {
            let n = (u32::from(c[0]) << 16)
                | (u32::from(*c.get(1).unwrap_or(&0)) << 8)
                | u32::from(*c.get(2).unwrap_or(&0));
            for i in 0..4 {
                if i <= c.len() {
                    out.push(A[(n >> (18 - 6 * i) & 63) as usize] as char);
                } else {
                    out.push('=');
                }
            }
        }
        out
    }
}

fn dir(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("picollo-formats-{name}"));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn run(args: &[&str]) -> (i32, String, String) {
    let o = Command::new(BIN).args(args).output().unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8(o.stdout).unwrap(),
        String::from_utf8(o.stderr).unwrap(),
    )
}

fn ok(args: &[&str]) -> String {
    let (code, stdout, stderr) = run(args);
    assert_eq!(code, 0, "picollo {args:?}: {stderr}");
    stdout
}

fn json(text: &str) -> serde_json::Value {
    serde_json::from_str(text.trim()).unwrap_or_else(|e| panic!("{e}: {text}"))
}

/// 1..=1000, each ×7, at 3 significant digits.
fn sample() -> HdrCounts {
    let mut h = HdrCounts::new(1, 1 << 40, 3).unwrap();
    for v in 1..=1000u64 {
        h.record(v * 7, 1).unwrap();
    }
    h
}

#[test]
fn encoded_histograms_binary_and_base64() {
    let d = dir("blobs");
    let h = sample();
    let files = [
        ("a.hist", h.encode_v2().unwrap()),
        ("a.histz", h.encode_v2_deflate(6).unwrap()),
        ("a.b64", b64(&h.encode_v2_deflate(6).unwrap()).into_bytes()),
        // Named like a log, holding base64 with a line break: content decides.
        (
            "named.hlog",
            format!("{}\n", b64(&h.encode_v2().unwrap())).into_bytes(),
        ),
    ];
    for (name, bytes) in &files {
        let p = d.join(name);
        std::fs::write(&p, bytes).unwrap();
        let v = json(&ok(&["report", p.to_str().unwrap(), "--format", "json"]));
        let t = &v["tables"][0];
        assert_eq!(t["total"], 1000, "{name}");
        assert_eq!(t["name"], format!("{name} (one histogram)"));
        let p99 = t["percentiles"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["rank"] == 99.0)
            .unwrap();
        // The same value HdrHistogram reports (highest equivalent within 0.1%).
        let expect = h.value_at_percentile(99.0).unwrap() as f64;
        let got = p99["value"].as_f64().unwrap();
        assert!(
            (got - expect).abs() <= expect * 0.002,
            "{name}: {got} vs {expect}"
        );
    }
    // Damaged: starts like an encoding, does not decode.
    let bad = d.join("bad.hist");
    let mut b = h.encode_v2_deflate(6).unwrap();
    b.truncate(30);
    std::fs::write(&bad, &b).unwrap();
    let (code, _, stderr) = run(&["report", bad.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(
        stderr.contains("looks like an encoded HdrHistogram but does not decode"),
        "{stderr}"
    );
    // Binary that is nothing known: the interval-log error, not a panic.
    std::fs::write(&bad, [0xffu8, 0xfe, 0, 1, 2, 3]).unwrap();
    let (code, _, stderr) = run(&["report", bad.to_str().unwrap()]);
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
}

#[test]
fn stat_saves_hlog_and_hgrm_that_report_reads_back() {
    let d = dir("stat");
    let hlog = d.join("run.hlog");
    let hgrm = d.join("run.hgrm");
    let (code, _, stderr) = run(&[
        "stat",
        "-r",
        "6",
        "-e",
        "task-clock,page-faults",
        "--hlog",
        hlog.to_str().unwrap(),
        "--hgrm",
        hgrm.to_str().unwrap(),
        "--format",
        "json",
        "--",
        "true",
    ]);
    assert_eq!(code, 0, "{stderr}");
    for f in [
        "run.task-clock.hgrm",
        "run.page-faults.hgrm",
        "run.wall-time.hgrm",
    ] {
        assert!(d.join(f).is_file(), "{f}: {stderr}");
        assert!(
            stderr.contains(&format!("wrote {}", d.join(f).display())),
            "{stderr}"
        );
    }

    // The log: one tagged interval per counter, six runs each.
    let v = json(&ok(&["report", hlog.to_str().unwrap(), "--format", "json"]));
    let tables = v["tables"].as_array().unwrap();
    let names: Vec<&str> = tables.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "run.hlog, tag task-clock (1 interval)",
            "run.hlog, tag page-faults (1 interval)",
            "run.hlog, tag wall-time (1 interval)"
        ]
    );
    assert!(tables.iter().all(|t| t["total"] == 6));

    // The .hgrm files: six values each; p100 is the file's own last step.
    let pf = d.join("run.page-faults.hgrm");
    let (code, stdout, stderr) = run(&["report", pf.to_str().unwrap(), "--format", "json"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("rebuilt from its"), "{stderr}");
    let t = &json(&stdout)["tables"][0];
    assert_eq!(t["total"], 6);
    assert_eq!(t["name"], "run.page-faults.hgrm (percentile distribution)");
    let text = std::fs::read_to_string(&pf).unwrap();
    let last_value: f64 = text
        .lines()
        .rfind(|l| !l.starts_with('#') && !l.trim().is_empty())
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let p100 = t["percentiles"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["rank"] == 100.0)
        .unwrap()["value"]
        .as_f64()
        .unwrap();
    assert!(
        (p100 - last_value).abs() <= last_value * 0.002,
        "{p100} vs {last_value}"
    );

    // Mixed formats diff and plot together.
    let blob = d.join("x.histz");
    std::fs::write(&blob, sample().encode_v2_deflate(6).unwrap()).unwrap();
    let wall = d.join("run.wall-time.hgrm");
    let diff = ok(&["diff", wall.to_str().unwrap(), blob.to_str().unwrap()]);
    assert!(
        diff.contains("- A: run.wall-time.hgrm (.hgrm percentile distribution)"),
        "{diff}"
    );
    assert!(diff.contains("- B: x.histz (one histogram)"), "{diff}");
    assert!(diff.contains("##### histogram"), "{diff}");
    let svg = d.join("p.svg");
    let (code, _, stderr) = run(&[
        "plot",
        pf.to_str().unwrap(),
        blob.to_str().unwrap(),
        hlog.to_str().unwrap(),
        "-o",
        svg.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains("(5 lines)"),
        "one per file, one per tag: {stderr}"
    );

    // Selections apply to interval logs only; a damaged .hgrm names its line.
    let (code, _, stderr) = run(&["report", pf.to_str().unwrap(), "--from", "1"]);
    assert_eq!(code, 1);
    assert!(stderr.contains("not an interval log"), "{stderr}");
    let damaged = d.join("damaged.hgrm");
    std::fs::write(
        &damaged,
        text.replacen("1.000000000000", "1.500000000000", 1),
    )
    .unwrap();
    let (code, _, stderr) = run(&["report", damaged.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(stderr.contains(": line "), "{stderr}");
}
