//! Instruction counts (callgrind, via iai-callgrind) for the 16-rank percentile batch of the
//! summary of Picollo for .NET, Picollo against the `hdrhistogram` crate, both filled with
//! the 1M seed values.
//!
//! Picollo: the full-range histogram (all of `u64` at `B = 512`), and the benchmark window
//! `[0, 7716549600]`. `hdrhistogram`: 3 digits with the benchmark's fixed maximum (the same counts
//! array `Histogram::new(3)` auto-resizes to for this data), with both of its
//! multi-quantile APIs: the one-pass `value_at_quantiles` iterator and a loop of
//! `value_at_quantile`, which sums eight counts at a time and so is the faster one here even
//! though it walks the counts once per rank. The teardown prints block
//! `percentile-instructions`.
//!
//! The percentile iteration (group `ticks`, block `ticks-instructions`): 10,000 latencies
//! log-uniform over 1 µs … 1 s in nanoseconds (every decade as likely: most buckets touched
//! once, so a sparse histogram keeps them in its cold tier), at 3 significant digits, five
//! ticks per half distance (the `.hgrm` default). Picollo's `percentile_ticks` on the
//! builder's default (sparse) and dense plain histograms, full range; the `hdrhistogram`
//! crate's `iter_quantiles` on `Histogram::new(3)` (auto-resized to the data), its one API
//! for this walk.

#![allow(missing_docs)] // iai-callgrind's macros generate undocumented modules.

use iai_callgrind::{library_benchmark, library_benchmark_group, main};
use picollo_alloc::ThreadLocalHistogram;
use picollo_benches::iai::{cell, instructions};
use picollo_benches::report::{header, Block};
use picollo_benches::*;
use picollo_core::{EquivalentValue, HistogramRead, Percentile, ReadExt};
use std::hint::black_box;

fn filled_full_range() -> picollo_core::Histogram<HeapCells> {
    let mut h = full_range_histogram();
    for v in seed_values(SEED_COUNT) {
        h.record(v);
    }
    h
}

fn filled_seed_window() -> Box<RuntimeHistogram> {
    let mut h = runtime_histogram();
    for v in seed_values(SEED_COUNT) {
        h.record(v);
    }
    h
}

fn filled_hdr() -> hdrhistogram::Histogram<u64> {
    let mut h = hdr_histogram();
    for v in seed_values(SEED_COUNT) {
        h.record(v).expect("within the fixed maximum");
    }
    h
}

/// The values of group `ticks`: 10,000 log-uniform latencies in nanoseconds.
fn spread_values() -> Vec<u64> {
    latency::log_uniform(10_000, 7)
        .into_iter()
        .map(|s| (s * 1e9) as u64)
        .collect()
}

/// Ticks per half distance of group `ticks`.
const TICKS: u32 = 5;

type SparsePlain = picollo_core::Histogram<picollo_alloc::sparse::SparseStorage<u64>>;
type DensePlain = picollo_core::Histogram<picollo_alloc::HeapStorage<u64>>;

fn spread_sparse() -> SparsePlain {
    let mut h = picollo_alloc::HistogramBuilder::new()
        .sigfig(3)
        .plain()
        .expect("3 digits, full range");
    spread_values().into_iter().for_each(|v| h.record(v));
    h
}

fn spread_dense() -> DensePlain {
    let mut h = picollo_alloc::HistogramBuilder::new()
        .sigfig(3)
        .dense()
        .plain()
        .expect("3 digits, full range");
    spread_values().into_iter().for_each(|v| h.record(v));
    h
}

/// The thread-local kind (sparse, the builder's default) over the same values, half recorded
/// by a thread that has exited (folded into the accumulator) and half by this one: a walk
/// merges two sources.
fn spread_thread_local() -> ThreadLocalHistogram<u64> {
    let h: ThreadLocalHistogram<u64> = picollo_alloc::HistogramBuilder::new()
        .sigfig(3)
        .thread_local()
        .expect("3 digits, full range");
    let values = spread_values();
    let (first, second) = values.split_at(values.len() / 2);
    std::thread::scope(|s| {
        s.spawn(|| first.iter().for_each(|&v| h.record(v)));
    });
    second.iter().for_each(|&v| h.record(v));
    h
}

