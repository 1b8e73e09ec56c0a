//! Instruction counts (callgrind, via iai-callgrind) for recording, with the `hdrhistogram` crate
//! measured in the same run, and the cost of an `rdtsc` scope.
//!
//! Every record benchmark walks the same 1,000,000 seed values; `baseline_read` walks them
//! doing nothing but `black_box`, so `(bench - baseline) / 1e6` is the cost of one record. The
//! teardown prints the tables for `benches/RESULTS.md` (blocks `record-instructions` and
//! `scope-instructions`; shown with `--nocapture=stdout`, as `benches/regenerate` runs it).
//!
//! Fair to the peer: `hdrhistogram` at its fastest configuration (a fixed maximum, auto-resize
//! off) and its fastest record API (`record`, see `peer_record_iai`), and this file holds the
//! only call of its `record` for each count type, so that LLVM inlines the crate's
//! `record_n_inner` into the loop, as it does in a program that records in one place. The
//! percentile benches, whose set-up records into an `hdrhistogram` too, live in `read_iai`.

#![allow(missing_docs)] // iai-callgrind's macros generate undocumented modules.

use iai_callgrind::{library_benchmark, library_benchmark_group, main};
use picollo_benches::iai::{cell, instructions, per_op};
use picollo_benches::report::{header, Block};
use picollo_benches::*;
use picollo_core::AtomicHistogram;
use portable_atomic::AtomicU64;
use std::hint::black_box;

#[library_benchmark]
#[bench::seed(setup = seed_data)]
fn baseline_read(values: Vec<u64>) -> u64 {
    read_loop(&values)
}

#[library_benchmark]
#[bench::seed(args = (seed_data(), runtime_histogram()))]
fn picollo_record_runtime(values: Vec<u64>, mut h: Box<RuntimeHistogram>) -> Box<RuntimeHistogram> {
    for &v in values.iter() {
        h.record(black_box(v));
    }
    h
}

#[library_benchmark]
#[bench::seed(args = (seed_data(), const_histogram()))]
fn picollo_record_const(values: Vec<u64>, mut h: Box<ConstHistogram>) -> Box<ConstHistogram> {
    for &v in values.iter() {
        h.record(black_box(v));
    }
    h
}

type RuntimeHistogramU32 = picollo_core::Histogram<[u32; SEED_LEN]>;

fn runtime_histogram_u32() -> Box<RuntimeHistogramU32> {
    Box::new(picollo_core::Histogram::new(LAYOUT, 0, SEED_MAX))
}

#[library_benchmark]
#[bench::seed(args = (seed_data(), runtime_histogram_u32()))]
fn picollo_record_runtime_u32(
    values: Vec<u64>,
    mut h: Box<RuntimeHistogramU32>,
) -> Box<RuntimeHistogramU32> {
    for &v in values.iter() {
        h.record(black_box(v));
    }
    h
}

#[library_benchmark]
#[bench::seed(args = (seed_data(), hdr_histogram()))]
fn hdrhistogram_record(
    values: Vec<u64>,
    mut h: hdrhistogram::Histogram<u64>,
) -> hdrhistogram::Histogram<u64> {
    for &v in values.iter() {
        let _ = h.record(black_box(v));
    }
    h
}

#[library_benchmark]
#[bench::seed(args = (seed_data(), hdr_histogram_with::<u32>()))]
fn hdrhistogram_record_u32(
    values: Vec<u64>,
    mut h: hdrhistogram::Histogram<u32>,
) -> hdrhistogram::Histogram<u32> {
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
    picollo_core::Histogram::with_storage(spec, HeapCells(vec![0; w.len()].into()), w)
        .expect("sized")
}

#[library_benchmark]
#[bench::seed(args = (seed_data(), split_window()))]
fn picollo_record_split_outside(values: Vec<u64>, mut h: SplitHistogram) -> SplitHistogram {
    for &v in values.iter() {
        h.record(black_box(v));
    }
    h
}

