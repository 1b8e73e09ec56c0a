//! `picollo export`: the three formats on the HdrHistogram vector logs (counts checked against
//! the logs themselves, the OpenMetrics output backfilled by a real `promtool`), and hostile
//! input (one-line errors, exit status 1, never a panic).

use std::path::PathBuf;
use std::process::Command;

use picollo_alloc::hdr::{interop, LogReader};
use picollo_core::{HistogramRead, ReadExt};

const BIN: &str = env!("CARGO_BIN_EXE_picollo");
const JHICCUP: &str = "jHiccup-2.0.7S.logV2.hlog";
const TAGGED: &str = "tagged-Log.logV2.hlog";

/// The HdrHistogram vectors, in the repository: `picollo-alloc/tests/vectors/hdrhistogram`.
fn vector(name: &str) -> PathBuf {
    let dir = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../picollo-alloc/tests/vectors/hdrhistogram"
    ));
    assert!(
        dir.is_dir(),
        "HdrHistogram vectors not found at {}",
        dir.display()
    );
    dir.join(name)
}

struct Ran {
    code: i32,
    stdout: String,
    stderr: String,
}

fn run(args: &[&str]) -> Ran {
    let o = Command::new(BIN).args(args).output().expect("run picollo");
    Ran {
        code: o.status.code().expect("picollo exited by a signal"),
        stdout: String::from_utf8(o.stdout).expect("UTF-8 stdout"),
        stderr: String::from_utf8(o.stderr).expect("UTF-8 stderr"),
    }
}

fn export(file: &str, args: &[&str]) -> String {
    let path = vector(file);
    let mut all = vec!["export", path.to_str().unwrap()];
    all.extend_from_slice(args);
    let r = run(&all);
    assert_eq!(r.code, 0, "picollo {all:?}: {}", r.stderr);
    r.stdout
}

/// Per tag, the interval totals of a log, read with the library.
fn interval_totals(file: &str) -> Vec<(Option<String>, u64)> {
    let f = std::fs::File::open(vector(file)).unwrap();
    LogReader::new(std::io::BufReader::new(f))
        .map(|e| {
            let e = e.unwrap();
            let h = interop::to_picollo(&e.decode().unwrap()).unwrap();
            (e.tag, h.total())
        })
        .collect()
}

/// The value of the sample line starting with `prefix ` (no timestamp).
fn sample(text: &str, prefix: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(prefix)?.strip_prefix(' '))
        .unwrap_or_else(|| panic!("no sample {prefix} in\n{text}"))
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

#[test]
fn prom_text_adds_up_each_tag() {
    let text = export(TAGGED, &["--format", "prom-text", "--name", "latency_ns"]);
    assert!(text.starts_with(
        "# HELP latency_ns from tagged-Log.logV2.hlog\n# TYPE latency_ns histogram\n"
    ));
    let totals = interval_totals(TAGGED);
    let of = |tag: Option<&str>| -> f64 {
        totals
            .iter()
            .filter(|(t, _)| t.as_deref() == tag)
            .map(|(_, n)| *n as f64)
            .sum()
    };
    assert_eq!(sample(&text, "latency_ns_count"), of(None));
    assert_eq!(sample(&text, "latency_ns_count{tag=\"A\"}"), of(Some("A")));
    assert_eq!(
        sample(&text, "latency_ns_bucket{tag=\"A\",le=\"+Inf\"}"),
        of(Some("A"))
    );
    // Cumulative buckets never decrease.
    let mut last = 0.0;
    for l in text
        .lines()
        .filter(|l| l.starts_with("latency_ns_bucket{le="))
    {
        let v: f64 = l.rsplit(' ').next().unwrap().parse().unwrap();
        assert!(v >= last, "{l}");
        last = v;
    }
    // Selection: one tag, a time range.
    let a = export(
        TAGGED,
        &[
            "--format",
            "prom-text",
            "--tag",
            "A",
            "--from",
            "5",
            "--to",
            "10",
        ],
    );
    assert!(!a.contains("hlog_value_count "), "untagged left out:\n{a}");
    assert!(sample(&a, "hlog_value_count{tag=\"A\"}") < of(Some("A")));
}

