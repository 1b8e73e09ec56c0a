//! The saved form of a `stat` run: the JSON of `--save` and `--export-json`, read back by
//! `--baseline`, `--load` and `picollo plot run.json`, as typed structs.
//!
//! The schema (`"schema": "picollo-stat"`, `"version": 1`) is documented in
//! `picollo-cli/README.md`. Each result carries hyperfine's `--export-json` fields (`command`,
//! `mean`, `stddev`, `median`, `user`, `system`, `min`, `max`, `times`, `exit_codes`,
//! `parameters`, all times in seconds, of the wall time) so scripts written for hyperfine read
//! it unchanged, and picollo's own per-run values in `counters`. Numbers are JSON numbers:
//! per-run values are integers in the counter's unit (`ns` or `count`), `null` where a
//! counter was not counted in a run.
//!
//! What is written ([`RunDoc`]) holds the run and the figures computed from it; what is read
//! ([`SavedFile`]) is the run alone, and also accepts hyperfine's files (their `times` become
//! the wall time).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize, Serializer};

use super::model::{BaselineRef, Bench, Comparison, Kind, Saved, Series, WALL_TIME};
use super::stats::{self, Summary};
use crate::error::{CliError, Result};
use crate::json;

/// The schema name in every saved file.
pub(crate) const SCHEMA: &str = "picollo-stat";
/// The schema version this build writes and reads.
pub(crate) const VERSION: u64 = 1;

/// A whole run as written.
#[derive(Serialize)]
struct RunDoc<'a> {
    schema: &'static str,
    version: u64,
    started_unix_ms: i64,
    warmup: u32,
    interleaved: bool,
    results: Vec<ResultDoc<'a>>,
    comparisons: Vec<ComparisonDoc<'a>>,
}

/// One command as written: hyperfine's fields (wall time, in seconds), then picollo's.
#[derive(Serialize)]
struct ResultDoc<'a> {
    command: String,
    mean: Option<f64>,
    stddev: Option<f64>,
    median: Option<f64>,
    user: Option<f64>,
    system: Option<f64>,
    min: Option<f64>,
    max: Option<f64>,
    times: Vec<Option<f64>>,
    exit_codes: &'a [Option<i32>],
    #[serde(serialize_with = "in_order")]
    parameters: &'a [(String, String)],
    argv: &'a [String],
    runs: usize,
    user_ns: &'a [u64],
    system_ns: &'a [u64],
    counters: Vec<CounterDoc<'a>>,
}

/// One counter of one command as written: its per-run values and their summary.
#[derive(Serialize)]
struct CounterDoc<'a> {
    name: &'a str,
    unit: &'static str,
    values: &'a [Option<u64>],
    scaled_runs: u32,
    mean: Option<f64>,
    stddev: Option<f64>,
    median: Option<u64>,
    min: Option<u64>,
    max: Option<u64>,
    p90: Option<u64>,
    p99: Option<u64>,
    outliers: Vec<usize>,
}

/// One comparison as written, with the method's constants.
#[derive(Serialize)]
struct ComparisonDoc<'a> {
    command: usize,
    command_text: String,
    baseline: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    baseline_file: Option<&'a str>,
    baseline_text: &'a str,
    counter: &'a str,
    ratio: Option<f64>,
    ci_low: Option<f64>,
    ci_high: Option<f64>,
    confidence: f64,
    bootstrap_resamples: usize,
    bootstrap_seed: u64,
    test: &'static str,
    u: Option<f64>,
    p_value: Option<f64>,
    method: Option<&'static str>,
    alpha: f64,
    verdict: &'static str,
}

/// `(name, value)` pairs as a JSON object, in their order.
fn in_order<S: Serializer>(
    pairs: &&[(String, String)],
    s: S,
) -> core::result::Result<S::Ok, S::Error> {
    s.collect_map(pairs.iter().map(|(k, v)| (k, v)))
}

