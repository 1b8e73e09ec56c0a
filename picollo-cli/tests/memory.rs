//! Issue 23, defect 3: `export`, `report` and `diff` on long logs and on logs with many tags
//! run in bounded memory. Each run's peak resident set is read from the kernel
//! (`wait4`'s `ru_maxrss`) and asserted. Before the fix, the 100× jHiccup log took 589 MB to
//! export as prom-text and 838 MB as otlp-json, and 20,000 tags went past 4 GiB.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

use picollo_alloc::hdr::{interop, LogReader};
use picollo_core::ReadExt;

const BIN: &str = env!("CARGO_BIN_EXE_picollo");
const JHICCUP: &str = "jHiccup-2.0.7S.logV2.hlog";
/// The 100× log: the vector's intervals 100 times over, 70 s apart.
const COPIES: usize = 100;
const TAGS: usize = 20_000;
/// Peak RSS allowed for the 100× log. The binary alone (a debug build) is about 4 MB
/// resident; the old code took 589 MB.
const LONG_LOG_MAX_RSS: u64 = 48 << 20;
/// Peak RSS allowed for 20,000 tags (each tag's sum and table are the merged result:
/// a few kB per tag); the old code passed 4 GiB.
const MANY_TAGS_MAX_RSS: u64 = 192 << 20;

/// The HdrHistogram vectors, in the repository (`picollo-alloc/tests/vectors/hdrhistogram`),
/// or `$PICOLLO_VECTORS`.
fn vector(name: &str) -> PathBuf {
    let dir = std::env::var_os("PICOLLO_VECTORS").map_or_else(
        || {
            PathBuf::from(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../picollo-alloc/tests/vectors/hdrhistogram"
            ))
        },
        PathBuf::from,
    );
    assert!(
        dir.is_dir(),
        "HdrHistogram vectors not found at {}",
        dir.display()
    );
    dir.join(name)
}

