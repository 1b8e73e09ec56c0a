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

#![allow(missing_docs)] // iai-callgrind's macros generate undocumented modules.

use iai_callgrind::{library_benchmark, library_benchmark_group, main};
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
        let n = ir(function);
        let fewer = match (anchor, n) {
            (Some(a), Some(n)) if function.starts_with("picollo") => {
                format!("{:.2}×", a as f64 / n as f64)
            }
            _ => String::new(),
        };
        println!("| {label} | {cells} | {} | {fewer} |", cell(n));
    }
}

main!(
    teardown = tables();
    library_benchmark_groups = percentiles
);