fn mean_ns(v: &[u64]) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().map(|&x| x as f64).sum::<f64>() / v.len() as f64)
}

impl<'a> ResultDoc<'a> {
    fn new(b: &'a Bench) -> Self {
        let wall = b.series(WALL_TIME).and_then(Series::summary);
        let s = |f: fn(&Summary) -> f64| wall.as_ref().map(|w| f(w) / 1e9);
        let seconds = |f: fn(&Summary) -> u64| wall.as_ref().map(|w| f(w) as f64 / 1e9);
        ResultDoc {
            command: b.label(),
            mean: s(|w| w.mean),
            stddev: s(|w| w.stddev),
            median: seconds(|w| w.median),
            user: mean_ns(&b.user_ns).map(|v| v / 1e9),
            system: mean_ns(&b.system_ns).map(|v| v / 1e9),
            min: seconds(|w| w.min),
            max: seconds(|w| w.max),
            times: b.series(WALL_TIME).map_or_else(Vec::new, |w| {
                w.values.iter().map(|v| v.map(|v| v as f64 / 1e9)).collect()
            }),
            exit_codes: &b.exit_codes,
            parameters: &b.parameters,
            argv: &b.argv,
            runs: b.runs(),
            user_ns: &b.user_ns,
            system_ns: &b.system_ns,
            counters: b.series.iter().map(CounterDoc::new).collect(),
        }
    }
}

impl<'a> CounterDoc<'a> {
    fn new(s: &'a Series) -> Self {
        let sum = s.summary();
        let sum = sum.as_ref();
        CounterDoc {
            name: &s.name,
            unit: s.kind().unit(),
            values: &s.values,
            scaled_runs: s.scaled_runs,
            mean: sum.map(|s| s.mean),
            stddev: sum.map(|s| s.stddev),
            median: sum.map(|s| s.median),
            min: sum.map(|s| s.min),
            max: sum.map(|s| s.max),
            p90: sum.and_then(|s| s.p90),
            p99: sum.and_then(|s| s.p99),
            outliers: s.outliers(),
        }
    }
}

impl<'a> ComparisonDoc<'a> {
    fn new(c: &'a Comparison, saved: &Saved) -> Self {
        let (baseline, baseline_file) = match &c.baseline {
            BaselineRef::Here(i) => (*i, None),
            BaselineRef::File(f, i) => (*i, Some(f.as_str())),
        };
        ComparisonDoc {
            command: c.command,
            command_text: saved.benches[c.command].label(),
            baseline,
            baseline_file,
            baseline_text: &c.baseline_label,
            counter: &c.counter,
            ratio: c.ratio.map(|r| r.ratio),
            ci_low: c.ratio.map(|r| r.low),
            ci_high: c.ratio.map(|r| r.high),
            confidence: stats::CONFIDENCE,
            bootstrap_resamples: stats::RESAMPLES,
            bootstrap_seed: stats::SEED,
            test: "mann-whitney-u",
            u: c.test.map(|t| t.u),
            p_value: c.test.map(|t| t.p),
            method: c.test.map(|t| t.method.name()),
            alpha: stats::ALPHA,
            verdict: c.verdict().name(Kind::of(&c.counter)),
        }
    }
}

/// The JSON document of a run (one line, with a final newline).
pub(crate) fn to_json(saved: &Saved, comparisons: &[Comparison]) -> String {
    let doc = RunDoc {
        schema: SCHEMA,
        version: VERSION,
        started_unix_ms: saved.started_unix_ms,
        warmup: saved.warmup,
        interleaved: saved.interleaved,
        results: saved.benches.iter().map(ResultDoc::new).collect(),
        comparisons: comparisons
            .iter()
            .map(|c| ComparisonDoc::new(c, saved))
            .collect(),
    };
    format!("{}\n", json::to_line(&doc))
}

/// The fields read first: which schema, and which version of it.
#[derive(Deserialize)]
struct Head {
    schema: Option<serde_json::Value>,
    version: Option<serde_json::Value>,
}

