//! Instruction counts (callgrind, via iai-callgrind) of a span (`span!`, begin and end) and
//! of a `counter!` event: with no consumer attached (the cost every instrumented program
//! pays) and attached (time only: two clock reads and a frame). Counter reads are syscalls
//! or RDPMC, which callgrind does not count fairly; `span_cost` times them.
//! Run: `cargo bench -p picollo-benches --bench span_iai`.
#![allow(missing_docs)] // iai-callgrind's macros generate undocumented modules.

use iai_callgrind::{library_benchmark, library_benchmark_group, main};
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

main!(library_benchmark_groups = span_costs);
