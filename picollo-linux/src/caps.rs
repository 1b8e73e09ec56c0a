//! What this machine's PMU offers: counter counts, rdpmc, `perf_event_paranoid`, hybrid core
//! PMUs — and a clear "no hardware PMU" state on VMs without a virtual PMU.
//!
//! ```
//! use picollo_linux::caps::Capabilities;
//!
//! let caps = Capabilities::detect();
//! match caps.counter_counts() {
//!     Some(c) => println!("CPU PMU: fixed={}, programmable={}", c.fixed, c.programmable),
//!     None => println!("CPU PMU: unavailable ({})", caps.pmu),
//! }
//! println!("{caps}");
//! ```

use core::fmt;
use std::os::fd::AsFd;

use crate::error::perf_event_paranoid;
use crate::event::{EventConfig, TYPE_HARDWARE};
use crate::page::{page_capabilities, CounterInstructions, NativeInstructions, CAP_USER_RDPMC};
use crate::pmu::{PmuInfo, Sysfs};
use crate::sys::{self, AttrFlags, Mapping};

/// The CPU vendor, from CPUID leaf 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CpuVendor {
    /// `GenuineIntel`.
    Intel,
    /// `AuthenticAMD`.
    Amd,
    /// `HygonGenuine` (AMD's rules apply).
    Hygon,
    /// Another x86 vendor.
    OtherX86,
    /// Not x86.
    NotX86,
}

/// Where counter counts came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CountSource {
    /// Intel CPUID leaf 0xA: EAX\[15:8\] general-purpose counters, EDX\[4:0\] fixed counters.
    IntelCpuid,
    /// AMD: 4 core counters, or 6 with PerfCtrExtCore (CPUID 0x8000_0001 ECX bit 23).
    AmdCpuid,
    /// AMD PerfMonV2: CPUID 0x8000_0022 EBX\[3:0\].
    AmdPerfMonV2,
    /// `caps/num_counters` and `caps/num_counters_fixed` of the core PMU in sysfs, where the
    /// kernel provides them.
    Sysfs,
    /// Asked of the kernel where neither CPUID nor sysfs says (arm64): the largest group of
    /// `instructions` events it accepts is the number of programmable counters, and one more
    /// `cycles` fits when the PMU has a dedicated cycle counter (arm64's `PMCCNTR_EL0`). The
    /// kernel checks that a group fits the PMU when it is opened, so nothing is counted.
    Probe,
}

/// How many counters the core PMU has (per logical CPU).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CounterCounts {
    /// Fixed-function counters (Intel: instructions, cycles, ref-cycles, …). 0 on AMD.
    pub fixed: u32,
    /// General-purpose, programmable counters.
    pub programmable: u32,
    /// Where the numbers came from.
    pub source: CountSource,
}

/// Decodes Intel CPUID leaf 0xA. `None` when the architectural PMU version (EAX\[7:0\]) is 0,
/// as hypervisors without a virtual PMU report.
pub(crate) const fn intel_counts(eax: u32, edx: u32) -> Option<CounterCounts> {
    let version = eax & 0xff;
    if version == 0 {
        return None;
    }
    let programmable = (eax >> 8) & 0xff;
    let fixed = if version > 1 { edx & 0x1f } else { 0 };
    Some(CounterCounts {
        fixed,
        programmable,
        source: CountSource::IntelCpuid,
    })
}

/// Decodes AMD's rules: with PerfMonV2 (`leaf_8000_0022 = Some((eax, ebx))` and EAX bit 0),
/// EBX\[3:0\] core counters; otherwise 6 with PerfCtrExtCore (CPUID 0x8000_0001 ECX bit 23),
/// else 4. AMD has no fixed counters in this sense.
pub(crate) const fn amd_counts(
    ecx_8000_0001: u32,
    leaf_8000_0022: Option<(u32, u32)>,
) -> CounterCounts {
    if let Some((eax, ebx)) = leaf_8000_0022 {
        if eax & 1 != 0 {
            return CounterCounts {
                fixed: 0,
                programmable: ebx & 0xf,
                source: CountSource::AmdPerfMonV2,
            };
        }
    }
    let programmable = if ecx_8000_0001 & (1 << 23) != 0 { 6 } else { 4 };
    CounterCounts {
        fixed: 0,
        programmable,
        source: CountSource::AmdCpuid,
    }
}