#[test]
fn otlp_json_has_one_point_per_interval() {
    let json = export(JHICCUP, &["--format", "otlp-json"]);
    let v: serde_json::Value = serde_json::from_str(&json).expect("valid JSON");
    let m = &v["resourceMetrics"][0]["scopeMetrics"][0]["metrics"][0];
    assert_eq!(m["name"], "hlog_value");
    let e = &m["exponentialHistogram"];
    assert_eq!(e["aggregationTemporality"], 1, "delta: each interval once");
    let points = e["dataPoints"].as_array().unwrap();
    let totals = interval_totals(JHICCUP);
    assert_eq!(points.len(), totals.len());
    let first = LogReader::new(std::io::BufReader::new(
        std::fs::File::open(vector(JHICCUP)).unwrap(),
    ))
    .next()
    .unwrap()
    .unwrap();
    let k = interop::to_picollo(&first.decode().unwrap())
        .unwrap()
        .layout()
        .block_scale();
    let scale = k.min(8);
    let mut previous_end = 0u64;
    for (p, (_, total)) in points.iter().zip(&totals) {
        let n = |k: &str| p[k].as_str().unwrap().parse::<u64>().unwrap();
        assert_eq!(n("count"), *total);
        let buckets: u64 = p["positive"]["bucketCounts"].as_array().map_or(0, |a| {
            a.iter()
                .map(|c| c.as_str().unwrap().parse::<u64>().unwrap())
                .sum()
        });
        assert_eq!(buckets + n("zeroCount"), *total);
        assert_eq!(
            p["scale"], scale,
            "the finest schema not finer than the log's precision"
        );
        assert!(n("startTimeUnixNano") < n("timeUnixNano"));
        assert!(
            n("startTimeUnixNano") + 10_000_000 >= previous_end,
            "intervals follow each other"
        );
        previous_end = n("timeUnixNano");
    }
    let coarse = export(
        JHICCUP,
        &["--format", "otlp-json", "--schema", "-2", "--to", "3"],
    );
    assert!(
        coarse.contains("\"scale\":-2"),
        "{}",
        &coarse[..200.min(coarse.len())]
    );
}

