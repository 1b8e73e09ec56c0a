//! The cost of a span (`picollo_linux::span!`, begin and end) with counters, in one run:
//! no consumer attached; attached, time only; attached with two software counters (read
//! with one group `read()` at each end); attached with two hardware counters (`cycles`,
//! `instructions`, read with RDPMC through the mmap page when the kernel allows it); and a
//! `counter!` event. Counters are switched between cases the way a user does it, with a
//! counter request from an attached consumer (ppt's attach-time counters), so every
//! case runs in the same process on the same ring.
//!
//! Wall clock, best and median of `RUNS` runs, no criterion. The consumer drains between
//! batches of spans (never while the spans are timed), so no frame is lost and the reader's
//! cache traffic is not in the figures.
//!
//! Run: `cargo bench -p picollo-benches --bench span_cost`. Without a hardware PMU (a VM)
//! the hardware row says `n/a` with the reason.

use std::hint::black_box;
use std::time::{Duration, Instant};

use picollo_benches::report::Block;
use picollo_linux::caps::Capabilities;
use picollo_linux::span::{self, SpanConfig, SpanConsumer};

/// Measured runs per case (after one warm-up run).
const RUNS: usize = 7;
/// Spans per timed batch: fewer than the ring's slots, drained between batches.
const BATCH: u64 = 8192;
/// Ring slots.
const SLOTS: u32 = 1 << 15;

/// One case's figures: best and median ns per span.
struct Figures {
    best: f64,
    median: f64,
}

/// Times `spans` spans (or events) of `body`, in batches drained by `consumer` between
/// them; best and median over the runs.
fn time(consumer: Option<&mut SpanConsumer>, spans: u64, body: impl Fn(u64)) -> Figures {
    let mut consumer = consumer;
    let mut per_run = Vec::with_capacity(RUNS);
    for run in 0..=RUNS {
        let mut elapsed = Duration::ZERO;
        let mut done = 0;
        while done < spans {
            let n = BATCH.min(spans - done);
            let t = Instant::now();
            for i in done..done + n {
                body(i);
            }
            elapsed += t.elapsed();
            done += n;
            if let Some(c) = consumer.as_deref_mut() {
                let d = c.poll().expect("drain");
                assert_eq!(d.lost, 0, "the ring holds a batch");
            }
        }
        if run > 0 {
            per_run.push(elapsed.as_nanos() as f64 / spans as f64);
        }
    }
    per_run.sort_by(f64::total_cmp);
    Figures {
        best: per_run[0],
        median: per_run[per_run.len() / 2],
    }
}

#[inline(never)]
fn one_span(i: u64) {
    let _s = picollo_linux::span!("bench");
    black_box(i);
}

#[inline(never)]
fn one_event(i: u64) {
    picollo_linux::counter!("bench-value", i);
}

/// Asks this thread's ring for `counters` and applies the request (the next outermost span
/// does); returns what the ring measures now.
fn switch_counters(consumer: &mut SpanConsumer, counters: &str) -> Vec<String> {
    let counters = span::SpanCounters::parse(counters).expect("perf event names");
    consumer.request_counters(&counters).expect("request");
    one_span(0);
    let outcome = consumer
        .request_outcomes(Duration::from_secs(1))
        .expect("outcome");
    outcome[0]
        .counters
        .iter()
        .filter(|c| c.1 == picollo_ring::CounterStatus::Measured)
        .map(|c| c.0.clone())
        .collect()
}

fn main() {
    span::configure(SpanConfig::new().with_slots(SLOTS)).expect("first configuration");
    let caps = Capabilities::detect();
    span::open_thread_ring().expect("this thread's span ring");

    let mut rows: Vec<(String, Option<Figures>, String)> = Vec::new();
    rows.push((
        "no consumer attached".into(),
        Some(time(None, 20_000_000, one_span)),
        "one thread-local load and a branch".into(),
    ));
    let mut consumer = SpanConsumer::attach(std::process::id() as i32).expect("attach");
    assert_eq!(consumer.rings(), 1);
    rows.push((
        "attached, time only".into(),
        Some(time(Some(&mut consumer), 2_000_000, one_span)),
        "two clock reads and a 7-word frame".into(),
    ));
    rows.push((
        "attached, counter! event".into(),
        Some(time(Some(&mut consumer), 2_000_000, one_event)),
        "one clock read and a 7-word frame".into(),
    ));
    let software = switch_counters(&mut consumer, "page-faults,context-switches");
    let note = format!("{} (one group read() at each end)", software.join(", "));
    rows.push((
        "attached, 2 software counters".into(),
        Some(time(Some(&mut consumer), 100_000, one_span)),
        note,
    ));
    let hardware = switch_counters(&mut consumer, "cycles,instructions");
    if hardware.len() == 2 {
        rows.push((
            "attached, 2 hardware counters".into(),
            Some(time(Some(&mut consumer), 1_000_000, one_span)),
            format!("cycles, instructions; rdpmc: {}", caps.rdpmc),
        ));
    } else {
        rows.push((
            "attached, 2 hardware counters".into(),
            None,
            caps.no_pmu_reason().map_or_else(
                || "cycles and instructions did not open".into(),
                |r| r.split(';').next().unwrap_or("no hardware PMU").to_owned(),
            ),
        ));
    }
    switch_counters(&mut consumer, "");

    let base = rows[1].1.as_ref().map_or(f64::NAN, |f| f.best);
    {
        let _b = Block::begin("span-cost");
        println!();
        println!("| span (begin + end) | best ns | median ns | × time only | what it does |");
        println!("| :-- | --: | --: | --: | :-- |");
        for (name, f, note) in &rows {
            match f {
                Some(f) => println!(
                    "| {name} | {:.1} | {:.1} | {:.2} | {note} |",
                    f.best,
                    f.median,
                    f.best / base
                ),
                None => println!("| {name} | n/a | n/a | n/a | {note} |"),
            }
        }
        println!();
        println!(
            "PMU: {}. Frames read by the consumer: {}, lost: {}.",
            caps.pmu,
            consumer.aggregator().accepted(),
            consumer.aggregator().lost()
        );
    }
}
