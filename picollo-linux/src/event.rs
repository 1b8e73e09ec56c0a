//! The event model and perf's spellings of event names.
//!
//! An [`Event`] is what one counter counts. It parses from the names `perf stat -e` accepts and
//! displays back to perf's canonical name:
//!
//! | spelling | event |
//! |---|---|
//! | `cycles`, `instructions`, `branch-misses`, `ref-cycles`, … | [`Event::Hardware`] |
//! | `task-clock`, `page-faults`, `context-switches`, … | [`Event::Software`] |
//! | `L1-dcache-load-misses`, `LLC-loads`, `dTLB-load-misses`, … | [`Event::Cache`] |
//! | `r00c0` (hex) | [`Event::Raw`] |
//! | `cpu/event=0x3c,umask=0x00/`, `msr/tsc/` | [`Event::Pmu`] (resolved through sysfs) |
//!
//! ```
//! use picollo_linux::event::{CacheEvent, CacheId, CacheOp, CacheResult, Event, HardwareEvent};
//!
//! let e: Event = "L1-dcache-load-misses".parse()?;
//! assert_eq!(e, Event::Cache(CacheEvent::new(CacheId::L1d, CacheOp::Load, CacheResult::Miss)));
//! assert_eq!(e.to_string(), "L1-dcache-load-misses");
//! assert_eq!("cpu-cycles".parse::<Event>()?, Event::Hardware(HardwareEvent::Cycles));
//! assert_eq!(Event::Raw(0xc0).to_string(), "r00c0");
//! assert!("no-such-event".parse::<Event>().is_err());
//! # Ok::<(), picollo_linux::event::ParseEventError>(())
//! ```

use core::fmt;
use core::str::FromStr;

use perf_event_open_sys::bindings as sys;

/// `perf_event_attr.type` of generic hardware events.
pub const TYPE_HARDWARE: u32 = sys::PERF_TYPE_HARDWARE;
/// `perf_event_attr.type` of software events.
pub const TYPE_SOFTWARE: u32 = sys::PERF_TYPE_SOFTWARE;
/// `perf_event_attr.type` of generic cache events.
pub const TYPE_HW_CACHE: u32 = sys::PERF_TYPE_HW_CACHE;
/// `perf_event_attr.type` of raw, CPU-specific events.
pub const TYPE_RAW: u32 = sys::PERF_TYPE_RAW;

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

    const fn alias(self) -> Option<&'static str> {
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

    const fn alias(self) -> Option<&'static str> {
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
    const fn names(self) -> &'static [&'static str] {
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
    const fn names(self) -> &'static [&'static str] {
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

    const fn names(self) -> &'static [&'static str] {
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
    /// L1 data cache load misses (the seed's `L1DReadMiss`).
    pub const L1D_READ_MISS: Self = Self::new(CacheId::L1d, CacheOp::Load, CacheResult::Miss);
    /// L1 instruction cache load misses (the seed's `L1IReadMiss`).
    pub const L1I_READ_MISS: Self = Self::new(CacheId::L1i, CacheOp::Load, CacheResult::Miss);
    /// Last-level cache loads (the seed's `LLReadAccess`).
    pub const LL_READ_ACCESS: Self = Self::new(CacheId::Ll, CacheOp::Load, CacheResult::Access);
    /// Last-level cache load misses (the seed's `LLReadMiss`).
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
    name: String,
    value: Option<u64>,
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
    pmu: String,
    terms: Vec<PmuTerm>,
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

fn valid_pmu_name(s: &str) -> bool {
    !s.is_empty()
        && s != "."
        && s != ".."
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'.')
}

/// What one counter counts.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Event {
    /// A generic hardware event.
    Hardware(HardwareEvent),
    /// A software event.
    Software(SoftwareEvent),
    /// A generic cache event.
    Cache(CacheEvent),
    /// A raw, CPU-specific event: `rNNNN`, `config = 0xNNNN`.
    Raw(u64),
    /// A dynamic PMU event, `pmu/…/`.
    Pmu(PmuEvent),
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

