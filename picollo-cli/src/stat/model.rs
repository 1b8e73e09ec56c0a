//! What a `stat` run produced, kept per run: the benchmarks (commands), each counter's
//! values in run order, and the comparisons of every command with its baseline.

use super::stats::{self, MannWhitney, Ratio, Summary};

/// The name of the wall-time series (from the exec to the exit, in ns).
pub(crate) const WALL_TIME: &str = "wall-time";

/// What a counter measures, for units and wording.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Nanoseconds: wall time and the clock events. Lower is faster.
    Time,
    /// Events counted: faults, cycles, instructions, misses.
    Count,
}

impl Kind {
    /// The kind of the counter called `name`.
    pub(crate) fn of(name: &str) -> Kind {
        let base = name.split(':').next().unwrap_or(name);
        if base == WALL_TIME || base.ends_with("-clock") || base.ends_with("-time") {
            Kind::Time
        } else {
            Kind::Count
        }
    }

    /// The unit of the raw values, as exported.
    pub(crate) fn unit(self) -> &'static str {
        match self {
            Kind::Time => "ns",
            Kind::Count => "count",
        }
    }
}

/// One counter of one command: a value per measured run (`None`: not counted in that run).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Series {
    /// The counter's name (`wall-time`, `task-clock`, `cycles`, …).
    pub(crate) name: String,
    /// Per measured run, in run order.
    pub(crate) values: Vec<Option<u64>>,
    /// Runs in which the value is a scaled estimate (the counter was multiplexed).
    pub(crate) scaled_runs: u32,
}

impl Series {
    /// An empty series.
    pub(crate) fn new(name: &str) -> Self {
        Series {
            name: name.to_string(),
            values: Vec::new(),
            scaled_runs: 0,
        }
    }

    /// The kind of counter.
    pub(crate) fn kind(&self) -> Kind {
        Kind::of(&self.name)
    }

    /// The counted values, in run order.
    pub(crate) fn counted(&self) -> Vec<f64> {
        self.values.iter().flatten().map(|&v| v as f64).collect()
    }

    /// Runs where the counter was not counted.
    pub(crate) fn missed(&self) -> usize {
        self.values.iter().filter(|v| v.is_none()).count()
    }

    /// The summary of the counted values.
    pub(crate) fn summary(&self) -> Option<Summary> {
        let counted: Vec<u64> = self.values.iter().flatten().copied().collect();
        Summary::of(&counted)
    }

    /// Run numbers (0-based, among all measured runs) of the statistical outliers.
    pub(crate) fn outliers(&self) -> Vec<usize> {
        let runs: Vec<usize> = (0..self.values.len())
            .filter(|&i| self.values[i].is_some())
            .collect();
        stats::outliers(&self.counted())
            .into_iter()
            .map(|i| runs[i])
            .collect()
    }
}

/// One command and what was measured on it.
#[derive(Clone, Debug, PartialEq, Default)]
pub(crate) struct Bench {
    /// The command as the user wrote it (parameters substituted).
    pub(crate) command: String,
    /// What was executed.
    pub(crate) argv: Vec<String>,
    /// Parameter values of a scan (`-P`, `-L`), in order.
    pub(crate) parameters: Vec<(String, String)>,
    /// Wall time first, then every counter in the order they were opened.
    pub(crate) series: Vec<Series>,
    /// Per measured run: the exit code (`None`: killed by a signal).
    pub(crate) exit_codes: Vec<Option<i32>>,
    /// Per measured run: user CPU time of the command and its waited-for children, in ns.
    pub(crate) user_ns: Vec<u64>,
    /// Per measured run: system CPU time, in ns.
    pub(crate) system_ns: Vec<u64>,
}

impl Bench {
    /// A benchmark with no runs yet.
    pub(crate) fn new(
        command: String,
        argv: Vec<String>,
        parameters: Vec<(String, String)>,
    ) -> Self {
        Bench {
            command,
            argv,
            parameters,
            series: vec![Series::new(WALL_TIME)],
            ..Bench::default()
        }
    }

