//! The event model: the kinds of what one counter counts (hardware, software, cache, raw and
//! dynamic PMU events, the variants of [`Event`]), each kind's canonical perf name, and
//! [`Event`]'s parsing and conversions.

use core::fmt;

use super::parse_error::{ParseErrorKind, ParseEventError};
use super::Event;

/// Generic hardware events (`PERF_TYPE_HARDWARE`). They need a hardware PMU.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum HardwareEvent {
    /// `cycles` (alias `cpu-cycles`): core clock cycles.
    Cycles,
    /// `instructions`: retired instructions.
    Instructions,
    /// `cache-references`: usually last-level cache accesses.
    CacheReferences,
    /// `cache-misses`: usually last-level cache misses.
    CacheMisses,
    /// `branches` (alias `branch-instructions`): retired branch instructions.
    Branches,
    /// `branch-misses`: mispredicted branches.
    BranchMisses,
    /// `bus-cycles`.
    BusCycles,
    /// `stalled-cycles-frontend` (alias `idle-cycles-frontend`).
    StalledCyclesFrontend,
    /// `stalled-cycles-backend` (alias `idle-cycles-backend`).
    StalledCyclesBackend,
    /// `ref-cycles`: reference cycles, not affected by frequency scaling.
    RefCycles,
}

impl HardwareEvent {
    /// Every hardware event, in `config` order.
    pub const ALL: [Self; 10] = [
        Self::Cycles,
        Self::Instructions,
        Self::CacheReferences,
        Self::CacheMisses,
        Self::Branches,
        Self::BranchMisses,
        Self::BusCycles,
        Self::StalledCyclesFrontend,
        Self::StalledCyclesBackend,
        Self::RefCycles,
    ];

    /// The `perf_event_attr.config` value.
    pub const fn config(self) -> u64 {
        self as u64
    }

    /// perf's canonical name.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Cycles => "cycles",
            Self::Instructions => "instructions",
            Self::CacheReferences => "cache-references",
            Self::CacheMisses => "cache-misses",
            Self::Branches => "branches",
            Self::BranchMisses => "branch-misses",
            Self::BusCycles => "bus-cycles",
            Self::StalledCyclesFrontend => "stalled-cycles-frontend",
            Self::StalledCyclesBackend => "stalled-cycles-backend",
            Self::RefCycles => "ref-cycles",
        }
    }

    pub(super) const fn alias(self) -> Option<&'static str> {
        match self {
            Self::Cycles => Some("cpu-cycles"),
            Self::Branches => Some("branch-instructions"),
            Self::StalledCyclesFrontend => Some("idle-cycles-frontend"),
            Self::StalledCyclesBackend => Some("idle-cycles-backend"),
            _ => None,
        }
    }
}

/// Software events (`PERF_TYPE_SOFTWARE`), counted by the kernel. They work without a PMU.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum SoftwareEvent {
    /// `cpu-clock`: a per-CPU high-resolution timer, in nanoseconds. Like `task-clock`, it is
    /// brought up to date on read only as a group leader (see [`SoftwareEvent::TaskClock`]).
    CpuClock,
    /// `task-clock`: time the task ran, in nanoseconds.
    ///
    /// The clock events are updated when read only if they lead their group: as a sibling,
    /// a group read returns the value of the last timer tick or context switch (measured on
    /// Linux 6.18: a 1 ms interval read as 0). Put at most one clock in a session, first.
    TaskClock,
    /// `page-faults` (alias `faults`).
    PageFaults,
    /// `context-switches` (alias `cs`). Counted in the kernel: needs `exclude_kernel(false)`.
    ContextSwitches,
    /// `cpu-migrations` (alias `migrations`).
    CpuMigrations,
    /// `minor-faults`.
    MinorFaults,
    /// `major-faults`.
    MajorFaults,
    /// `alignment-faults`.
    AlignmentFaults,
    /// `emulation-faults`.
    EmulationFaults,
    /// `dummy`: counts nothing.
    Dummy,
    /// `bpf-output`.
    BpfOutput,
    /// `cgroup-switches`.
    CgroupSwitches,
}

