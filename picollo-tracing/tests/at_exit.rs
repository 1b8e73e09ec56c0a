//! `report_at_exit`: the per-phase table is printed on stderr when the process exits.

use std::process::Command;

use picollo_tracing::PicolloLayer;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

const CHILD_ENV: &str = "PICOLLO_TRACING_AT_EXIT_CHILD";

/// The child: installs the layer in one line and exits.
#[test]
#[ignore = "child process of the_table_is_printed_at_exit; run by it"]
fn child_installs_and_exits() {
    assert!(
        std::env::var_os(CHILD_ENV).is_some(),
        "child process of the_table_is_printed_at_exit: run by it, not on its own"
    );
    tracing_subscriber::registry()
        .with(
            PicolloLayer::builder()
                .time_only()
                .report_at_exit(true)
                .build(),
        )
        .init();
    for _ in 0..7 {
        let _s = tracing::info_span!("at_exit_span").entered();
    }
    // `exit` runs the atexit handlers, as returning from `main` does.
    std::process::exit(0);
}

#[test]
fn the_table_is_printed_at_exit() {
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "--ignored",
            "--exact",
            "child_installs_and_exits",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!("{stderr}");
    assert!(out.status.success());
    assert!(stderr.contains("picollo-tracing spans:"), "{stderr}");
    let row = stderr
        .lines()
        .find(|l| l.starts_with("| at_exit_span "))
        .expect("a row for the span");
    let cells: Vec<&str> = row.split('|').map(str::trim).collect();
    assert_eq!(cells[2], "7", "N: {row}");
}