/// The `perf_event_attr` fields that select an event.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct EventConfig {
    /// `type`: [`TYPE_HARDWARE`], [`TYPE_SOFTWARE`], [`TYPE_HW_CACHE`], [`TYPE_RAW`], or a
    /// dynamic PMU's type from sysfs.
    pub type_: u32,
    /// `config`.
    pub config: u64,
    /// `config1` (`bp_addr`, `kprobe_func`, …).
    pub config1: u64,
    /// `config2`.
    pub config2: u64,
    /// `config3`.
    pub config3: u64,
}

impl Event {
    /// The `perf_event_attr` selection for this event; `pmu/…/` events are resolved through
    /// `sysfs`.
    pub fn config_with(&self, sysfs: &crate::pmu::Sysfs) -> Result<EventConfig, crate::PerfError> {
        let simple = |type_, config| EventConfig {
            type_,
            config,
            ..EventConfig::default()
        };
        Ok(match self {
            Self::Hardware(e) => simple(TYPE_HARDWARE, e.config()),
            Self::Software(e) => simple(TYPE_SOFTWARE, e.config()),
            Self::Cache(e) => simple(TYPE_HW_CACHE, e.config()),
            Self::Raw(c) => simple(TYPE_RAW, *c),
            Self::Pmu(p) => return sysfs.resolve(p),
        })
    }

    /// [`Event::config_with`] the system's sysfs.
    pub fn config(&self) -> Result<EventConfig, crate::PerfError> {
        self.config_with(&crate::pmu::Sysfs::system())
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

impl FromStr for Event {
    type Err = ParseEventError;

    fn from_str(input: &str) -> Result<Self, Self::Err> {
        let s = input.trim();
        if s.is_empty() {
            return Err(ParseEventError::new(input, ParseErrorKind::Empty));
        }
        if s.contains('/') {
            return parse_pmu(s).map_err(|kind| ParseEventError::new(input, kind));
        }
        if s.contains(':') {
            return Err(ParseEventError::new(input, ParseErrorKind::Modifiers));
        }
        if let Some(hex) = s.strip_prefix('r') {
            if !hex.is_empty() && hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                return u64::from_str_radix(hex, 16)
                    .map(Event::Raw)
                    .map_err(|_| ParseEventError::new(input, ParseErrorKind::RawTooWide));
            }
        }
        for e in HardwareEvent::ALL {
            if s.eq_ignore_ascii_case(e.name())
                || e.alias().is_some_and(|a| s.eq_ignore_ascii_case(a))
            {
                return Ok(Event::Hardware(e));
            }
        }
        for e in SoftwareEvent::ALL {
            if s.eq_ignore_ascii_case(e.name())
                || e.alias().is_some_and(|a| s.eq_ignore_ascii_case(a))
            {
                return Ok(Event::Software(e));
            }
        }
        if let Some(c) = parse_cache(s) {
            return Ok(Event::Cache(c));
        }
        Err(ParseEventError::new(input, ParseErrorKind::UnknownName))
    }
}

/// perf's event modifiers, the part after `:` in `page-faults:u` (or after the closing `/` of
/// a PMU event, `cpu/event=0x3c/uk`): which privilege levels and which side of a virtual
/// machine a counter counts. Parsed the way `perf stat` parses them:
///
/// | modifier | counts | `perf_event_attr` |
/// |---|---|---|
/// | `u` | user space | `exclude_kernel`, `exclude_hv` |
/// | `k` | the kernel | `exclude_user`, `exclude_hv` |
/// | `h` | the hypervisor | `exclude_user`, `exclude_kernel` |
/// | `uk`, `uh`, `kh`, `ukh` | each level named | the levels not named excluded |
/// | `G` | in a KVM guest only (on a host) | `exclude_host` |
/// | `H` | on the host only | `exclude_guest` |
///
/// Naming any of `u`, `k`, `h` excludes the levels not named; naming `G` or `H` excludes the
/// other side. Sampling modifiers (`p`, `P`, `S`, `D`, `W`, …) mean nothing to a counting
/// session and are refused with a clear error, as are unknown letters.
///
/// ```
/// use picollo_linux::event::{EventSpec, Modifiers};
///
/// let spec: EventSpec = "page-faults:uk".parse()?;
/// assert_eq!(spec.modifiers, Some(Modifiers::USER_KERNEL));
/// let m = spec.modifiers.unwrap();
/// assert!(m.counts_user() && m.counts_kernel() && !m.counts_hv());
/// assert_eq!(spec.to_string(), "page-faults:uk");
/// assert!("cycles:p".parse::<EventSpec>().is_err());
/// # Ok::<(), picollo_linux::event::ParseEventError>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Modifiers {
    exclude_user: bool,
    exclude_kernel: bool,
    exclude_hv: bool,
    exclude_host: bool,
    exclude_guest: bool,
}

