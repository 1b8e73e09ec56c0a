//! The README's `picollo-tracing` example, compiled and run: keep it in sync with README.md.
//! A child process installs the layer exactly as the README does (the application's log with
//! its own `EnvFilter`, `RUST_LOG` unset: errors only; the layer unfiltered), runs spans of the README's
//! server (`connection` → `request` → `lookup`) and exits; the test checks what the README
//! promises: the per-phase table on stderr at exit, with a row per span, its count, and the
//! columns shown (time only: no `PICOLLO_COUNTERS`).

// The README's example builds everywhere (`finish_on_sigterm` is a no-op where there are no
// signals): CI's Windows check compiles this file.

use std::process::Command;

use std::fs::File;
use std::time::Duration;

use picollo_tracing::PicolloLayer;
use tracing_subscriber::{fmt, prelude::*, EnvFilter};

use picollo_testkit::child::{Watched, DEADLINE};

const CHILD_ENV: &str = "PICOLLO_TRACING_README_CHILD";
const REQUESTS: usize = 25;

/// The child: the README's example, then the spans of a small server, then exit (which prints the
/// table, as returning from `main` would).
#[test]
#[ignore = "child process of readme_tracing; run by it"]
fn child_readme_example() {
    assert!(
        std::env::var_os(CHILD_ENV).is_some(),
        "child process of readme_tracing: run by it, not on its own"
    );
    let dir = std::env::temp_dir().join(format!("picollo-readme-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let spans_hlog = dir.join("spans.hlog");
    tracing_subscriber::registry()
        // The application's log keeps its own filter (RUST_LOG) ...
        .with(fmt::layer().with_filter(EnvFilter::from_default_env()))
        // ... and the layer has none, so it times every span whatever RUST_LOG says.
        .with(
            PicolloLayer::builder()
                .report_at_exit(true)
                .hlog(File::create(&spans_hlog).unwrap(), Duration::from_secs(10))
                .finish_on_sigterm(true)
                .build(),
        )
        .init();
    for _ in 0..2 {
        let _connection = tracing::info_span!("connection").entered();
        for i in 0..REQUESTS {
            let _request = tracing::info_span!("request").entered();
            let _lookup = tracing::info_span!("lookup").entered();
            std::hint::black_box(i);
        }
    }
    std::process::exit(0);
}

/// One row's cell, by the table's column name.
fn cell<'a>(header: &[String], row: &'a [String], column: &str) -> &'a str {
    let i = header
        .iter()
        .position(|c| *c == column)
        .unwrap_or_else(|| panic!("no column {column} in {header:?}"));
    &row[i]
}

#[test]
fn readme_tracing() {
    // Never in the child (it would start itself again).
    assert!(
        std::env::var_os(CHILD_ENV).is_none(),
        "the child runs child_readme_example"
    );
    let out = Watched::spawn(
        "child_readme_example",
        Command::new(std::env::current_exe().unwrap())
            .args([
                "--ignored",
                "--exact",
                "child_readme_example",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_ENV, "1")
            .env_remove("PICOLLO_COUNTERS")
            .env_remove("RUST_LOG"),
        false,
    )
    .wait(DEADLINE);
    let stderr = out.stderr;
    assert!(out.status.success(), "{stderr}");
    let split = |l: &str| -> Vec<String> { l.split('|').map(|c| c.trim().to_owned()).collect() };
    let lines: Vec<&str> = stderr.lines().collect();
    let header = lines
        .iter()
        .find(|l| l.starts_with("| Phase"))
        .map(|l| split(l))
        .expect("the per-phase table's header");
    // The README's time-only columns.
    for column in ["Phase", "N", "Time", "%", "p50", "wall p50"] {
        assert!(header.iter().any(|c| c == column), "{column} in {header:?}");
    }
    let row = |name: &str| {
        let row = lines
            .iter()
            .find(|l| l.starts_with(&format!("| {name} ")))
            .map(|l| split(l))
            .unwrap_or_else(|| panic!("a row for {name}: {stderr}"));
        assert_eq!(row.len(), header.len(), "{row:?}");
        row
    };
    let (connection, request, lookup) = (row("connection"), row("request"), row("lookup"));
    assert_eq!(
        cell(&header, &connection, "%"),
        "100.0%",
        "the outermost spans' whole"
    );
    assert_eq!(cell(&header, &connection, "N"), "2");
    assert_eq!(cell(&header, &request, "N"), (2 * REQUESTS).to_string());
    assert_eq!(cell(&header, &lookup, "N"), (2 * REQUESTS).to_string());
    for row in [&connection, &request, &lookup] {
        let time = cell(&header, row, "Time");
        assert!(time.ends_with('s') && time != "n/a", "a duration: {time}");
        let share = cell(&header, row, "%");
        assert!(share.ends_with('%'), "a share: {share}");
    }
}
