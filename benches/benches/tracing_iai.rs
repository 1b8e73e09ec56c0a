//! Instruction counts (callgrind, via iai-callgrind) of a `tracing` span with the Picollo
//! layer, against the bare `Registry` and the span-timing layers of the ecosystem, for the two
//! scenarios of `tracing_layer`: enter + exit of an existing span, and a whole span (new,
//! enter, exit, close). Each bench runs `SPANS` spans after a warm-up in its setup; divide by
//! `SPANS` for a span's count. Kernel work (the `read()` of the counters case without a PMU)
//! is not counted by callgrind.
//!
//! Run: `cargo bench -p picollo-benches --bench tracing_iai`.
#![allow(missing_docs)] // iai-callgrind's macros generate undocumented modules.

use std::hint::black_box;

use iai_callgrind::{library_benchmark, library_benchmark_group, main};
use picollo_tracing::PicolloLayer;
use tracing::Dispatch;
use tracing_subscriber::fmt::format::FmtSpan;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::Registry;

/// Spans per bench call.
const SPANS: u64 = 1000;

/// The one span callsite of every bench, so the warm-up registers it (its histograms are
/// made then, not in the measured part).
#[inline(never)]
fn bench_span() -> tracing::Span {
    tracing::info_span!("bench_span")
}

fn warm(d: Dispatch) -> Dispatch {
    tracing::dispatcher::with_default(&d, || {
        for i in 0..100 {
            bench_span().in_scope(|| black_box(i));
        }
    });
    d
}

fn setup_bare() -> Dispatch {
    warm(Dispatch::new(Registry::default()))
}

/// A layer with no hook: the floor every layer pays (`tracing-subscriber`'s layering).
struct EmptyLayer;

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for EmptyLayer {}

fn setup_empty_layer() -> Dispatch {
    warm(Dispatch::new(Registry::default().with(EmptyLayer)))
}

fn setup_picollo_time_only() -> Dispatch {
    warm(Dispatch::new(
        Registry::default().with(PicolloLayer::builder().time_only().build()),
    ))
}

fn setup_picollo_counters() -> Dispatch {
    warm(Dispatch::new(
        Registry::default().with(
            PicolloLayer::builder()
                .counters(picollo_tracing::SpanCounters::parse("page-faults").expect("an event"))
                .build(),
        ),
    ))
}

fn setup_tracing_timing() -> Dispatch {
    warm(Dispatch::new(
        Registry::default().with(
            tracing_timing::Builder::default()
                .span_close_events()
                .layer(|| tracing_timing::Histogram::new_with_max(1_000_000_000, 2).unwrap()),
        ),
    ))
}

fn setup_fmt_close() -> Dispatch {
    warm(Dispatch::new(
        Registry::default().with(
            tracing_subscriber::fmt::layer()
                .with_span_events(FmtSpan::CLOSE)
                .with_writer(std::io::sink),
        ),
    ))
}

#[library_benchmark]
#[bench::registry(setup = setup_bare)]
#[bench::empty_layer(setup = setup_empty_layer)]
#[bench::picollo_time_only(setup = setup_picollo_time_only)]
#[bench::picollo_counters_page_faults(setup = setup_picollo_counters)]
#[bench::tracing_timing(setup = setup_tracing_timing)]
#[bench::fmt_close_timings(setup = setup_fmt_close)]
fn enter_exit(d: Dispatch) -> Dispatch {
    tracing::dispatcher::with_default(&d, || {
        let span = bench_span();
        for i in 0..SPANS {
            span.in_scope(|| black_box(i));
        }
    });
    d
}

#[library_benchmark]
#[bench::registry(setup = setup_bare)]
#[bench::empty_layer(setup = setup_empty_layer)]
#[bench::picollo_time_only(setup = setup_picollo_time_only)]
#[bench::picollo_counters_page_faults(setup = setup_picollo_counters)]
#[bench::tracing_timing(setup = setup_tracing_timing)]
#[bench::fmt_close_timings(setup = setup_fmt_close)]
fn whole_span(d: Dispatch) -> Dispatch {
    tracing::dispatcher::with_default(&d, || {
        for i in 0..SPANS {
            bench_span().in_scope(|| black_box(i));
        }
    });
    d
}

library_benchmark_group!(
    name = tracing_layers;
    benchmarks = enter_exit, whole_span
);

main!(library_benchmark_groups = tracing_layers);