impl SoftwareEvent {
    /// Every software event, in `config` order.
    pub const ALL: [Self; 12] = [
        Self::CpuClock,
        Self::TaskClock,
        Self::PageFaults,
        Self::ContextSwitches,
        Self::CpuMigrations,
        Self::MinorFaults,
        Self::MajorFaults,
        Self::AlignmentFaults,
        Self::EmulationFaults,
        Self::Dummy,
        Self::BpfOutput,
        Self::CgroupSwitches,
    ];

    /// The `perf_event_attr.config` value.
    pub const fn config(self) -> u64 {
        self as u64
    }

    /// perf's canonical name.
    pub const fn name(self) -> &'static str {
        match self {
            Self::CpuClock => "cpu-clock",
            Self::TaskClock => "task-clock",
            Self::PageFaults => "page-faults",
            Self::ContextSwitches => "context-switches",
            Self::CpuMigrations => "cpu-migrations",
            Self::MinorFaults => "minor-faults",
            Self::MajorFaults => "major-faults",
            Self::AlignmentFaults => "alignment-faults",
            Self::EmulationFaults => "emulation-faults",
            Self::Dummy => "dummy",
            Self::BpfOutput => "bpf-output",
            Self::CgroupSwitches => "cgroup-switches",
        }
    }

    pub(super) const fn alias(self) -> Option<&'static str> {
        match self {
            Self::PageFaults => Some("faults"),
            Self::ContextSwitches => Some("cs"),
            Self::CpuMigrations => Some("migrations"),
            _ => None,
        }
    }
}

/// The cache of a generic cache event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CacheId {
    /// `L1-dcache` (aliases `l1-d`, `l1d`, `L1-data`).
    L1d,
    /// `L1-icache` (aliases `l1-i`, `l1i`, `L1-instruction`).
    L1i,
    /// `LLC` (alias `L2`): the last-level cache.
    Ll,
    /// `dTLB` (aliases `d-tlb`, `Data-TLB`).
    Dtlb,
    /// `iTLB` (aliases `i-tlb`, `Instruction-TLB`).
    Itlb,
    /// `branch` (aliases `branches`, `bpu`, `btb`, `bpc`): the branch prediction unit.
    Branch,
    /// `node`: local memory accesses.
    Node,
}

impl CacheId {
    /// Every cache id, in `config` order.
    pub const ALL: [Self; 7] = [
        Self::L1d,
        Self::L1i,
        Self::Ll,
        Self::Dtlb,
        Self::Itlb,
        Self::Branch,
        Self::Node,
    ];

    /// perf's spellings; the first is canonical.
    pub(super) const fn names(self) -> &'static [&'static str] {
        match self {
            Self::L1d => &["L1-dcache", "l1-d", "l1d", "L1-data"],
            Self::L1i => &["L1-icache", "l1-i", "l1i", "L1-instruction"],
            Self::Ll => &["LLC", "L2"],
            Self::Dtlb => &["dTLB", "d-tlb", "Data-TLB"],
            Self::Itlb => &["iTLB", "i-tlb", "Instruction-TLB"],
            Self::Branch => &["branch", "branches", "bpu", "btb", "bpc"],
            Self::Node => &["node"],
        }
    }
}

/// The operation of a generic cache event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CacheOp {
    /// `load` (aliases `loads`, `read`).
    Load,
    /// `store` (aliases `stores`, `write`).
    Store,
    /// `prefetch` (aliases `prefetches`, `speculative-read`, `speculative-load`).
    Prefetch,
}

impl CacheOp {
    /// Every operation, in `config` order.
    pub const ALL: [Self; 3] = [Self::Load, Self::Store, Self::Prefetch];

    /// perf's spellings: singular first, plural second.
    pub(super) const fn names(self) -> &'static [&'static str] {
        match self {
            Self::Load => &["load", "loads", "read"],
            Self::Store => &["store", "stores", "write"],
            Self::Prefetch => &[
                "prefetch",
                "prefetches",
                "speculative-read",
                "speculative-load",
            ],
        }
    }
}

