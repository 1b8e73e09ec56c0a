//! Wall-clock cost of a `tracing` span with the Picollo layer installed, against the same
//! subscriber with no layer and against the span-timing layers of the ecosystem, measured in
//! the same run:
//!
//! - `Registry` alone (the bare subscriber every layer sits on);
//! - `Registry` with a layer whose hooks do nothing: what `tracing-subscriber`'s layering
//!   itself costs (the context of each hook, and the close guard that defers freeing the
//!   span until every layer saw the close), which every layer below pays too;
//! - `picollo-tracing`, time only (span rings on, nobody attached: the one-line default);
//! - `picollo-tracing` with counters (`PICOLLO_COUNTERS` if set; else `cycles,instructions`
//!   where the machine has a PMU, read with rdpmc; else `page-faults`, read with `read()`);
//! - `tracing-timing` 0.6 (the layer the issue names; it times between events, and with
//!   `span_close_events` records each span's creation → close time; it does nothing on
//!   enter/exit);
//! - `tracing-subscriber`'s own span timing: the `fmt` layer with `FmtSpan::CLOSE`, which
//!   keeps busy/idle times on every enter/exit and prints them at close (to `io::sink`);
//! - `tracing-tracy` 0.12 with its defaults (no profiler connected: Tracy queues the zones).
//!
//! Two scenarios: **enter + exit** of one existing span (`span.in_scope`, the case of an async
//! span polled many times), and the **whole span** (`info_span!(..).in_scope`: new, enter,
//! exit, close). The cases run interleaved, round after round, and each keeps its best round.
//!
//! Run: `cargo bench -p picollo-benches --bench tracing_layer`.

use std::hint::black_box;
use std::time::Instant;

use picollo_benches::report::Block;
use picollo_benches::sized;
use picollo_linux::caps::Capabilities;
use picollo_tracing::PicolloLayer;
use tracing::Dispatch;
use tracing_subscriber::fmt::format::FmtSpan;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::Registry;

/// Rounds, the best kept (2 in a smoke run, `picollo_benches::smoke`).
fn rounds() -> usize {
    sized(15, 2)
}

/// Spans per round (Tracy's queue grows with every zone while no profiler is connected:
/// it gets fewer).
const SPANS: u64 = 200_000;
const TRACY_SPANS: u64 = 20_000;

struct Case {
    name: &'static str,
    dispatch: Dispatch,
    spans: u64,
    enter_exit: f64,
    whole: f64,
}

fn case(name: &'static str, dispatch: Dispatch, spans: u64) -> Case {
    Case {
        name,
        dispatch,
        spans,
        enter_exit: f64::INFINITY,
        whole: f64::INFINITY,
    }
}

/// Nanoseconds per enter + exit of one existing span.
fn enter_exit(d: &Dispatch, n: u64) -> f64 {
    tracing::dispatcher::with_default(d, || {
        let span = tracing::info_span!("bench_span");
        let t = Instant::now();
        for i in 0..n {
            span.in_scope(|| black_box(i));
        }
        t.elapsed().as_nanos() as f64 / n as f64
    })
}

/// Nanoseconds per span created, entered, exited and closed.
fn whole(d: &Dispatch, n: u64) -> f64 {
    tracing::dispatcher::with_default(d, || {
        let t = Instant::now();
        for i in 0..n {
            tracing::info_span!("bench_span").in_scope(|| black_box(i));
        }
        t.elapsed().as_nanos() as f64 / n as f64
    })
}

/// A layer with no hook: the floor every layer pays.
struct EmptyLayer;

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for EmptyLayer {}

fn counters() -> (Vec<String>, &'static str) {
    if let Ok(v) = std::env::var("PICOLLO_COUNTERS") {
        return (
            picollo_linux::event::split_list(&v)
                .into_iter()
                .map(str::to_owned)
                .collect(),
            "PICOLLO_COUNTERS",
        );
    }
    if Capabilities::detect().has_hardware_pmu() {
        (vec!["cycles".into(), "instructions".into()], "rdpmc")
    } else {
        (vec!["page-faults".into()], "read() (no PMU here)")
    }
}