fn spread_hdr() -> hdrhistogram::Histogram<u64> {
    let mut h = hdrhistogram::Histogram::new(3).expect("3 digits");
    for v in spread_values() {
        h.record(v).expect("auto-resized");
    }
    h
}

/// Steps of Picollo's percentile iteration, and the sum of the values they report.
fn picollo_ticks(h: &impl HistogramRead) -> (usize, u64) {
    h.percentile_ticks(black_box(TICKS))
        .expect("ticks above 0")
        .fold((0, 0u64), |(n, sum), step| {
            (n + 1, sum.wrapping_add(step.value_iterated_to))
        })
}

/// Steps of the crate's quantile iteration, and the sum of the values they report.
fn hdr_ticks(h: &hdrhistogram::Histogram<u64>) -> (usize, u64) {
    h.iter_quantiles(black_box(TICKS))
        .fold((0, 0u64), |(n, sum), step| {
            (n + 1, sum.wrapping_add(step.value_iterated_to()))
        })
}

#[library_benchmark]
#[bench::spread(setup = spread_sparse)]
fn picollo_percentile_ticks_sparse(h: SparsePlain) -> (usize, u64) {
    picollo_ticks(&h)
}

#[library_benchmark]
#[bench::spread(setup = spread_dense)]
fn picollo_percentile_ticks_dense(h: DensePlain) -> (usize, u64) {
    picollo_ticks(&h)
}

#[library_benchmark]
#[bench::spread(setup = spread_thread_local)]
fn picollo_percentile_ticks_thread_local(h: ThreadLocalHistogram<u64>) -> (usize, u64) {
    picollo_ticks(&h)
}

#[library_benchmark]
#[bench::spread(setup = spread_hdr)]
fn hdrhistogram_iter_quantiles(h: hdrhistogram::Histogram<u64>) -> (usize, u64) {
    hdr_ticks(&h)
}

library_benchmark_group!(
    name = ticks;
    benchmarks = picollo_percentile_ticks_sparse, picollo_percentile_ticks_dense,
        picollo_percentile_ticks_thread_local, hdrhistogram_iter_quantiles
);

#[library_benchmark]
#[bench::seed(setup = filled_full_range)]
fn picollo_percentiles_16(h: picollo_core::Histogram<HeapCells>) -> [Percentile; 16] {
    let mut out = [Percentile::default(); 16];
    h.percentiles(
        black_box(&SUMMARY_RANKS),
        EquivalentValue::Midpoint,
        &mut out,
    )
    .expect("not empty");
    out
}

#[library_benchmark]
#[bench::seed(setup = filled_seed_window)]
fn picollo_percentiles_16_seed_window(h: Box<RuntimeHistogram>) -> [Percentile; 16] {
    let mut out = [Percentile::default(); 16];
    h.percentiles(
        black_box(&SUMMARY_RANKS),
        EquivalentValue::Midpoint,
        &mut out,
    )
    .expect("not empty");
    out
}

#[library_benchmark]
#[bench::seed(setup = filled_hdr)]
fn hdrhistogram_value_at_quantiles_16(h: hdrhistogram::Histogram<u64>) -> [u64; 16] {
    let mut out = [0u64; 16];
    for (o, v) in out
        .iter_mut()
        .zip(h.value_at_quantiles(black_box(SUMMARY_RANKS).iter().map(|r| r / 100.0)))
    {
        *o = v;
    }
    out
}

#[library_benchmark]
#[bench::seed(setup = filled_hdr)]
fn hdrhistogram_value_at_quantile_loop_16(h: hdrhistogram::Histogram<u64>) -> [u64; 16] {
    black_box(SUMMARY_RANKS).map(|r| h.value_at_quantile(r / 100.0))
}

