//! Differential tests against HdrHistogram Java 2.1.11, as Debian's `libhdrhistogram-java`
//! installs it (`/usr/share/java/hdrhistogram.jar`, or `$PICOLLO_HDRHISTOGRAM_JAR`), run with
//! `java` (`default-jre-headless`; `tests/java/PicolloDiff.java` runs in source-file mode, so
//! no compiler is needed):
//!
//! - **every total 1..=100,000 at the standard ranks**: Java records random values of three
//!   shapes one at a time and calls `getValueAtPercentile` after each; Picollo's `HdrCounts`
//!   and its core histogram (HdrHistogram's layout, highest equivalent values) give the same
//!   value at every rank and every total;
//! - **Picollo's `.hlog` → Java**: Java's `HistogramLogProcessor` reads an interval log Picollo
//!   wrote; its `.hgrm` (read back by Picollo) matches Picollo's counts and Picollo's own
//!   `.hgrm` row by row, and its
//!   interval percentiles (`getValueAtPercentile` of each interval and of the running sum) are
//!   Picollo's;
//! - **Java's `.hlog` → Picollo**: an interval log Java's `HistogramLogWriter` wrote decodes in
//!   Picollo to the counts Picollo records from the same values, with Java's totals, extremes
//!   and percentiles.
//!
//! Without Java or the jar the tests print why and return; with `CI` set they fail instead
//! (`.ci/install.d/50-hdrhistogram-java.sh` installs both).

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use picollo_alloc::hdr::{interop, HdrCounts, LogReader, LogWriter};
use picollo_alloc::hgrm::{parse_hgrm, Hgrm};
use picollo_core::prelude::*;
use picollo_core::Window;

/// The standard ranks, as written.
const RANKS: [&str; 16] = [
    "0", "1", "10", "25", "50", "75", "90", "95", "99", "99.5", "99.9", "99.95", "99.99", "99.999",
    "99.9999", "100",
];

/// Values per shape: every total up to this is compared.
const TOTALS: usize = 100_000;

/// `java` and the HdrHistogram jar, or `None` (after saying why) when either is missing
/// outside CI. Under `CI` a missing one fails the test.
fn java() -> Option<(PathBuf, PathBuf)> {
    let jar = std::env::var_os("PICOLLO_HDRHISTOGRAM_JAR").map_or_else(
        || PathBuf::from("/usr/share/java/hdrhistogram.jar"),
        PathBuf::from,
    );
    let java = std::env::var_os("JAVA_HOME")
        .map(|h| PathBuf::from(h).join("bin/java"))
        .filter(|j| j.is_file())
        .unwrap_or_else(|| PathBuf::from("java"));
    let runs = Command::new(&java)
        .arg("-version")
        .output()
        .is_ok_and(|o| o.status.success());
    let missing = match (runs, jar.is_file()) {
        (true, true) => return Some((java, jar)),
        (false, _) => format!(
            "`{}` does not run (apt-get install default-jre-headless)",
            java.display()
        ),
        (true, false) => format!(
            "{} not found (apt-get install libhdrhistogram-java, or set PICOLLO_HDRHISTOGRAM_JAR)",
            jar.display()
        ),
    };
    if std::env::var_os("CI").is_some() {
        panic!("{missing}; CI must install it: .ci/install.d/50-hdrhistogram-java.sh");
    }
    eprintln!("skip: {missing}");
    None
}

/// A fresh scratch directory for one test.
fn scratch(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("java-differential-{name}"));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Runs `PicolloDiff.java` with `args`; returns its stdout.
fn run_java(java: &(PathBuf, PathBuf), args: &[&str]) -> String {
    let source = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/java/PicolloDiff.java");
    run(Command::new(&java.0)
        .arg("-cp")
        .arg(&java.1)
        .arg(source)
        .args(args))
}

fn run(cmd: &mut Command) -> String {
    let o = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        o.status.success(),
        "{cmd:?} failed: {}\n{}",
        String::from_utf8_lossy(&o.stderr),
        String::from_utf8_lossy(&o.stdout)
    );
    String::from_utf8(o.stdout).unwrap()
}

/// `n` values of one shape from a fixed-seed generator.
fn shape(kind: usize, n: usize) -> Vec<u64> {
    let mut state = 0x9E37_79B9_7F4A_7C15u64 ^ (kind as u64 + 1);
    (0..n)
        .map(|i| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let r = (state >> 11) as f64 / (1u64 << 53) as f64;
            match kind {
                // Uniform.
                0 => 1 + (r * 1e6) as u64,
                // Pareto, alpha 1.1 from 1,000, capped below 2^29.
                1 => ((1000.0 / (1.0 - r).powf(1.0 / 1.1)) as u64).min((1 << 29) - 1),
                // The shape: 1 almost always, 1,000 one time in a thousand.
                2 => {
                    if i % 1000 == 999 {
                        1000
                    } else {
                        1
                    }
                }
                // Two modes a decade apart, log-uniform within each.
                _ => {
                    let base = if state & 1 == 0 { 2_000.0 } else { 20_000.0 };
                    (base * 2f64.powf(r * 3.0)) as u64
                }
            }
        })
        .collect()
}

