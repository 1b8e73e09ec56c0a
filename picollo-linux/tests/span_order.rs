//! `span!` guards ended out of order: a guard whose outer guard ended first keeps its times,
//! and its counters are reported as not counted rather than taken from another span.
//! A binary of its own: the span configuration is per process.

use picollo_linux::span::{self, SpanConfig, SpanConsumer};

/// Touches `pages` fresh pages: exactly one page fault each.
fn touch_pages(pages: usize) {
    picollo_linux::workload::touch_fresh_pages(pages).unwrap();
}

#[test]
fn a_guard_ended_after_its_outer_guard_reports_no_other_spans_counters() {
    let cfg = SpanConfig::new()
        .with_counters(span::SpanCounters::parse("page-faults").expect("perf event name"))
        .with_slots(1024);
    span::configure(cfg).expect("configured before any span");
    span::open_thread_ring().expect("this thread's span ring");
    assert_eq!(span::thread_counters().unwrap(), ["page-faults"]);
    let mut consumer = SpanConsumer::attach(std::process::id() as i32).unwrap();

    let a = picollo_linux::span!("a");
    let b = picollo_linux::span!("b");
    assert!(a.is_active() && b.is_active());
    a.end(); // out of order: `b` is still open
             // `c` begins at the depth `b` had, where `b`'s start samples were kept.
    let c = picollo_linux::span!("c");
    touch_pages(8);
    c.end();
    touch_pages(2);
    b.end();
    // And in order again, after it.
    let d = picollo_linux::span!("d");
    touch_pages(3);
    d.end();

    let drained = consumer.poll().unwrap();
    assert_eq!(drained.lost, 0);
    let agg = consumer.aggregator();
    let pf = agg
        .counters()
        .iter()
        .position(|c| c == "page-faults")
        .expect("page-faults is a counter of the ring");
    let stats = |name: &str| agg.span(name).unwrap_or_else(|| panic!("span {name}"));
    for name in ["a", "b", "c", "d"] {
        assert_eq!(stats(name).count(), 1, "{name}: its time is recorded");
    }
    // `b`'s start samples were overwritten by `c`'s: not counted, not `c`'s 8 + 2 faults.
    assert_eq!(
        stats("b").counter_count(pf),
        0,
        "b's counters are not counted"
    );
    assert_eq!(stats("b").counter_sum(pf).unwrap_or(0), 0);
    // The others count their own faults (at least the pages touched inside them).
    let faults = |name: &str| stats(name).counter_sum(pf).unwrap_or(0);
    assert!(faults("c") >= 8, "c: {}", faults("c"));
    assert!(faults("d") >= 3, "d: {}", faults("d"));
    // `a` ended first, but nothing took its slot before it did: its samples are its own.
    assert_eq!(stats("a").counter_count(pf), 1, "a is counted");
    assert!(
        faults("a") < 8,
        "a's window closed before c began: {}",
        faults("a")
    );
}
