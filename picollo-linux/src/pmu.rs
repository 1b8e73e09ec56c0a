//! Dynamic PMUs from sysfs: `/sys/bus/event_source/devices/<pmu>/{type,format,events}`.
//!
//! A `pmu/event=0x3c,umask=0x00/` event names its PMU's directory. The PMU's `type` file gives
//! `perf_event_attr.type`; each `format/<term>` file says where a term's bits go (for example
//! `config:0-7`, `config:8-15,32-35`, `config1:0-63`); each `events/<alias>` file spells a named
//! event as terms (`event=0x3c`, or `event=0xc0,umask=0x00`).

use core::fmt;
use core::str::FromStr;
use std::path::{Path, PathBuf};

use crate::error::PerfError;
use crate::event::{self, EventConfig, PmuEvent, ResolvePmu};

/// Where the kernel lists event sources.
pub(crate) const SYSFS_EVENT_SOURCES: &str = "/sys/bus/event_source/devices";

/// Which `perf_event_attr` word a format field fills.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ConfigWord {
    /// `config`.
    Config,
    /// `config1`.
    Config1,
    /// `config2`.
    Config2,
    /// `config3`.
    Config3,
}

impl ConfigWord {
    /// The index into `[config, config1, config2, config3]`.
    pub const fn index(self) -> usize {
        match self {
            Self::Config => 0,
            Self::Config1 => 1,
            Self::Config2 => 2,
            Self::Config3 => 3,
        }
    }

    fn from_name(s: &str) -> Option<Self> {
        match s {
            "config" => Some(Self::Config),
            "config1" => Some(Self::Config1),
            "config2" => Some(Self::Config2),
            "config3" => Some(Self::Config3),
            _ => None,
        }
    }
}

/// Why a format file did not parse, or a value did not fit its field.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum FormatError {
    /// The text is not `configN:lo-hi[,lo-hi…]`.
    Syntax(String),
    /// The value needs more bits than the field has.
    ValueTooWide {
        /// The value.
        value: u64,
        /// The field's width in bits.
        width: u32,
    },
}

impl fmt::Display for FormatError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Syntax(s) => write!(
                f,
                "format `{s}` is not of the form config:lo-hi[,lo-hi] (config1, config2, \
                 config3 also allowed)"
            ),
            Self::ValueTooWide { value, width } => {
                write!(f, "value {value:#x} does not fit in a {width}-bit field")
            }
        }
    }
}

impl std::error::Error for FormatError {}

/// A parsed `format/<term>` file: the config word and the bit ranges, low bits first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct FormatField {
    word: ConfigWord,
    /// Inclusive `(lo, hi)` bit ranges, each within 0..=63, in the order the file lists them.
    ranges: Vec<(u8, u8)>,
}

impl FormatField {
    #[cfg(test)]
    /// The word this field fills.
    pub(crate) fn word(&self) -> ConfigWord {
        self.word
    }

    #[cfg(test)]
    /// The inclusive bit ranges, in the order values fill them (low value bits first).
    pub(crate) fn ranges(&self) -> &[(u8, u8)] {
        &self.ranges
    }

    /// The total width in bits.
    pub(crate) fn width(&self) -> u32 {
        self.ranges
            .iter()
            .map(|&(lo, hi)| u32::from(hi - lo) + 1)
            .sum()
    }

    /// ORs `value` into `words[self.word()]`, spreading its bits over the ranges, low bits
    /// first. Fails when `value` needs more bits than the field has.
    pub(crate) fn place(&self, value: u64, words: &mut [u64; 4]) -> Result<(), FormatError> {
        let width = self.width();
        if width < 64 && value >> width != 0 {
            return Err(FormatError::ValueTooWide { value, width });
        }
        let mut v = value;
        let w = &mut words[self.word.index()];
        for &(lo, hi) in &self.ranges {
            let n = u32::from(hi - lo) + 1;
            let mask = if n >= 64 { u64::MAX } else { (1u64 << n) - 1 };
            *w |= (v & mask) << lo;
            v = if n >= 64 { 0 } else { v >> n };
        }
        Ok(())
    }
}

