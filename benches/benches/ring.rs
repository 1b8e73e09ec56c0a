//! The lossy frame ring (`picollo_ring`): ns per save with no reader attached, with a
//! reader attached, and with a reader draining concurrently; and the reader's drain rate.
//! Wall clock, best of 7 runs, no criterion.
//!
//! Run: `cargo bench -p picollo-benches --bench ring`.
//!
//! The frame is 64 bytes: the sequence word plus seven payload words (`Frame64`). A second
//! frame has a 64-byte payload (a 72-byte slot). Every save encodes a frame that depends on
//! the loop counter, so nothing is hoisted out of the loop. Reference figures (DESIGN.md,
//! same 2-core VM): no reader 1.1–1.7 ns, attached 2.7 ns, attached with a concurrent reader
//! 5–7 ns. The machine is shared and noisy: compare medians across several invocations.

use picollo_ring::{required_words, Frame, FrameWriter, RingOptions, RingReader};
use picollo_testkit::StopFlag;
use portable_atomic::AtomicU64;
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use picollo_benches::report::{header, Block};
use picollo_benches::sized;

/// Saves per run (a tenth in a smoke run, `picollo_benches::smoke`).
fn saves() -> u64 {
    sized(20_000_000, 2_000_000)
}

/// Measured runs per case (after one warm-up; 1 in a smoke run): the best is reported.
fn runs() -> usize {
    sized(7, 1)
}
/// Ring slots unless `PICOLLO_RING_SLOTS` says otherwise: 64 KiB of 64-byte slots,
/// L2-resident.
const DEFAULT_SLOTS: u32 = 1024;

fn slots() -> u32 {
    std::env::var("PICOLLO_RING_SLOTS")
        .ok()
        .and_then(|s| s.parse().ok())
        .filter(|n: &u32| n.is_power_of_two() && *n >= 2)
        .unwrap_or(DEFAULT_SLOTS)
}

picollo_ring::frame! {
    /// Seven payload words: with the sequence word, one 64-byte slot.
    #[derive(Clone, Copy, Default)]
    struct Frame64 {
        a: u64,
        b: u64,
        c: u64,
        d: u64,
        e: u64,
        f: u64,
        g: u64,
    }
}

picollo_ring::frame! {
    /// Eight payload words: a 64-byte payload in a 72-byte slot.
    #[derive(Clone, Copy, Default)]
    struct Payload64 {
        a: u64,
        b: u64,
        c: u64,
        d: u64,
        e: u64,
        f: u64,
        g: u64,
        h: u64,
    }
}

trait Make: Frame + Sync {
    fn make(i: u64) -> Self;
}

impl Make for Frame64 {
    #[inline(always)]
    fn make(i: u64) -> Self {
        Self {
            a: i,
            b: i ^ 1,
            c: i + 2,
            d: i << 1,
            e: i >> 1,
            f: !i,
            g: i.wrapping_mul(3),
        }
    }
}

impl Make for Payload64 {
    #[inline(always)]
    fn make(i: u64) -> Self {
        Self {
            a: i,
            b: i ^ 1,
            c: i + 2,
            d: i << 1,
            e: i >> 1,
            f: !i,
            g: i.wrapping_mul(3),
            h: i.rotate_left(7),
        }
    }
}

fn region<F: Frame>() -> Vec<AtomicU64> {
    (0..required_words(&F::SCHEMA, 0, slots()))
        .map(|_| AtomicU64::new(0))
        .collect()
}

/// [`saves`] saves; returns ns per save. With `IN_MEMORY` the frame goes through `black_box`,
/// so it is built in memory and copied (as when code fills a frame's fields over time);
/// otherwise it is built where it is saved and may live in registers.
#[inline(never)]
fn save_loop<F: Make, const IN_MEMORY: bool>(w: &mut FrameWriter<'_, F>) -> f64 {
    let saves = saves();
    let t = Instant::now();
    let mut saved = 0u64;
    for i in 0..saves {
        let ok = if IN_MEMORY {
            w.save(black_box(&F::make(i)))
        } else {
            w.save(&F::make(black_box(i)))
        };
        saved += u64::from(ok);
    }
    let ns = t.elapsed().as_nanos() as f64 / saves as f64;
    black_box(saved);
    ns
}

#[derive(Clone, Copy, PartialEq)]
enum Case {
    NoReader,
    Attached,
    /// A reader thread that drains in a tight loop (the worst case for the writer: the
    /// `head` and slot lines bounce between cores on every frame).
    SpinningReader,
    /// A reader thread that drains, then sleeps 100 µs when it has caught up (as a
    /// collector does).
    PollingReader,
}