/// `cpuid(leaf, subleaf)` as `(eax, ebx, ecx, edx)`; `None` off x86_64 or under miri.
pub fn cpuid(leaf: u32, subleaf: u32) -> Option<(u32, u32, u32, u32)> {
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    {
        #[allow(unused_unsafe)] // `__cpuid_count` is a safe fn on newer toolchains.
        // SAFETY: CPUID exists on every x86_64 CPU and has no side effects; unsupported leaves
        // return zeros or the highest basic leaf, which callers bound-check with leaf 0 and
        // 0x8000_0000.
        let r = unsafe { core::arch::x86_64::__cpuid_count(leaf, subleaf) };
        Some((r.eax, r.ebx, r.ecx, r.edx))
    }
    #[cfg(not(all(target_arch = "x86_64", not(miri))))]
    {
        let _ = (leaf, subleaf);
        None
    }
}

fn cpu_vendor() -> (CpuVendor, u32) {
    let Some((max, b, c, d)) = cpuid(0, 0) else {
        return (CpuVendor::NotX86, 0);
    };
    let mut id = [0u8; 12];
    id[..4].copy_from_slice(&b.to_le_bytes());
    id[4..8].copy_from_slice(&d.to_le_bytes());
    id[8..].copy_from_slice(&c.to_le_bytes());
    let v = match &id {
        b"GenuineIntel" => CpuVendor::Intel,
        b"AuthenticAMD" => CpuVendor::Amd,
        b"HygonGenuine" => CpuVendor::Hygon,
        _ => CpuVendor::OtherX86,
    };
    (v, max)
}

/// What CPUID says about counters, or `None` when it says nothing (non-x86, Intel PMU
/// version 0, unknown vendor).
pub(crate) fn cpuid_counter_counts() -> Option<CounterCounts> {
    let (vendor, max) = cpu_vendor();
    match vendor {
        CpuVendor::Intel if max >= 0xa => {
            let (a, _, _, d) = cpuid(0xa, 0)?;
            intel_counts(a, d)
        }
        CpuVendor::Amd | CpuVendor::Hygon => {
            let (ext_max, ..) = cpuid(0x8000_0000, 0)?;
            if ext_max < 0x8000_0001 {
                return None;
            }
            let (_, _, ecx, _) = cpuid(0x8000_0001, 0)?;
            let v2 = if ext_max >= 0x8000_0022 {
                cpuid(0x8000_0022, 0).map(|(a, b, _, _)| (a, b))
            } else {
                None
            };
            Some(amd_counts(ecx, v2))
        }
        _ => None,
    }
}

/// Whether CPUID says we run under a hypervisor (leaf 1 ECX bit 31).
pub(crate) fn under_hypervisor() -> bool {
    cpuid(1, 0).is_some_and(|(_, _, c, _)| c & (1 << 31) != 0)
}

/// Whether a hardware event could be opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum PmuStatus {
    /// `cycles` opened for this thread: hardware events work.
    Available,
    /// `cycles` gave ENOENT, EOPNOTSUPP or ENODEV: no hardware PMU is exposed (a VM without a
    /// virtual PMU, or a kernel without the CPU's PMU driver). Only software events work.
    NoHardwarePmu {
        /// The errno from `perf_event_open`.
        errno: i32,
    },
    /// `cycles` gave EACCES or EPERM, even with `exclude_kernel`: `perf_event_paranoid` is 3
    /// or more, or a security policy forbids perf.
    Denied {
        /// The errno from `perf_event_open`.
        errno: i32,
    },
    /// Another errno.
    ProbeFailed {
        /// The errno from `perf_event_open`.
        errno: i32,
    },
}