/// A fresh path in the temporary directory (the tests run in parallel).
fn tmp(name: &str) -> PathBuf {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    std::env::temp_dir().join(format!(
        "picollo-memory-{}-{}-{name}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ))
}

/// Removes a test's files.
fn cleanup(files: &[&Path]) {
    for f in files {
        let _ = std::fs::remove_file(f);
    }
}

/// The vector's header lines and interval lines.
fn jhiccup_lines() -> (Vec<String>, Vec<String>) {
    let text = std::fs::read_to_string(vector(JHICCUP)).unwrap();
    let (head, intervals): (Vec<&str>, Vec<&str>) = text
        .lines()
        .partition(|l| l.starts_with('#') || l.starts_with('"'));
    (
        head.into_iter().map(str::to_owned).collect(),
        intervals.into_iter().map(str::to_owned).collect(),
    )
}

/// The vector's intervals `COPIES` times over, each copy 70 s after the previous one.
fn long_log() -> PathBuf {
    let path = tmp("long.hlog");
    let (head, intervals) = jhiccup_lines();
    let mut f = std::io::BufWriter::new(File::create(&path).unwrap());
    for l in &head {
        writeln!(f, "{l}").unwrap();
    }
    for copy in 0..COPIES {
        for l in &intervals {
            let (t, rest) = l.split_once(',').unwrap();
            let t: f64 = t.parse().unwrap();
            writeln!(f, "{:.3},{rest}", t + 70.0 * copy as f64).unwrap();
        }
    }
    f.flush().unwrap();
    path
}

/// One interval per tag, `TAGS` tags, the vector's histograms in turn.
fn many_tags_log() -> PathBuf {
    let path = tmp("tags.hlog");
    let (head, intervals) = jhiccup_lines();
    let mut f = std::io::BufWriter::new(File::create(&path).unwrap());
    for l in &head {
        writeln!(f, "{l}").unwrap();
    }
    for i in 0..TAGS {
        let (_, rest) = intervals[i % intervals.len()].split_once(',').unwrap();
        writeln!(f, "Tag=t{i},{i}.000,{rest}").unwrap();
    }
    f.flush().unwrap();
    path
}

/// The total count of the vector's intervals.
fn vector_total() -> u64 {
    let f = File::open(vector(JHICCUP)).unwrap();
    LogReader::new(std::io::BufReader::new(f))
        .map(|e| {
            interop::to_picollo(&e.unwrap().decode().unwrap())
                .unwrap()
                .total()
        })
        .sum()
}

struct Ran {
    code: i32,
    stdout: String,
    stderr: String,
    /// Peak resident set size, in bytes.
    max_rss: u64,
}

const LAUNCH_ENV: &str = "PICOLLO_MEMORY_TEST_LAUNCH";
const SEP: char = '\u{1f}';

/// Runs picollo and reads its peak RSS. Linux counts into a child's `ru_maxrss` the peak of
/// the process image it was forked from (recorded at `exec`), so picollo is not spawned from
/// this test process, whose peak grows with the outputs it parses: a small launcher (this
/// binary, re-run as [`launch_and_measure`]) spawns it and reports its `wait4` figures.
fn run(args: &[&str]) -> Ran {
    let out = tmp("stdout");
    let err = tmp("stderr");
    let mut spec = vec![s(&out).to_owned(), s(&err).to_owned()];
    spec.extend(args.iter().map(|a| (*a).to_owned()));
    let launched = Command::new(std::env::current_exe().unwrap())
        .args([
            "--ignored",
            "--exact",
            "launch_and_measure",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(LAUNCH_ENV, spec.join(&SEP.to_string()))
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&launched.stdout);
    let figures = report
        .lines()
        .find_map(|l| Some(&l[l.find("MEASURED ")? + "MEASURED ".len()..]))
        .unwrap_or_else(|| panic!("the launcher did not report: {report}"));
    let mut n = figures.split(' ').map(|x| x.parse::<u64>().unwrap());
    let (code, max_rss_kb) = (n.next().unwrap(), n.next().unwrap());
    let ran = Ran {
        code: code as i32,
        stdout: std::fs::read_to_string(&out).unwrap(),
        stderr: std::fs::read_to_string(&err).unwrap(),
        max_rss: max_rss_kb * 1024,
    };
    let _ = std::fs::remove_file(out);
    let _ = std::fs::remove_file(err);
    ran
}

/// The launcher, run only by [`run`] (`--ignored --exact`, the variable set): ignored in a
/// plain run, so it is never counted as a pass. Spawns picollo with its output to files,
/// reaps it with `wait4`, prints its exit code and peak RSS (kB).
#[test]
#[ignore = "child process of the memory tests (`run`); run by them"]
fn launch_and_measure() {
    let spec = std::env::var_os(LAUNCH_ENV)
        .expect("child process of the memory tests (`run`): run by them, not on its own");
    let spec = spec.into_string().unwrap();
    let mut parts = spec.split(SEP);
    let (out, err) = (parts.next().unwrap(), parts.next().unwrap());
    // Reaped by `wait4` below, which `Child::wait` cannot do (it gives no rusage).
    #[allow(clippy::zombie_processes)]
    let child = Command::new(BIN)
        .args(parts)
        .stdin(Stdio::null())
        .stdout(File::create(out).unwrap())
        .stderr(File::create(err).unwrap())
        .spawn()
        .unwrap();
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: an all-zero `rusage` is a valid value of this plain C struct.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `pid` is our child, not yet reaped (`child` is never waited on); `status` and
    // `usage` are valid to write.
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(r, pid, "wait4: {}", std::io::Error::last_os_error());
    assert!(libc::WIFEXITED(status), "picollo died: {status}");
    // Linux reports kilobytes.
    println!(
        "\nMEASURED {} {}",
        libc::WEXITSTATUS(status),
        usage.ru_maxrss
    );
}

fn ok(args: &[&str], max_rss: u64) -> Ran {
    let r = run(args);
    assert_eq!(r.code, 0, "picollo {args:?}: {}", r.stderr);
    eprintln!("picollo {args:?}: peak RSS {} kB", r.max_rss >> 10);
    assert!(
        r.max_rss <= max_rss,
        "picollo {args:?} peaked at {} MB, above {} MB",
        r.max_rss >> 20,
        max_rss >> 20
    );
    r
}

/// The value of the sample line starting with `prefix ` (no timestamp).
fn sample(text: &str, prefix: &str) -> u64 {
    text.lines()
        .find_map(|l| l.strip_prefix(prefix)?.strip_prefix(' '))
        .unwrap_or_else(|| panic!("no sample {prefix}"))
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn a_100x_log_exports_and_reports_in_bounded_memory() {
    let log = long_log();
    let total = vector_total() * COPIES as u64;
    let intervals = jhiccup_lines().1.len() * COPIES;

    let prom = ok(
        &["export", s(&log), "--format", "prom-text"],
        LONG_LOG_MAX_RSS,
    );
    assert_eq!(sample(&prom.stdout, "hlog_value_count"), total);

    let om = ok(
        &["export", s(&log), "--format", "openmetrics"],
        LONG_LOG_MAX_RSS,
    );
    let counts: Vec<&str> = om
        .stdout
        .lines()
        .filter(|l| l.starts_with("hlog_value_count "))
        .collect();
    assert_eq!(
        counts.len(),
        intervals,
        "one cumulative sample per interval"
    );
    assert!(counts
        .last()
        .unwrap()
        .starts_with(&format!("hlog_value_count {total} ")));
    assert!(om.stdout.ends_with("# EOF\n"));

    let otlp = ok(
        &["export", s(&log), "--format", "otlp-json"],
        LONG_LOG_MAX_RSS,
    );
    let v: serde_json::Value = serde_json::from_str(&otlp.stdout).expect("valid JSON");
    let points = v["resourceMetrics"][0]["scopeMetrics"][0]["metrics"][0]["exponentialHistogram"]
        ["dataPoints"]
        .as_array()
        .unwrap();
    assert_eq!(points.len(), intervals);
    let sum: u64 = points
        .iter()
        .map(|p| p["count"].as_str().unwrap().parse::<u64>().unwrap())
        .sum();
    assert_eq!(sum, total);

    let report = ok(&["report", s(&log), "--format", "json"], LONG_LOG_MAX_RSS);
    let v: serde_json::Value = serde_json::from_str(&report.stdout).expect("valid JSON");
    assert!(
        report.stdout.contains(&format!("({intervals} intervals)")),
        "{v}"
    );
    let diff = ok(
        &["diff", s(&vector(JHICCUP)), s(&log), "--format", "csv"],
        LONG_LOG_MAX_RSS,
    );
    assert!(diff.stdout.lines().count() > 5, "{}", diff.stdout);
    cleanup(&[&log]);
}

#[test]
fn twenty_thousand_tags_in_bounded_memory() {
    let log = many_tags_log();
    let prom = ok(
        &["export", s(&log), "--format", "prom-text"],
        MANY_TAGS_MAX_RSS,
    );
    let series = prom
        .stdout
        .lines()
        .filter(|l| l.starts_with("hlog_value_count{tag=\"t"))
        .count();
    assert_eq!(series, TAGS);
    let om = ok(
        &["export", s(&log), "--format", "openmetrics"],
        MANY_TAGS_MAX_RSS,
    );
    assert_eq!(
        om.stdout
            .lines()
            .filter(|l| l.starts_with("hlog_value_count{tag=\"t"))
            .count(),
        TAGS
    );
    let report = ok(&["report", s(&log), "--format", "csv"], MANY_TAGS_MAX_RSS);
    assert!(report.stdout.contains("tag t19999 (1 interval)"));
    assert!(report.stdout.contains("tag t0 (1 interval)"));
    cleanup(&[&log]);
}

/// Past the tag limit: a clear error, and nothing on stdout.
#[test]
fn too_many_tags_is_a_clear_error() {
    let log = many_tags_log();
    for args in [
        &[
            "export",
            s(&log),
            "--format",
            "openmetrics",
            "--max-tags",
            "1000",
        ][..],
        &[
            "export",
            s(&log),
            "--format",
            "prom-text",
            "--max-tags",
            "1000",
        ],
        &["report", s(&log), "--max-tags", "1000"],
    ] {
        let r = run(args);
        assert_eq!(r.code, 1, "{args:?}");
        assert!(r.stdout.is_empty(), "{args:?} wrote output");
        assert!(
            r.stderr.contains("more than 1000 tags") && r.stderr.contains("--max-tags"),
            "{}",
            r.stderr
        );
        assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
    }
    // A selected tag is within any limit.
    let one = ok(
        &["report", s(&log), "--tag", "t7", "--max-tags", "1"],
        MANY_TAGS_MAX_RSS,
    );
    assert!(one.stdout.contains("tag t7 (1 interval)"), "{}", one.stdout);
    cleanup(&[&log]);
}

/// A corrupt line after thousands of good ones: an error, and none of the output (it is
/// staged until the whole log has converted).
#[test]
fn a_corrupt_line_late_in_a_long_log_writes_nothing() {
    let log = long_log();
    let bad = tmp("bad.hlog");
    let mut text = std::fs::read_to_string(&log).unwrap();
    text.push_str("9999.000,1.000,1.000,HISTFAAAAEV42pNpmSzMwMCgyAABTBDKT4GBgdnNYMcCBvsPEBEJISEuATEZMQ4uASkhIR4nrxg9v2lMaxhvMekILGZ\n");
    std::fs::write(&bad, text).unwrap();
    for format in ["prom-text", "openmetrics", "otlp-json"] {
        let r = run(&["export", s(&bad), "--format", format]);
        assert_eq!(r.code, 1, "{format}");
        assert!(r.stdout.is_empty(), "{format}: partial output");
        assert!(r.stderr.contains("line 6205"), "{format}: {}", r.stderr);
    }
    cleanup(&[&log, &bad]);
}