impl Modifiers {
    /// User space only (`:u`).
    pub const USER: Self = Self {
        exclude_user: false,
        exclude_kernel: true,
        exclude_hv: true,
        exclude_host: false,
        exclude_guest: false,
    };
    /// User space and the kernel (`:uk`).
    pub const USER_KERNEL: Self = Self {
        exclude_user: false,
        exclude_kernel: false,
        exclude_hv: true,
        exclude_host: false,
        exclude_guest: false,
    };

    /// Parses the letters after the `:` (`"u"`, `"uk"`, `"kH"`).
    ///
    /// # Errors
    /// An empty string, a sampling-only modifier or an unknown letter.
    pub fn parse(letters: &str) -> Result<Self, ParseErrorKind> {
        if letters.is_empty() {
            return Err(ParseErrorKind::BadModifier);
        }
        let (mut user, mut kernel, mut hv, mut guest, mut host) =
            (false, false, false, false, false);
        for c in letters.chars() {
            match c {
                'u' => user = true,
                'k' => kernel = true,
                'h' => hv = true,
                'G' => guest = true,
                'H' => host = true,
                'p' | 'P' | 'S' | 'D' | 'W' | 'I' | 'e' | 'b' | 'R' => {
                    return Err(ParseErrorKind::SamplingModifier)
                }
                _ => return Err(ParseErrorKind::BadModifier),
            }
        }
        let levels = user || kernel || hv;
        let sides = guest || host;
        Ok(Self {
            exclude_user: levels && !user,
            exclude_kernel: levels && !kernel,
            exclude_hv: levels && !hv,
            exclude_host: sides && !host,
            exclude_guest: sides && !guest,
        })
    }

    /// Whether user space is counted.
    pub const fn counts_user(&self) -> bool {
        !self.exclude_user
    }

    /// Whether the kernel is counted.
    pub const fn counts_kernel(&self) -> bool {
        !self.exclude_kernel
    }

    /// Whether the hypervisor is counted.
    pub const fn counts_hv(&self) -> bool {
        !self.exclude_hv
    }

    /// `perf_event_attr.exclude_user`.
    pub const fn exclude_user(&self) -> bool {
        self.exclude_user
    }

    /// `perf_event_attr.exclude_kernel`.
    pub const fn exclude_kernel(&self) -> bool {
        self.exclude_kernel
    }

    /// `perf_event_attr.exclude_hv`.
    pub const fn exclude_hv(&self) -> bool {
        self.exclude_hv
    }

    /// `perf_event_attr.exclude_host` (`:G`: count the guest only).
    pub const fn exclude_host(&self) -> bool {
        self.exclude_host
    }

    /// `perf_event_attr.exclude_guest` (`:H`: count the host only).
    pub const fn exclude_guest(&self) -> bool {
        self.exclude_guest
    }
}

impl fmt::Display for Modifiers {
    /// The canonical letters (`u`, `uk`, `kH`; `ukh` when nothing is excluded).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let levels = self.exclude_user || self.exclude_kernel || self.exclude_hv;
        let sides = self.exclude_host || self.exclude_guest;
        if levels || !sides {
            for (excluded, c) in [
                (self.exclude_user, 'u'),
                (self.exclude_kernel, 'k'),
                (self.exclude_hv, 'h'),
            ] {
                if !excluded {
                    write!(f, "{c}")?;
                }
            }
        }
        if self.exclude_host != self.exclude_guest {
            f.write_str(if self.exclude_host { "G" } else { "H" })?;
        } else if self.exclude_host {
            f.write_str("GH")?; // both excluded: counts nothing, but says so
        }
        Ok(())
    }
}