fn write_values(path: &Path, values: &[u64]) {
    let mut text = String::with_capacity(values.len() * 8);
    for v in values {
        writeln!(text, "{v}").unwrap();
    }
    std::fs::write(path, text).unwrap();
}

/// The value at every total and rank from Picollo's core histogram (HdrHistogram's layout,
/// highest equivalent values), as "total rank-index value" lines where a rank's value changes
/// (the format of `PicolloDiff.java ranks`).
fn core_rank_changes(values: &[u64]) -> String {
    let ranks = RANKS.map(|t| t.parse::<f64>().unwrap());
    let layout = Layout::from_significant_digits(2).unwrap();
    let w = Window::new(layout, 0, 1 << 30).unwrap();
    let mut cells = vec![0u64; w.len()];
    let mut h = Histogram::with_storage(layout, &mut cells[..], w).unwrap();
    let mut changes = String::new();
    let mut last = [u64::MAX; 16];
    let mut out = [Percentile::default(); 16];
    for (i, &v) in values.iter().enumerate() {
        h.record(v);
        h.percentiles(&ranks, EquivalentValue::Upper, &mut out)
            .unwrap();
        for (r, p) in out.iter().enumerate() {
            // HdrHistogram reports the lowest equivalent value at rank 0.
            let value = if r == 0 { p.lo } else { p.value };
            if value != last[r] {
                writeln!(changes, "{} {r} {value}", i + 1).unwrap();
                last[r] = value;
            }
        }
    }
    changes
}

/// Java's value at `total` and rank index `r`, from its change lines.
fn java_value(changes: &[Vec<(usize, u64)>], r: usize, total: usize) -> u64 {
    let c = &changes[r];
    c[c.partition_point(|&(t, _)| t <= total) - 1].1
}

/// `HdrCounts::value_at_percentile` (whose walk costs a scan from the first entry) at the
/// totals that matter most: all up to 3,000, each multiple of 1,000 and its neighbours, and
/// every 7th.
fn check_hdr_counts(values: &[u64], java: &str, shape: usize) {
    let mut changes = vec![Vec::new(); RANKS.len()];
    for line in java.lines() {
        let f: Vec<u64> = line.split(' ').map(|t| t.parse().unwrap()).collect();
        changes[f[1] as usize].push((f[0] as usize, f[2]));
    }
    let ranks = RANKS.map(|t| t.parse::<f64>().unwrap());
    let mut counts = HdrCounts::new(1, 1 << 30, 2).unwrap();
    for (i, &v) in values.iter().enumerate() {
        counts.record(v, 1).unwrap();
        let total = i + 1;
        let m = total % 1000;
        if total > 3000 && m > 1 && m < 999 && total % 7 != 0 {
            continue;
        }
        for (r, &rank) in ranks.iter().enumerate() {
            assert_eq!(
                counts.value_at_percentile(rank),
                Some(java_value(&changes, r, total)),
                "shape {shape}: HdrCounts p{rank} of {total}"
            );
        }
    }
}

/// The first line where two change lists differ, for the failure message.
fn first_difference(want: &str, got: &str) -> String {
    for (i, (a, b)) in want.lines().zip(got.lines()).enumerate() {
        if a != b {
            return format!("line {}: Java `{a}`, Picollo `{b}`", i + 1);
        }
    }
    format!(
        "lengths differ: Java {} lines, Picollo {}",
        want.lines().count(),
        got.lines().count()
    )
}