impl fmt::Display for PmuStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let e = |n: i32| std::io::Error::from_raw_os_error(n);
        match *self {
            Self::Available => f.write_str("available"),
            Self::NoHardwarePmu { errno } => write!(
                f,
                "no hardware PMU: perf_event_open(cycles) failed with {}; this CPU or VM does \
                 not expose hardware counters (VMs need a virtual PMU), so hardware, cache and \
                 raw events are unavailable and only software events (task-clock, \
                 page-faults, …) work",
                e(errno)
            ),
            Self::Denied { errno } => write!(
                f,
                "denied: perf_event_open(cycles, exclude_kernel) failed with {}; lower \
                 /proc/sys/kernel/perf_event_paranoid to 2 or less, or grant CAP_PERFMON",
                e(errno)
            ),
            Self::ProbeFailed { errno } => {
                write!(f, "probe failed: perf_event_open(cycles) gave {}", e(errno))
            }
        }
    }
}

/// Whether user-space RDPMC works for this thread's counters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RdpmcStatus {
    /// The `cycles` page says `cap_user_rdpmc`: the fast path works.
    Usable,
    /// `/sys/bus/event_source/devices/<pmu>/rdpmc` is 0.
    DisabledInSysfs,
    /// `cycles` opened, but its page does not say `cap_user_rdpmc`.
    NotAdvertised,
    /// No hardware PMU (or access denied), so there is nothing to read.
    NoHardwarePmu,
    /// Not x86_64: no RDPMC path in this crate.
    UnsupportedArch,
    /// arm64: `kernel.perf_user_access` is 0, so the kernel gives the counters' pages no
    /// index and user-space reads fall back to `read()`.
    DisabledBySysctl,
    /// The page could not be mapped.
    MmapFailed {
        /// The errno from `mmap`.
        errno: i32,
    },
}

impl fmt::Display for RdpmcStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::Usable => f.write_str("usable"),
            Self::DisabledInSysfs => {
                f.write_str("disabled (sysfs rdpmc = 0; write 1 to enable it for perf tasks)")
            }
            Self::NotAdvertised if cfg!(target_arch = "aarch64") => f.write_str(
                "not advertised by the kernel (cap_user_rdpmc = 0; on arm64 set \
                 sysctl kernel.perf_user_access=1)",
            ),
            Self::NotAdvertised => f.write_str("not advertised by the kernel (cap_user_rdpmc = 0)"),
            Self::NoHardwarePmu => f.write_str("unavailable (no hardware PMU)"),
            Self::UnsupportedArch => f.write_str("unsupported on this architecture"),
            Self::DisabledBySysctl => f.write_str(
                "disabled (kernel.perf_user_access = 0: reads fall back to read(); \
                 sysctl kernel.perf_user_access=1 enables user-space reads)",
            ),
            Self::MmapFailed { errno } => write!(
                f,
                "unknown: mmap of the event page failed with {}",
                std::io::Error::from_raw_os_error(errno)
            ),
        }
    }
}

/// Everything this crate detects about the PMU; [`Capabilities::detect`] builds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Capabilities {
    /// The CPU vendor.
    pub vendor: CpuVendor,
    /// CPUID says a hypervisor is present.
    pub hypervisor: bool,
    /// What CPUID claims, even when no PMU is exposed (hypervisors often pass the bits
    /// through).
    pub cpuid_counters: Option<CounterCounts>,
    /// What sysfs says, where the kernel exposes `caps/num_counters`.
    pub sysfs_counters: Option<CounterCounts>,
    /// What the kernel accepts, asked only where a hardware PMU is available and neither
    /// CPUID nor sysfs reports counts (arm64); see [`CountSource::Probe`].
    pub probed_counters: Option<CounterCounts>,
    /// `/proc/sys/kernel/perf_user_access` (arm64, Linux 5.17+): 1 lets user space read the
    /// counters of its own events.
    pub perf_user_access: Option<u32>,
    /// Whether a hardware event opens.
    pub pmu: PmuStatus,
    /// Whether RDPMC works.
    pub rdpmc: RdpmcStatus,
    /// `/sys/bus/event_source/devices/<core pmu>/rdpmc`: 0 off, 1 for tasks with a perf mmap,
    /// 2 for everyone.
    pub sysfs_rdpmc: Option<u32>,
    /// `perf_event_paranoid`.
    pub paranoid: Option<i32>,
    /// Whether this process may ignore `perf_event_paranoid` (root, CAP_PERFMON or
    /// CAP_SYS_ADMIN).
    pub privileged: bool,
    /// The core PMUs: `cpu`, or `cpu_core` and `cpu_atom` on hybrid Intel, or ARM PMUs.
    pub core_pmus: Vec<PmuInfo>,
    /// Every registered PMU.
    pub pmus: Vec<PmuInfo>,
}