/// The result of a generic cache event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CacheResult {
    /// Accesses (the default; aliases `refs`, `Reference`, `ops`, `access`).
    Access,
    /// Misses (`misses`, `miss`).
    Miss,
}

impl CacheResult {
    /// Both results, in `config` order.
    pub const ALL: [Self; 2] = [Self::Access, Self::Miss];

    pub(super) const fn names(self) -> &'static [&'static str] {
        match self {
            Self::Access => &["refs", "Reference", "ops", "access"],
            Self::Miss => &["misses", "miss"],
        }
    }
}

/// A generic cache event (`PERF_TYPE_HW_CACHE`): `config = id | op << 8 | result << 16`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CacheEvent {
    /// Which cache.
    pub id: CacheId,
    /// Which operation.
    pub op: CacheOp,
    /// Accesses or misses.
    pub result: CacheResult,
}

impl CacheEvent {
    /// L1 data cache load misses (Picollo for .NET's `L1DReadMiss`).
    pub const L1D_READ_MISS: Self = Self::new(CacheId::L1d, CacheOp::Load, CacheResult::Miss);
    /// L1 instruction cache load misses (Picollo for .NET's `L1IReadMiss`).
    pub const L1I_READ_MISS: Self = Self::new(CacheId::L1i, CacheOp::Load, CacheResult::Miss);
    /// Last-level cache loads (Picollo for .NET's `LLReadAccess`).
    pub const LL_READ_ACCESS: Self = Self::new(CacheId::Ll, CacheOp::Load, CacheResult::Access);
    /// Last-level cache load misses (Picollo for .NET's `LLReadMiss`).
    pub const LL_READ_MISS: Self = Self::new(CacheId::Ll, CacheOp::Load, CacheResult::Miss);
    /// Data TLB load misses.
    pub const DTLB_READ_MISS: Self = Self::new(CacheId::Dtlb, CacheOp::Load, CacheResult::Miss);

    /// A cache event.
    pub const fn new(id: CacheId, op: CacheOp, result: CacheResult) -> Self {
        Self { id, op, result }
    }

    /// The `perf_event_attr.config` value: `id | op << 8 | result << 16`.
    pub const fn config(self) -> u64 {
        (self.id as u64) | ((self.op as u64) << 8) | ((self.result as u64) << 16)
    }
}

impl fmt::Display for CacheEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let cache = self.id.names()[0];
        let op = self.op.names();
        match self.result {
            // perf: `L1-dcache-loads`, `branch-loads`.
            CacheResult::Access => write!(f, "{cache}-{}", op[1]),
            // perf: `L1-dcache-load-misses`.
            CacheResult::Miss => write!(f, "{cache}-{}-misses", op[0]),
        }
    }
}

/// One `name[=value]` term of a PMU event, as in `cpu/event=0x3c,umask=0x00,edge/`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PmuTerm {
    pub(super) name: String,
    pub(super) value: Option<u64>,
}

impl PmuTerm {
    /// A term. The name must be a valid term name (`[A-Za-z0-9_-]+`); use [`Event::parse`] for
    /// untrusted input.
    pub fn new(name: &str, value: Option<u64>) -> Result<Self, ParseEventError> {
        if name.is_empty()
            || !name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        {
            return Err(ParseEventError::new(name, ParseErrorKind::BadTermName));
        }
        Ok(Self {
            name: name.to_owned(),
            value,
        })
    }

    /// The term's name: a format field (`event`, `umask`), `config`/`config1`/`config2`/
    /// `config3`, or an event alias from the PMU's `events/` directory.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The value; `None` for a bare flag (`edge`, which sets the field to 1) or an alias.
    pub fn value(&self) -> Option<u64> {
        self.value
    }
}

impl fmt::Display for PmuTerm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.value {
            Some(v) => write!(f, "{}={v:#04x}", self.name),
            None => f.write_str(&self.name),
        }
    }
}

/// A dynamic PMU event, `pmu/term,term=value,…/`, resolved through
/// `/sys/bus/event_source/devices/<pmu>/{type,format,events}` when a session opens it (see
/// [`crate::pmu::Sysfs::resolve`]).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PmuEvent {
    pub(super) pmu: String,
    pub(super) terms: Vec<PmuTerm>,
}

