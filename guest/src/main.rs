//! `picollo-guest`: Picollo's hardware-counter paths checked against a real kernel PMU
//! driver. `guest/run.sh` boots Debian's arm64 kernel under `qemu-system-aarch64 -cpu max
//! -icount shift=0` (one instruction is one nanosecond of guest time and one cycle, so counts
//! are exact) with this program and `picollo` in the initramfs, and reads what this program
//! prints on the serial console:
//!
//! ```text
//! PASS <check>: <detail>
//! FAIL <check>: <detail>
//! FIGURE <key> <value>            (guest/run.sh turns these into the RESULTS.md table)
//! PICOLLO-GUEST DONE passed=<n> failed=<m>
//! ```
//!
//! Subcommands:
//!
//! - `picollo-guest check PICOLLO`: every check (run as root in the guest; it sets
//!   `kernel.perf_user_access` itself); `PICOLLO` is the `picollo` binary to test;
//! - `picollo-guest chain N`: runs `add_chain_256(N)` and exits (the workload of
//!   `picollo stat`);
//! - `picollo-guest spans SECONDS`: a program with spans around `add_chain_256(1000)`, for
//!   `picollo attach -e instructions PID`.
//!
//! # The model
//!
//! `picollo_core::workload::add_chain_256(n)` on aarch64 retires exactly
//! [`PER_UNIT`](model::PER_UNIT) = 258 instructions per unit (256 adds, `subs`, `b.ne`) plus
//! a constant per call. Every counted interval here is `258·n + C`, where `C` (the call, the
//! loop set-up and the part of the counter reads inside the window) depends on the read path
//! but not on `n`. The checks measure each interval for several `n` and require the slope to
//! be exactly 258 and `C` to be the same for every `n` and every repetition, and within
//! [`MAX_CONSTANT`](model::MAX_CONSTANT): an off-by-one anywhere (a lost or doubled count, a
//! wrong sign extension, a stale offset) breaks one of the two.
//!
//! # Modules
//!
//! - [`report`]: the `PASS`/`FAIL`/`FIGURE` lines;
//! - [`model`]: the `258·n + C` model and the measurement every check shares;
//! - [`counters`]: the library's counters (capabilities, read paths, groups, multiplexing);
//! - [`spans`]: spans with counters and the `tracing` layer, and the spans program;
//! - [`cli`](mod@cli): the `picollo` binary (`stat`, `attach`) against the library's exact counts.

mod cli;
mod counters;
mod model;
mod report;
mod spans;

use std::hint::black_box;
use std::process::ExitCode;

use picollo_core::workload::add_chain_256;

use crate::cli::cli;
use crate::counters::{capabilities, exact_counts, groups, multiplexing, read_cost};
use crate::model::set_user_access;
use crate::report::Report;
use crate::spans::{spans_and_tracing, spans_program};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("chain") => {
            let n = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(1000);
            black_box(add_chain_256(black_box(n)));
            ExitCode::SUCCESS
        }
        Some("spans") => {
            let secs = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(5.0);
            spans_program(secs);
            ExitCode::SUCCESS
        }
        Some("check") if args.len() == 2 => {
            let mut r = Report::default();
            checks(&mut r, &args[1]);
            println!("PICOLLO-GUEST DONE passed={} failed={}", r.passed, r.failed);
            if r.failed == 0 {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        _ => {
            eprintln!(
                "usage: picollo-guest check PICOLLO | chain N | spans SECONDS\n\
                 (runs inside the arm64 guest of guest/run.sh)"
            );
            ExitCode::from(2)
        }
    }
}

fn checks(r: &mut Report, picollo: &str) {
    // Deterministic process counts for `picollo stat`: without address randomisation the
    // same binary with the same arguments retires the same instructions every run (string
    // and copy routines branch on alignment).
    let _ = std::fs::write("/proc/sys/kernel/randomize_va_space", "0\n");
    capabilities(r);
    if let Err(e) = set_user_access(true) {
        r.error("user-access", e);
        return;
    }
    exact_counts(r);
    read_cost(r);
    groups(r);
    multiplexing(r);
    let span_constant = spans_and_tracing(r);
    cli(r, picollo, span_constant);
}