fn is_core_pmu(name: &str) -> bool {
    matches!(name, "cpu" | "cpu_core" | "cpu_atom")
        || name.starts_with("armv8")
        || name.starts_with("armv7")
        || name.starts_with("arm_cortex")
}

/// [`Capabilities::kernel_counting`] from its two inputs: the kernel's rule for
/// `exclude_kernel = 0` (kernel/events/core.c: paranoid above 1 needs CAP_PERFMON).
fn kernel_counting(privileged: bool, paranoid: Option<i32>) -> Result<(), String> {
    match paranoid {
        _ if privileged => Ok(()),
        Some(p) if p <= 1 => Ok(()),
        Some(p) => Err(format!(
            "counting user space only: perf_event_paranoid is {p} and this process has \
             neither CAP_PERFMON nor CAP_SYS_ADMIN (set it to 1 or less, or run as root, to \
             count the kernel as well)"
        )),
        None => Err(
            "counting user space only: perf_event_paranoid is unreadable (no \
             /proc/sys/kernel/perf_event_paranoid) and this process is not privileged"
                .into(),
        ),
    }
}

/// Whether this process has CAP_PERFMON (38) or CAP_SYS_ADMIN (21) in its effective set.
fn privileged() -> bool {
    let Ok(status) = std::fs::read_to_string("/proc/self/status") else {
        return false;
    };
    status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok())
        .is_some_and(|caps| caps & ((1 << 38) | (1 << 21)) != 0)
}

impl Capabilities {
    /// Detects the capabilities of this machine (opens and closes one `cycles` event).
    pub fn detect() -> Self {
        Self::detect_with(&Sysfs::system())
    }

    /// Detects with another sysfs tree for the PMU listing.
    pub(crate) fn detect_with(sysfs: &Sysfs) -> Self {
        let pmus = sysfs.pmus();
        let core_pmus: Vec<PmuInfo> = pmus
            .iter()
            .filter(|p| is_core_pmu(&p.name))
            .cloned()
            .collect();
        let first_core = core_pmus.first().map(|p| p.name.clone());
        let sysfs_rdpmc = first_core
            .as_deref()
            .and_then(|n| sysfs.read_attr(n, "rdpmc"))
            .and_then(|s| s.parse().ok());
        let sysfs_counters = first_core.as_deref().and_then(|n| {
            let programmable = sysfs.read_attr(n, "caps/num_counters")?.parse().ok()?;
            let fixed = sysfs
                .read_attr(n, "caps/num_counters_fixed")
                .and_then(|s| s.parse().ok())
                .unwrap_or(0);
            Some(CounterCounts {
                fixed,
                programmable,
                source: CountSource::Sysfs,
            })
        });
        // On hybrid CPUs, probe the first core PMU explicitly (extended type in config).
        let hybrid_type = core_pmus
            .iter()
            .find(|p| p.name == "cpu_core" || p.name == "cpu_atom")
            .map(|p| p.type_);
        let perf_user_access = std::fs::read_to_string("/proc/sys/kernel/perf_user_access")
            .ok()
            .and_then(|s| s.trim().parse().ok());
        let (pmu, rdpmc) = probe_cycles(hybrid_type);
        let rdpmc = rdpmc_status(
            rdpmc,
            sysfs_rdpmc,
            perf_user_access,
            cfg!(target_arch = "aarch64"),
        );
        let cpuid_counters = cpuid_counter_counts();
        let probed_counters =
            (pmu == PmuStatus::Available && cpuid_counters.is_none() && sysfs_counters.is_none())
                .then(probe_counter_counts)
                .flatten();
        let (vendor, _) = cpu_vendor();
        Self {
            vendor,
            hypervisor: under_hypervisor(),
            cpuid_counters,
            sysfs_counters,
            probed_counters,
            perf_user_access,
            pmu,
            rdpmc,
            sysfs_rdpmc,
            paranoid: perf_event_paranoid(),
            privileged: privileged(),
            core_pmus,
            pmus,
        }
    }

