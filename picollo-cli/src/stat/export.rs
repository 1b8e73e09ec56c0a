//! The saved and exported forms of a `stat` run: JSON (`--export-json`, `--save`, read back
//! by `--baseline`, `--load` and `picollo plot`), Markdown and CSV.
//!
//! The JSON schema (`"schema": "picollo-stat"`, `"version": 1`) is documented in
//! `picollo-cli/README.md`; each result carries hyperfine's `--export-json` fields (`command`,
//! `mean`, `stddev`, `median`, `user`, `system`, `min`, `max`, `times`, `exit_codes`,
//! `parameters`, all times in seconds, of the wall time) so scripts written for hyperfine read
//! it unchanged, and picollo's own per-run values in `counters`. Numbers are JSON numbers:
//! per-run values are integers in the counter's unit (`ns` or `count`), `null` where a
//! counter was not counted in a run.

use core::fmt::Write as _;

use serde_json::Value;

use super::human::{ratio, ratio_in, Scale};
use super::model::{BaselineRef, Bench, Comparison, Kind, Saved, Series, WALL_TIME};
use super::stats::{self, Summary};
use crate::error::{CliError, Result};
use crate::json::{Json, Object};

/// The schema name in every saved file.
pub(crate) const SCHEMA: &str = "picollo-stat";
/// The schema version this build writes and reads.
pub(crate) const VERSION: u64 = 1;

fn summary_fields(o: &mut Object, s: Option<&Summary>, scale: f64, p: bool) {
    let f = |v: Option<f64>| Json::opt(v, |v| Json::float(v / scale));
    o.push("mean", f(s.map(|s| s.mean)));
    o.push("stddev", f(s.map(|s| s.stddev)));
    o.push("median", f(s.map(|s| s.median)));
    if !p {
        return;
    }
    o.push("min", f(s.map(|s| s.min)));
    o.push("max", f(s.map(|s| s.max)));
    o.push("p90", f(s.and_then(|s| s.p90)));
    o.push("p99", f(s.and_then(|s| s.p99)));
}

fn mean_ns(v: &[u64]) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().map(|&x| x as f64).sum::<f64>() / v.len() as f64)
}

fn comparison_json(c: &Comparison, saved: &Saved) -> Json {
    let mut o = Object::new();
    o.push("command", Json::uint(c.command as u64));
    o.push("command_text", Json::str(&saved.benches[c.command].label()));
    match &c.baseline {
        BaselineRef::Here(i) => o.push("baseline", Json::uint(*i as u64)),
        BaselineRef::File(f, i) => {
            o.push("baseline", Json::uint(*i as u64));
            o.push("baseline_file", Json::str(f));
        }
    }
    o.push("baseline_text", Json::str(&c.baseline_label));
    o.push("counter", Json::str(&c.counter));
    o.push("ratio", Json::opt(c.ratio.map(|r| r.ratio), Json::float));
    o.push("ci_low", Json::opt(c.ratio.map(|r| r.low), Json::float));
    o.push("ci_high", Json::opt(c.ratio.map(|r| r.high), Json::float));
    o.push("confidence", Json::float(stats::CONFIDENCE));
    o.push("bootstrap_resamples", Json::uint(stats::RESAMPLES as u64));
    o.push("bootstrap_seed", Json::uint(stats::SEED));
    o.push("test", Json::str("mann-whitney-u"));
    o.push("u", Json::opt(c.test.map(|t| t.u), Json::float));
    o.push("p_value", Json::opt(c.test.map(|t| t.p), Json::float));
    o.push(
        "method",
        Json::opt(c.test.map(|t| t.method.name()), Json::str),
    );
    o.push("alpha", Json::float(stats::ALPHA));
    o.push("verdict", Json::str(c.verdict().name(Kind::of(&c.counter))));
    o.build()
}

fn series_json(s: &Series) -> Json {
    let mut o = Object::new();
    o.push("name", Json::str(&s.name));
    o.push("unit", Json::str(s.kind().unit()));
    o.push(
        "values",
        Json::array(s.values.iter().map(|v| Json::opt(*v, Json::uint))),
    );
    o.push("scaled_runs", Json::uint(u64::from(s.scaled_runs)));
    summary_fields(&mut o, s.summary().as_ref(), 1.0, true);
    o.push(
        "outliers",
        Json::array(s.outliers().into_iter().map(|i| Json::uint(i as u64))),
    );
    o.build()
}