impl FromStr for FormatField {
    type Err = FormatError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let s = text.trim();
        let bad = || FormatError::Syntax(s.to_owned());
        let (word, bits) = s.split_once(':').ok_or_else(bad)?;
        let word = ConfigWord::from_name(word.trim()).ok_or_else(bad)?;
        let mut ranges = Vec::new();
        for part in bits.split(',') {
            let part = part.trim();
            let (lo, hi) = match part.split_once('-') {
                Some((lo, hi)) => (lo, hi),
                None => (part, part),
            };
            let lo: u8 = lo.trim().parse().map_err(|_| bad())?;
            let hi: u8 = hi.trim().parse().map_err(|_| bad())?;
            if lo > hi || hi > 63 {
                return Err(bad());
            }
            ranges.push((lo, hi));
        }
        Ok(Self { word, ranges })
    }
}

/// A PMU that the kernel registered, from its sysfs directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PmuInfo {
    /// The directory name (`cpu`, `cpu_core`, `cpu_atom`, `software`, `msr`, …).
    pub name: String,
    /// Its `perf_event_attr.type`.
    pub type_: u32,
}

/// A view of the sysfs event-source directory; tests point it at a fake tree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sysfs {
    root: PathBuf,
}

impl Default for Sysfs {
    fn default() -> Self {
        Self::system()
    }
}

impl Sysfs {
    /// `/sys/bus/event_source/devices`.
    pub fn system() -> Self {
        Self::new(SYSFS_EVENT_SOURCES)
    }

    /// A tree rooted elsewhere (laid out like `/sys/bus/event_source/devices`).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Every registered PMU with a readable `type`, sorted by name. Empty when the directory
    /// cannot be read.
    pub fn pmus(&self) -> Vec<PmuInfo> {
        let Ok(dir) = std::fs::read_dir(&self.root) else {
            return Vec::new();
        };
        let mut out: Vec<PmuInfo> = dir
            .filter_map(Result::ok)
            .filter_map(|e| {
                let name = e.file_name().into_string().ok()?;
                let type_ = read_trimmed(&e.path().join("type")).ok()?.parse().ok()?;
                Some(PmuInfo { name, type_ })
            })
            .collect();
        out.sort_by(|a, b| a.name.cmp(&b.name));
        out
    }

    /// Reads a small file under `<root>/<pmu>/`, trimmed. `None` if absent or unreadable.
    pub(crate) fn read_attr(&self, pmu: &str, file: &str) -> Option<String> {
        read_trimmed(&self.root.join(pmu).join(file)).ok()
    }

    /// The PMU's `type`, or `None` when the PMU is not registered.
    pub fn pmu_type(&self, pmu: &str) -> Option<u32> {
        self.read_attr(pmu, "type")?.parse().ok()
    }

    /// Resolves a `pmu/…/` event to its `perf_event_attr` type and config words.
    ///
    /// Terms are, in order of precedence: `config`/`config1`/`config2`/`config3` (set the word
    /// directly), format fields (`format/<term>`; a bare term sets 1), and event aliases
    /// (`events/<term>`, bare only), whose terms are applied in turn.
    pub fn resolve(&self, ev: &PmuEvent) -> Result<EventConfig, PerfError> {
        let pmu = ev.pmu();
        let Some(type_) = self.pmu_type(pmu) else {
            return Err(PerfError::Unsupported {
                event: ev.to_string(),
                errno: libc::ENOENT,
            });
        };
        let mut words = [0u64; 4];
        for t in ev.terms() {
            self.apply_term(ev, t.name(), t.value(), &mut words, true)?;
        }
        if !crate::sys::HAS_CONFIG3 && words[3] != 0 {
            return Err(PerfError::Pmu {
                event: ev.to_string(),
                reason: "it sets config3, which this build's perf_event_attr for this \
                         architecture does not have"
                    .to_owned(),
            });
        }
        Ok(EventConfig {
            type_,
            config: words[0],
            config1: words[1],
            config2: words[2],
            config3: words[3],
        })
    }