/// A saved run as read: this schema, or hyperfine's (no `schema`, no `counters`). Fields
/// computed from the runs (means, comparisons) are not read: they are computed again.
#[derive(Deserialize)]
struct SavedFile {
    #[serde(default)]
    started_unix_ms: i64,
    #[serde(default)]
    warmup: u64,
    #[serde(default)]
    interleaved: bool,
    results: Vec<SavedResult>,
}

/// One command as read.
#[derive(Deserialize)]
struct SavedResult {
    command: String,
    #[serde(default)]
    argv: Vec<String>,
    /// Values are strings (hyperfine writes numbers as strings too); others are kept as
    /// their JSON text.
    #[serde(default)]
    parameters: BTreeMap<String, serde_json::Value>,
    /// The wall time of each run, in seconds: read when there are no `counters`.
    times: Option<Vec<Option<f64>>>,
    exit_codes: Option<Vec<Option<i64>>>,
    user_ns: Option<Vec<u64>>,
    system_ns: Option<Vec<u64>>,
    counters: Option<Vec<SavedCounter>>,
}

/// One counter as read.
#[derive(Deserialize)]
struct SavedCounter {
    name: String,
    values: Vec<Option<u64>>,
    #[serde(default)]
    scaled_runs: u64,
}

impl SavedResult {
    /// The benchmark, checked: wall time first, every counter with a value per run.
    fn into_bench(self, bad: &dyn Fn(&str) -> CliError) -> Result<Bench> {
        let parameters = self
            .parameters
            .into_iter()
            .map(|(k, v)| {
                let v = v.as_str().map_or_else(|| v.to_string(), String::from);
                (k, v)
            })
            .collect();
        let mut b = Bench::new(self.command, self.argv, parameters);
        match self.counters {
            None => {
                let times = self.times.ok_or_else(|| bad("a result without `times`"))?;
                b.series[0].values = times
                    .into_iter()
                    .map(|t| match t {
                        Some(s) if s.is_finite() && s >= 0.0 => Ok(Some((s * 1e9).round() as u64)),
                        _ => Err(bad("a negative or non-numeric time")),
                    })
                    .collect::<Result<_>>()?;
            }
            Some(counters) => {
                b.series = counters
                    .into_iter()
                    .map(|c| Series {
                        name: c.name,
                        values: c.values,
                        scaled_runs: u32::try_from(c.scaled_runs).unwrap_or(u32::MAX),
                    })
                    .collect();
                if b.series.first().map(|s| s.name.as_str()) != Some(WALL_TIME) {
                    return Err(bad("the first counter of a result is not wall-time"));
                }
            }
        }
        let runs = b.series[0].values.len();
        if b.series.iter().any(|s| s.values.len() != runs) {
            return Err(bad("counters with different run counts"));
        }
        b.exit_codes = match self.exit_codes {
            Some(codes) => codes
                .into_iter()
                .map(|c| c.and_then(|c| i32::try_from(c).ok()))
                .collect(),
            None => vec![Some(0); runs],
        };
        b.exit_codes.resize(runs, Some(0));
        b.user_ns = self.user_ns.unwrap_or_default();
        b.system_ns = self.system_ns.unwrap_or_default();
        if b.user_ns.len() != runs || b.system_ns.len() != runs {
            b.user_ns.clear();
            b.system_ns.clear();
        }
        Ok(b)
    }
}

