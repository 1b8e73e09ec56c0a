//! Which events `stat` counts: the `-e` lists parsed (`pmu/…/` terms kept whole, a clock
//! first, duplicates removed), the defaults for this machine, and the counting domain (the
//! kernel too, or user space only, and why).

use picollo_linux::caps::Capabilities;
use picollo_linux::event::{Event, EventSpec, SoftwareEvent};

use crate::error::{CliError, Result};

/// Splits a comma-separated event list, keeping commas inside `pmu/…/` terms (the one
/// splitter, `picollo_linux::event::split_list`).
pub(crate) fn split_events(spec: &str) -> Vec<String> {
    picollo_linux::event::split_list(spec)
        .into_iter()
        .map(str::to_owned)
        .collect()
}

/// Whether `e` is a clock event, which must lead its group to be read up to date.
fn is_clock(e: &EventSpec) -> bool {
    matches!(
        e.event,
        Event::Software(SoftwareEvent::TaskClock | SoftwareEvent::CpuClock)
    )
}

/// What events without modifiers count, as `perf stat` decides: user space and the kernel
/// where this process may count the kernel (`Ok`), else user space only with the reason
/// (`Err`). Events written with modifiers (`page-faults:u`) count what they say.
pub(crate) fn counting_domain(caps: &Capabilities) -> std::result::Result<(), String> {
    caps.kernel_counting()?;
    // The rule allows it; a security module (seccomp, SELinux) may still refuse: ask the
    // kernel once, with a software event on this thread.
    let probe = picollo_linux::CounterSession::builder()
        .exclude_kernel(false)
        .exclude_hv(false)
        .event(SoftwareEvent::TaskClock)
        .build();
    match probe {
        Err(picollo_linux::PerfError::PermissionDenied { errno, .. }) => Err(format!(
            "counting user space only: the kernel refused to count itself (errno {errno}) \
             although perf_event_paranoid allows it; a security policy limits perf events"
        )),
        _ => Ok(()),
    }
}

/// The header line saying what events without modifiers count.
pub(crate) fn domain_note(domain: &std::result::Result<(), String>) -> String {
    match domain {
        Ok(()) => {
            "user space and the kernel (as perf stat; :u or :k after an event chooses)".to_string()
        }
        Err(why) => why.trim_start_matches("counting ").to_string(),
    }
}

/// The events to count: the `-e` lists parsed (a clock moved first, duplicates removed), or
/// the defaults for this machine. Diagnostics go to `notes`.
///
/// # Errors
/// An event name that does not parse.
pub(crate) fn choose_events(
    specs: &[String],
    caps: &Capabilities,
    notes: &mut Vec<String>,
) -> Result<Vec<EventSpec>> {
    let mut events: Vec<EventSpec> = Vec::new();
    if specs.is_empty() {
        let names: &[&str] = if caps.has_hardware_pmu() {
            &[
                "task-clock",
                "cycles",
                "instructions",
                "branch-misses",
                "page-faults",
            ]
        } else {
            notes.push(format!(
                "{}; counting the software events task-clock and page-faults, and wall time",
                caps.no_pmu_reason()
                    .unwrap_or_else(|| "no hardware PMU".into())
                    .split(';')
                    .next()
                    .unwrap_or("no hardware PMU")
            ));
            &["task-clock", "page-faults"]
        };
        for n in names {
            events.push(n.parse().map_err(|e| CliError::new(format!("{e}")))?);
        }
        return Ok(events);
    }
    for spec in specs {
        for name in split_events(spec) {
            let e: EventSpec = name.parse().map_err(|e| {
                CliError::new(format!(
                    "unknown event `{name}`: {e}; run `picollo counters` for the events \
                     available here"
                ))
            })?;
            if !events.contains(&e) {
                events.push(e);
            }
        }
    }
    if events.is_empty() {
        return Err(CliError::new(
            "-e names no event; give perf event names such as -e task-clock,page-faults",
        ));
    }
    let clocks: Vec<usize> = (0..events.len())
        .filter(|&i| is_clock(&events[i]))
        .collect();
    if let Some(&first) = clocks.first() {
        let clock = events.remove(first);
        events.insert(0, clock);
        if clocks.len() > 1 {
            notes.push(
                "more than one clock event: only the first is read up to date (clocks update \
                 on a group read only when they lead the group)"
                    .into(),
            );
        }
    }
    if !caps.has_hardware_pmu() && events.iter().any(|e| e.event.needs_hardware_pmu()) {
        let reason = caps.no_pmu_reason().unwrap_or_default();
        notes.push(format!(
            "{}; hardware, cache and raw events are dropped",
            reason.split(';').next().unwrap_or("no hardware PMU")
        ));
    }
    Ok(events)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_lists_keep_pmu_terms() {
        assert_eq!(
            split_events("task-clock, cpu/event=0x3c,umask=0x00/,page-faults,"),
            ["task-clock", "cpu/event=0x3c,umask=0x00/", "page-faults"]
        );
    }
}