    /// Measured runs.
    pub(crate) fn runs(&self) -> usize {
        self.exit_codes.len()
    }

    /// The series called `name`.
    pub(crate) fn series(&self, name: &str) -> Option<&Series> {
        self.series.iter().find(|s| s.name == name)
    }

    /// Records one run: its wall time, its counters (`(name, value, scaled)`) and CPU times.
    pub(crate) fn record(
        &mut self,
        wall_ns: u64,
        counts: &[(String, Option<u64>, bool)],
        exit_code: Option<i32>,
        user_ns: u64,
        system_ns: u64,
    ) {
        let run = self.runs();
        self.exit_codes.push(exit_code);
        self.user_ns.push(user_ns);
        self.system_ns.push(system_ns);
        self.series[0].values.push(Some(wall_ns));
        for (name, value, scaled) in counts {
            let i = match self.series.iter().position(|s| &s.name == name) {
                Some(i) => i,
                None => {
                    let mut s = Series::new(name);
                    s.values = vec![None; run];
                    self.series.push(s);
                    self.series.len() - 1
                }
            };
            let s = &mut self.series[i];
            s.values.push(*value);
            if *scaled {
                s.scaled_runs += 1;
            }
        }
        for s in &mut self.series {
            s.values.resize(run + 1, None);
        }
    }

    /// The command with its parameters, for display: `sleep 0.1` or `sleep {t}` (t = 0.1)
    /// is shown as the substituted command.
    pub(crate) fn label(&self) -> String {
        self.command.clone()
    }
}

/// A whole `stat` run, as measured or as loaded from a saved file.
#[derive(Clone, Debug, PartialEq, Default)]
pub(crate) struct Saved {
    /// When the measurement started, in ms since the Unix epoch.
    pub(crate) started_unix_ms: i64,
    /// Warm-up runs per command.
    pub(crate) warmup: u32,
    /// Whether the commands' runs were interleaved (ABCABC…).
    pub(crate) interleaved: bool,
    /// The commands.
    pub(crate) benches: Vec<Bench>,
}

/// Where a comparison's baseline comes from.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum BaselineRef {
    /// A command of this run (its index).
    Here(usize),
    /// A command of a saved run (`--baseline FILE`): the file and the command's index in it.
    File(String, usize),
}

/// One command against its baseline, on one counter.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Comparison {
    /// The baseline.
    pub(crate) baseline: BaselineRef,
    /// The baseline command's label.
    pub(crate) baseline_label: String,
    /// The compared command (index in this run).
    pub(crate) command: usize,
    /// The counter.
    pub(crate) counter: String,
    /// `mean(command) / mean(baseline)` with its bootstrap interval; `None` when the
    /// baseline's mean is 0 or a side has no value.
    pub(crate) ratio: Option<Ratio>,
    /// The Mann–Whitney test of the baseline's values against the command's.
    pub(crate) test: Option<MannWhitney>,
    /// Values on each side: the baseline's, the command's.
    pub(crate) runs: (usize, usize),
}

/// The verdict of a comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Lower values (faster, fewer events), significantly.
    Lower,
    /// Higher values (slower, more events), significantly.
    Higher,
    /// No significant difference.
    Same,
    /// No ratio to compute.
    NotComparable,
}

impl Verdict {
    /// The exported name.
    pub(crate) fn name(self, kind: Kind) -> &'static str {
        match (self, kind) {
            (Verdict::Lower, Kind::Time) => "faster",
            (Verdict::Higher, Kind::Time) => "slower",
            (Verdict::Lower, Kind::Count) => "fewer",
            (Verdict::Higher, Kind::Count) => "more",
            (Verdict::Same, _) => "no significant difference",
            (Verdict::NotComparable, _) => "not comparable",
        }
    }
}

