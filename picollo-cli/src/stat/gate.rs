//! Regression gates: `--fail-if-slower [COUNTER=]PCT` fails the run when a command is worse
//! than its baseline by more than `PCT` on the lower bound of the ratio's interval — the
//! most favourable reading of the data still shows the regression.

use super::human::{ratio, ratio_in};
use super::model::Comparison;
use crate::error::{CliError, Result};

/// One threshold: a counter (all when `None`) and the allowed increase in percent.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Threshold {
    /// The counter it applies to; `None`: every counter.
    pub(crate) counter: Option<String>,
    /// Allowed increase of the mean, in percent.
    pub(crate) percent: f64,
}

/// Parses `5%`, `5`, `wall-time=5%`, `instructions=0.5%`.
///
/// # Errors
/// Not a non-negative number of percent.
pub(crate) fn parse(spec: &str) -> Result<Threshold> {
    let (counter, pct) = match spec.rsplit_once('=') {
        Some((c, p)) if !c.trim().is_empty() => (Some(c.trim().to_string()), p),
        _ => (None, spec),
    };
    let pct = pct.trim();
    let num = pct.strip_suffix('%').unwrap_or(pct).trim();
    let percent: f64 = num
        .parse()
        .ok()
        .filter(|p: &f64| p.is_finite() && *p >= 0.0)
        .ok_or_else(|| {
            CliError::new(format!(
                "--fail-if-slower {spec:?}: give a percentage such as 5% or wall-time=5%"
            ))
        })?;
    Ok(Threshold { counter, percent })
}

/// The regressions, one phrase each; empty when every gate passes.
///
/// # Errors
/// A threshold names a counter that no comparison has.
pub(crate) fn check(
    thresholds: &[Threshold],
    comparisons: &[Comparison],
    label: impl Fn(usize) -> String,
) -> Result<Vec<String>> {
    let mut out = Vec::new();
    for t in thresholds {
        if let Some(name) = &t.counter {
            if !comparisons.iter().any(|c| &c.counter == name) {
                let mut have: Vec<&str> = comparisons.iter().map(|c| c.counter.as_str()).collect();
                have.dedup();
                return Err(CliError::new(format!(
                    "--fail-if-slower {name}={}%: `{name}` was not measured on both sides \
                     (measured: {})",
                    t.percent,
                    have.join(", ")
                )));
            }
        }
    }
    for c in comparisons {
        // The strictest threshold that applies to this counter.
        let limit = thresholds
            .iter()
            .filter(|t| t.counter.as_ref().is_none_or(|n| n == &c.counter))
            .map(|t| t.percent)
            .fold(None, |a: Option<f64>, p| Some(a.map_or(p, |a| a.min(p))));
        let (Some(limit), Some(r)) = (limit, c.ratio) else {
            continue;
        };
        if r.low > 1.0 + limit / 100.0 {
            out.push(format!(
                "`{}` {} is {}× the baseline `{}` (95% CI {}–{}), over the {limit}% allowed",
                label(c.command),
                c.counter,
                ratio(r.ratio),
                c.baseline_label,
                ratio_in(r.low, r.ratio),
                ratio_in(r.high, r.ratio)
            ));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stat::model::BaselineRef;
    use crate::stat::stats::Ratio;

    #[test]
    fn thresholds_parse() {
        assert_eq!(
            parse("5%").unwrap(),
            Threshold {
                counter: None,
                percent: 5.0
            }
        );
        assert_eq!(
            parse("wall-time=2.5").unwrap(),
            Threshold {
                counter: Some("wall-time".into()),
                percent: 2.5
            }
        );
        assert!(parse("-1%").is_err());
        assert!(parse("fast").is_err());
    }

    #[test]
    fn gates_on_the_lower_bound() {
        let c = |low: f64, counter: &str| Comparison {
            baseline: BaselineRef::Here(0),
            baseline_label: "a".into(),
            command: 1,
            counter: counter.into(),
            ratio: Some(Ratio {
                ratio: low + 0.1,
                low,
                high: low + 0.2,
            }),
            test: None,
            runs: (10, 10),
        };
        let all = [parse("5%").unwrap()];
        let label = |_| "b".to_string();
        assert!(check(&all, &[c(1.04, "wall-time")], label)
            .unwrap()
            .is_empty());
        let r = check(&all, &[c(1.06, "wall-time")], label).unwrap();
        assert_eq!(r.len(), 1);
        assert!(
            r[0].contains("`b` wall-time is 1.16× the baseline `a`"),
            "{}",
            r[0]
        );
        let only_wall = [parse("wall-time=5%").unwrap()];
        assert!(check(
            &only_wall,
            &[c(1.5, "task-clock"), c(1.0, "wall-time")],
            label
        )
        .unwrap()
        .is_empty());
        assert!(check(
            &[parse("cycles=1%").unwrap()],
            &[c(1.0, "wall-time")],
            label
        )
        .is_err());
    }
}
