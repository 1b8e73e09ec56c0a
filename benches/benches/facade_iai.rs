//! `picollo-hdrhistogram` beside the real `hdrhistogram`, instruction counts (callgrind, via
//! iai-callgrind), same binary, same data (issue 45): `record` with `u64` and `u32` counts,
//! `value_at_quantile` at the 16 summary ranks (a call each, and `value_at_percentiles`' one
//! pass), and a pass of `iter_recorded`.
//!
//! Both sides as a speed-minded user builds them (the `bench` profile: fat LTO, one codegen
//! unit) and at their fastest: `new_with_bounds(1, 7716549600, 3)` (auto-resize off, so
//! `record` never reallocates), one call site of each `record` in the binary (inlined into the
//! loop; the peer's read benches get their histogram without recording, see `filled_peer`).
//! The reads run on histograms filled with the seed data. The teardown prints block
//! `facade-iai`.
//!
//! Run: `cargo bench -p picollo-benches --bench facade_iai`.

#![allow(missing_docs)] // iai-callgrind's macros generate undocumented modules.

use iai_callgrind::{library_benchmark, library_benchmark_group, main};
use picollo_benches::iai::{cell, instructions, per_op};
use picollo_benches::report::{header, Block};
use picollo_benches::{read_loop, seed_data, SEED_COUNT, SEED_MAX, SUMMARY_RANKS};
use std::hint::black_box;

type Peer<C> = hdrhistogram::Histogram<C>;
type Facade<C> = picollo_hdrhistogram::Histogram<C>;

fn peer<C: hdrhistogram::Counter>() -> Peer<C> {
    Peer::new_with_bounds(1, SEED_MAX, 3).expect("valid bounds")
}

fn facade<C: picollo_hdrhistogram::Counter>() -> Facade<C> {
    Facade::new_with_bounds(1, SEED_MAX, 3).expect("valid bounds")
}

/// The peer filled without calling its record path (through Picollo's V2 encoder and the
/// peer's deserializer): a second call site of its `record_n_inner` would keep LLVM from
/// inlining it into `peer_record`, a handicap the peer does not have in a program that records
/// in one place.
fn filled_peer() -> Peer<u64> {
    let mut counts = picollo_alloc::hdr::HdrCounts::new(1, SEED_MAX, 3).expect("valid bounds");
    for v in seed_data() {
        counts.record(v, 1).expect("in range");
    }
    let bytes = counts.encode_v2().expect("encodes");
    hdrhistogram::serialization::Deserializer::new()
        .deserialize(&mut &bytes[..])
        .expect("the peer decodes a V2 encoding")
}

fn filled_facade() -> Facade<u64> {
    let mut h = facade();
    for v in seed_data() {
        h.record(v).expect("in range");
    }
    h
}

#[library_benchmark]
#[bench::seed(setup = seed_data)]
fn baseline_read(values: Vec<u64>) -> u64 {
    read_loop(&values)
}

#[library_benchmark]
#[bench::seed(args = (seed_data(), peer::<u64>()))]
fn peer_record(values: Vec<u64>, mut h: Peer<u64>) -> Peer<u64> {
    for &v in values.iter() {
        let _ = h.record(black_box(v));
    }
    h
}

#[library_benchmark]
#[bench::seed(args = (seed_data(), facade::<u64>()))]
fn facade_record(values: Vec<u64>, mut h: Facade<u64>) -> Facade<u64> {
    for &v in values.iter() {
        let _ = h.record(black_box(v));
    }
    h
}

#[library_benchmark]
#[bench::seed(args = (seed_data(), peer::<u32>()))]
fn peer_record_u32(values: Vec<u64>, mut h: Peer<u32>) -> Peer<u32> {
    for &v in values.iter() {
        let _ = h.record(black_box(v));
    }
    h
}

#[library_benchmark]
#[bench::seed(args = (seed_data(), facade::<u32>()))]
fn facade_record_u32(values: Vec<u64>, mut h: Facade<u32>) -> Facade<u32> {
    for &v in values.iter() {
        let _ = h.record(black_box(v));
    }
    h
}

