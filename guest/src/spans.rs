//! Spans with counters: `span!` read back by a consumer in this process, the `tracing` layer's
//! deltas and histograms, and the spans program that `picollo attach` attaches to.

use std::hint::black_box;
use std::time::{Duration, Instant};

use picollo_core::workload::add_chain_256;
use picollo_linux::event::HardwareEvent;
use picollo_linux::span::{self, Span, SpanConfig, SpanConsumer};
use picollo_spans::SpanName;

use crate::model::{MAX_CONSTANT, MAX_SPAN_CONSTANT, MAX_TRACING_CONSTANT, PER_UNIT};
use crate::report::Report;

/// Spans around `add_chain_256(n)`, with `instructions` sampled at each span's ends, read
/// back by a consumer in this process; then the same through the `tracing` layer.
pub(crate) fn spans_and_tracing(r: &mut Report) -> Option<u64> {
    let mut span_constant = None;
    let instructions = span::SpanCounters::new().with(HardwareEvent::Instructions);
    if span::configure(SpanConfig::new().with_counters(instructions)).is_err() {
        r.error("spans", "span counters configured already");
        return None;
    }
    let _ = span::open_thread_ring();
    let pid = std::process::id() as i32;
    let mut consumer = match SpanConsumer::attach(pid) {
        Ok(c) => c,
        Err(e) => {
            r.error("spans", e);
            return None;
        }
    };
    const K: u64 = 20;
    for round in 0..=K {
        if round == 1 {
            // The first round (the ring's and the counters' first use) is not measured.
            if let Err(e) = consumer.poll() {
                r.error("spans", e);
                return None;
            }
            let _ = consumer.take_interval();
        }
        chain_span(CHAIN_1000, 1000);
        chain_span(SpanName::new("chain3000"), 3000);
    }
    if let Err(e) = consumer.poll() {
        r.error("spans", e);
        return None;
    }
    let agg = consumer.aggregator();
    let idx = agg.counters().iter().position(|c| c == "instructions");
    let per_span = |name: &str| -> Option<(u64, u128)> {
        use picollo_core::read::ReadExt;
        let st = agg.span(name)?;
        let i = idx?;
        let h = st.counter_deltas(i)?;
        println!(
            "INFO {name}: instructions per span in [{:?}, {:?}]",
            h.min(),
            h.max()
        );
        Some((st.counter_count(i), st.counter_sum(i)?))
    };
    match (per_span("chain1000"), per_span("chain3000")) {
        (Some((n1, s1)), Some((n3, s3))) => {
            let c1 = s1 as i128 - i128::from(n1 * PER_UNIT * 1000);
            let c3 = s3 as i128 - i128::from(n3 * PER_UNIT * 3000);
            let ok = n1 == K
                && n3 == K
                && c1 == c3
                && c1 % i128::from(K) == 0
                && (0..=i128::from(MAX_CONSTANT * K)).contains(&c1);
            r.check(
                "span-instructions",
                ok,
                format!(
                    "{n1} + {n3} spans: sums {s1} and {s3} = spans × (258·n + {}) exactly",
                    c1 / i128::from(K.max(1))
                ),
            );
            if ok {
                let c = u64::try_from(c1 / i128::from(K)).unwrap_or(u64::MAX);
                r.figure("constant_span", c);
                r.check(
                    "span-constant-gate",
                    c <= MAX_SPAN_CONSTANT,
                    format!(
                        "span! adds {c} instructions to its window (at most {MAX_SPAN_CONSTANT})"
                    ),
                );
                span_constant = Some(c);
            }
        }
        other => r.check(
            "span-instructions",
            false,
            format!("no span counts: {other:?}"),
        ),
    }
    tracing_layer(r, &mut consumer);
    span_constant
}

/// One `tracing` span callsite around `add_chain_256(n)` (one callsite: the layer's own
/// instructions inside the window depend on the callsite's place in its tables).
#[inline(never)]
pub(crate) fn traced(n: u64) {
    let s = tracing::info_span!("traced");
    s.in_scope(|| black_box(add_chain_256(black_box(n))));
}

