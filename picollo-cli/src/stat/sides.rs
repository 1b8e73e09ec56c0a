//! One command's distributions ([`Side`]): a histogram per counter over the runs, in
//! HdrHistogram(3)'s buckets, their titled summaries, and the `--hlog` and `--hgrm` files
//! written from them.

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use picollo_alloc::hdr::interop::{export, ExportOptions};
use picollo_alloc::hdr::LogWriter;
use picollo_alloc::hdr::{interop as hdr_interop, HdrGeometry};
use picollo_alloc::hgrm::Hgrm;
use picollo_alloc::{HeapHistogram, HistogramBuilder, SummaryExt};

use super::model::{self, WALL_TIME};
use crate::error::{CliError, Result};
use crate::output::Titled;

/// One command's distributions, for the percentile tables and the saved logs.
pub(super) struct Side {
    label: String,
    /// Per counter, in order of first appearance; wall time is kept apart.
    counters: Vec<(String, HeapHistogram<u64>, u64)>,
    wall: HeapHistogram<u64>,
}

impl Side {
    /// The histograms of `bench`'s per-run values; `label` is `A`, `B`, … `Z`, then `C27`, ….
    pub(super) fn from_bench(i: usize, bench: &model::Bench) -> Self {
        let label = if i < 26 {
            char::from(b'A' + i as u8).to_string()
        } else {
            format!("C{}", i + 1)
        };
        let mut side = Side {
            label,
            counters: Vec::new(),
            wall: run_histogram(),
        };
        for s in &bench.series {
            let mut h = run_histogram();
            for v in s.values.iter().flatten() {
                h.record(*v);
            }
            if s.name == WALL_TIME {
                side.wall = h;
            } else {
                side.counters.push((s.name.clone(), h, s.missed() as u64));
            }
        }
        side
    }

    /// Each counter's histogram with its name, then the wall time's.
    fn histograms(&self) -> impl Iterator<Item = (&str, &HeapHistogram<u64>)> {
        self.counters
            .iter()
            .map(|(n, h, _)| (n.as_str(), h))
            .chain([(WALL_TIME, &self.wall)])
    }

    /// The titled summaries: each counter, then the wall time.
    pub(super) fn tables(&self) -> Vec<Titled> {
        let mut out: Vec<Titled> = self
            .counters
            .iter()
            .map(|(name, h, _)| Titled {
                title: title(name),
                summary: h.summary(),
            })
            .collect();
        out.push(Titled {
            title: title(WALL_TIME),
            summary: self.wall.summary(),
        });
        out
    }
}

/// HdrHistogram's `new Histogram(3)`: 1 ..= 2^63 - 1 at 3 significant digits.
fn log_geometry() -> HdrGeometry {
    HdrGeometry::new(1, i64::MAX as u64, 3).expect("a valid HdrHistogram geometry")
}

/// The histogram of one figure over the runs: the layout and window of HdrHistogram's
/// `new Histogram(3)` (0.0488 % precision), so that `--hlog` writes it index for index and
/// `report`, `diff`, `plot` and `export` read back the same buckets: the same values, `±`,
/// precision and min/max as printed here. (Values above 2^63 - 1, which no counter reaches,
/// would be counted as overflow, as a log could not hold them.)
fn run_histogram() -> HeapHistogram<u64> {
    let g = log_geometry();
    let builder = HistogramBuilder::new()
        .layout(hdr_interop::layout_for(&g))
        .window(hdr_interop::window_for(&g));
    match builder.dense().plain() {
        Ok(h) => h,
        // HdrHistogram's 3-digit layout has no value unit, and its window is its own.
        Err(e) => unreachable!("the runs' histogram builds: {e}"),
    }
}

/// A counter's title with its unit.
fn title(name: &str) -> String {
    match model::Kind::of(name) {
        model::Kind::Time => format!("{name} (ns)"),
        model::Kind::Count => name.to_string(),
    }
}

/// A tag for an interval log: the counter's name (prefixed `A.`/`B.` with `--vs`), made a
/// valid tag by [`picollo_alloc::hdr::sanitize_tag`].
fn log_tag(side: &Side, sides: usize, counter: &str) -> String {
    let name = picollo_alloc::hdr::sanitize_tag(counter);
    if sides > 1 {
        format!("{}.{name}", side.label)
    } else {
        name
    }
}

