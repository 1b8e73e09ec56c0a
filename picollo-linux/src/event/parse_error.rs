//! Why an event name did not parse: [`ParseEventError`] (the input and a
//! [`ParseErrorKind`]). A leaf: the event model, the spellings and the modifiers all return it.

use core::fmt;

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
    /// perf modifiers (`cycles:u`) given to [`Event`](crate::event::Event)'s parser: they belong to
    /// an [`EventSpec`](crate::event::EventSpec), which
    /// [`crate::CounterSessionBuilder::event_name`] parses.
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