/// An event with the modifiers written after it: what `perf stat -e` takes (`page-faults:u`,
/// `cycles:uk`, `cpu/event=0x3c/k`). Without modifiers the session's own exclusions apply
/// ([`crate::CounterSessionBuilder::exclude_kernel`]).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EventSpec {
    /// The event.
    pub event: Event,
    /// The modifiers, `None` when none was written.
    pub modifiers: Option<Modifiers>,
}

impl From<Event> for EventSpec {
    fn from(event: Event) -> Self {
        Self {
            event,
            modifiers: None,
        }
    }
}

impl FromStr for EventSpec {
    type Err = ParseEventError;

    fn from_str(input: &str) -> Result<Self, Self::Err> {
        let s = input.trim();
        // A PMU event's modifiers follow its closing slash (`cpu/…/uk`, or `cpu/…/:uk`); any
        // other event's follow the last colon.
        let (name, letters) = if let Some(close) = s.rfind('/') {
            let tail = &s[close + 1..];
            let tail = tail.strip_prefix(':').unwrap_or(tail);
            (&s[..=close], Some(tail).filter(|t| !t.is_empty()))
        } else {
            match s.rsplit_once(':') {
                Some((n, m)) => (n, Some(m)),
                None => (s, None),
            }
        };
        let event = Event::from_str(name).map_err(|e| ParseEventError::new(input, e.kind()))?;
        let modifiers = letters
            .map(Modifiers::parse)
            .transpose()
            .map_err(|kind| ParseEventError::new(input, kind))?;
        Ok(Self { event, modifiers })
    }
}

impl fmt::Display for EventSpec {
    /// perf's spelling: the event's name, then `:` and the modifiers when any was written
    /// (`/` already ends a PMU event, so its letters follow directly, as perf writes them).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.event)?;
        if let Some(m) = self.modifiers {
            if matches!(self.event, Event::Pmu(_)) {
                write!(f, "{m}")
            } else {
                write!(f, ":{m}")
            }
        } else {
            Ok(())
        }
    }
}

/// Strips `prefix` case-insensitively when it is followed by `-` or the end; returns the rest
/// after the `-` (or `""`).
fn strip_token<'a>(s: &'a str, prefix: &str) -> Option<&'a str> {
    let head = s.get(..prefix.len())?;
    if !head.eq_ignore_ascii_case(prefix) {
        return None;
    }
    let rest = &s[prefix.len()..];
    if rest.is_empty() {
        Some(rest)
    } else {
        rest.strip_prefix('-').filter(|r| !r.is_empty())
    }
}

/// `<cache>[-<op>][-<result>]` (op and result in either order; load and access by default), as
/// perf accepts.
fn parse_cache(s: &str) -> Option<CacheEvent> {
    for id in CacheId::ALL {
        for name in id.names() {
            let Some(rest) = strip_token(s, name) else {
                continue;
            };
            if let Some(ev) = parse_cache_tail(id, rest) {
                return Some(ev);
            }
        }
    }
    None
}

fn parse_cache_tail(id: CacheId, mut rest: &str) -> Option<CacheEvent> {
    let mut op = None;
    let mut result = None;
    // At most two more tokens: an op and a result, each once, in either order.
    for _ in 0..2 {
        if rest.is_empty() {
            break;
        }
        let mut matched = false;
        if op.is_none() {
            'ops: for o in CacheOp::ALL {
                for n in o.names() {
                    if let Some(r) = strip_token(rest, n) {
                        op = Some(o);
                        rest = r;
                        matched = true;
                        break 'ops;
                    }
                }
            }
        }
        if !matched && result.is_none() {
            'results: for res in CacheResult::ALL {
                for n in res.names() {
                    if let Some(r) = strip_token(rest, n) {
                        result = Some(res);
                        rest = r;
                        matched = true;
                        break 'results;
                    }
                }
            }
        }
        if !matched {
            return None;
        }
    }
    if !rest.is_empty() {
        return None;
    }
    Some(CacheEvent::new(
        id,
        op.unwrap_or(CacheOp::Load),
        result.unwrap_or(CacheResult::Access),
    ))
}