library_benchmark_group!(
    name = percentiles;
    benchmarks = picollo_percentiles_16, picollo_percentiles_16_seed_window,
        hdrhistogram_value_at_quantiles_16, hdrhistogram_value_at_quantile_loop_16
);

fn tables() {
    let ir = |function: &str| instructions("read_iai", "percentiles", function, "seed");
    let peer = [
        ir("hdrhistogram_value_at_quantiles_16"),
        ir("hdrhistogram_value_at_quantile_loop_16"),
    ];
    let anchor = peer.iter().flatten().min().copied();
    let _block = Block::begin("percentile-instructions");
    println!(
        "The 16 ranks of Picollo for .NET's summary, one batch per bench; fewer × = the cheaper \
         `hdrhistogram` API's count ÷ this one's."
    );
    println!();
    header(&["bench", "cells", "Ir per batch", "fewer ×"]);
    let hdr_cells = hdr_histogram().distinct_values();
    for (function, label, cells) in [
        (
            "picollo_percentiles_16",
            "`picollo_percentiles_16` (full range)",
            full_range_histogram().window().len(),
        ),
        (
            "picollo_percentiles_16_seed_window",
            "`picollo_percentiles_16_seed_window`",
            SEED_LEN,
        ),
        (
            "hdrhistogram_value_at_quantiles_16",
            "`hdrhistogram_value_at_quantiles_16` (one-pass iterator)",
            hdr_cells,
        ),
        (
            "hdrhistogram_value_at_quantile_loop_16",
            "`hdrhistogram_value_at_quantile_loop_16` (16 calls)",
            hdr_cells,
        ),
    ] {
        row(
            label,
            cells,
            ir(function),
            anchor,
            function.starts_with("picollo"),
        );
    }
}

/// A table row: `label`, `size` (cells or steps), the count `n`, and for Picollo's rows how
/// many times fewer than `anchor`, the peer's.
fn row(label: &str, size: usize, n: Option<u64>, anchor: Option<u64>, picollo: bool) {
    let fewer = match (anchor, n) {
        (Some(a), Some(n)) if picollo => format!("{:.2}×", a as f64 / n as f64),
        _ => String::new(),
    };
    println!("| {label} | {size} | {} | {fewer} |", cell(n));
}

fn ticks_table() {
    let ir = |function: &str| instructions("read_iai", "ticks", function, "spread");
    let anchor = ir("hdrhistogram_iter_quantiles");
    let _block = Block::begin("ticks-instructions");
    let sparse = spread_sparse();
    println!(
        "The percentile iteration at {TICKS} ticks per half distance over 10,000 log-uniform \
         latencies (1 µs … 1 s, in ns) at 3 digits; the sparse histogram holds {} pages and {} \
         cold-tier words. fewer × = `hdrhistogram`'s count ÷ this one's; steps: the reports \
         each iteration yields (the same walk on both sides).",
        sparse.storage().pages(),
        sparse.storage().cold_words()
    );
    println!();
    header(&["bench", "steps", "Ir per iteration", "fewer ×"]);
    for (function, label, steps) in [
        (
            "picollo_percentile_ticks_sparse",
            "`picollo_percentile_ticks_sparse` (the builder's default)",
            picollo_ticks(&sparse).0,
        ),
        (
            "picollo_percentile_ticks_dense",
            "`picollo_percentile_ticks_dense`",
            picollo_ticks(&spread_dense()).0,
        ),
        (
            "picollo_percentile_ticks_thread_local",
            "`picollo_percentile_ticks_thread_local` (two sources: a live shard, an exited one)",
            picollo_ticks(&spread_thread_local()).0,
        ),
        (
            "hdrhistogram_iter_quantiles",
            "`hdrhistogram_iter_quantiles`",
            hdr_ticks(&spread_hdr()).0,
        ),
    ] {
        row(
            label,
            steps,
            ir(function),
            anchor,
            function.starts_with("picollo"),
        );
    }
}

main!(
    teardown = { tables(); ticks_table() };
    library_benchmark_groups = percentiles, ticks
);