#[test]
fn openmetrics_backfills_with_promtool() {
    let text = export(
        TAGGED,
        &[
            "--format",
            "openmetrics",
            "--buckets",
            "100000,1000000,100000000",
        ],
    );
    assert!(text.ends_with("# EOF\n"));
    let intervals = interval_totals(TAGGED);
    // Cumulative per tag, one sample per interval: the last one holds every value.
    let last_a = text
        .lines()
        .rfind(|l| l.starts_with("hlog_value_count{tag=\"A\"}"))
        .unwrap();
    let total_a: u64 = intervals
        .iter()
        .filter(|(t, _)| t.as_deref() == Some("A"))
        .map(|(_, n)| n)
        .sum();
    assert_eq!(
        last_a.split(' ').nth(1).unwrap().parse::<u64>().unwrap(),
        total_a
    );

    let have_promtool = Command::new("promtool").arg("--version").output().is_ok();
    if !have_promtool {
        assert!(
            std::env::var_os("CI").is_none(),
            "promtool missing (CI installs prometheus)"
        );
        eprintln!("skip: promtool is not installed (apt-get install prometheus)");
        return;
    }
    let dir = std::env::temp_dir().join(format!("picollo-backfill-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let input = dir.join("in.om");
    std::fs::write(&input, &text).unwrap();
    let out = Command::new("promtool")
        .args(["tsdb", "create-blocks-from", "openmetrics"])
        .arg(&input)
        .arg(dir.join("data"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "promtool refused it: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let list = Command::new("promtool")
        .args(["tsdb", "list"])
        .arg(dir.join("data"))
        .output()
        .unwrap();
    let list = String::from_utf8_lossy(&list.stdout).into_owned();
    // 2 tags × (3 buckets + +Inf + count + sum) series, one sample per interval each.
    let (samples, series) = list.lines().skip(1).fold((0u64, 0u64), |(a, b), l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        let n = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
        // BLOCK ULID, MIN TIME, MAX TIME, DURATION, NUM SAMPLES, NUM CHUNKS, NUM SERIES, SIZE
        (a + n(4), b.max(n(6)))
    });
    assert_eq!(series, 12, "{list}");
    assert_eq!(samples, 6 * intervals.len() as u64, "{list}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn hostile_input_gets_one_line_errors() {
    let dir = std::env::temp_dir().join(format!("picollo-export-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let write = |name: &str, bytes: &[u8]| {
        let p = dir.join(name);
        std::fs::write(&p, bytes).unwrap();
        p.to_string_lossy().into_owned()
    };
    let garbage: Vec<u8> = (0..4096u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    // A header claiming an enormous counts array (V2 cookie, payload length, normalizing
    // offset 0, 5 digits, lowest 1, highest 2^62, conversion ratio 1.0): the decoder's limits
    // refuse it without allocating.
    let mut bomb = vec![
        0x1c, 0x84, 0x93, 0x13, 0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 5,
    ];
    bomb.extend_from_slice(&1u64.to_be_bytes());
    bomb.extend_from_slice(&(1u64 << 62).to_be_bytes());
    bomb.extend_from_slice(&1f64.to_bits().to_be_bytes());
    let bomb_line = format!("0.1,1.0,2.0,{}\n", base64_encode(&bomb));
    let cases: Vec<(Vec<String>, &str)> = vec![
        (vec!["missing.hlog".into()], "cannot open"),
        (
            vec![write(
                "empty.hlog",
                b"#[StartTime: 1 (seconds since epoch)]\n",
            )],
            "no interval lines",
        ),
        (
            vec![write("garbage.hlog", &garbage)],
            "is this an HdrHistogram interval log",
        ),
        (
            vec![write(
                "corrupt.hlog",
                b"0.127,1.007,2.769,HISTFAAAAEV42pNpmSzMwMCgyAAB\n",
            )],
            "cannot decode the histogram",
        ),
        (
            vec![write("bomb.hlog", bomb_line.as_bytes())],
            "cannot decode the histogram",
        ),
        (
            vec![write(
                "nan.hlog",
                b"nan,1.0,2.0,HISTFAAAAEV42pNpmSzMwMCgyAAB\n",
            )],
            "line 1",
        ),
    ];
    for (args, expected) in cases {
        let mut all = vec!["export".to_string()];
        all.extend(args);
        all.extend(["--format".into(), "otlp-json".into()]);
        let r = run(&all.iter().map(String::as_str).collect::<Vec<_>>());
        assert_eq!(r.code, 1, "{all:?}: {}", r.stderr);
        assert!(r.stderr.contains(expected), "{all:?}: {}", r.stderr);
        assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
        assert!(r.stdout.is_empty());
    }
    let log = vector(JHICCUP);
    let log = log.to_str().unwrap();
    for (args, expected) in [
        (vec!["--name", "9lives"], "--name"),
        (vec!["--schema", "9"], "outside -4..=8"),
        (vec!["--buckets", "5,3"], "strictly increasing"),
        (vec!["--from", "inf"], "finite"),
        (vec!["--tag", "nope"], "matches the selection"),
    ] {
        let mut all = vec!["export", log, "--format", "prom-text"];
        all.extend(args);
        let r = run(&all);
        assert_eq!(r.code, 1, "{all:?}: {}", r.stderr);
        assert!(r.stderr.contains(expected), "{all:?}: {}", r.stderr);
    }
    assert_eq!(run(&["export", log]).code, 2, "--format is required");
    assert_eq!(run(&["export", log, "--format", "csv"]).code, 2);
    let _ = std::fs::remove_dir_all(&dir);
}

fn base64_encode(bytes: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for c in bytes.chunks(3) {
        let n = (c[0] as u32) << 16
            | (*c.get(1).unwrap_or(&0) as u32) << 8
            | *c.get(2).unwrap_or(&0) as u32;
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