#[library_benchmark]
#[bench::seed(args = (seed_data(), SingleSlotHistogram::new(1000, SEED_MAX / 2)))]
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
#[bench::seed(args = (seed_data(), atomic_histogram()))]
fn picollo_record_atomic(values: Vec<u64>, h: Box<SeedAtomic>) -> Box<SeedAtomic> {
    for &v in values.iter() {
        h.record(black_box(v));
    }
    h
}

type Sparse = picollo_alloc::SparseHistogram<u64>;
type SparseAtomic = picollo_alloc::SparseAtomicHistogram<AtomicU64>;

/// The builder's default storage over the benchmark window, every block the seed data touches
/// given its page in the set-up (`record_n` of `HOT` per value): the measured loop takes the
/// touched-page record, the path of a histogram in steady state.
fn sparse_histogram() -> Sparse {
    let mut h = picollo_alloc::HistogramBuilder::new()
        .max_trackable(SEED_MAX)
        .plain()
        .expect("valid");
    for v in seed_data() {
        h.record_n(v, picollo_alloc::sparse::HOT);
    }
    h
}

fn sparse_atomic_histogram() -> SparseAtomic {
    let h = picollo_alloc::HistogramBuilder::new()
        .max_trackable(SEED_MAX)
        .atomic()
        .expect("valid");
    for v in seed_data() {
        h.record_n(v, picollo_alloc::sparse::HOT);
    }
    h
}

#[library_benchmark]
#[bench::seed(args = (seed_data(), sparse_histogram()))]
fn picollo_record_sparse(values: Vec<u64>, mut h: Sparse) -> Sparse {
    for &v in values.iter() {
        h.record(black_box(v));
    }
    h
}

#[library_benchmark]
#[bench::seed(args = (seed_data(), sparse_atomic_histogram()))]
fn picollo_record_sparse_atomic(values: Vec<u64>, h: SparseAtomic) -> SparseAtomic {
    for &v in values.iter() {
        h.record(black_box(v));
    }
    h
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
    benchmarks = baseline_read, picollo_record_runtime, picollo_record_const,
        picollo_record_runtime_u32, hdrhistogram_record, hdrhistogram_record_u32,
        picollo_record_split_outside, single_slot_record_outside, picollo_record_atomic,
        picollo_record_sparse, picollo_record_sparse_atomic
);

