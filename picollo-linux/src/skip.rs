//! Saying that a test could not run here: hardware tests on a machine without a PMU print
//! `skip <test>: <reason>` and return, and CI counts them, so a green run is never read as
//! "hardware verified".
//!
//! libtest hides the standard error of passing tests, so the printed line alone never
//! reaches a CI log. [`hardware`] also appends a line to the file named by
//! `PICOLLO_SKIP_LOG` when it is set: `hardware<TAB><test><TAB><reason>`. The CI check
//! `.ci/check.d/10-hardware-skips.sh` reads that file and prints
//! `hardware tests: N skipped: no PMU` with each test and reason.
//!
//! ```no_run
//! use picollo_linux::caps::Capabilities;
//!
//! fn needs_a_pmu() {
//!     if let Some(why) = Capabilities::detect().no_pmu_reason() {
//!         picollo_linux::skip::hardware("needs_a_pmu", &why);
//!         return;
//!     }
//!     // … measure with cycles and instructions …
//! }
//! # needs_a_pmu();
//! ```

use std::io::Write;
use std::path::Path;

/// The environment variable naming the file skipped tests are appended to.
pub(crate) const SKIP_LOG_ENV: &str = "PICOLLO_SKIP_LOG";

/// Reports that hardware test `test` did not run here, and that its path is checked on a real
/// kernel PMU driver by the arm64 guest instead (`guest/run.sh`, CI's
/// `.ci/check.d/35-guest.sh`): prints `skip <test>: <reason>; covered by <check>` and appends
/// `guest<TAB><test><TAB><reason>; covered by <check>` to the file named by `PICOLLO_SKIP_LOG`,
/// which CI counts apart from the hardware skips. `check` names the guest check(s).
pub fn covered_by_guest(test: &str, reason: &str, check: &str) {
    record(
        "guest",
        test,
        &format!("{reason}; covered by guest/run.sh ({check})"),
    );
}

/// Reports that hardware test `test` did not run, and why: prints `skip <test>: <reason>` to
/// standard error and appends `hardware<TAB><test><TAB><reason>` to the file named by
/// `PICOLLO_SKIP_LOG`, if set (one `write` of one line in append mode, so parallel tests and
/// test processes do not interleave). Failing to write the file is reported on standard
/// error, never a panic.
pub fn hardware(test: &str, reason: &str) {
    record("hardware", test, reason);
}

fn record(kind: &str, test: &str, reason: &str) {
    eprintln!("skip {test}: {reason}");
    if let Some(path) = std::env::var_os(SKIP_LOG_ENV).filter(|p| !p.is_empty()) {
        append(Path::new(&path), kind, test, reason);
    }
}

/// Appends one `kind<TAB>test<TAB>reason` line to `path` (tabs and line breaks in the parts
/// become spaces).
fn append(path: &Path, kind: &str, test: &str, reason: &str) {
    let clean = |s: &str| s.replace(['\t', '\n', '\r'], " ");
    let line = format!("{kind}\t{}\t{}\n", clean(test), clean(reason));
    let written = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .and_then(|mut f| f.write_all(line.as_bytes()));
    if let Err(e) = written {
        eprintln!(
            "picollo: cannot append to {} ({SKIP_LOG_ENV}): {e}",
            path.display()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg_attr(miri, ignore = "miri isolation forbids the file system")]
    fn lines_are_appended_whole() {
        let path = std::env::temp_dir().join(format!("picollo-skip-{}.log", std::process::id()));
        let _ = std::fs::remove_file(&path);
        // The file named by the environment, given directly (the environment is shared by
        // the tests running in parallel).
        append(
            &path,
            "hardware",
            "a_test",
            "no hardware PMU: ENOENT\tand a tab",
        );
        append(&path, "hardware", "b\ntest", "x");
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(
            text,
            "hardware\ta_test\tno hardware PMU: ENOENT and a tab\nhardware\tb test\tx\n"
        );
        let _ = std::fs::remove_file(&path);
    }
}
