//! `report_at_exit`: the per-phase table is printed on stderr when the process exits; not
//! for a layer that was dropped before. Each case is an `#[ignore]`d child that its parent
//! test runs, reading its output with a deadline (`picollo_testkit::child`).

use std::process::Command;

use picollo_testkit::child::{Ended, Watched, DEADLINE};
use picollo_tracing::PicolloLayer;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

const CHILD_ENV: &str = "PICOLLO_TRACING_AT_EXIT_CHILD";

fn layer() -> PicolloLayer {
    assert!(
        std::env::var_os(CHILD_ENV).is_some(),
        "a child process of this file's tests: run by them, not on its own"
    );
    PicolloLayer::builder()
        .time_only()
        .report_at_exit(true)
        .build()
}

/// The child: installs the layer in one line and exits.
#[test]
#[ignore = "child process of the_table_is_printed_at_exit; run by it"]
fn child_installs_and_exits() {
    tracing_subscriber::registry().with(layer()).init();
    for _ in 0..7 {
        let _s = tracing::info_span!("at_exit_span").entered();
    }
    // `exit` runs the atexit handlers, as returning from `main` does.
    std::process::exit(0);
}

/// The child: a layer in a scoped subscriber, dropped with it, then exit.
#[test]
#[ignore = "child process of a_dropped_layer_prints_nothing_at_exit; run by it"]
fn child_drops_the_layer_and_exits() {
    tracing::subscriber::with_default(tracing_subscriber::registry().with(layer()), || {
        for _ in 0..7 {
            let _s = tracing::info_span!("at_exit_span").entered();
        }
    });
    std::process::exit(0);
}

/// Runs child test `name` to its end.
fn run(name: &str) -> Ended {
    let child = Watched::spawn(
        name,
        Command::new(std::env::current_exe().unwrap())
            .args([
                "--ignored",
                "--exact",
                name,
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_ENV, "1"),
        false,
    );
    child.wait(DEADLINE)
}

#[test]
fn the_table_is_printed_at_exit() {
    let e = run("child_installs_and_exits");
    assert!(e.status.success());
    assert!(e.stderr.contains("picollo-tracing spans:"), "{}", e.stderr);
    let row = e
        .stderr
        .lines()
        .find(|l| l.starts_with("| at_exit_span "))
        .expect("a row for the span");
    let cells: Vec<&str> = row.split('|').map(str::trim).collect();
    assert_eq!(cells[2], "7", "N: {row}");
}

#[test]
fn a_dropped_layer_prints_nothing_at_exit() {
    let e = run("child_drops_the_layer_and_exits");
    assert!(e.status.success());
    assert!(!e.stderr.contains("picollo-tracing"), "{}", e.stderr);
}