/// Best and median ns per save over [`runs`], and the reader's accepted share for the
/// concurrent cases.
fn run<F: Make, const IN_MEMORY: bool>(case: Case) -> (f64, f64, Option<f64>) {
    let mut words = region::<F>();
    let mut w = FrameWriter::<F>::new(&mut words, &RingOptions::new(slots())).unwrap();
    let region = w.ring().region();
    let mut times = Vec::new();
    let mut accepted_share = 0.0;
    let runs = runs();
    for run in 0..=runs {
        let ns = match case {
            Case::NoReader => save_loop::<F, IN_MEMORY>(&mut w),
            Case::Attached => {
                let _r = RingReader::attach(region).unwrap();
                save_loop::<F, IN_MEMORY>(&mut w)
            }
            Case::SpinningReader | Case::PollingReader => {
                let stop = StopFlag::new();
                let mut r = RingReader::attach(region).unwrap();
                let started = AtomicBool::new(false);
                std::thread::scope(|s| {
                    // The reader stops however this closure ends.
                    let _stop = stop.raise_on_drop();
                    let reader = s.spawn(|| {
                        let mut buf = [0u64; 16];
                        started.store(true, Ordering::Release);
                        while !stop.is_raised() {
                            while r.next_into(&mut buf).unwrap().is_some() {}
                            if case == Case::PollingReader {
                                std::thread::sleep(std::time::Duration::from_micros(100));
                            }
                        }
                        (r.accepted(), r.lost())
                    });
                    while !started.load(Ordering::Acquire) {
                        std::hint::spin_loop();
                    }
                    let ns = save_loop::<F, IN_MEMORY>(&mut w);
                    stop.raise();
                    let (a, l) = reader.join().unwrap();
                    if run > 0 {
                        accepted_share += a as f64 / (a + l).max(1) as f64 / runs as f64;
                    }
                    ns
                })
            }
        };
        if run > 0 {
            times.push(ns);
        }
    }
    times.sort_by(f64::total_cmp);
    let share =
        matches!(case, Case::SpinningReader | Case::PollingReader).then_some(accepted_share);
    (times[0], times[times.len() / 2], share)
}

/// Frames per drain-rate run (a 64 MiB ring).
const DRAIN_FRAMES: u64 = 1 << 20;

/// Reader drain rate: the writer fills a ring of `DRAIN_FRAMES` slots (no loss), then the
/// reader drains it. Returns ns per frame read, best of [`runs`].
fn drain_rate() -> f64 {
    let slots = DRAIN_FRAMES as u32;
    let mut words: Vec<AtomicU64> = (0..required_words(&Frame64::SCHEMA, 0, slots))
        .map(|_| AtomicU64::new(0))
        .collect();
    let mut w = FrameWriter::<Frame64>::new(&mut words, &RingOptions::new(slots)).unwrap();
    let region = w.ring().region();
    let mut best = f64::MAX;
    for _ in 0..=runs() {
        let mut r = RingReader::attach(region).unwrap();
        for i in 0..DRAIN_FRAMES {
            w.save(&Frame64::make(i));
        }
        let mut buf = [0u64; 16];
        let t = Instant::now();
        let mut sum = 0u64;
        while r.next_into(&mut buf).unwrap().is_some() {
            sum = sum.wrapping_add(buf[0]);
        }
        let ns = t.elapsed().as_nanos() as f64 / DRAIN_FRAMES as f64;
        black_box(sum);
        assert_eq!((r.accepted(), r.lost()), (DRAIN_FRAMES, 0));
        best = best.min(ns);
    }
    best
}

const CASES: [(&str, Case); 4] = [
    ("no reader attached", Case::NoReader),
    ("attached, reader idle", Case::Attached),
    ("attached, concurrent spinning reader", Case::SpinningReader),
    ("attached, concurrent polling reader", Case::PollingReader),
];

fn report(frame: &str, case: &str, (best, median, share): (f64, f64, Option<f64>)) {
    let share = share.map_or_else(|| "—".to_owned(), |s| format!("{:.1}%", s * 100.0));
    println!("| {frame}, {case} | {best:.2} | {median:.2} | {share} |");
}

fn main() {
    let _block = Block::begin("ring");
    println!(
        "{} saves per run, best and median of {} runs, {} slots; accepted = the share \
         of frames a concurrent reader read intact.",
        saves(),
        runs(),
        slots()
    );
    println!();
    header(&["case", "best ns per save", "median ns", "accepted"]);
    for (name, case) in CASES {
        report(
            "64-byte slot (7 words), frame in registers",
            name,
            run::<Frame64, false>(case),
        );
    }
    for (name, case) in CASES {
        report(
            "64-byte slot (7 words), frame in memory",
            name,
            run::<Frame64, true>(case),
        );
    }
    for (name, case) in CASES {
        report(
            "64-byte payload (8 words), frame in registers",
            name,
            run::<Payload64, false>(case),
        );
    }
    println!(
        "| reader drain, 64-byte slot, ns per frame (writer idle) | {:.2} | — | — |",
        drain_rate()
    );
}