/// Prints the tables from this run's callgrind outputs.
fn tables() {
    let record = |function: &str| instructions("record_iai", "record", function, "seed");
    let baseline = record("baseline_read");
    let per_record = |n: Option<u64>| per_op(n, baseline, SEED_COUNT as u64);
    let fmt = |x: Option<f64>| x.map_or_else(|| "n/a".to_string(), |x| format!("{x:.2}"));
    let peer = record("hdrhistogram_record");
    let peer_u32 = record("hdrhistogram_record_u32");
    // The peer at its best: the cheaper of its two count types.
    let anchor = match (per_record(peer), per_record(peer_u32)) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };

    let block = Block::begin("record-instructions");
    println!(
        "{SEED_COUNT} seed values per bench; per record = (bench − `baseline_read`) / \
         {SEED_COUNT}; fewer × = the fastest `hdrhistogram` configuration's per-record count \
         ÷ this one's."
    );
    println!();
    header(&["bench", "total Ir", "per record", "fewer ×", "target"]);
    let rows: [(&str, &str, &str); 9] = [
        ("baseline_read", "`baseline_read` (loop only)", ""),
        (
            "picollo_record_const",
            "`picollo_record_const` (plain, `ConstLayout<9>`, u64)",
            "≤ 12",
        ),
        (
            "picollo_record_runtime",
            "`picollo_record_runtime` (plain, runtime `Layout`, u64)",
            "",
        ),
        (
            "picollo_record_runtime_u32",
            "`picollo_record_runtime_u32` (plain, runtime `Layout`, u32)",
            "",
        ),
        (
            "picollo_record_atomic",
            "`picollo_record_atomic` (`fetch_add`, uncontended)",
            "",
        ),
        (
            "hdrhistogram_record",
            "`hdrhistogram_record` (`record`, fixed max, u64)",
            "",
        ),
        (
            "hdrhistogram_record_u32",
            "`hdrhistogram_record_u32` (`record`, fixed max, u32)",
            "",
        ),
        (
            "picollo_record_split_outside",
            "`picollo_record_split_outside` (window `[1000, max/2]`, separate underflow + overflow)",
            "",
        ),
        (
            "single_slot_record_outside",
            "`single_slot_record_outside` (same path, Picollo for .NET's single out-of-range slot)",
            "",
        ),
    ];
    for (function, label, target) in rows {
        let total = record(function);
        let each = (function != "baseline_read")
            .then(|| per_record(total))
            .flatten();
        let fewer = match (anchor, each) {
            (Some(a), Some(e)) if function.starts_with("picollo") => format!("{:.2}×", a / e),
            _ => String::new(),
        };
        // Judged as printed (two decimals): the fixed set-up instructions of a bench (a few
        // dozen, independent of the loop) do not count against the per-record target.
        let verdict = match (target, each) {
            ("", _) | (_, None) => String::new(),
            (_, Some(e)) if (e * 100.0).round() <= 1200.0 => "≤ 12 ✔".to_string(),
            (_, Some(_)) => "≤ 12 ✘".to_string(),
        };
        let each = if function == "baseline_read" {
            "—".to_string()
        } else {
            fmt(each)
        };
        println!(
            "| {label} | {} | {each} | {fewer} | {verdict} |",
            cell(total)
        );
    }
    // Sparse storage's touched-page record against the dense record of the same kind and
    // layout (runtime `Layout`, u64): issue 30 allows two instructions more.
    println!();
    println!(
        "Sparse storage (the builder's default), every touched block's page installed in the \
         set-up: the record into a touched page against the dense record of the same kind \
         (runtime `Layout`, u64); target: at most 2 instructions more."
    );
    println!();
    header(&[
        "bench",
        "total Ir",
        "per record",
        "dense per record",
        "target",
    ]);
    for (function, dense, label) in [
        (
            "picollo_record_sparse",
            "picollo_record_runtime",
            "`picollo_record_sparse` (plain, sparse storage)",
        ),
        (
            "picollo_record_sparse_atomic",
            "picollo_record_atomic",
            "`picollo_record_sparse_atomic` (`fetch_add`, sparse storage)",
        ),
    ] {
        let total = record(function);
        let (each, base) = (per_record(total), per_record(record(dense)));
        let verdict = picollo_benches::report::within(each, base, 2.0);
        println!(
            "| {label} | {} | {} | {} | {verdict} |",
            cell(total),
            fmt(each),
            fmt(base)
        );
    }
    let split = per_record(record("picollo_record_split_outside"));
    let single = per_record(record("single_slot_record_outside"));
    if let (Some(split), Some(single)) = (split, single) {
        println!();
        println!(
            "Separate underflow and overflow counters: {:+.2} instructions per record against \
             one out-of-range slot.",
            split - single
        );
    }
    drop(block);

    let scope = |function: &str| instructions("record_iai", "scopes", function, "rdtsc");
    let (base, rdtsc) = (scope("scope_baseline"), scope("scope_rdtsc"));
    let _block = Block::begin("scope-instructions");
    println!("{SCOPES} scopes per bench; per scope = (bench − `scope_baseline`) / {SCOPES}.");
    println!();
    header(&["bench", "total Ir", "per scope"]);
    println!("| `scope_baseline` (empty loop) | {} | — |", cell(base));
    println!(
        "| `scope_rdtsc` (two `rdtsc`, wrapped delta, record into a plain histogram) | {} | {} |",
        cell(rdtsc),
        fmt(per_op(rdtsc, base, SCOPES))
    );
}

main!(
    teardown = tables();
    library_benchmark_groups = record, scopes
);
