//! Instruction counts (callgrind, via iai-callgrind) of a span (`span!`, begin and end) and
//! of a `counter!` event: with no consumer attached (the cost every instrumented program
//! pays) and attached (time only: two clock reads and a frame). Counter reads are syscalls
//! or RDPMC, which callgrind does not count fairly; `span_cost` times them.
//! The teardown prints block `span-instructions`: per span and per event (bench − loop, /
//! `SPANS`), each gated (`✘` fails CI) at its base count (`TARGETS`, the highest measured
//! across machines) plus `iai::margin`: see `benches/RESULTS.md`, "Instruction gates".
//!
//! Run: `cargo bench -p picollo-benches --bench span_iai`.
#![allow(missing_docs)] // iai-callgrind's macros generate undocumented modules.

use iai_callgrind::{library_benchmark, library_benchmark_group, main};
use picollo_benches::iai::{cell, gate, instructions, per_op, release_defaults};
use picollo_benches::report::{header, Block};
use picollo_linux::span::{self, SpanConsumer};
use std::hint::black_box;

/// Spans per bench call (fewer than a ring's 16,384 slots: nothing is overwritten).
const SPANS: u64 = 10_000;

/// This thread's ring, open, with no consumer.
fn without_consumer() -> Option<SpanConsumer> {
    span::open_thread_ring().expect("span ring");
    None
}

/// This thread's ring with a consumer attached (in this process).
fn with_consumer() -> Option<SpanConsumer> {
    span::open_thread_ring().expect("span ring");
    Some(SpanConsumer::attach(std::process::id() as i32).expect("attach"))
}

#[library_benchmark]
#[bench::no_consumer(setup = without_consumer)]
#[bench::attached(setup = with_consumer)]
fn spans(consumer: Option<SpanConsumer>) -> Option<SpanConsumer> {
    for i in 0..SPANS {
        let _s = picollo_linux::span!("bench");
        black_box(i);
    }
    consumer
}

#[library_benchmark]
#[bench::no_consumer(setup = without_consumer)]
#[bench::attached(setup = with_consumer)]
fn counter_events(consumer: Option<SpanConsumer>) -> Option<SpanConsumer> {
    for i in 0..SPANS {
        picollo_linux::counter!("bench-value", black_box(i));
    }
    consumer
}

#[library_benchmark]
#[bench::empty(setup = without_consumer)]
fn loop_baseline(consumer: Option<SpanConsumer>) -> Option<SpanConsumer> {
    for i in 0..SPANS {
        black_box(i);
    }
    consumer
}

library_benchmark_group!(
    name = span_costs;
    benchmarks = loop_baseline, spans, counter_events
);

/// Base counts of the gates: instructions per span or event, fat LTO and release defaults,
/// the highest measured on the machines listed in `benches/RESULTS.md` ("Instruction
/// gates"); each gate allows `iai::margin` over its base (before issue 34, an attached
/// `span!` took 163 / 161).
const TARGETS: [(&str, &str, &str, [f64; 2]); 4] = [
    ("spans", "no_consumer", "`span!`, no consumer", [13.0, 13.0]),
    (
        "spans",
        "attached",
        "`span!`, attached (time only)",
        // Release defaults: 160 measured at 49e9c3f (158 before; 161 after issue 43's shm
        // writer change, within the margin).
        [156.0, 160.0],
    ),
    (
        "counter_events",
        "no_consumer",
        "`counter!`, no consumer",
        [5.0, 5.0],
    ),
    (
        "counter_events",
        "attached",
        "`counter!`, attached",
        [94.0, 96.0],
    ),
];

fn tables() {
    let count = |function: &str, id: &str| instructions("span_iai", "span_costs", function, id);
    let base = count("loop_baseline", "empty");
    let profile = usize::from(release_defaults());
    let _block = Block::begin("span-instructions");
    println!(
        "{SPANS} spans (or events) per bench; per span = (bench − `loop_baseline`) / {SPANS}."
    );
    println!();
    header(&["case", "total Ir", "per span", "gate: base + margin"]);
    println!("| loop only | {} | — | |", cell(base));
    for (function, id, label, targets) in TARGETS {
        let total = count(function, id);
        let per = per_op(total, base, SPANS);
        println!(
            "| {label} | {} | {} | {} |",
            cell(total),
            per.map_or_else(|| "n/a".to_owned(), |p| format!("{p:.1}")),
            gate(per, targets[profile])
        );
    }
}

main!(
    teardown = tables();
    library_benchmark_groups = span_costs
);
