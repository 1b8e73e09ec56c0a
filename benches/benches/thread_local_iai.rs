//! Instruction counts (callgrind, via iai-callgrind) of one record from one thread into the
//! thread-local kind with `u64`, `u32` and `u16` cells (dense shards), against the plain heap
//! kind of the same width in the same run: the repeatable twin of the `thread_local`
//! wall-clock table; and the record into a touched page of sparse shards (the default),
//! against the dense shard's.
//!
//! Each benchmark walks the same 1,000,000 seed values; `baseline_read` walks them doing
//! nothing but `black_box`, so `(bench - baseline) / 1e6` is the cost of one record. The
//! thread-local histograms record once in the set-up, so the measured loop runs on the hot
//! path (the thread's cached shard). The teardown prints block `thread-local-instructions`;
//! a thread-local width whose record costs more than 1.5× the plain record of its width, or
//! more than its instruction target, is marked `✘` (CI fails on it).
//!
//! Run: `cargo bench -p picollo-benches --bench thread_local_iai`.

#![allow(missing_docs)] // iai-callgrind's macros generate undocumented modules.

use iai_callgrind::{library_benchmark, library_benchmark_group, main};
use picollo_alloc::{Dense, HeapHistogram, HistogramBuilder, ThreadLocalHistogram};
use picollo_benches::iai::{cell, instructions, per_op};
use picollo_benches::report::{header, Block};
use picollo_benches::*;
use picollo_core::Window;
use std::hint::black_box;

fn window() -> Window {
    Window::new(LAYOUT, 0, SEED_MAX).expect("0 <= max")
}

#[library_benchmark]
#[bench::seed(setup = seed_data)]
fn baseline_read(values: Vec<u64>) -> u64 {
    read_loop(&values)
}

fn plain<C: picollo_alloc::StorageWidth>() -> (Vec<u64>, HeapHistogram<C>) {
    (
        seed_data(),
        HistogramBuilder::<C, Dense>::default()
            .layout(LAYOUT)
            .window(window())
            .plain()
            .unwrap(),
    )
}

/// Dense shards: the thread-local kind as it was before sparse storage.
type Local<C> = ThreadLocalHistogram<C, Dense>;

fn local<C: picollo_alloc::StorageWidth>() -> (Vec<u64>, Local<C>) {
    let builder = HistogramBuilder::<C, Dense>::default().layout(LAYOUT);
    let h: Local<C> = builder.window(window()).thread_local().unwrap();
    h.record(1); // claim the shard outside the measured loop
    (seed_data(), h)
}

/// Sparse shards (the default), every block the seed data touches given its page in the
/// set-up: the measured loop takes the touched-page record.
fn sparse_local() -> (Vec<u64>, ThreadLocalHistogram<u64>) {
    let h = HistogramBuilder::new()
        .layout(LAYOUT)
        .window(window())
        .thread_local()
        .unwrap();
    let values = seed_data();
    for &v in &values {
        h.record_n(v, picollo_alloc::sparse::HOT);
    }
    (values, h)
}

#[library_benchmark]
#[bench::seed(setup = sparse_local)]
fn thread_local_sparse_u64(
    (values, h): (Vec<u64>, ThreadLocalHistogram<u64>),
) -> ThreadLocalHistogram<u64> {
    for &v in values.iter() {
        h.record(black_box(v));
    }
    h
}

#[library_benchmark]
#[bench::seed(setup = plain::<u64>)]
fn plain_u64((values, mut h): (Vec<u64>, HeapHistogram<u64>)) -> HeapHistogram<u64> {
    for &v in values.iter() {
        h.record(black_box(v));
    }
    h
}

#[library_benchmark]
#[bench::seed(setup = plain::<u32>)]
fn plain_u32((values, mut h): (Vec<u64>, HeapHistogram<u32>)) -> HeapHistogram<u32> {
    for &v in values.iter() {
        h.record(black_box(v));
    }
    h
}

#[library_benchmark]
#[bench::seed(setup = plain::<u16>)]
fn plain_u16((values, mut h): (Vec<u64>, HeapHistogram<u16>)) -> HeapHistogram<u16> {
    for &v in values.iter() {
        h.record(black_box(v));
    }
    h
}

#[library_benchmark]
#[bench::seed(setup = local::<u64>)]
fn thread_local_u64((values, h): (Vec<u64>, Local<u64>)) -> Local<u64> {
    for &v in values.iter() {
        h.record(black_box(v));
    }
    h
}

#[library_benchmark]
#[bench::seed(setup = local::<u32>)]
fn thread_local_u32((values, h): (Vec<u64>, Local<u32>)) -> Local<u32> {
    for &v in values.iter() {
        h.record(black_box(v));
    }
    h
}

#[library_benchmark]
#[bench::seed(setup = local::<u16>)]
fn thread_local_u16((values, h): (Vec<u64>, Local<u16>)) -> Local<u16> {
    for &v in values.iter() {
        h.record(black_box(v));
    }
    h
}

library_benchmark_group!(
    name = thread_local;
    benchmarks = baseline_read, plain_u64, plain_u32, plain_u16, thread_local_u64,
        thread_local_u32, thread_local_u16, thread_local_sparse_u64
);

fn tables() {
    let count = |function: &str| instructions("thread_local_iai", "thread_local", function, "seed");
    let base = count("baseline_read");
    let each = |function: &str| per_op(count(function), base, SEED_COUNT as u64);
    let fmt = |x: Option<f64>| x.map_or_else(|| "—".to_string(), |x| format!("{x:.2}"));

    let _block = Block::begin("thread-local-instructions");
    println!(
        "{SEED_COUNT} seed values per bench, one thread; per record = (bench − `baseline_read`) \
         / {SEED_COUNT}; the target: a thread-local record costs at most 1.5× the plain record \
         of its width."
    );
    println!();
    header(&[
        "cells",
        "plain per record",
        "thread-local per record",
        "ratio",
        "target",
    ]);
    for width in ["u64", "u32", "u16"] {
        let plain = each(&format!("plain_{width}"));
        let local = each(&format!("thread_local_{width}"));
        let (ratio, verdict) = match (plain, local) {
            (Some(p), Some(l)) => {
                let r = l / p;
                // Judged as printed (two decimals).
                let ok = (r * 100.0).round() <= 150.0;
                (format!("{r:.2}×"), if ok { "≤ 1.5× ✔" } else { "≤ 1.5× ✘" })
            }
            _ => ("—".to_string(), ""),
        };
        println!(
            "| `{width}` | {} | {} | {ratio} | {verdict} |",
            fmt(plain),
            fmt(local)
        );
    }
    println!();
    // Sparse shards (the default since issue 30): the touched-page record against the dense
    // shard's, at most two instructions more.
    let (dense, sparse) = (each("thread_local_u64"), each("thread_local_sparse_u64"));
    let verdict = picollo_benches::report::within(sparse, dense, 2.0);
    println!(
        "Sparse shards (the default), every touched block's page installed in the set-up: \
         `u64` {} per record against {} for dense shards; target {verdict}.",
        fmt(sparse),
        fmt(dense)
    );
    println!();
    println!("`baseline_read`: {} instructions in all.", cell(base));
}

main!(
    teardown = tables();
    library_benchmark_groups = thread_local
);
