//! Event lists as `perf stat -e`, `PICOLLO_COUNTERS` and `picollo attach -e` take them:
//! comma-separated names, where the commas inside a `pmu/…/` event belong to it. The one
//! splitter of the workspace: every list of event names is cut here.

use super::modifiers::EventSpec;
use super::parse_error::ParseEventError;

/// The names of a comma-separated event list, trimmed, empty ones left out; commas inside
/// `pmu/…/` terms are kept (`cpu/event=0x3c,umask=0x00/,r00c0` is two names).
///
/// ```
/// use picollo_linux::event::split_list;
///
/// assert_eq!(
///     split_list(" cycles, cpu/event=0x3c,umask=0x00/,, page-faults:u "),
///     ["cycles", "cpu/event=0x3c,umask=0x00/", "page-faults:u"]
/// );
/// assert!(split_list(" , ").is_empty());
/// ```
pub fn split_list(list: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut in_pmu = false;
    for (i, c) in list.char_indices() {
        match c {
            '/' => in_pmu = !in_pmu,
            ',' if !in_pmu => {
                out.push(&list[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&list[start..]);
    out.into_iter()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect()
}

/// Parses every name of a comma-separated event list ([`split_list`]) into an
/// [`EventSpec`]; the first name that is not an event is the error.
pub(crate) fn parse_list(list: &str) -> Result<Vec<EventSpec>, ParseEventError> {
    split_list(list).into_iter().map(str::parse).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_keep_pmu_terms_whole() {
        assert_eq!(
            split_list(" cycles,instructions, ,LLC-load-misses "),
            ["cycles", "instructions", "LLC-load-misses"]
        );
        assert_eq!(
            split_list("cpu/event=0x3c,umask=0x00/,r00c0"),
            ["cpu/event=0x3c,umask=0x00/", "r00c0"]
        );
        assert_eq!(
            split_list("task-clock, cpu/event=0x3c,umask=0x00/k,page-faults,"),
            ["task-clock", "cpu/event=0x3c,umask=0x00/k", "page-faults"]
        );
        assert!(split_list("").is_empty());
        assert_eq!(parse_list("cycles, page-faults").unwrap().len(), 2);
        let e = parse_list("cycles,nope").unwrap_err();
        assert_eq!(e.input(), "nope");
    }
}