/// The `tracing` layer's counter deltas: the frames it writes to the thread's ring (read by
/// `consumer`, exact sums) are exactly `258·n + C` per span for every `n`, as for `span!`,
/// and its own histograms (0.4% buckets) hold every span around that count.
pub(crate) fn tracing_layer(r: &mut Report, consumer: &mut SpanConsumer) {
    use picollo_core::read::ReadExt;
    use tracing_subscriber::layer::SubscriberExt;
    let layer = picollo_tracing::PicolloLayer::builder()
        .counters(picollo_tracing::SpanCounters::parse("instructions").expect("a perf event"))
        .build();
    let handle = layer.handle();
    let subscriber = tracing_subscriber::registry().with(layer);
    const K: u64 = 20;
    // (n, spans, sum) of each interval of K spans.
    let mut intervals: Vec<Result<(u64, u64, u128), String>> = Vec::new();
    tracing::subscriber::with_default(subscriber, || {
        // The callsite's first span is not measured.
        traced(1000);
        let _ = consumer.poll();
        let _ = consumer.take_interval();
        for n in [1000u64, 3000] {
            for _ in 0..K {
                traced(n);
            }
            let sum = consumer.poll().map_err(|e| e.to_string()).and_then(|_| {
                let agg = consumer.take_interval();
                let i = agg
                    .counters()
                    .iter()
                    .position(|c| c == "instructions")
                    .ok_or("no instructions in the frames")?;
                let st = agg.span("traced").ok_or("no traced frames")?;
                Ok((n, st.counter_count(i), st.counter_sum(i).unwrap_or(0)))
            });
            intervals.push(sum);
        }
    });
    match intervals[..] {
        [Ok((n1, k1, s1)), Ok((n3, k3, s3))] => {
            let c1 = s1 as i128 - i128::from(k1 * PER_UNIT * n1);
            let c3 = s3 as i128 - i128::from(k3 * PER_UNIT * n3);
            let ok = k1 == K
                && k3 == K
                && c1 == c3
                && c1 % i128::from(K) == 0
                && (0..=i128::from(MAX_CONSTANT * K)).contains(&c1);
            r.check(
                "tracing-frames",
                ok,
                format!(
                    "the layer's frames: {k1} + {k3} spans, sums {s1} and {s3} = spans × \
                     (258·n + {})",
                    c1 / i128::from(K)
                ),
            );
            if ok {
                let c = c1 / i128::from(K);
                r.figure("constant_tracing", c);
                r.check(
                    "tracing-constant-gate",
                    c <= i128::from(MAX_TRACING_CONSTANT),
                    format!(
                        "a span of the tracing layer adds {c} instructions to its window (at \
                         most {MAX_TRACING_CONSTANT})"
                    ),
                );
            }
        }
        ref other => r.check("tracing-frames", false, format!("{other:?}")),
    }
    let report = handle.span("traced");
    let c = report.as_ref().and_then(|s| s.counter("instructions"));
    match (
        report.as_ref(),
        c,
        c.and_then(|c| c.deltas.min()),
        c.and_then(|c| c.deltas.max()),
    ) {
        (Some(report), Some(c), Some(min), Some(max)) => {
            // 128 buckets per power of two: min and max are bucket bounds around
            // 258·1000 + C and 258·3000 + C.
            let (lo, hi) = (PER_UNIT * 1000, PER_UNIT * 3000);
            let ok = report.count() == 2 * K + 1
                && c.not_counted == 0
                && min + lo / 128 >= lo
                && min <= lo + lo / 128 + MAX_CONSTANT
                && max + hi / 128 >= hi
                && max <= hi + hi / 128 + MAX_CONSTANT;
            r.check(
                "tracing-histograms",
                ok,
                format!(
                    "{} spans, not counted {}; instructions per span from {min} to {max} \
                     (258,000 + C and 774,000 + C, in 0.4% buckets)",
                    report.count(),
                    c.not_counted
                ),
            );
        }
        _ => r.check("tracing-histograms", false, "no report"),
    }
    if let Some(p) = handle.counter_problem() {
        r.check("tracing-counters", false, p);
    }
}

/// The span of [`chain_span`] around `add_chain_256(1000)`, in this process and in the
/// spans program `picollo attach` attaches to.
pub(crate) const CHAIN_1000: SpanName = SpanName::new("chain1000");

/// A span around `add_chain_256(n)`: one function for the in-process check and the spans
/// program, so both count the same constant.
#[inline(never)]
pub(crate) fn chain_span(name: SpanName, n: u64) {
    let _s = Span::enter(name);
    black_box(add_chain_256(black_box(n)));
}

/// A spans program for `picollo attach`: [`chain_span`]s of `add_chain_256(1000)`,
/// with a short sleep between, for `secs` seconds. Prints its pid when its ring is open.
pub(crate) fn spans_program(secs: f64) {
    let _ = span::open_thread_ring();
    println!("ready {}", std::process::id());
    let deadline = Instant::now() + Duration::from_secs_f64(secs);
    while Instant::now() < deadline {
        chain_span(CHAIN_1000, 1000);
        std::thread::sleep(Duration::from_millis(1));
    }
}