    /// Whether hardware events can be opened here.
    pub fn has_hardware_pmu(&self) -> bool {
        self.pmu == PmuStatus::Available
    }

    /// Whether both `cpu_core` and `cpu_atom` exist (hybrid Intel): each has its own type, and
    /// a hardware event counts only on its kind of core.
    pub(crate) fn is_hybrid(&self) -> bool {
        self.core_pmus
            .iter()
            .any(|p| p.name == "cpu_core" || p.name == "cpu_atom")
    }

    /// Picollo for .NET's `TryGetNumberOfCounters`: `(fixed, programmable)` counter counts when a
    /// hardware PMU is available, from CPUID (Intel leaf 0xA, AMD rules) or else sysfs;
    /// `None` without a PMU, or when nothing reports counts.
    pub fn counter_counts(&self) -> Option<CounterCounts> {
        if !self.has_hardware_pmu() {
            return None;
        }
        self.cpuid_counters
            .or(self.sysfs_counters)
            .or(self.probed_counters)
    }

    /// Whether the kernel may be counted for another process or this one, as `perf stat`
    /// decides its default: `Ok` when this process is privileged (root, CAP_PERFMON or
    /// CAP_SYS_ADMIN) or `perf_event_paranoid` is 1 or less; else the one-line reason why
    /// counting falls back to user space (what `perf stat` does too, silently, and its counts
    /// then read as `page-faults:u`).
    ///
    /// # Errors
    /// The reason kernel counting is refused.
    pub fn kernel_counting(&self) -> Result<(), String> {
        kernel_counting(self.privileged, self.paranoid)
    }

    /// Why hardware counters cannot be used, for skip messages and reports; `None` when they
    /// can.
    pub fn no_pmu_reason(&self) -> Option<String> {
        (!self.has_hardware_pmu()).then(|| self.pmu.to_string())
    }
}

#[cfg(test)]
/// [`Capabilities::detect`] then [`Capabilities::counter_counts`], as `(fixed,
/// programmable)`.
pub(crate) fn try_number_of_counters() -> Option<(u32, u32)> {
    Capabilities::detect()
        .counter_counts()
        .map(|c| (c.fixed, c.programmable))
}

/// The user-read status from what the `cycles` probe's page said (`probed`), sysfs's `rdpmc`
/// attribute and arm64's `kernel.perf_user_access`. On arm64 the kernel sets
/// `cap_user_rdpmc` on the page of every event that asks for user reads, whatever the sysctl
/// says; with the sysctl at 0 it leaves the page's index at 0, so reads fall back to `read()`
/// (found on Debian's 6.1 kernel under QEMU: the probe said "usable" with user access off).
pub(crate) fn rdpmc_status(
    probed: RdpmcStatus,
    sysfs_rdpmc: Option<u32>,
    perf_user_access: Option<u32>,
    aarch64: bool,
) -> RdpmcStatus {
    match (probed, sysfs_rdpmc) {
        (RdpmcStatus::NotAdvertised, Some(0)) => RdpmcStatus::DisabledInSysfs,
        (RdpmcStatus::Usable | RdpmcStatus::NotAdvertised, _)
            if aarch64 && perf_user_access == Some(0) =>
        {
            RdpmcStatus::DisabledBySysctl
        }
        (r, _) => r,
    }
}

/// Asks the kernel how many counters its PMU has (see [`CountSource::Probe`]): opens ever
/// larger groups of `instructions` (user space, enabled and closed at once) until one is
/// refused. `None` when
/// not even one opens, or when the largest group is implausibly large (64 or more).
fn probe_counter_counts() -> Option<CounterCounts> {
    use crate::event::HardwareEvent;
    use crate::session::CounterSession;
    let fits = |cycles: bool, n: usize| {
        // Enabled: the kernel leaves a disabled leader out of the group's check.
        let mut b = CounterSession::builder().rdpmc(false);
        if cycles {
            b = b.event(HardwareEvent::Cycles);
        }
        for _ in 0..n {
            b = b.event(HardwareEvent::Instructions);
        }
        b.build().is_ok()
    };
    let programmable = (1..64).take_while(|&n| fits(false, n)).last()?;
    if programmable >= 63 {
        return None;
    }
    Some(CounterCounts {
        fixed: u32::from(fits(true, programmable)),
        programmable: programmable as u32,
        source: CountSource::Probe,
    })
}