    fn apply_term(
        &self,
        ev: &PmuEvent,
        name: &str,
        value: Option<u64>,
        words: &mut [u64; 4],
        allow_alias: bool,
    ) -> Result<(), PerfError> {
        let err = |reason: String| PerfError::Pmu {
            event: ev.to_string(),
            reason,
        };
        let pmu = ev.pmu();
        if let Some(w) = ConfigWord::from_name(name) {
            let v = value.ok_or_else(|| err(format!("`{name}` needs a value")))?;
            words[w.index()] |= v;
            return Ok(());
        }
        let format_path = self.root.join(pmu).join("format").join(name);
        match read_trimmed(&format_path) {
            Ok(text) => {
                let field: FormatField = text
                    .parse()
                    .map_err(|e: FormatError| err(format!("{}: {e}", format_path.display())))?;
                return field
                    .place(value.unwrap_or(1), words)
                    .map_err(|e| err(format!("term `{name}`: {e}")));
            }
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(err(format!("{}: {e}", format_path.display())));
            }
            Err(_) => {}
        }
        if allow_alias && value.is_none() {
            let alias_path = self.root.join(pmu).join("events").join(name);
            if let Ok(text) = read_trimmed(&alias_path) {
                for part in text.split(',').filter(|p| !p.trim().is_empty()) {
                    let term = event::parse_term(part).map_err(|_| {
                        err(format!("{}: cannot parse `{part}`", alias_path.display()))
                    })?;
                    self.apply_term(ev, term.name(), term.value(), words, false)?;
                }
                return Ok(());
            }
        }
        let known = self.format_names(pmu);
        Err(err(format!(
            "`{name}` is neither a format field of `{pmu}` ({}) nor one of its events",
            if known.is_empty() {
                "it has none".to_owned()
            } else {
                known.join(", ")
            }
        )))
    }

    /// The names of a PMU's format fields, sorted.
    pub(crate) fn format_names(&self, pmu: &str) -> Vec<String> {
        let Ok(dir) = std::fs::read_dir(self.root.join(pmu).join("format")) else {
            return Vec::new();
        };
        let mut v: Vec<String> = dir
            .filter_map(Result::ok)
            .filter_map(|e| e.file_name().into_string().ok())
            .collect();
        v.sort();
        v
    }

    /// The names of a PMU's event aliases (`events/`, without `.scale`/`.unit` files), sorted.
    pub fn event_names(&self, pmu: &str) -> Vec<String> {
        let Ok(dir) = std::fs::read_dir(self.root.join(pmu).join("events")) else {
            return Vec::new();
        };
        let mut v: Vec<String> = dir
            .filter_map(Result::ok)
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|n| !n.contains('.'))
            .collect();
        v.sort();
        v
    }
}

/// The resolver sessions use: [`Sysfs::resolve`].
impl ResolvePmu for Sysfs {
    type Error = PerfError;

    fn resolve_pmu(&self, event: &PmuEvent) -> Result<EventConfig, PerfError> {
        self.resolve(event)
    }
}

