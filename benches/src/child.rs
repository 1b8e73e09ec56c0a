//! Cases that run in a process of their own: the bench binary starts itself again with the
//! case in an environment variable, so the allocator's state, the heap's layout and the
//! predictors' training of one case never carry into another.
//!
//! A bench's `main` first asks [`case`]; in a child it runs that case, prints its figures on
//! standard output as `key value` lines and returns; otherwise it starts a child per case
//! with [`run`] and reads them back with [`field`].

use std::process::Command;

/// The environment variable that carries a child's case.
const VAR: &str = "PICOLLO_BENCH_CHILD";

/// The case this process was started for, or `None` in the parent.
pub fn case() -> Option<String> {
    std::env::var(VAR).ok()
}

/// Runs this bench binary again for `case`, with the extra environment `env`, and returns
/// its standard output.
///
/// # Panics
/// When the binary cannot be started or the child fails (its standard error is shown).
pub fn run(case: &str, env: &[(&str, String)]) -> String {
    let exe = std::env::current_exe().expect("the bench binary's path");
    let out = Command::new(exe)
        .env(VAR, case)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .output()
        .expect("the bench binary starts again");
    assert!(
        out.status.success(),
        "child case {case:?} failed ({}):\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("a child prints UTF-8")
}

/// The value of the `key value` line for `key` in a child's output.
///
/// # Panics
/// When the child printed no such line, or its value does not parse.
pub fn field<T: std::str::FromStr>(output: &str, key: &str) -> T {
    output
        .lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(' '))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("child output has no {key:?} line:\n{output}"))
}

/// The resident memory of this process in bytes (`VmRSS` in `/proc/self/status`), or 0
/// where there is none (not Linux).
pub fn resident_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}

#[cfg(test)]
mod tests {
    #[test]
    fn fields_are_read_by_key() {
        let out = "rss 1024\nrss_after 2048\nname a b\n";
        assert_eq!(super::field::<u64>(out, "rss"), 1024);
        assert_eq!(super::field::<u64>(out, "rss_after"), 2048);
        assert_eq!(super::field::<String>(out, "name"), "a b");
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn resident_memory_is_read() {
        assert!(super::resident_bytes() > 0);
    }
}