#[library_benchmark]
#[bench::seed(setup = filled_peer)]
fn peer_quantiles(h: Peer<u64>) -> u64 {
    SUMMARY_RANKS
        .iter()
        .map(|&q| h.value_at_percentile(black_box(q)))
        .sum()
}

#[library_benchmark]
#[bench::seed(setup = filled_facade)]
fn facade_quantiles(h: Facade<u64>) -> u64 {
    SUMMARY_RANKS
        .iter()
        .map(|&q| h.value_at_percentile(black_box(q)))
        .sum()
}

#[library_benchmark]
#[bench::seed(setup = filled_peer)]
fn peer_quantiles_one_pass(h: Peer<u64>) -> u64 {
    h.value_at_percentiles(black_box(SUMMARY_RANKS)).sum()
}

#[library_benchmark]
#[bench::seed(setup = filled_facade)]
fn facade_quantiles_one_pass(h: Facade<u64>) -> u64 {
    h.value_at_percentiles(black_box(SUMMARY_RANKS)).sum()
}

#[library_benchmark]
#[bench::seed(setup = filled_peer)]
fn peer_iter_recorded(h: Peer<u64>) -> u64 {
    h.iter_recorded()
        .map(|v| v.value_iterated_to().wrapping_mul(v.count_at_value()))
        .sum()
}

#[library_benchmark]
#[bench::seed(setup = filled_facade)]
fn facade_iter_recorded(h: Facade<u64>) -> u64 {
    h.iter_recorded()
        .map(|v| v.value_iterated_to().wrapping_mul(v.count_at_value()))
        .sum()
}

library_benchmark_group!(
    name = facade;
    benchmarks = baseline_read, peer_record, facade_record, peer_record_u32, facade_record_u32,
        peer_quantiles, facade_quantiles, peer_quantiles_one_pass, facade_quantiles_one_pass,
        peer_iter_recorded, facade_iter_recorded
);

fn tables() {
    let ir = |function: &str| instructions("facade_iai", "facade", function, "seed");
    let baseline = ir("baseline_read");
    let _block = Block::begin("facade-iai");
    println!(
        "`picollo-hdrhistogram` and `hdrhistogram` 7.6.0, both `new_with_bounds(1, 7716549600, 3)`; \
         {SEED_COUNT} seed values; per record net of `baseline_read`; × = the peer's count ÷ the \
         facade's (more is better)."
    );
    println!();
    header(&[
        "operation",
        "peer Ir",
        "facade Ir",
        "peer per op",
        "facade per op",
        "×",
    ]);
    let row = |label: &str, peer: &str, facade: &str, ops: u64, base: Option<u64>| {
        let (p, f) = (ir(peer), ir(facade));
        let per = |t: Option<u64>| match base {
            Some(_) => per_op(t, base, ops),
            None => t.map(|t| t as f64 / ops as f64),
        };
        let (pp, fp) = (per(p), per(f));
        let show = |x: Option<f64>| x.map_or_else(|| "n/a".to_string(), |x| format!("{x:.2}"));
        let ratio = match (pp, fp) {
            (Some(a), Some(b)) if b > 0.0 => format!("{:.2}×", a / b),
            _ => "n/a".to_string(),
        };
        println!(
            "| {label} | {} | {} | {} | {} | {ratio} |",
            cell(p),
            cell(f),
            show(pp),
            show(fp)
        );
    };
    row(
        "`record`, u64 counts",
        "peer_record",
        "facade_record",
        SEED_COUNT as u64,
        baseline,
    );
    row(
        "`record`, u32 counts",
        "peer_record_u32",
        "facade_record_u32",
        SEED_COUNT as u64,
        baseline,
    );
    row(
        "`value_at_percentile` × 16 summary ranks (per call)",
        "peer_quantiles",
        "facade_quantiles",
        16,
        None,
    );
    row(
        "`value_at_percentiles`, the 16 summary ranks in one pass",
        "peer_quantiles_one_pass",
        "facade_quantiles_one_pass",
        1,
        None,
    );
    row(
        "`iter_recorded`, one pass",
        "peer_iter_recorded",
        "facade_iter_recorded",
        1,
        None,
    );
}

main!(
    teardown = tables();
    library_benchmark_groups = facade
);
