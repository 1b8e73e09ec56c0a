//! The results: each check's `PASS`/`FAIL` line and the `FIGURE` lines, in the format
//! `guest/run.sh` parses.

use std::fmt::Display;

/// Collects results and prints them in the format `guest/run.sh` parses.
#[derive(Default)]
pub(crate) struct Report {
    pub(crate) passed: u32,
    pub(crate) failed: u32,
}

impl Report {
    pub(crate) fn check(&mut self, name: &str, ok: bool, detail: impl Display) {
        if ok {
            self.passed += 1;
            println!("PASS {name}: {detail}");
        } else {
            self.failed += 1;
            println!("FAIL {name}: {detail}");
        }
    }

    pub(crate) fn error(&mut self, name: &str, e: impl Display) {
        self.check(name, false, format!("error: {e}"));
    }

    pub(crate) fn figure(&self, key: &str, value: impl Display) {
        println!("FIGURE {key} {value}");
    }
}