fn bench_json(b: &Bench) -> Json {
    let mut o = Object::new();
    o.push("command", Json::str(&b.label()));
    let wall = b.series(WALL_TIME).and_then(Series::summary);
    summary_fields(&mut o, wall.as_ref(), 1e9, false);
    o.push(
        "user",
        Json::opt(mean_ns(&b.user_ns).map(|v| v / 1e9), Json::float),
    );
    o.push(
        "system",
        Json::opt(mean_ns(&b.system_ns).map(|v| v / 1e9), Json::float),
    );
    o.push(
        "min",
        Json::opt(wall.as_ref().map(|s| s.min / 1e9), Json::float),
    );
    o.push(
        "max",
        Json::opt(wall.as_ref().map(|s| s.max / 1e9), Json::float),
    );
    let times = b
        .series(WALL_TIME)
        .map(|s| s.values.clone())
        .unwrap_or_default();
    o.push(
        "times",
        Json::array(
            times
                .iter()
                .map(|v| Json::opt(*v, |v| Json::float(v as f64 / 1e9))),
        ),
    );
    o.push(
        "exit_codes",
        Json::array(
            b.exit_codes
                .iter()
                .map(|c| Json::opt(*c, |c| Json::int(i64::from(c)))),
        ),
    );
    let mut params = Object::new();
    for (k, v) in &b.parameters {
        params.push(k, Json::str(v));
    }
    o.push("parameters", params);
    o.push("argv", Json::array(b.argv.iter().map(|a| Json::str(a))));
    o.push("runs", Json::uint(b.runs() as u64));
    o.push(
        "user_ns",
        Json::array(b.user_ns.iter().map(|&v| Json::uint(v))),
    );
    o.push(
        "system_ns",
        Json::array(b.system_ns.iter().map(|&v| Json::uint(v))),
    );
    o.push("counters", Json::array(b.series.iter().map(series_json)));
    o.build()
}

/// The JSON document of a run (one line, with a final newline).
pub(crate) fn to_json(saved: &Saved, comparisons: &[Comparison]) -> String {
    let o = Object::new()
        .field("schema", Json::str(SCHEMA))
        .field("version", Json::uint(VERSION))
        .field("started_unix_ms", Json::int(saved.started_unix_ms))
        .field("warmup", Json::uint(u64::from(saved.warmup)))
        .field("interleaved", Json::bool(saved.interleaved))
        .field("results", Json::array(saved.benches.iter().map(bench_json)))
        .field(
            "comparisons",
            Json::array(comparisons.iter().map(|c| comparison_json(c, saved))),
        );
    format!("{}\n", o.build().as_str())
}