/// The HdrHistogram counts of a stat histogram: 3 significant digits (finer than the
/// histogram's 0.1%), nothing dropped (per-run totals are far below `i64::MAX`).
fn hdr_counts(h: &HeapHistogram<u64>, what: &str) -> Result<picollo_alloc::hdr::HdrCounts> {
    export(h, &ExportOptions::new().significant_digits(3))
        .map(|e| e.counts)
        .map_err(|e| CliError::new(format!("cannot save {what}: {e}")))
}

/// Writes every distribution to an interval log at `path`: one interval per counter (and
/// side), tagged with its name, spanning the runs.
pub(super) fn save_hlog(path: &Path, sides: &[Side], started_ms: i64, command: &str) -> Result<()> {
    let shown = path.display();
    let file = std::fs::File::create(path)
        .map_err(|e| CliError::new(format!("cannot create {shown}: {e}; give a writable path")))?;
    let mut w = LogWriter::new(BufWriter::new(file));
    let err = |e: picollo_alloc::hdr::LogError| CliError::new(format!("{shown}: {e}"));
    w.write_comment(&format!("picollo stat -- {command}"))
        .map_err(err)?;
    w.write_log_format_version().map_err(err)?;
    w.write_start_time(started_ms).map_err(err)?;
    w.write_legend().map_err(err)?;
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
    let seconds = (now_ms - started_ms).max(0) as f64 / 1000.0;
    for side in sides {
        for (name, h) in side.histograms() {
            let counts = hdr_counts(h, name)?;
            w.write_interval(
                Some(&log_tag(side, sides.len(), name)),
                0.0,
                seconds,
                &counts,
            )
            .map_err(err)?;
        }
    }
    w.flush().map_err(err)?;
    eprintln!("picollo: wrote {shown}");
    Ok(())
}

/// The `.hgrm` file of one counter: `PATH` with `.<counter>` inserted before `.hgrm` (and
/// `.A`/`.B` with `--vs`).
fn hgrm_path(path: &Path, side: &Side, sides: usize, counter: &str) -> PathBuf {
    let stem = match path.extension() {
        Some(e) if e == "hgrm" => path.with_extension(""),
        _ => path.to_owned(),
    };
    let tag = log_tag(side, sides, counter).replace('/', "_");
    let mut name = stem.into_os_string();
    name.push(format!(".{tag}.hgrm"));
    PathBuf::from(name)
}

/// Percentile steps per halving of an `.hgrm` file: enough that every recorded bucket is a
/// step of its own (one run in `total` moves the percentile by `100 / total`, and the steps
/// near 0 are `ln 2 / ticks` apart), so the file read back holds every bucket the run had;
/// at least HdrHistogram's usual 5, at most 1,000 (the rows grow with the runs).
fn hgrm_ticks(h: &HeapHistogram<u64>) -> u32 {
    use picollo_core::ReadExt;
    let total = h.total();
    u32::try_from(total.saturating_mul(2))
        .unwrap_or(u32::MAX)
        .clamp(5, 1_000)
}

/// Writes every distribution as an `.hgrm` percentile file (5 steps per halving, values as
/// counted), one per counter and side.
pub(super) fn save_hgrm(path: &Path, sides: &[Side]) -> Result<()> {
    for side in sides {
        for (name, h) in side.histograms() {
            let p = hgrm_path(path, side, sides.len(), name);
            let shown = p.display();
            let file = std::fs::File::create(&p).map_err(|e| {
                CliError::new(format!("cannot create {shown}: {e}; give a writable path"))
            })?;
            let mut out = BufWriter::new(file);
            Hgrm::new(h, hgrm_ticks(h), 1.0)
                .map_err(std::io::Error::from)
                .and_then(|hgrm| out.write_all(hgrm.render().as_bytes()))
                .and_then(|()| out.flush())
                .map_err(|e| CliError::new(format!("{shown}: {e}")))?;
            eprintln!("picollo: wrote {shown}");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn saved_file_names() {
        let a = Side::from_bench(0, &model::Bench::new(String::new(), vec![], vec![]));
        assert_eq!(
            log_tag(&a, 1, "cpu/event=0x3c,umask=0/"),
            "cpu/event=0x3c_umask=0/"
        );
        assert_eq!(log_tag(&a, 2, "cycles"), "A.cycles");
        assert_eq!(
            hgrm_path(Path::new("out/run.hgrm"), &a, 1, "task-clock"),
            Path::new("out/run.task-clock.hgrm")
        );
        assert_eq!(
            hgrm_path(Path::new("run"), &a, 2, "pmu/x/"),
            Path::new("run.A.pmu_x_.hgrm")
        );
    }
}
