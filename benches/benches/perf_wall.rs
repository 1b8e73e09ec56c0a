//! Wall-clock cost of reading perf_event counters (block `perf-wall`): one group `read()` of 3
//! software events against 3 single-event reads, `read(false)` on software events (the page
//! says "no rdpmc", so it falls back to the syscall), the rdpmc path's page logic on a synthetic
//! page (fake `rdpmc`/`rdtsc`: this VM has no hardware PMU), and the per-counter deltas after a
//! read. Instruction counts of the same paths: `perf_iai`. The cases run interleaved, round
//! after round; each keeps its best and median round.
//!
//! Run: `cargo bench -p picollo-benches --bench perf_wall`.

use picollo_benches::perf::{software_session, synthetic_page, Fake, EVENTS};
use picollo_benches::report::{header, Block};
use picollo_benches::timing::{interleaved, time};
use picollo_linux::page::{read_page, PageRead};
use picollo_linux::session::CounterSession;
use std::hint::black_box;

/// Measured rounds per case (after one warm-up round).
const ROUNDS: usize = 21;
/// Calls per round of the syscall cases.
const SYSCALLS: u32 = 20_000;
/// Calls per round of the user-space cases.
const CALLS: u32 = 1_000_000;

fn main() {
    let mut group = software_session();
    let mut singles: Vec<CounterSession> = EVENTS
        .iter()
        .map(|&e| {
            CounterSession::builder()
                .event(e)
                .build()
                .expect("software events open without a PMU")
        })
        .collect();
    let mut fallback = software_session();
    let mut deltas_session = software_session();
    deltas_session.read(true).expect("read");
    deltas_session.read(true).expect("read");
    let page = synthetic_page();

    let t = interleaved(
        ROUNDS,
        &mut [
            &mut || {
                time(|| {
                    for _ in 0..SYSCALLS {
                        black_box(group.read(true).is_ok());
                    }
                })
            },
            &mut || {
                time(|| {
                    for _ in 0..SYSCALLS {
                        for s in &mut singles {
                            black_box(s.read(true).is_ok());
                        }
                    }
                })
            },
            &mut || {
                time(|| {
                    for _ in 0..SYSCALLS {
                        black_box(fallback.read(false).is_ok());
                    }
                })
            },
            &mut || {
                time(|| {
                    for _ in 0..CALLS {
                        // SAFETY: a live synthetic page, accessed atomically only; Fake's rdpmc
                        // is safe.
                        let read = unsafe { read_page(black_box(&page).as_ptr(), &Fake) };
                        if let PageRead::Counted(c) = read {
                            black_box(c.value);
                        }
                    }
                })
            },
            &mut || {
                time(|| {
                    for _ in 0..CALLS {
                        let mut sum = 0u64;
                        for (_, d) in black_box(&deltas_session).deltas().into_iter().flatten() {
                            sum = sum.wrapping_add(d.value().unwrap_or(0));
                        }
                        black_box(sum);
                    }
                })
            },
        ],
    );

    let _block = Block::begin("perf-wall");
    println!(
        "Software events only (no hardware PMU on this VM); {ROUNDS} interleaved rounds of \
         {SYSCALLS} syscall reads or {CALLS} user-space calls; ns per call."
    );
    println!();
    header(&["what", "best ns", "median ns"]);
    let rows = [
        ("one group `read()` of 3 software events", SYSCALLS),
        ("3 single-event `read()`s", SYSCALLS),
        (
            "`read(false)` on software events (the page says `index = 0`: falls back to `read()`)",
            SYSCALLS,
        ),
        (
            "rdpmc-path page read on a synthetic `perf_event_mmap_page`",
            CALLS,
        ),
        ("`deltas()` of 3 counters, summed", CALLS),
    ];
    for ((what, calls), timing) in rows.iter().zip(&t) {
        let calls = *calls as usize;
        println!(
            "| {what} | {:.1} | {:.1} |",
            timing.best_ns(calls),
            timing.median_ns(calls)
        );
    }
    println!();
    println!(
        "3 single-event reads cost {:.2}× one group read (best rounds).",
        t[1].best_ns(SYSCALLS as usize) / t[0].best_ns(SYSCALLS as usize)
    );
}
