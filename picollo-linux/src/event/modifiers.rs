//! perf's event modifiers (`:u`, `:k`, `:G`, …) and [`EventSpec`], an event with the
//! modifiers written after it, as `perf stat -e` takes it.

use core::fmt;
use core::str::FromStr;

use super::parse_error::{ParseErrorKind, ParseEventError};
use super::Event;

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
/// assert!(!m.exclude_user() && !m.exclude_kernel() && m.exclude_hv());
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

#[cfg(test)]
mod tests {
    use super::super::kind::SoftwareEvent;
    use super::*;

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
}