fn parse_pmu(s: &str) -> Result<Event, ParseErrorKind> {
    let (pmu, rest) = s.split_once('/').ok_or(ParseErrorKind::BadPmuSyntax)?;
    let inner = rest.strip_suffix('/').ok_or(ParseErrorKind::BadPmuSyntax)?;
    if inner.contains('/') {
        return Err(ParseErrorKind::BadPmuSyntax);
    }
    if !valid_pmu_name(pmu) {
        return Err(ParseErrorKind::BadPmuName);
    }
    if inner.is_empty() {
        return Err(ParseErrorKind::NoTerms);
    }
    let mut terms = Vec::new();
    for t in inner.split(',') {
        terms.push(parse_term(t)?);
    }
    Ok(Event::Pmu(PmuEvent {
        pmu: pmu.to_owned(),
        terms,
    }))
}

pub(crate) fn parse_term(t: &str) -> Result<PmuTerm, ParseErrorKind> {
    let t = t.trim();
    let (name, value) = match t.split_once('=') {
        Some((n, v)) => (
            n,
            Some(parse_number(v).ok_or(ParseErrorKind::BadTermValue)?),
        ),
        None => (t, None),
    };
    if name.is_empty()
        || !name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        return Err(ParseErrorKind::BadTermName);
    }
    Ok(PmuTerm {
        name: name.to_owned(),
        value,
    })
}

/// `0x`-prefixed hex or decimal.
pub(crate) fn parse_number(v: &str) -> Option<u64> {
    let v = v.trim();
    if let Some(h) = v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
        if h.is_empty() || !h.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        u64::from_str_radix(h, 16).ok()
    } else {
        if v.is_empty() || !v.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        v.parse().ok()
    }
}

/// Why an event name did not parse.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ParseErrorKind {
    /// The input is empty.
    Empty,
    /// Not a hardware, software or cache event name, nor `rNNNN`, nor `pmu/…/`.
    UnknownName,
    /// `rNNNN` with more than 16 hex digits.
    RawTooWide,
    /// perf modifiers (`cycles:u`) given to [`Event`]'s parser: they belong to an
    /// [`EventSpec`], which [`crate::CounterSessionBuilder::event_name`] parses.
    Modifiers,
    /// A modifier letter perf does not know, or nothing after the `:`.
    BadModifier,
    /// A sampling-only modifier (`p`, `P`, `S`, `D`, `W`, …), meaningless when counting.
    SamplingModifier,
    /// A PMU event is not of the form `pmu/terms/`.
    BadPmuSyntax,
    /// The PMU name is empty, `.`/`..`, or has characters outside `[A-Za-z0-9_.-]`.
    BadPmuName,
    /// `pmu//`: a PMU event needs at least one term.
    NoTerms,
    /// A term name is empty or has characters outside `[A-Za-z0-9_-]`.
    BadTermName,
    /// A term value is not a decimal or `0x` hex `u64`.
    BadTermValue,
}

impl ParseErrorKind {
    const fn describe(self) -> &'static str {
        match self {
            Self::Empty => "the event name is empty",
            Self::UnknownName => {
                "not a perf event name (cycles, instructions, branch-misses, task-clock, \
                 page-faults, L1-dcache-load-misses, …); for a CPU-specific event write rNNNN \
                 (hex) or pmu/event=0x..,umask=0x../"
            }
            Self::RawTooWide => "a raw event rNNNN takes at most 16 hex digits",
            Self::Modifiers => {
                "an Event has no modifiers; parse `name:u` as an EventSpec (the session \
                 builder's event_name does)"
            }
            Self::BadModifier => {
                "unknown event modifier; perf's counting modifiers are u (user), k (kernel), \
                 h (hypervisor), G (guest only) and H (host only), as in page-faults:uk"
            }
            Self::SamplingModifier => {
                "sampling modifiers (p, P, S, D, W, …) do not apply to counting; keep u, k, h, \
                 G or H"
            }
            Self::BadPmuSyntax => "a PMU event is written pmu/term=value,term/",
            Self::BadPmuName => "the PMU name must be [A-Za-z0-9_.-]+",
            Self::NoTerms => "a PMU event needs at least one term, as in pmu/event=0x3c/",
            Self::BadTermName => "a PMU term name must be [A-Za-z0-9_-]+",
            Self::BadTermValue => {
                "a PMU term value must be decimal or 0x-prefixed hex, at most 64 bits"
            }
        }
    }
}