impl Comparison {
    /// Compares `command` (in `benches`) with `base` on `counter`.
    pub(crate) fn new(
        baseline: BaselineRef,
        base: &Bench,
        command: usize,
        bench: &Bench,
        counter: &str,
    ) -> Option<Comparison> {
        let a = base.series(counter)?.counted();
        let b = bench.series(counter)?.counted();
        Some(Comparison {
            baseline,
            baseline_label: base.label(),
            command,
            counter: counter.to_string(),
            ratio: stats::ratio_of_means(&a, &b),
            test: stats::mann_whitney(&a, &b),
            runs: (a.len(), b.len()),
        })
    }

    /// Whether the runs are too few for any difference to be significant: the smallest
    /// two-sided p-value of the test, 2 / C(n₁ + n₂, n₁), is not below α.
    pub(crate) fn too_few_runs(&self) -> bool {
        let (n1, n2) = self.runs;
        let arrangements: f64 = (1..=n1.min(n2))
            .map(|i| (n1.max(n2) + i) as f64 / i as f64)
            .product();
        2.0 / arrangements >= stats::ALPHA
    }

    /// Significant: the Mann–Whitney p-value is below α and the interval excludes 1.
    pub(crate) fn verdict(&self) -> Verdict {
        let (Some(r), Some(t)) = (self.ratio, self.test) else {
            return Verdict::NotComparable;
        };
        if t.p < stats::ALPHA && r.low > 1.0 {
            Verdict::Higher
        } else if t.p < stats::ALPHA && r.high < 1.0 {
            Verdict::Lower
        } else {
            Verdict::Same
        }
    }
}

/// Every comparison: each command of `here` against `baselines` (a saved run's commands,
/// matched by command text, or its only command), or else against `here`'s first command.
pub(crate) fn compare(here: &Saved, baselines: Option<(&str, &Saved)>) -> Vec<Comparison> {
    let mut out = Vec::new();
    for (i, bench) in here.benches.iter().enumerate() {
        let (bref, base) = match baselines {
            Some((file, saved)) => {
                let j = saved
                    .benches
                    .iter()
                    .position(|b| b.command == bench.command)
                    .or((saved.benches.len() == 1).then_some(0));
                match j {
                    Some(j) => (BaselineRef::File(file.to_string(), j), &saved.benches[j]),
                    None => continue,
                }
            }
            None if i == 0 => continue,
            None => (BaselineRef::Here(0), &here.benches[0]),
        };
        for s in &bench.series {
            if let Some(c) = Comparison::new(bref.clone(), base, i, bench, &s.name) {
                out.push(c);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_and_runs_stay_aligned() {
        assert_eq!(Kind::of("wall-time"), Kind::Time);
        assert_eq!(Kind::of("task-clock:u"), Kind::Time);
        assert_eq!(Kind::of("instructions"), Kind::Count);
        let mut b = Bench::new("x".into(), vec![], vec![]);
        b.record(10, &[("task-clock".into(), Some(5), false)], Some(0), 1, 2);
        // A counter first seen on the second run, one missing on it.
        b.record(12, &[("cycles".into(), Some(7), true)], None, 1, 2);
        assert_eq!(b.runs(), 2);
        assert_eq!(b.series("wall-time").unwrap().values, [Some(10), Some(12)]);
        assert_eq!(b.series("task-clock").unwrap().values, [Some(5), None]);
        let cycles = b.series("cycles").unwrap();
        assert_eq!(
            (cycles.values.clone(), cycles.scaled_runs),
            (vec![None, Some(7)], 1)
        );
        assert_eq!(b.series("task-clock").unwrap().missed(), 1);
        let mut c = Comparison::new(BaselineRef::Here(0), &b, 1, &b, "wall-time").unwrap();
        assert!(c.too_few_runs(), "2 and 2 runs");
        c.runs = (4, 4);
        assert!(!c.too_few_runs(), "2/70 < 0.05");
        c.runs = (3, 3);
        assert!(c.too_few_runs(), "2/20 = 0.1");
    }
}