fn main() {
    let (names, how) = counters();
    let timed = PicolloLayer::builder().time_only().build();
    let typed = picollo_tracing::SpanCounters::parse(&names.join(",")).expect("perf event names");
    let counted = PicolloLayer::builder().counters(typed).build();
    let counters_label = format!("picollo, counters {} via {how}", names.join(","));
    let mut cases = vec![
        case(
            "Registry, no layer",
            Dispatch::new(Registry::default()),
            SPANS,
        ),
        case(
            "Registry + a layer with empty hooks",
            Dispatch::new(Registry::default().with(EmptyLayer)),
            SPANS,
        ),
        case(
            "picollo-tracing, time only",
            Dispatch::new(Registry::default().with(timed)),
            SPANS,
        ),
        case(
            "picollo-tracing, counters",
            Dispatch::new(Registry::default().with(counted)),
            SPANS,
        ),
        case(
            "tracing-timing (span close events)",
            Dispatch::new(
                Registry::default().with(
                    tracing_timing::Builder::default()
                        .span_close_events()
                        .layer(|| {
                            tracing_timing::Histogram::new_with_max(1_000_000_000, 2).unwrap()
                        }),
                ),
            ),
            SPANS,
        ),
        case(
            "fmt layer, FmtSpan::CLOSE timings",
            Dispatch::new(
                Registry::default().with(
                    tracing_subscriber::fmt::layer()
                        .with_span_events(FmtSpan::CLOSE)
                        .with_writer(std::io::sink),
                ),
            ),
            SPANS,
        ),
        case(
            "tracing-tracy (no profiler connected)",
            Dispatch::new(Registry::default().with(tracing_tracy::TracyLayer::default())),
            TRACY_SPANS,
        ),
    ];
    // Warm up (opens each thread's span ring and counters, calibrates the clock).
    for c in &cases {
        enter_exit(&c.dispatch, 1000);
        whole(&c.dispatch, 1000);
    }
    let rounds = rounds();
    for _ in 0..rounds {
        for c in &mut cases {
            c.enter_exit = c.enter_exit.min(enter_exit(&c.dispatch, c.spans));
            c.whole = c.whole.min(whole(&c.dispatch, c.spans));
        }
    }
    let bare = (cases[0].enter_exit, cases[0].whole);
    let overhead = |c: &Case| (c.enter_exit - bare.0, c.whole - bare.1);
    let picollo = overhead(&cases[2]);

    let _b = Block::begin("tracing-layer-wall");
    println!(
        "Best of {rounds} rounds; ns per span; overhead = the case minus `Registry, no layer`."
    );
    println!("Counters case: {counters_label}.\n");
    println!(
        "| subscriber | enter+exit (ns) | overhead | whole span (ns) | overhead | its overhead ÷ picollo time-only overhead (enter+exit / whole) |"
    );
    println!("|---|---:|---:|---:|---:|---:|");
    for (i, c) in cases.iter().enumerate() {
        let (oe, ow) = overhead(c);
        let ratio = |p: f64, o: f64| {
            if i < 3 || p <= 0.0 {
                "–".to_owned()
            } else if o < 2.0 {
                "– (does no work)".to_owned()
            } else {
                format!("{:.1}×", o / p)
            }
        };
        println!(
            "| {} | {:.1} | {:+.1} | {:.1} | {:+.1} | {} / {} |",
            c.name,
            c.enter_exit,
            oe,
            c.whole,
            ow,
            ratio(picollo.0, oe),
            ratio(picollo.1, ow)
        );
    }
    println!(
        "\ntracing-timing records nothing on enter/exit (its enter+exit overhead is noise); \
         ratios against it are for the whole span only."
    );
    drop(_b);
}