/// Reads a saved run: this schema, or a hyperfine `--export-json` file (its `times` become
/// the wall time).
///
/// # Errors
/// Not JSON, another schema or a newer version, or fields of the wrong type.
pub(crate) fn from_json(text: &str, name: &str) -> Result<Saved> {
    let v: Value = serde_json::from_str(text).map_err(|e| {
        CliError::new(format!(
            "{name} is not JSON ({e}); give a file from --save or --export-json"
        ))
    })?;
    let bad = |what: &str| {
        CliError::new(format!(
            "{name}: {what}; give a file written by `picollo stat --save` or `hyperfine --export-json`"
        ))
    };
    let hyperfine = v.get("schema").is_none();
    if !hyperfine {
        if v["schema"] != SCHEMA {
            return Err(bad("not a picollo-stat file"));
        }
        match v["version"].as_u64() {
            Some(VERSION) => {}
            Some(n) => {
                return Err(bad(&format!(
                    "schema version {n}, this picollo reads version {VERSION}; use a newer picollo"
                )))
            }
            None => return Err(bad("no schema version")),
        }
    }
    let results = v["results"]
        .as_array()
        .ok_or_else(|| bad("no `results` array"))?;
    let mut benches = Vec::new();
    for r in results {
        let command = r["command"]
            .as_str()
            .ok_or_else(|| bad("a result without `command`"))?;
        let strings = |key: &str| -> Vec<String> {
            r[key]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|x| x.as_str().map(String::from))
                        .collect()
                })
                .unwrap_or_default()
        };
        let parameters = r["parameters"]
            .as_object()
            .map(|m| {
                m.iter()
                    .map(|(k, v)| {
                        (
                            k.clone(),
                            v.as_str().map_or_else(|| v.to_string(), String::from),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        let mut b = Bench::new(command.to_string(), strings("argv"), parameters);
        let uints = |key: &str| -> Result<Vec<u64>> {
            match &r[key] {
                Value::Null => Ok(Vec::new()),
                Value::Array(a) => a
                    .iter()
                    .map(|x| {
                        x.as_u64()
                            .ok_or_else(|| bad(&format!("`{key}` holds a non-integer")))
                    })
                    .collect(),
                _ => Err(bad(&format!("`{key}` is not an array"))),
            }
        };
        if hyperfine || r.get("counters").is_none() {
            let times = r["times"]
                .as_array()
                .ok_or_else(|| bad("a result without `times`"))?;
            let mut values = Vec::new();
            for t in times {
                let s = t.as_f64().filter(|s| s.is_finite() && *s >= 0.0);
                values.push(Some(
                    s.ok_or_else(|| bad("a negative or non-numeric time"))?,
                ));
            }
            b.series[0].values = values
                .iter()
                .map(|s| s.map(|s| (s * 1e9).round() as u64))
                .collect();
        } else {
            b.series.clear();
            for c in r["counters"]
                .as_array()
                .ok_or_else(|| bad("`counters` is not an array"))?
            {
                let name = c["name"]
                    .as_str()
                    .ok_or_else(|| bad("a counter without `name`"))?;
                let values = c["values"]
                    .as_array()
                    .ok_or_else(|| bad("a counter without `values`"))?
                    .iter()
                    .map(|x| match x {
                        Value::Null => Ok(None),
                        x => x
                            .as_u64()
                            .map(Some)
                            .ok_or_else(|| bad("a counter value that is not a count")),
                    })
                    .collect::<Result<Vec<_>>>()?;
                b.series.push(Series {
                    name: name.to_string(),
                    values,
                    scaled_runs: c["scaled_runs"]
                        .as_u64()
                        .map_or(0, |v| u32::try_from(v).unwrap_or(u32::MAX)),
                });
            }
            if b.series.first().map(|s| s.name.as_str()) != Some(WALL_TIME) {
                return Err(bad("the first counter of a result is not wall-time"));
            }
        }
        let runs = b.series[0].values.len();
        if b.series.iter().any(|s| s.values.len() != runs) {
            return Err(bad("counters with different run counts"));
        }
        b.exit_codes = match &r["exit_codes"] {
            Value::Array(a) => a
                .iter()
                .map(|c| c.as_i64().and_then(|c| i32::try_from(c).ok()))
                .collect(),
            _ => vec![Some(0); runs],
        };
        b.exit_codes.resize(runs, Some(0));
        b.user_ns = uints("user_ns")?;
        b.system_ns = uints("system_ns")?;
        if b.user_ns.len() != runs || b.system_ns.len() != runs {
            b.user_ns.clear();
            b.system_ns.clear();
        }
        benches.push(b);
    }
    if benches.is_empty() {
        return Err(bad("no results"));
    }
    Ok(Saved {
        started_unix_ms: v["started_unix_ms"].as_i64().unwrap_or(0),
        warmup: v["warmup"]
            .as_u64()
            .map_or(0, |w| u32::try_from(w).unwrap_or(0)),
        interleaved: v["interleaved"].as_bool().unwrap_or(false),
        benches,
    })
}

/// The counters of a run, in order of first appearance (wall time first).
pub(crate) fn counter_names(saved: &Saved) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for b in &saved.benches {
        for s in &b.series {
            if !names.contains(&s.name) {
                names.push(s.name.clone());
            }
        }
    }
    names
}

fn find<'a>(cs: &'a [Comparison], command: usize, counter: &str) -> Option<&'a Comparison> {
    cs.iter()
        .find(|c| c.command == command && c.counter == counter)
}