/// Reads a saved run: this schema, or a hyperfine `--export-json` file (its `times` become
/// the wall time).
///
/// # Errors
/// Not JSON, another schema or a newer version, or fields of the wrong type.
pub(crate) fn from_json(text: &str, name: &str) -> Result<Saved> {
    let bad = |what: &str| {
        CliError::new(format!(
            "{name}: {what}; give a file written by `picollo stat --save` or `hyperfine --export-json`"
        ))
    };
    let head: Head = serde_json::from_str(text).map_err(|e| {
        if e.is_data() {
            bad(&e.to_string())
        } else {
            CliError::new(format!(
                "{name} is not JSON ({e}); give a file from --save or --export-json"
            ))
        }
    })?;
    if let Some(schema) = &head.schema {
        if schema.as_str() != Some(SCHEMA) {
            return Err(bad("not a picollo-stat file"));
        }
        match head.version.as_ref().and_then(serde_json::Value::as_u64) {
            Some(VERSION) => {}
            Some(n) => {
                return Err(bad(&format!(
                    "schema version {n}, this picollo reads version {VERSION}; use a newer picollo"
                )))
            }
            None => return Err(bad("no schema version")),
        }
    }
    let file: SavedFile = serde_json::from_str(text).map_err(|e| bad(&e.to_string()))?;
    let benches = file
        .results
        .into_iter()
        .map(|r| r.into_bench(&bad))
        .collect::<Result<Vec<_>>>()?;
    if benches.is_empty() {
        return Err(bad("no results"));
    }
    Ok(Saved {
        started_unix_ms: file.started_unix_ms,
        warmup: u32::try_from(file.warmup).unwrap_or(0),
        interleaved: file.interleaved,
        benches,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> String {
        from_json(text, "f.json").unwrap_err().to_string()
    }

    #[test]
    fn reads_its_own_schema_and_hyperfines() {
        let mut b = Bench::new("a b".into(), vec!["a".into(), "b".into()], vec![]);
        b.parameters.push(("n".into(), "2".into()));
        b.record(10, &[("page-faults".into(), Some(3), true)], Some(0), 4, 5);
        b.record(12, &[("page-faults".into(), None, false)], None, 4, 5);
        let saved = Saved {
            started_unix_ms: 7,
            warmup: 2,
            interleaved: true,
            benches: vec![b],
        };
        let text = to_json(&saved, &[]);
        assert_eq!(from_json(&text, "f.json").unwrap(), saved);
        let hyperfine = r#"{"results":[{"command":"sleep 0.1","mean":0.1,"times":[0.1,0.2],
            "exit_codes":[0,1],"parameters":{"t":"0.1","n":3}}]}"#;
        let h = from_json(hyperfine, "h.json").unwrap();
        let b = &h.benches[0];
        assert_eq!(b.series[0].values, [Some(100_000_000), Some(200_000_000)]);
        assert_eq!(b.exit_codes, [Some(0), Some(1)]);
        assert_eq!(
            b.parameters,
            [("n".into(), "3".into()), ("t".into(), "0.1".into())]
        );
    }

    #[test]
    fn refuses_what_it_cannot_read() {
        assert!(err("{").contains("is not JSON"));
        assert!(err("3").contains("f.json: invalid type"), "{}", err("3"));
        assert!(err(r#"{"schema":"other","results":[]}"#).contains("not a picollo-stat file"));
        assert!(err(r#"{"schema":"picollo-stat","version":2,"results":[]}"#)
            .contains("schema version 2"));
        assert!(err(r#"{"schema":"picollo-stat","results":[]}"#).contains("no schema version"));
        assert!(err(r#"{"results":[]}"#).contains("no results"));
        assert!(err(r#"{"results":[{"command":"x"}]}"#).contains("without `times`"));
        assert!(err(r#"{"results":[{"command":"x","times":[-1.0]}]}"#).contains("negative"));
        let counters = |c: &str| format!(r#"{{"results":[{{"command":"x","counters":{c}}}]}}"#);
        assert!(err(&counters(r#"[{"name":"cycles","values":[1]}]"#)).contains("not wall-time"));
        assert!(err(&counters(
            r#"[{"name":"wall-time","values":[1]},{"name":"cycles","values":[]}]"#
        ))
        .contains("different run counts"));
        assert!(err(&counters(r#"[{"name":"wall-time","values":[1.5]}]"#)).contains("f.json"));
    }
}
