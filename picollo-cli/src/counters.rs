//! `picollo counters`: what this machine can count, and what is missing and why.

use core::fmt::Write as _;

use picollo_linux::caps::Capabilities;
use picollo_linux::event::{Event, HardwareEvent, SoftwareEvent};
use picollo_linux::pmu::Sysfs;
use picollo_linux::session::CounterSession;
use picollo_linux::PerfError;

/// Cache events worth probing (perf's generic spellings).
const CACHE_EVENTS: [&str; 4] = [
    "L1-dcache-load-misses",
    "L1-icache-load-misses",
    "LLC-load-misses",
    "dTLB-load-misses",
];

/// The report: the capabilities, then every generic event opened alone on this thread (user
/// space only), then the core PMUs' own events from sysfs, then a conclusion naming what
/// `picollo stat` counts here.
pub(crate) fn report() -> String {
    let caps = Capabilities::detect();
    let mut out = String::from("Capabilities\n");
    for line in caps.to_string().lines() {
        let _ = writeln!(out, "  {line}");
    }
    out.push_str("\nEvents (each opened alone on this thread, user space only)\n");
    let mut events: Vec<(&str, Event)> = Vec::new();
    for e in SoftwareEvent::ALL {
        if matches!(e, SoftwareEvent::Dummy | SoftwareEvent::BpfOutput) {
            continue;
        }
        events.push(("software", e.into()));
    }
    for e in HardwareEvent::ALL {
        events.push(("hardware", e.into()));
    }
    for name in CACHE_EVENTS {
        if let Ok(e) = name.parse() {
            events.push(("cache", e));
        }
    }
    let width = events
        .iter()
        .map(|(_, e)| e.to_string().len())
        .max()
        .unwrap_or(0);
    let mut missing = 0;
    for (kind, event) in &events {
        let name = event.to_string();
        let status = match CounterSession::builder().event(event.clone()).build() {
            Ok(_) => "available".to_string(),
            Err(e) => {
                missing += 1;
                format!("missing: {}", short_reason(&e))
            }
        };
        let _ = writeln!(out, "  {kind:<8}  {name:<width$}  {status}");
    }
    let mut probed = events.len();
    // The core PMUs' own events, as the kernel lists them in sysfs (`pmu/alias/`): on arm64
    // the PMUv3 events the CPU implements, on x86 the kernel's aliases of the CPU PMU.
    let sysfs = Sysfs::system();
    for pmu in &caps.core_pmus {
        let names = sysfs.event_names(&pmu.name);
        let _ = writeln!(
            out,
            "\nEvents of the {} PMU ({} in {}/{}/events, each opened alone)",
            pmu.name,
            names.len(),
            sysfs.root().display(),
            pmu.name
        );
        let spelled: Vec<String> = names.iter().map(|n| format!("{}/{n}/", pmu.name)).collect();
        let width = spelled.iter().map(String::len).max().unwrap_or(0);
        for name in &spelled {
            let opened = name
                .parse::<Event>()
                .map_err(|e| e.to_string())
                .and_then(|e| {
                    CounterSession::builder()
                        .event(e)
                        .build()
                        .map_err(|e| short_reason(&e))
                });
            let status = match opened {
                Ok(_) => "available".to_string(),
                Err(why) => {
                    missing += 1;
                    format!("missing: {why}")
                }
            };
            let _ = writeln!(out, "  {name:<width$}  {status}");
        }
        probed += names.len();
    }
    out.push('\n');
    if caps.has_hardware_pmu() {
        let _ = writeln!(
            out,
            "Summary: hardware PMU available; {missing} of {probed} probed events missing."
        );
    } else {
        let _ = writeln!(
            out,
            "Summary: no hardware PMU here ({}), so hardware, cache and raw events cannot be \
             counted ({missing} of {probed} probed events missing); software events work.\n\
             `picollo stat` counts task-clock, page-faults and wall time on this machine.",
            caps.pmu
                .to_string()
                .split(';')
                .next()
                .unwrap_or("no hardware PMU"),
        );
    }
    out
}

/// A short reason for a failed open: the errno's meaning and, for the usual causes, the
/// fix.
pub(crate) fn short_reason(e: &PerfError) -> String {
    let os = |errno: i32| std::io::Error::from_raw_os_error(errno).to_string();
    match e {
        PerfError::Unsupported { errno, .. } => {
            format!("not exposed by this CPU or VM ({})", os(*errno))
        }
        PerfError::PermissionDenied {
            errno, paranoid, ..
        } => format!(
            "permission denied ({}); perf_event_paranoid is {}: lower it or grant CAP_PERFMON",
            os(*errno),
            paranoid.map_or("unreadable".to_string(), |p| p.to_string())
        ),
        PerfError::CannotSchedule { errno, .. } => {
            format!("cannot be scheduled or invalid here ({})", os(*errno))
        }
        other => other.to_string(),
    }
}