/// Markdown: per counter, hyperfine's table (`Command | Mean | Min | Max | Relative`), with
/// the ratio's interval in Relative.
pub(crate) fn to_markdown(saved: &Saved, comparisons: &[Comparison]) -> String {
    let mut out = String::new();
    for (n, name) in counter_names(saved).iter().enumerate() {
        let kind = Kind::of(name);
        let means: Vec<f64> = saved
            .benches
            .iter()
            .filter_map(|b| b.series(name)?.summary().map(|s| s.mean))
            .collect();
        let reference = means.iter().copied().fold(f64::INFINITY, f64::min);
        let sc = Scale::for_value(
            kind,
            if reference.is_finite() {
                reference
            } else {
                0.0
            },
        );
        let unit = if sc.suffix.is_empty() {
            String::new()
        } else {
            format!(" [{}]", sc.suffix)
        };
        if n > 0 {
            out.push('\n');
        }
        let _ = writeln!(out, "#### {name}\n");
        let _ = writeln!(
            out,
            "| Command | Mean{unit} | Min{unit} | Max{unit} | Relative |"
        );
        out.push_str("|:---|---:|---:|---:|---:|\n");
        let num = |v: f64| {
            if sc.divisor == 1.0 && v.fract() == 0.0 {
                format!("{v:.0}")
            } else {
                format!("{:.*}", sc.decimals, v / sc.divisor)
            }
        };
        for (i, b) in saved.benches.iter().enumerate() {
            let Some(s) = b.series(name).and_then(Series::summary) else {
                let _ = writeln!(out, "| `{}` | not counted | | | |", md_code(&b.label()));
                continue;
            };
            let rel = match find(comparisons, i, name) {
                Some(c) => match c.ratio {
                    Some(r) => format!(
                        "{} ({}–{}){}",
                        ratio(r.ratio),
                        ratio_in(r.low, r.ratio),
                        ratio_in(r.high, r.ratio),
                        match c.verdict() {
                            super::model::Verdict::Same => "",
                            _ => " *",
                        }
                    ),
                    None => "n/a".into(),
                },
                None => "1.00".into(),
            };
            let _ = writeln!(
                out,
                "| `{}` | {} ± {} | {} | {} | {rel} |",
                md_code(&b.label()),
                num(s.mean),
                num(s.stddev),
                num(s.min),
                num(s.max)
            );
        }
    }
    if !comparisons.is_empty() {
        let _ =
            writeln!(
            out,
            "\nRelative: ratio of means to the baseline (the first command{}), with its bootstrap \
             {:.0}% CI; * marks a significant difference (Mann–Whitney U, α = {}).",
            if comparisons.iter().any(|c| matches!(c.baseline, BaselineRef::File(..))) {
                " of the saved baseline"
            } else {
                ""
            },
            stats::CONFIDENCE * 100.0,
            stats::ALPHA
        );
    }
    out
}

fn md_code(s: &str) -> String {
    s.replace('|', "\\|").replace('`', "'")
}

/// A CSV field, quoted when needed.
fn csv(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// CSV: one row per command and counter, values in the counter's unit, then the comparison
/// with the baseline and hyperfine's `parameter_<name>` columns.
pub(crate) fn to_csv(saved: &Saved, comparisons: &[Comparison]) -> String {
    let mut params: Vec<String> = Vec::new();
    for b in &saved.benches {
        for (k, _) in &b.parameters {
            if !params.contains(k) {
                params.push(k.clone());
            }
        }
    }
    let mut out = String::from(
        "command,counter,unit,runs,mean,stddev,median,min,max,p90,p99,ratio,ci_low,ci_high,p_value,verdict",
    );
    for p in &params {
        let _ = write!(out, ",parameter_{}", csv(p));
    }
    out.push('\n');
    let f = |v: Option<f64>| v.map_or_else(String::new, |v| Json::float(v).as_str().to_string());
    for (i, b) in saved.benches.iter().enumerate() {
        for s in &b.series {
            let sum = s.summary();
            let c = find(comparisons, i, &s.name);
            let _ = write!(
                out,
                "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
                csv(&b.label()),
                csv(&s.name),
                s.kind().unit(),
                sum.as_ref().map_or(0, |s| s.n),
                f(sum.as_ref().map(|s| s.mean)),
                f(sum.as_ref().map(|s| s.stddev)),
                f(sum.as_ref().map(|s| s.median)),
                f(sum.as_ref().map(|s| s.min)),
                f(sum.as_ref().map(|s| s.max)),
                f(sum.as_ref().and_then(|s| s.p90)),
                f(sum.as_ref().and_then(|s| s.p99)),
                f(c.and_then(|c| c.ratio.map(|r| r.ratio))),
                f(c.and_then(|c| c.ratio.map(|r| r.low))),
                f(c.and_then(|c| c.ratio.map(|r| r.high))),
                f(c.and_then(|c| c.test.map(|t| t.p))),
                c.map_or("", |c| c.verdict().name(s.kind())),
            );
            for p in &params {
                let v = b
                    .parameters
                    .iter()
                    .find(|(k, _)| k == p)
                    .map_or("", |(_, v)| v);
                let _ = write!(out, ",{}", csv(v));
            }
            out.push('\n');
        }
    }
    out
}

/// Writes `text` to `path` (`-`: standard output, returned to the caller instead).
///
/// # Errors
/// The file cannot be written.
pub(crate) fn write(path: &std::path::Path, text: &str, flag: &str) -> Result<Option<String>> {
    if path.as_os_str() == "-" {
        return Ok(Some(text.to_string()));
    }
    std::fs::write(path, text).map_err(|e| {
        CliError::new(format!(
            "{flag}: cannot write {}: {e}; check the directory exists and is writable",
            path.display()
        ))
    })?;
    eprintln!("picollo: wrote {}", path.display());
    Ok(None)
}
