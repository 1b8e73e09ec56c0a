//! perf's spellings of event names: parsing `cycles`, `L1-dcache-load-misses`, `r00c0` and
//! `cpu/event=0x3c,umask=0x00/` into an [`Event`], as `perf stat -e` accepts them.

use core::str::FromStr;

use super::kind::{
    valid_pmu_name, CacheEvent, CacheId, CacheOp, CacheResult, HardwareEvent, PmuEvent, PmuTerm,
    SoftwareEvent,
};
use super::parse_error::{ParseErrorKind, ParseEventError};
use super::Event;

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