/// Opens `cycles` for this thread (user space only) and checks its page.
fn probe_cycles(hybrid_type: Option<u32>) -> (PmuStatus, RdpmcStatus) {
    if cfg!(miri) {
        return (
            PmuStatus::ProbeFailed {
                errno: libc::ENOSYS,
            },
            RdpmcStatus::NoHardwarePmu,
        );
    }
    let config = EventConfig {
        type_: TYPE_HARDWARE,
        config: hybrid_type.map_or(0, |t| u64::from(t) << 32),
        // On arm64 the page advertises user reads only for events that ask for them.
        config1: if cfg!(target_arch = "aarch64") {
            crate::session::ARM64_USER_READ
        } else {
            0
        },
        ..EventConfig::default()
    };
    let mut attr = sys::attr(
        &config,
        AttrFlags {
            exclude_kernel: true,
            exclude_hv: true,
            ..AttrFlags::default()
        },
    );
    let fd = match sys::open(&mut attr, 0, -1, None) {
        Ok(fd) => fd,
        Err(errno) => {
            let pmu = match errno {
                libc::ENOENT | libc::EOPNOTSUPP | libc::ENODEV => {
                    PmuStatus::NoHardwarePmu { errno }
                }
                libc::EACCES | libc::EPERM => PmuStatus::Denied { errno },
                _ => PmuStatus::ProbeFailed { errno },
            };
            return (pmu, RdpmcStatus::NoHardwarePmu);
        }
    };
    if !NativeInstructions::HAS_RDPMC {
        return (PmuStatus::Available, RdpmcStatus::UnsupportedArch);
    }
    let rdpmc = match Mapping::new(fd.as_fd()) {
        Ok(m) => {
            // SAFETY: a live read-write mapping of this event's page, written only by the
            // kernel; only loads happen.
            let (caps, _, _) = unsafe { page_capabilities(m.page()) };
            if caps & CAP_USER_RDPMC != 0 {
                RdpmcStatus::Usable
            } else {
                RdpmcStatus::NotAdvertised
            }
        }
        Err(errno) => RdpmcStatus::MmapFailed { errno },
    };
    (PmuStatus::Available, rdpmc)
}