#[test]
#[cfg_attr(
    miri,
    ignore = "runs java (the HdrHistogram Java peer): miri cannot spawn a process"
)]
fn every_total_at_the_standard_ranks_as_java() {
    let Some(java) = java() else { return };
    let dir = scratch("ranks");
    let shapes: Vec<Vec<u64>> = (0..3).map(|k| shape(k, TOTALS)).collect();
    let files: Vec<PathBuf> = (0..3).map(|k| dir.join(format!("shape{k}.txt"))).collect();
    for (f, v) in files.iter().zip(&shapes) {
        write_values(f, v);
    }
    let mut args = vec!["ranks".to_owned(), RANKS.join(",")];
    args.extend(files.iter().map(|f| f.to_str().unwrap().to_owned()));
    run_java(&java, &args.iter().map(String::as_str).collect::<Vec<_>>());
    for (k, (f, values)) in files.iter().zip(&shapes).enumerate() {
        let theirs = std::fs::read_to_string(f.with_extension("txt.java")).unwrap();
        assert!(
            theirs.lines().count() >= 16,
            "shape {k}: Java wrote too little"
        );
        let ours = core_rank_changes(values);
        assert!(
            ours == theirs,
            "shape {k}, core histogram: {}",
            first_difference(&theirs, &ours)
        );
        check_hdr_counts(values, &theirs, k);
        if k == 2 {
            // The case is in there: p99.9 of 20,000 values of this shape is 1.
            let p999 = RANKS.iter().position(|r| *r == "99.9").unwrap();
            let mut changes = vec![Vec::new(); RANKS.len()];
            for line in theirs.lines() {
                let f: Vec<u64> = line.split(' ').map(|t| t.parse().unwrap()).collect();
                changes[f[1] as usize].push((f[0] as usize, f[2]));
            }
            // 19,980 ones and 20 thousands: the 19,980th value is 1 (the 19,981st is 1,000).
            assert_eq!(java_value(&changes, p999, 20_000), 1);
        }
    }
}

/// Intervals for the log tests: the 20,000-value case first, then the other shapes.
fn intervals() -> Vec<Vec<u64>> {
    vec![
        shape(2, 20_000),
        shape(0, 5_000),
        shape(1, 30_000),
        shape(3, 10_000),
        shape(1, 1_000),
    ]
}

fn record_all(values: &[u64]) -> HdrCounts {
    let mut h = HdrCounts::new(1, 1 << 40, 3).unwrap();
    for &v in values {
        h.record(v, 1).unwrap();
    }
    h
}

/// Parses a number Java printed with `%.3f` at ratio 1: a whole value.
fn whole(text: &str) -> u64 {
    let v: f64 = text
        .parse()
        .unwrap_or_else(|_| panic!("`{text}` is not a number"));
    assert_eq!(v.fract(), 0.0, "{text}");
    v as u64
}

#[test]
#[cfg_attr(
    miri,
    ignore = "runs java (the HdrHistogram Java peer): miri cannot spawn a process"
)]
fn java_reads_picollo_hlog() {
    let Some(java) = java() else { return };
    let dir = scratch("picollo-hlog");
    let hlog = dir.join("picollo.hlog");
    let intervals = intervals();
    let mut w = LogWriter::new(Vec::new());
    w.write_log_format_version().unwrap();
    w.write_start_time(1_700_000_000_000).unwrap();
    w.write_legend().unwrap();
    let counts: Vec<HdrCounts> = intervals.iter().map(|v| record_all(v)).collect();
    for (i, c) in counts.iter().enumerate() {
        w.write_interval(None, i as f64, i as f64 + 1.0, c).unwrap();
    }
    // A tagged interval, which the processor leaves out without -tag.
    w.write_interval(Some("other"), 9.0, 10.0, &record_all(&[5; 10]))
        .unwrap();
    std::fs::write(&hlog, w.into_inner()).unwrap();

    let out = dir.join("java");
    run(Command::new(&java.0)
        .arg("-cp")
        .arg(&java.1)
        .arg("org.HdrHistogram.HistogramLogProcessor")
        .args(["-i", hlog.to_str().unwrap(), "-o", out.to_str().unwrap()])
        .args(["-outputValueUnitRatio", "1"]));

    // The .hgrm of the whole log, read back: every row is Picollo's.
    let mut sum = counts[0].clone();
    for c in &counts[1..] {
        sum.add(c).unwrap();
    }
    let hgrm = std::fs::read_to_string(out.with_extension("hgrm")).unwrap();
    let file = parse_hgrm(&hgrm).unwrap();
    assert_eq!(file.total, Some(sum.total_count()));
    assert_eq!(file.max, Some(sum.max() as f64));
    let mut running = 0;
    let tops: HashMap<u64, u64> = sum
        .iter_recorded()
        .map(|b| {
            running += b.count;
            (b.highest, running)
        })
        .collect();
    for s in &file.steps {
        assert_eq!(tops.get(&s.scaled), Some(&s.total_count), "{s:?}");
        if s.percentile > 0.0 {
            // The step's level, asked as a rank, lands on the step (or, where the printed
            // level was rounded up, on no later bucket).
            let at = sum.value_at_percentile(s.percentile * 100.0).unwrap();
            assert!(at <= s.scaled, "{s:?}: {at}");
        }
    }
    assert!(file.steps.len() > 60, "{} steps", file.steps.len());
    // Picollo's own `.hgrm` of the same counts (read in place, index for index): Java's rows.
    let ours = Hgrm::new(&interop::view(&sum).unwrap(), 5, 1.0)
        .unwrap()
        .to_string();
    let ours = parse_hgrm(&ours).unwrap();
    assert_eq!(ours.steps.len(), file.steps.len());
    for (a, b) in ours.steps.iter().zip(&file.steps) {
        assert_eq!(
            (a.scaled, a.total_count),
            (b.scaled, b.total_count),
            "{a:?} {b:?}"
        );
        assert!((a.percentile - b.percentile).abs() < 1e-12, "{a:?} {b:?}");
    }

    // The interval file: `t: I:n ( p50 p90 max ) T:n ( p50 p90 p99 p99.9 p99.99 max )`.
    let text = std::fs::read_to_string(&out).unwrap();
    let lines: Vec<&str> = text.lines().filter(|l| l.contains("I:")).collect();
    assert_eq!(lines.len(), counts.len(), "{text}");
    let mut running = counts[0].clone();
    for (i, line) in lines.iter().enumerate() {
        if i > 0 {
            running.add(&counts[i]).unwrap();
        }
        let tokens: Vec<&str> = line
            .split_whitespace()
            .filter(|t| *t != "(" && *t != ")")
            .collect();
        let interval = &counts[i];
        assert_eq!(tokens[1], format!("I:{}", interval.total_count()), "{line}");
        let want_i = [
            interval.value_at_percentile(50.0).unwrap(),
            interval.value_at_percentile(90.0).unwrap(),
            interval.max(),
        ];
        let got_i: Vec<u64> = tokens[2..5].iter().map(|t| whole(t)).collect();
        assert_eq!(got_i, want_i, "interval {i}: {line}");
        assert_eq!(tokens[5], format!("T:{}", running.total_count()), "{line}");
        let want_t: Vec<u64> = [50.0, 90.0, 99.0, 99.9, 99.99]
            .iter()
            .map(|&p| running.value_at_percentile(p).unwrap())
            .chain([running.max()])
            .collect();
        let got_t: Vec<u64> = tokens[6..12].iter().map(|t| whole(t)).collect();
        assert_eq!(got_t, want_t, "total {i}: {line}");
    }
    // The interval: p99.9 of 20,000 values is 1 in both.
    assert_eq!(counts[0].value_at_percentile(99.9), Some(1));
    let first: Vec<&str> = lines[0].split_whitespace().collect();
    assert_eq!(first[first.len() - 4], "1.000", "{}", lines[0]);
}