fn read_trimmed(path: &Path) -> std::io::Result<String> {
    std::fs::read_to_string(path).map(|s| s.trim().to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::Event;

    #[test]
    fn format_parsing() {
        let f: FormatField = "config:0-7\n".parse().unwrap();
        assert_eq!(
            (f.word(), f.ranges(), f.width()),
            (ConfigWord::Config, &[(0, 7)][..], 8)
        );
        let f: FormatField = "config1:0-63".parse().unwrap();
        assert_eq!((f.word(), f.width()), (ConfigWord::Config1, 64));
        let f: FormatField = "config:21".parse().unwrap();
        assert_eq!(f.ranges(), &[(21, 21)]);
        for bad in [
            "",
            "config",
            "config:",
            "cfg:0-7",
            "config:7-0",
            "config:0-64",
            "config:a-b",
        ] {
            assert!(bad.parse::<FormatField>().is_err(), "{bad}");
        }
    }

    #[test]
    fn placing_values() {
        let mut w = [0u64; 4];
        let f: FormatField = "config:8-15".parse().unwrap();
        f.place(0xff, &mut w).unwrap();
        assert_eq!(w[0], 0xff00);
        assert_eq!(
            f.place(0x100, &mut w),
            Err(FormatError::ValueTooWide {
                value: 0x100,
                width: 8
            })
        );
        let f: FormatField = "config2:0-63".parse().unwrap();
        f.place(u64::MAX, &mut w).unwrap();
        assert_eq!(w[2], u64::MAX);
        // Split field: low 8 bits at 0-7, next 4 at 32-35 (Intel's `event`).
        let mut w = [0u64; 4];
        let f: FormatField = "config:0-7,32-35".parse().unwrap();
        f.place(0x1c0, &mut w).unwrap();
        assert_eq!(w[0], 0xc0 | (0x1 << 32));
    }

    /// A throwaway sysfs tree under the temp dir.
    struct FakeSysfs(PathBuf);

    impl FakeSysfs {
        fn new(tag: &str) -> Self {
            let dir = std::env::temp_dir()
                .join(format!("picollo-linux-sysfs-{tag}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            Self(dir)
        }
        fn file(&self, rel: &str, text: &str) {
            let p = self.0.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
    }

    impl Drop for FakeSysfs {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    #[cfg_attr(miri, ignore = "miri isolation forbids the file system")]
    fn resolves_intel_like_cpu_pmu() {
        let fs = FakeSysfs::new("cpu");
        fs.file("cpu/type", "4\n");
        fs.file("cpu/format/event", "config:0-7\n");
        fs.file("cpu/format/umask", "config:8-15\n");
        fs.file("cpu/format/edge", "config:18\n");
        fs.file("cpu/format/cmask", "config:24-31\n");
        fs.file("cpu/format/ldlat", "config1:0-15\n");
        fs.file("cpu/events/cpu-cycles", "event=0x3c\n");
        fs.file("cpu/events/mem-loads", "event=0xcd,umask=0x1,ldlat=3\n");
        fs.file("cpu/events/mem-loads.unit", "ns\n");
        let sysfs = Sysfs::new(&fs.0);

        let resolve = |s: &str| {
            let Event::Pmu(p) = s.parse::<Event>().unwrap() else {
                panic!("{s} is not a PMU event")
            };
            sysfs.resolve(&p)
        };
        let c = resolve("cpu/event=0x3c,umask=0x00/").unwrap();
        assert_eq!((c.type_, c.config, c.config1), (4, 0x3c, 0));
        let c = resolve("cpu/event=0xc0,umask=0x1,edge,cmask=2/").unwrap();
        assert_eq!(c.config, 0xc0 | 0x100 | (1 << 18) | (2 << 24));
        let c = resolve("cpu/mem-loads/").unwrap();
        assert_eq!((c.config, c.config1), (0xcd | 0x100, 3));
        let c = resolve("cpu/cpu-cycles,cmask=1/").unwrap();
        assert_eq!(c.config, 0x3c | (1 << 24));
        let c = resolve("cpu/config=0x1234,config2=7/").unwrap();
        assert_eq!((c.config, c.config2), (0x1234, 7));

        let e = resolve("cpu/event=0x100/").unwrap_err();
        assert!(e.to_string().contains("does not fit"), "{e}");
        let e = resolve("cpu/bogus=1/").unwrap_err();
        assert!(e.to_string().contains("cmask, edge, event"), "{e}");
        let e = resolve("nopmu/event=1/").unwrap_err();
        assert!(
            matches!(
                e,
                PerfError::Unsupported {
                    errno: libc::ENOENT,
                    ..
                }
            ),
            "{e}"
        );

        // Through the resolver seam: `Event::config_with` hands `pmu/…/` events to the
        // `Sysfs`, and the other kinds need no resolver.
        let event: Event = "cpu/mem-loads/".parse().unwrap();
        let c = event.config_with(&sysfs).unwrap();
        assert_eq!((c.type_, c.config, c.config1), (4, 0xcd | 0x100, 3));
        let event: Event = "nopmu/event=1/".parse().unwrap();
        assert!(matches!(
            event.config_with(&sysfs),
            Err(PerfError::Unsupported { .. })
        ));
        let cycles: Event = "cycles".parse().unwrap();
        assert_eq!(
            cycles.config_with(&sysfs).unwrap(),
            cycles
                .config_with(&|_: &PmuEvent| Err::<EventConfig, ()>(()))
                .unwrap()
        );

        assert_eq!(
            sysfs.pmus(),
            vec![PmuInfo {
                name: "cpu".into(),
                type_: 4
            }]
        );
        assert_eq!(sysfs.event_names("cpu"), vec!["cpu-cycles", "mem-loads"]);
    }

    #[test]
    #[cfg_attr(miri, ignore = "miri isolation forbids the file system")]
    fn resolves_real_msr_pmu_when_present() {
        let sysfs = Sysfs::system();
        let Some(type_) = sysfs.pmu_type("msr") else {
            crate::skip::hardware(
                "resolves_real_msr_pmu_when_present",
                &format!("no msr PMU in {SYSFS_EVENT_SOURCES} (a VM without it)"),
            );
            return;
        };
        let Event::Pmu(p) = "msr/tsc/".parse::<Event>().unwrap() else {
            panic!("not a PMU event")
        };
        let c = sysfs.resolve(&p).unwrap();
        assert_eq!((c.type_, c.config), (type_, 0));
    }
}