impl fmt::Display for Capabilities {
    /// A multi-line report.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "CPU vendor: {:?}{}",
            self.vendor,
            if self.hypervisor {
                " (under a hypervisor)"
            } else {
                ""
            }
        )?;
        writeln!(f, "hardware PMU: {}", self.pmu)?;
        match self.counter_counts() {
            Some(c) => writeln!(
                f,
                "counters: {} fixed, {} programmable (from {:?})",
                c.fixed, c.programmable, c.source
            )?,
            None => {
                write!(f, "counters: unavailable")?;
                if let Some(c) = self.cpuid_counters {
                    write!(
                        f,
                        " (CPUID claims {} fixed, {} programmable, but no event opens)",
                        c.fixed, c.programmable
                    )?;
                }
                writeln!(f)?;
            }
        }
        write!(f, "rdpmc: {}", self.rdpmc)?;
        if let Some(r) = self.sysfs_rdpmc {
            write!(f, " (sysfs rdpmc = {r})")?;
        }
        if let Some(u) = self.perf_user_access {
            write!(f, " (kernel.perf_user_access = {u})")?;
        }
        writeln!(f)?;
        match self.paranoid {
            Some(p) => write!(f, "perf_event_paranoid: {p}")?,
            None => write!(f, "perf_event_paranoid: unreadable")?,
        }
        if self.privileged {
            write!(f, " (this process is privileged and is not limited by it)")?;
        } else if self.paranoid.is_some_and(|p| p >= 2) {
            write!(f, " (count user space only: exclude_kernel(true))")?;
        }
        writeln!(f)?;
        write!(f, "core PMUs:")?;
        if self.core_pmus.is_empty() {
            write!(f, " none")?;
        }
        for p in &self.core_pmus {
            write!(f, " {}(type {})", p.name, p.type_)?;
        }
        if self.is_hybrid() {
            write!(f, " [hybrid]")?;
        }
        writeln!(f)?;
        write!(f, "all PMUs:")?;
        for p in &self.pmus {
            write!(f, " {}({})", p.name, p.type_)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_counting_follows_the_kernels_rule() {
        assert!(kernel_counting(true, Some(3)).is_ok(), "privileged: always");
        assert!(kernel_counting(false, Some(1)).is_ok());
        assert!(kernel_counting(false, Some(-1)).is_ok());
        let why = kernel_counting(false, Some(2)).unwrap_err();
        assert!(why.contains("perf_event_paranoid is 2"), "{why}");
        assert!(why.contains("user space only"), "{why}");
        assert!(kernel_counting(false, None)
            .unwrap_err()
            .contains("unreadable"));
    }

    #[test]
    fn intel_leaf_a() {
        // Skylake: version 4, 4 GP counters (8 without SMT), 3 fixed.
        let c = intel_counts(0x0730_0404, 0x0000_0603).unwrap();
        assert_eq!((c.fixed, c.programmable), (3, 4));
        // Version 1 has no fixed-counter field.
        let c = intel_counts(0x0000_0201, 0x1f).unwrap();
        assert_eq!((c.fixed, c.programmable), (0, 2));
        // A VM without vPMU: version 0.
        assert_eq!(intel_counts(0, 0), None);
    }

    #[test]
    fn amd_rules() {
        assert_eq!(amd_counts(0, None).programmable, 4);
        assert_eq!(amd_counts(1 << 23, None).programmable, 6);
        let c = amd_counts(1 << 23, Some((1, 6)));
        assert_eq!((c.programmable, c.source), (6, CountSource::AmdPerfMonV2));
        // Leaf present, PerfMonV2 bit clear: the old rules.
        assert_eq!(amd_counts(0, Some((0, 0xf))).programmable, 4);
    }

    #[test]
    fn arm64_user_access_off_is_not_usable() {
        use RdpmcStatus::*;
        // Found on the arm64 guest (guest/run.sh): the page advertises user reads with the
        // sysctl at 0, and only the index (0) says otherwise.
        assert_eq!(rdpmc_status(Usable, None, Some(0), true), DisabledBySysctl);
        assert_eq!(
            rdpmc_status(NotAdvertised, None, Some(0), true),
            DisabledBySysctl
        );
        assert_eq!(rdpmc_status(Usable, None, Some(1), true), Usable);
        assert_eq!(rdpmc_status(Usable, None, None, true), Usable);
        // x86 has no such sysctl: unchanged.
        assert_eq!(rdpmc_status(Usable, Some(1), Some(0), false), Usable);
        assert_eq!(
            rdpmc_status(NotAdvertised, Some(0), None, false),
            DisabledInSysfs
        );
        assert_eq!(
            rdpmc_status(NoHardwarePmu, None, Some(0), true),
            NoHardwarePmu
        );
        assert!(DisabledBySysctl.to_string().contains("perf_user_access=1"));
    }

    #[test]
    #[cfg_attr(miri, ignore = "miri cannot run CPUID or perf_event_open")]
    fn detects_this_machine() {
        let caps = Capabilities::detect();
        eprintln!("{caps}");
        match caps.pmu {
            PmuStatus::Available => {
                assert!(caps.no_pmu_reason().is_none());
            }
            _ => {
                // The clear "no hardware PMU" state: no counts, rdpmc unavailable, a reason.
                assert_eq!(caps.counter_counts(), None);
                assert_eq!(caps.rdpmc, RdpmcStatus::NoHardwarePmu);
                let why = caps.no_pmu_reason().unwrap();
                assert!(!why.is_empty());
                assert_eq!(try_number_of_counters(), None);
            }
        }
        assert!(caps.pmus.iter().any(|p| p.name == "software"), "{caps}");
    }
}