/// An event name that did not parse: the input and the reason.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseEventError {
    input: String,
    kind: ParseErrorKind,
}

impl ParseEventError {
    pub(crate) fn new(input: &str, kind: ParseErrorKind) -> Self {
        Self {
            input: input.to_owned(),
            kind,
        }
    }

    /// The text that failed to parse.
    pub fn input(&self) -> &str {
        &self.input
    }

    /// Why it failed.
    pub fn kind(&self) -> ParseErrorKind {
        self.kind
    }
}

impl fmt::Display for ParseEventError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "cannot parse event `{}`: {}",
            self.input,
            self.kind.describe()
        )
    }
}

impl std::error::Error for ParseEventError {}

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
    fn perf_spellings() {
        assert_eq!(p("cycles"), Event::Hardware(HardwareEvent::Cycles));
        assert_eq!(p("cpu-cycles"), Event::Hardware(HardwareEvent::Cycles));
        assert_eq!(
            p("instructions"),
            Event::Hardware(HardwareEvent::Instructions)
        );
        assert_eq!(
            p("branch-misses"),
            Event::Hardware(HardwareEvent::BranchMisses)
        );
        assert_eq!(
            p("branch-instructions"),
            Event::Hardware(HardwareEvent::Branches)
        );
        assert_eq!(p("ref-cycles"), Event::Hardware(HardwareEvent::RefCycles));
        assert_eq!(p("task-clock"), Event::Software(SoftwareEvent::TaskClock));
        assert_eq!(p("page-faults"), Event::Software(SoftwareEvent::PageFaults));
        assert_eq!(p("faults"), Event::Software(SoftwareEvent::PageFaults));
        assert_eq!(p("cs"), Event::Software(SoftwareEvent::ContextSwitches));
        assert_eq!(p("r00c0"), Event::Raw(0xc0));
        assert_eq!(p("rc0"), Event::Raw(0xc0));
        assert_eq!(
            p("L1-dcache-load-misses"),
            Event::Cache(CacheEvent::L1D_READ_MISS)
        );
        assert_eq!(p("LLC-load-misses"), Event::Cache(CacheEvent::LL_READ_MISS));
        assert_eq!(p("LLC-loads"), Event::Cache(CacheEvent::LL_READ_ACCESS));
        assert_eq!(
            p("dTLB-load-misses"),
            Event::Cache(CacheEvent::DTLB_READ_MISS)
        );
        assert_eq!(
            p("L1-icache-load-misses"),
            Event::Cache(CacheEvent::L1I_READ_MISS)
        );
        // perf's defaults and aliases.
        assert_eq!(p("LLC-misses"), Event::Cache(CacheEvent::LL_READ_MISS));
        assert_eq!(
            p("l1d-misses-load"),
            Event::Cache(CacheEvent::L1D_READ_MISS)
        );
        assert_eq!(
            p("branch-loads"),
            Event::Cache(CacheEvent::new(
                CacheId::Branch,
                CacheOp::Load,
                CacheResult::Access
            ))
        );
        assert_eq!(
            p("L1-dcache-speculative-read-miss"),
            Event::Cache(CacheEvent::new(
                CacheId::L1d,
                CacheOp::Prefetch,
                CacheResult::Miss
            ))
        );
        assert_eq!(p("  Cycles "), Event::Hardware(HardwareEvent::Cycles));
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

    #[test]
    fn modifiers_as_perf_sets_them() {
        // (letters, exclude user, kernel, hv, host, guest)
        for (letters, want) in [
            ("u", (false, true, true, false, false)),
            ("k", (true, false, true, false, false)),
            ("h", (true, true, false, false, false)),
            ("uk", (false, false, true, false, false)),
            ("ku", (false, false, true, false, false)),
            ("ukh", (false, false, false, false, false)),
            ("G", (false, false, false, true, false)),
            ("H", (false, false, false, false, true)),
            ("uH", (false, true, true, false, true)),
            ("kG", (true, false, true, true, false)),
        ] {
            let m = Modifiers::parse(letters).unwrap();
            let got = (
                m.exclude_user(),
                m.exclude_kernel(),
                m.exclude_hv(),
                m.exclude_host(),
                m.exclude_guest(),
            );
            assert_eq!(got, want, ":{letters}");
            // Display is canonical and parses back to the same modifiers.
            assert_eq!(
                Modifiers::parse(&m.to_string()).unwrap(),
                m,
                ":{letters} → {m}"
            );
        }
        assert_eq!(Modifiers::USER, Modifiers::parse("u").unwrap());
        assert_eq!(Modifiers::USER_KERNEL, Modifiers::parse("uk").unwrap());
        assert_eq!(Modifiers::parse("ku").unwrap().to_string(), "uk");
        for bad in ["", "x", "uz", "U"] {
            assert_eq!(
                Modifiers::parse(bad),
                Err(ParseErrorKind::BadModifier),
                "{bad:?}"
            );
        }
        for sampling in ["p", "pp", "uP", "S", "D"] {
            assert_eq!(
                Modifiers::parse(sampling),
                Err(ParseErrorKind::SamplingModifier),
                "{sampling:?}"
            );
        }
    }

    #[test]
    fn event_specs_parse_and_print_as_perf_writes_them() {
        let spec = |s: &str| s.parse::<EventSpec>().unwrap_or_else(|e| panic!("{e}"));
        let pf = Event::Software(SoftwareEvent::PageFaults);
        assert_eq!(spec("page-faults"), EventSpec::from(pf.clone()));
        assert_eq!(spec("faults:u").event, pf);
        assert_eq!(spec("faults:u").modifiers, Some(Modifiers::USER));
        assert_eq!(spec("page-faults:uk").to_string(), "page-faults:uk");
        assert_eq!(spec("cs:k").to_string(), "context-switches:k");
        assert_eq!(spec(" cycles:u ").to_string(), "cycles:u");
        // PMU events: the letters follow the closing slash, with or without a colon.
        let p = spec("cpu/event=0x3c/u");
        assert!(matches!(p.event, Event::Pmu(_)));
        assert_eq!(p.modifiers, Some(Modifiers::USER));
        assert_eq!(p.to_string(), "cpu/event=0x3c/u");
        assert_eq!(spec("cpu/event=0x3c/:uk").to_string(), "cpu/event=0x3c/uk");
        assert_eq!(spec("cpu/event=0x3c/").modifiers, None);
        let kind = |s: &str| s.parse::<EventSpec>().map(|_| ()).map_err(|e| e.kind());
        assert_eq!(kind("cycles:"), Err(ParseErrorKind::BadModifier));
        assert_eq!(kind("cycles:q"), Err(ParseErrorKind::BadModifier));
        assert_eq!(kind("cycles:pp"), Err(ParseErrorKind::SamplingModifier));
        assert_eq!(kind("cyclez:u"), Err(ParseErrorKind::UnknownName));
        assert_eq!(kind(":u"), Err(ParseErrorKind::Empty));
        assert_eq!(kind("cpu/event=0x3c/x"), Err(ParseErrorKind::BadModifier));
        let e = "cycles:pp".parse::<EventSpec>().unwrap_err();
        assert_eq!(e.input(), "cycles:pp");
        assert!(e.to_string().contains("do not apply to counting"), "{e}");
    }

    #[test]
    fn parse_errors() {
        let k = |s: &str| s.parse::<Event>().map(|_| ()).map_err(|e| e.kind());
        assert_eq!(k(""), Err(ParseErrorKind::Empty));
        assert_eq!(k("cyclez"), Err(ParseErrorKind::UnknownName));
        assert_eq!(k("r"), Err(ParseErrorKind::UnknownName));
        assert_eq!(k("r12345678901234567"), Err(ParseErrorKind::RawTooWide));
        assert_eq!(k("cycles:u"), Err(ParseErrorKind::Modifiers));
        assert_eq!(k("cpu/event=0x3c"), Err(ParseErrorKind::BadPmuSyntax));
        assert_eq!(k("cpu//"), Err(ParseErrorKind::NoTerms));
        assert_eq!(k("/event=1/"), Err(ParseErrorKind::BadPmuName));
        assert_eq!(k("../event=1/"), Err(ParseErrorKind::BadPmuName));
        assert_eq!(k("cpu/event=0xzz/"), Err(ParseErrorKind::BadTermValue));
        assert_eq!(
            k("cpu/event=0x10000000000000000/"),
            Err(ParseErrorKind::BadTermValue)
        );
        assert_eq!(k("cpu/ev ent=1/"), Err(ParseErrorKind::BadTermName));
        assert_eq!(k("cpu/a/b/"), Err(ParseErrorKind::BadPmuSyntax));
        assert_eq!(
            k("L1-dcache-load-misses-misses"),
            Err(ParseErrorKind::UnknownName)
        );
        assert_eq!(k("L1-dcache-"), Err(ParseErrorKind::UnknownName));
        let msg = "cyclez"
            .parse::<Event>()
            .map(|_| ())
            .unwrap_err()
            .to_string();
        assert!(msg.contains("cyclez") && msg.contains("rNNNN"), "{msg}");
    }

    mod prop {
        use super::super::*;
        use proptest::prelude::*;

        fn canonical_name() -> impl Strategy<Value = String> {
            prop_oneof![
                prop::sample::select(HardwareEvent::ALL.to_vec()).prop_map(|e| e.name().to_owned()),
                prop::sample::select(SoftwareEvent::ALL.to_vec()).prop_map(|e| e.name().to_owned()),
                (
                    prop::sample::select(CacheId::ALL.to_vec()),
                    prop::sample::select(CacheOp::ALL.to_vec()),
                    prop::sample::select(CacheResult::ALL.to_vec())
                )
                    .prop_map(|(i, o, r)| CacheEvent::new(i, o, r).to_string()),
                any::<u64>().prop_map(|v| format!("r{v:04x}")),
                (
                    "[a-z][a-z0-9_]{0,10}",
                    prop::collection::vec(
                        ("[a-z][a-z0-9_]{0,8}", prop::option::of(any::<u64>())),
                        1..5
                    )
                )
                    .prop_map(|(pmu, terms)| {
                        let terms: Vec<String> = terms
                            .into_iter()
                            .map(|(n, v)| match v {
                                Some(v) => format!("{n}={v:#04x}"),
                                None => n,
                            })
                            .collect();
                        format!("{pmu}/{}/", terms.join(","))
                    }),
            ]
        }

        proptest! {
            #![proptest_config(ProptestConfig {
                // Miri is slow and forbids the persistence file.
                cases: if cfg!(miri) { 8 } else { 256 },
                failure_persistence: None,
                ..ProptestConfig::default()
            })]

            #[test]
            fn name_event_name(name in canonical_name()) {
                let ev: Event = name.parse().map_err(|e| TestCaseError::fail(format!("{e}")))?;
                prop_assert_eq!(ev.to_string(), name);
            }

            #[test]
            fn event_name_event(
                hw in prop::sample::select(HardwareEvent::ALL.to_vec()),
                raw in any::<u64>(),
                id in prop::sample::select(CacheId::ALL.to_vec()),
                op in prop::sample::select(CacheOp::ALL.to_vec()),
                res in prop::sample::select(CacheResult::ALL.to_vec()),
            ) {
                for ev in [Event::Hardware(hw), Event::Raw(raw), Event::Cache(CacheEvent::new(id, op, res))] {
                    let back: Event = ev.to_string().parse().map_err(|e| TestCaseError::fail(format!("{e}")))?;
                    prop_assert_eq!(back, ev);
                }
            }

            #[test]
            fn never_panics(s in "\\PC{0,40}") {
                let _ = s.parse::<Event>();
            }

            #[test]
            fn never_panics_near_miss(s in "[a-zA-Z0-9/=,:_.-]{0,30}") {
                let _ = s.parse::<Event>();
            }
        }
    }
}