#[test]
#[cfg_attr(
    miri,
    ignore = "runs java (the HdrHistogram Java peer): miri cannot spawn a process"
)]
fn picollo_reads_java_hlog() {
    let Some(java) = java() else { return };
    let dir = scratch("java-hlog");
    let intervals = intervals();
    let mut args = vec![
        "writelog".to_owned(),
        dir.join("java.hlog").to_str().unwrap().to_owned(),
        RANKS.join(","),
    ];
    for (i, v) in intervals.iter().enumerate() {
        let f = dir.join(format!("interval{i}.txt"));
        write_values(&f, v);
        args.push(f.to_str().unwrap().to_owned());
    }
    let printed = run_java(&java, &args.iter().map(String::as_str).collect::<Vec<_>>());
    let java_lines: Vec<Vec<u64>> = printed
        .lines()
        .map(|l| l.split(' ').map(|t| t.parse().unwrap()).collect())
        .collect();
    assert_eq!(java_lines.len(), intervals.len());

    let file = std::fs::File::open(dir.join("java.hlog")).unwrap();
    let mut reader = LogReader::new(std::io::BufReader::new(file));
    let entries: Vec<_> = reader.by_ref().map(|e| e.unwrap()).collect();
    assert_eq!(reader.start_time_sec(), Some(1_700_000_000.0));
    assert_eq!(entries.len(), intervals.len());
    let ranks = RANKS.map(|t| t.parse::<f64>().unwrap());
    for (i, ((e, values), java)) in entries.iter().zip(&intervals).zip(&java_lines).enumerate() {
        assert_eq!(
            e.tag.as_deref(),
            (i % 2 == 1).then_some("B"),
            "interval {i}"
        );
        assert!((e.start_timestamp - i as f64).abs() < 1e-9, "interval {i}");
        let decoded = e.decode().unwrap();
        assert!(
            decoded.same_content(&record_all(values)),
            "interval {i}: decoded counts differ from Picollo's own"
        );
        let mut ours = vec![decoded.total_count(), decoded.max(), decoded.min()];
        ours.extend(
            ranks
                .iter()
                .map(|&r| decoded.value_at_percentile(r).unwrap()),
        );
        assert_eq!(&ours, java, "interval {i}: total, max, min, then the ranks");
    }
}