impl PmuEvent {
    /// A PMU event. The PMU name must be `[A-Za-z0-9_.-]+` (and not `.` or `..`); there must
    /// be at least one term.
    pub fn new(pmu: &str, terms: Vec<PmuTerm>) -> Result<Self, ParseEventError> {
        if !valid_pmu_name(pmu) {
            return Err(ParseEventError::new(pmu, ParseErrorKind::BadPmuName));
        }
        if terms.is_empty() {
            return Err(ParseEventError::new(pmu, ParseErrorKind::NoTerms));
        }
        Ok(Self {
            pmu: pmu.to_owned(),
            terms,
        })
    }

    /// The PMU's directory name under `/sys/bus/event_source/devices`.
    pub fn pmu(&self) -> &str {
        &self.pmu
    }

    /// The terms, in the order written.
    pub fn terms(&self) -> &[PmuTerm] {
        &self.terms
    }
}

impl fmt::Display for PmuEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/", self.pmu)?;
        for (i, t) in self.terms.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{t}")?;
        }
        f.write_str("/")
    }
}

pub(super) fn valid_pmu_name(s: &str) -> bool {
    !s.is_empty()
        && s != "."
        && s != ".."
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'.')
}

impl Event {
    /// Parses perf's spelling of an event. Same as [`str::parse`].
    pub fn parse(s: &str) -> Result<Self, ParseEventError> {
        s.parse()
    }

    /// Whether counting this event needs a hardware PMU (everything but software events; PMU
    /// events depend on the PMU, and count as hardware here).
    pub const fn needs_hardware_pmu(&self) -> bool {
        !matches!(self, Self::Software(_))
    }
}

impl From<HardwareEvent> for Event {
    fn from(e: HardwareEvent) -> Self {
        Self::Hardware(e)
    }
}

impl From<SoftwareEvent> for Event {
    fn from(e: SoftwareEvent) -> Self {
        Self::Software(e)
    }
}

impl From<CacheEvent> for Event {
    fn from(e: CacheEvent) -> Self {
        Self::Cache(e)
    }
}

impl From<PmuEvent> for Event {
    fn from(e: PmuEvent) -> Self {
        Self::Pmu(e)
    }
}

impl fmt::Display for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Hardware(e) => f.write_str(e.name()),
            Self::Software(e) => f.write_str(e.name()),
            Self::Cache(e) => write!(f, "{e}"),
            Self::Raw(c) => write!(f, "r{c:04x}"),
            Self::Pmu(e) => write!(f, "{e}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Event {
        match s.parse() {
            Ok(e) => e,
            Err(e) => panic!("{e}"),
        }
    }

    #[test]
    fn canonical_names() {
        assert_eq!(p("cpu-cycles").to_string(), "cycles");
        assert_eq!(p("LLC-misses").to_string(), "LLC-load-misses");
        assert_eq!(p("L2-read-refs").to_string(), "LLC-loads");
        assert_eq!(p("r00c0").to_string(), "r00c0");
        assert_eq!(p("r12345").to_string(), "r12345");
        assert_eq!(
            p("cpu/event=0x3c,umask=0x00/").to_string(),
            "cpu/event=0x3c,umask=0x00/"
        );
        assert_eq!(
            p("cpu/event=60,edge,cmask=1/").to_string(),
            "cpu/event=0x3c,edge,cmask=0x01/"
        );
        assert_eq!(p("msr/tsc/").to_string(), "msr/tsc/");
    }

    #[test]
    fn config_values() {
        assert_eq!(CacheEvent::L1D_READ_MISS.config(), 0x1_00_00);
        assert_eq!(
            CacheEvent::new(CacheId::Node, CacheOp::Prefetch, CacheResult::Miss).config(),
            0x6 | 0x2 << 8 | 0x1 << 16
        );
        assert_eq!(HardwareEvent::RefCycles.config(), 9);
        assert_eq!(SoftwareEvent::CgroupSwitches.config(), 11);
    }
}
