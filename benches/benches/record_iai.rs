//! Instruction counts (callgrind, via iai-callgrind) for recording and percentiles, with the
//! `hdrhistogram` crate measured in the same run.
//!
//! Every record benchmark walks the same 1,000,000 seed values; `baseline_read` walks them
//! doing nothing but `black_box`, so `(bench - baseline) / 1e6` is the cost of one record.
//! `benches/RESULTS.md` holds the figures and the per-record arithmetic.

#![allow(missing_docs)] // iai-callgrind's macros generate undocumented modules.

use iai_callgrind::{library_benchmark, library_benchmark_group, main};
use picollo_benches::*;
use picollo_core::{AtomicHistogram, ReadExt};
use portable_atomic::AtomicU64;
use std::hint::black_box;

fn values() -> Vec<u64> {
    seed_values(SEED_COUNT)
}

#[library_benchmark]
#[bench::seed(setup = values)]
fn baseline_read(values: Vec<u64>) -> u64 {
    let mut acc = 0u64;
    for &v in values.iter() {
        acc = acc.wrapping_add(black_box(v));
    }
    acc
}

#[library_benchmark]
#[bench::seed(args = (values(), runtime_histogram()))]
fn picollo_record_runtime(values: Vec<u64>, mut h: Box<RuntimeHistogram>) -> Box<RuntimeHistogram> {
    for &v in values.iter() {
        h.record(black_box(v));
    }
    h
}

#[library_benchmark]
#[bench::seed(args = (values(), const_histogram()))]
fn picollo_record_const(values: Vec<u64>, mut h: Box<ConstHistogram>) -> Box<ConstHistogram> {
    for &v in values.iter() {
        h.record(black_box(v));
    }
    h
}

#[library_benchmark]
#[bench::seed(args = (values(), hdr_histogram()))]
fn hdrhistogram_record(
    values: Vec<u64>,
    mut h: hdrhistogram::Histogram<u64>,
) -> hdrhistogram::Histogram<u64> {
    for &v in values.iter() {
        let _ = h.record(black_box(v));
    }
    h
}

type SplitHistogram = picollo_core::Histogram<HeapCells, picollo_core::ConstLayout<9>>;

/// Window `[1000, SEED_MAX / 2]`: some values under- and overflow. Compile-time layout and
/// heap cells, like [`SingleSlotHistogram`], so the two differ only in the outside counters.
fn split_window() -> SplitHistogram {
    let w = picollo_core::Window::new(LAYOUT, 1000, SEED_MAX / 2).expect("valid");
    let spec = picollo_core::ConstLayout::<9>::new();
    picollo_core::Histogram::with_window(spec, HeapCells(vec![0; w.len()].into()), w)
        .expect("sized")
}

#[library_benchmark]
#[bench::seed(args = (values(), split_window()))]
fn picollo_record_split_outside(values: Vec<u64>, mut h: SplitHistogram) -> SplitHistogram {
    for &v in values.iter() {
        h.record(black_box(v));
    }
    h
}

#[library_benchmark]
#[bench::seed(args = (values(), SingleSlotHistogram::new(1000, SEED_MAX / 2)))]
fn single_slot_record_outside(values: Vec<u64>, mut h: SingleSlotHistogram) -> SingleSlotHistogram {
    for &v in values.iter() {
        h.record(black_box(v));
    }
    h
}

type SeedAtomic = AtomicHistogram<[AtomicU64; SEED_LEN]>;

fn atomic_histogram() -> Box<SeedAtomic> {
    Box::new(AtomicHistogram::new(LAYOUT, 0, SEED_MAX))
}

#[library_benchmark]
#[bench::seed(args = (values(), atomic_histogram()))]
fn picollo_record_atomic(values: Vec<u64>, h: Box<SeedAtomic>) -> Box<SeedAtomic> {
    for &v in values.iter() {
        h.record(black_box(v));
    }
    h
}

fn filled_full_range() -> picollo_core::Histogram<HeapCells> {
    let mut h = full_range_histogram();
    for v in seed_values(SEED_COUNT) {
        h.record(v);
    }
    h
}

fn filled_hdr_full_range() -> hdrhistogram::Histogram<u64> {
    let mut h = hdrhistogram::Histogram::<u64>::new(3).expect("valid");
    for v in seed_values(SEED_COUNT) {
        h.record(v).expect("auto-resize");
    }
    h
}

#[library_benchmark]
#[bench::seed(setup = filled_full_range)]
fn picollo_percentiles_16(h: picollo_core::Histogram<HeapCells>) -> [picollo_core::Percentile; 16] {
    let mut out = [picollo_core::Percentile::default(); 16];
    h.percentiles(black_box(&SUMMARY_RANKS), &mut out)
        .expect("not empty");
    out
}

#[library_benchmark]
#[bench::seed(setup = filled_hdr_full_range)]
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

/// Scopes timed per bench call.
const SCOPES: u64 = 100_000;

#[library_benchmark]
#[bench::rdtsc(args = (runtime_histogram()))]
fn scope_rdtsc(mut h: Box<RuntimeHistogram>) -> Box<RuntimeHistogram> {
    for _ in 0..black_box(SCOPES) {
        let _s = picollo_core::source::scope(&mut *h, picollo_core::source::Rdtsc::new());
    }
    h
}

#[library_benchmark]
#[bench::rdtsc(args = (runtime_histogram()))]
fn scope_baseline(h: Box<RuntimeHistogram>) -> Box<RuntimeHistogram> {
    for i in 0..black_box(SCOPES) {
        black_box(i);
    }
    h
}

library_benchmark_group!(
    name = scopes;
    benchmarks = scope_baseline, scope_rdtsc
);

library_benchmark_group!(
    name = record;
    benchmarks = baseline_read, picollo_record_runtime, picollo_record_const, hdrhistogram_record,
        picollo_record_split_outside, single_slot_record_outside, picollo_record_atomic
);

library_benchmark_group!(
    name = percentiles;
    benchmarks = picollo_percentiles_16, hdrhistogram_value_at_quantiles_16
);

main!(library_benchmark_groups = record, percentiles, scopes);
