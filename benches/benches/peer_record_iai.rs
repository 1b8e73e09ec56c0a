//! Which `hdrhistogram` record API is fastest, and what inlining is worth to it: instruction
//! counts (callgrind, via iai-callgrind) of `record`, `saturating_record`, `record_n(v, 1)` and
//! `+=` on the seed data, `u64` counts, fixed maximum.
//!
//! All four call the crate's `record_n_inner`, so in this binary it has four call sites and
//! LLVM keeps it out of line (a call per record), as in a program that records in several
//! places. `record_iai` measures the fastest of them with a single call site, inlined. The
//! teardown prints block `peer-record-apis`.

#![allow(missing_docs)] // iai-callgrind's macros generate undocumented modules.

use iai_callgrind::{library_benchmark, library_benchmark_group, main};
use picollo_benches::iai::{cell, instructions, per_op};
use picollo_benches::report::{header, Block};
use picollo_benches::{hdr_histogram, read_loop, seed_data, SEED_COUNT};
use std::hint::black_box;

type Hdr = hdrhistogram::Histogram<u64>;

#[library_benchmark]
#[bench::seed(setup = seed_data)]
fn baseline_read(values: Vec<u64>) -> u64 {
    read_loop(&values)
}

#[library_benchmark]
#[bench::seed(args = (seed_data(), hdr_histogram()))]
fn record(values: Vec<u64>, mut h: Hdr) -> Hdr {
    for &v in values.iter() {
        let _ = h.record(black_box(v));
    }
    h
}

#[library_benchmark]
#[bench::seed(args = (seed_data(), hdr_histogram()))]
fn saturating_record(values: Vec<u64>, mut h: Hdr) -> Hdr {
    for &v in values.iter() {
        h.saturating_record(black_box(v));
    }
    h
}

#[library_benchmark]
#[bench::seed(args = (seed_data(), hdr_histogram()))]
fn record_n(values: Vec<u64>, mut h: Hdr) -> Hdr {
    for &v in values.iter() {
        let _ = h.record_n(black_box(v), 1);
    }
    h
}

#[library_benchmark]
#[bench::seed(args = (seed_data(), hdr_histogram()))]
fn add_assign(values: Vec<u64>, mut h: Hdr) -> Hdr {
    for &v in values.iter() {
        h += black_box(v);
    }
    h
}

library_benchmark_group!(
    name = apis;
    benchmarks = baseline_read, record, saturating_record, record_n, add_assign
);

fn tables() {
    let ir = |function: &str| instructions("peer_record_iai", "apis", function, "seed");
    let baseline = ir("baseline_read");
    let _block = Block::begin("peer-record-apis");
    println!(
        "`hdrhistogram`, u64 counts, `new_with_bounds(1, 7716549600, 3)`; four call sites of \
         its `record_n_inner` in this binary (not inlined); per record net of `baseline_read`."
    );
    println!();
    header(&["API", "total Ir", "per record"]);
    for (function, label) in [
        ("baseline_read", "loop only (`baseline_read`)"),
        ("record", "`record(v)` (returns `Result`)"),
        ("saturating_record", "`saturating_record(v)`"),
        ("record_n", "`record_n(v, 1)`"),
        ("add_assign", "`h += v` (unwraps `record`)"),
    ] {
        let total = ir(function);
        let each = if function == "baseline_read" {
            "—".to_string()
        } else {
            per_op(total, baseline, SEED_COUNT as u64)
                .map_or_else(|| "n/a".to_string(), |x| format!("{x:.2}"))
        };
        println!("| {label} | {} | {each} |", cell(total));
    }
}

main!(
    teardown = tables();
    library_benchmark_groups = apis
);
