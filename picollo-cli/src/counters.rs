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
    let mut tally = Tally::default();
    generic_events(&mut out, &mut tally);
    // The core PMUs' own events, as the kernel lists them in sysfs (`pmu/alias/`): on arm64
    // the PMUv3 events the CPU implements, on x86 the kernel's aliases of the CPU PMU.
    let sysfs = Sysfs::system();
    for pmu in &caps.core_pmus {
        pmu_events(&mut out, &mut tally, &sysfs, &pmu.name);
    }
    out.push('\n');
    let Tally { missing, probed } = tally;
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

/// Events probed, and how many of them could not be opened.
#[derive(Default)]
struct Tally {
    missing: usize,
    probed: usize,
}

impl Tally {
    /// Counts one probe: `available`, or missing for `why`; returns its status line.
    fn probe(&mut self, opened: Result<(), String>) -> String {
        self.probed += 1;
        match opened {
            Ok(()) => "available".to_string(),
            Err(why) => {
                self.missing += 1;
                format!("missing: {why}")
            }
        }
    }
}

/// Opens `event` alone on this thread (user space only): `Ok`, or the short reason.
fn open_alone(event: Event) -> Result<(), String> {
    CounterSession::builder()
        .event(event)
        .build()
        .map(drop)
        .map_err(|e| short_reason(&e))
}

/// The generic software, hardware and cache events, each opened alone.
fn generic_events(out: &mut String, tally: &mut Tally) {
    out.push_str("\nEvents (each opened alone on this thread, user space only)\n");
    let mut events: Vec<(&str, Event)> = Vec::new();
    for e in SoftwareEvent::ALL {
        if !matches!(e, SoftwareEvent::Dummy | SoftwareEvent::BpfOutput) {
            events.push(("software", e.into()));
        }
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
    for (kind, event) in events {
        let name = event.to_string();
        let status = tally.probe(open_alone(event));
        let _ = writeln!(out, "  {kind:<8}  {name:<width$}  {status}");
    }
}

/// The events sysfs lists for core PMU `pmu`, each opened alone.
fn pmu_events(out: &mut String, tally: &mut Tally, sysfs: &Sysfs, pmu: &str) {
    let names = sysfs.event_names(pmu);
    let _ = writeln!(
        out,
        "\nEvents of the {pmu} PMU ({} in {}/{pmu}/events, each opened alone)",
        names.len(),
        sysfs.root().display(),
    );
    let spelled: Vec<String> = names.iter().map(|n| format!("{pmu}/{n}/")).collect();
    let width = spelled.iter().map(String::len).max().unwrap_or(0);
    for name in &spelled {
        let opened = name
            .parse::<Event>()
            .map_err(|e| e.to_string())
            .and_then(open_alone);
        let status = tally.probe(opened);
        let _ = writeln!(out, "  {name:<width$}  {status}");
    }
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
