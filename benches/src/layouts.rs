//! The thread-local record against the plain record of the same width in several layouts of
//! one binary, each layout in a process of its own ([`crate::child`]), so that a layout
//! cliff shows (issue 30: a thread-local `u32` record measured 3.4× the plain one in one
//! binary and 1.0× in another).
//!
//! What changes between layouts:
//!
//! - the binary: each bench binary that calls [`report`] links different code around the same
//!   loops (`thread_local_alone` links only Picollo's kinds, `thread_local` the peer's too);
//! - the code address of the loop: every record loop is compiled [`COPIES`] times (a
//!   function per copy), so the copies sit at different addresses and alignments;
//! - the thread: the main thread (its TLS block in the static TLS area) or a spawned one (its
//!   TLS block at the top of its stack);
//! - the cells' offset from the thread pointer modulo 4096 (where 4K aliasing between the
//!   cells and the per-thread cache would show): an allocation of [`PADS`] bytes before the
//!   histograms shifts their cells; the table gives the offset each child measured.
//!
//! Every loop takes its histogram by reference in a function of its own (the handle's fields
//! stay in registers: the loop where the narrow cells' cliff showed); the thread-local kind
//! also records through a `static` (`LazyLock`), as services keep it. The cases run
//! interleaved, round after round. The figures are medians over rounds of the calling
//! thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`: the round's wall time less any time the thread
//! was descheduled, so a busy machine's preemptions do not enter the ratios); the wall-clock
//! medians are shown beside them.

use crate::child;
use crate::report::{header, Block};
use crate::{seed_values, LAYOUT, SEED_MAX};
use picollo_alloc::{HeapHistogram, HistogramBuilder, LocalCounter, ThreadLocalHistogram};
use picollo_core::{Counter, ReadExt, Window};
use std::alloc::{GlobalAlloc, Layout as AllocLayout, System};
use std::hint::black_box;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::LazyLock;
use std::time::Instant;

/// Copies of each record loop.
pub const COPIES: usize = 4;
/// Bytes allocated before the histograms, one layout each: shifts of about a quarter page.
pub const PADS: [usize; 4] = [0, 1040, 2080, 3120];
/// Values per round.
const VALUES: usize = 100_000;
/// Measured rounds (after one warm-up round).
const ROUNDS: usize = 15;
/// The target: a thread-local record costs at most this many plain records of its width.
pub const TARGET: f64 = 1.5;

/// A global allocator (the system's) that remembers where its latest allocation of at least
/// 16 KiB landed: a child reads it after a thread-local histogram claimed its shard, to
/// report the offset of the shard's cells. Install it with `#[global_allocator]` in a bench
/// binary that calls [`run_child`] and [`report`].
pub struct TrackCells;

static LATEST_LARGE: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every method forwards to `System` with the caller's arguments; only an address is
// recorded on the side.
unsafe impl GlobalAlloc for TrackCells {
    unsafe fn alloc(&self, layout: AllocLayout) -> *mut u8 {
        // SAFETY: the caller's guarantees for `alloc` are `System.alloc`'s.
        let p = unsafe { System.alloc(layout) };
        note(p, layout.size());
        p
    }
    unsafe fn alloc_zeroed(&self, layout: AllocLayout) -> *mut u8 {
        // SAFETY: as in `alloc`.
        let p = unsafe { System.alloc_zeroed(layout) };
        note(p, layout.size());
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: AllocLayout) {
        // SAFETY: `ptr` came from this allocator, that is from `System`, with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: AllocLayout, new_size: usize) -> *mut u8 {
        // SAFETY: as in `dealloc`; `new_size` is the caller's, checked by it.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        note(p, new_size);
        p
    }
}

fn note(p: *mut u8, size: usize) {
    if size >= 16 << 10 {
        LATEST_LARGE.store(p as usize, Ordering::Relaxed);
    }
}

/// The calling thread's thread pointer (`fs` base on x86-64, `tpidr_el0` on AArch64): the
/// end of the executable's TLS block. `None` elsewhere.
fn thread_pointer() -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    {
        let tp: usize;
        // SAFETY: on x86-64 Linux `fs:0` holds the thread control block's address (the TCB
        // points to itself); reading it has no side effect.
        unsafe {
            core::arch::asm!("mov {}, fs:0", out(reg) tp, options(nostack, readonly, preserves_flags))
        };
        Some(tp)
    }
    #[cfg(target_arch = "aarch64")]
    {
        let tp: usize;
        // SAFETY: reading the EL0 thread ID register has no side effect.
        unsafe {
            core::arch::asm!("mrs {}, tpidr_el0", out(reg) tp, options(nomem, nostack, preserves_flags))
        };
        Some(tp)
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        None
    }
}

/// The window of the benchmark data.
fn window() -> Window {
    Window::new(LAYOUT, 0, SEED_MAX).expect("0 <= max")
}

static STATIC_U64: LazyLock<ThreadLocalHistogram<u64>> = LazyLock::new(|| {
    let builder = HistogramBuilder::new().layout(LAYOUT).window(window());
    builder.thread_local().expect("the bench layout builds")
});
static STATIC_U32: LazyLock<ThreadLocalHistogram<u32>> = LazyLock::new(|| {
    let builder = HistogramBuilder::new().layout(LAYOUT).window(window());
    builder
        .u32_storage()
        .thread_local()
        .expect("the bench layout builds")
});

#[inline(never)]
fn plain_loop<C: Counter, const K: usize>(h: &mut HeapHistogram<C>, values: &[u64]) {
    black_box(K);
    for &v in values {
        h.record(black_box(v));
    }
}

#[inline(never)]
fn local_loop<C: LocalCounter, const K: usize>(h: &ThreadLocalHistogram<C>, values: &[u64]) {
    black_box(K);
    for &v in values {
        h.record(black_box(v));
    }
}

/// A plain record loop.
type PlainLoop<C> = fn(&mut HeapHistogram<C>, &[u64]);
/// A thread-local record loop.
type LocalLoop<C> = fn(&ThreadLocalHistogram<C>, &[u64]);

/// The [`COPIES`] copies of the plain loop.
fn plain_copies<C: Counter>() -> [PlainLoop<C>; COPIES] {
    [
        plain_loop::<C, 0>,
        plain_loop::<C, 1>,
        plain_loop::<C, 2>,
        plain_loop::<C, 3>,
    ]
}

/// The [`COPIES`] copies of the thread-local loop.
fn local_copies<C: LocalCounter>() -> [LocalLoop<C>; COPIES] {
    [
        local_loop::<C, 0>,
        local_loop::<C, 1>,
        local_loop::<C, 2>,
        local_loop::<C, 3>,
    ]
}

#[inline(never)]
fn static_loop_u64(values: &[u64]) {
    for &v in values {
        STATIC_U64.record(black_box(v));
    }
}

#[inline(never)]
fn static_loop_u32(values: &[u64]) {
    for &v in values {
        STATIC_U32.record(black_box(v));
    }
}

/// The cases of a child, in the order of its output.
const CASES: [&str; 4] = ["plain_u64", "plain_u32", "local_u64", "local_u32"];

/// One round of `f`: (wall, thread CPU) nanoseconds.
fn round(f: impl FnOnce()) -> (u64, u64) {
    let cpu = picollo_linux::thread_cpu_time_ns().unwrap_or(0);
    let wall = Instant::now();
    f();
    let wall = wall.elapsed().as_nanos() as u64;
    let cpu = picollo_linux::thread_cpu_time_ns()
        .unwrap_or(0)
        .saturating_sub(cpu);
    (wall, cpu)
}

fn median(mut xs: Vec<u64>) -> u64 {
    xs.sort_unstable();
    xs[xs.len() / 2]
}

/// A child's work: `pad` bytes allocated first, then every case, interleaved.
fn measure(pad: usize) {
    let padding = black_box(vec![1u8; pad]);
    let values = seed_values(VALUES);
    let window = window();
    let mut p64 = HistogramBuilder::new()
        .layout(LAYOUT)
        .window(window)
        .dense()
        .plain()
        .unwrap();
    let mut p32 = HistogramBuilder::new()
        .layout(LAYOUT)
        .window(window)
        .u32_storage()
        .dense()
        .plain()
        .unwrap();
    let builder = HistogramBuilder::new().layout(LAYOUT).window(window);
    let l64 = builder.thread_local().unwrap();
    let l32 = builder.u32_storage().thread_local().unwrap();
    // The first record claims the thread's shard: its cells are the latest large allocation.
    l64.record(1);
    l32.record(1);
    let cells = LATEST_LARGE.load(Ordering::Relaxed);
    STATIC_U64.record(1);
    STATIC_U32.record(1);
    let (plain64, plain32) = (plain_copies::<u64>(), plain_copies::<u32>());
    let (local64, local32) = (local_copies::<u64>(), local_copies::<u32>());
    // times[case][copy]: (wall, cpu) per round; the two static cases after the copies.
    let mut times = vec![vec![(Vec::new(), Vec::new()); COPIES]; CASES.len()];
    let mut statics = [(Vec::new(), Vec::new()), (Vec::new(), Vec::new())];
    for r in 0..=ROUNDS {
        let keep = |slot: &mut (Vec<u64>, Vec<u64>), (w, c): (u64, u64)| {
            if r > 0 {
                slot.0.push(w);
                slot.1.push(c);
            }
        };
        for k in 0..COPIES {
            keep(&mut times[0][k], round(|| plain64[k](&mut p64, &values)));
            keep(&mut times[1][k], round(|| plain32[k](&mut p32, &values)));
            keep(&mut times[2][k], round(|| local64[k](&l64, &values)));
            keep(&mut times[3][k], round(|| local32[k](&l32, &values)));
        }
        keep(&mut statics[0], round(|| static_loop_u64(&values)));
        keep(&mut statics[1], round(|| static_loop_u32(&values)));
    }
    // Nothing lost: every thread-local record is in its histogram.
    let per_histogram = (ROUNDS as u64 + 1) * (COPIES * VALUES) as u64 + 1;
    assert_eq!(l64.total(), per_histogram, "thread-local u64 lost counts");
    assert_eq!(l32.total(), per_histogram, "thread-local u32 lost counts");
    black_box((p64.total(), p32.total(), &padding));

    let tp = thread_pointer();
    println!(
        "cells_offset {}",
        tp.map_or(-1, |tp| (cells.wrapping_sub(tp) % 4096) as i64)
    );
    for (case, copies) in CASES.iter().zip(times) {
        for (k, (wall, cpu)) in copies.into_iter().enumerate() {
            println!("{case}_{k}_wall {}", median(wall));
            println!("{case}_{k}_cpu {}", median(cpu));
        }
    }
    for (name, (wall, cpu)) in ["static_u64", "static_u32"].iter().zip(statics) {
        println!("{name}_wall {}", median(wall));
        println!("{name}_cpu {}", median(cpu));
    }
}

/// In a child started by [`report`], runs its layout and returns `true` (the bench's `main`
/// then returns at once); otherwise returns `false`. Call it first thing in `main`, with
/// [`TrackCells`] installed as the global allocator.
pub fn run_child() -> bool {
    let Some(case) = child::case() else {
        return false;
    };
    let Some(rest) = case.strip_prefix("layout ") else {
        return false;
    };
    let mut words = rest.split_whitespace();
    let thread = words.next().unwrap_or("main");
    let pad: usize = words.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    if thread == "spawned" {
        std::thread::spawn(move || measure(pad))
            .join()
            .expect("the measuring thread");
    } else {
        measure(pad);
    }
    true
}

/// Runs every layout of this binary (`binary` names it in the table), each in a child
/// process, and prints block `block_id` with the target row.
pub fn report(block_id: &'static str, binary: &str) {
    let started = Instant::now();
    let mut rows = Vec::new();
    for thread in ["main", "spawned"] {
        for pad in PADS {
            rows.push((
                thread,
                pad,
                child::run(&format!("layout {thread} {pad}"), &[]),
            ));
        }
    }
    let ratio = |out: &str, case: &str, plain: &str, k: usize, clock: &str| {
        child::field::<f64>(out, &format!("{case}_{k}_{clock}"))
            / child::field::<f64>(out, &format!("{plain}_{k}_{clock}"))
    };
    let worst = |out: &str, case: &str, plain: &str, clock: &str| {
        (0..COPIES)
            .map(|k| ratio(out, case, plain, k, clock))
            .fold(0.0, f64::max)
    };
    let plain_median = |out: &str, plain: &str, clock: &str| {
        let mut xs: Vec<f64> = (0..COPIES)
            .map(|k| child::field::<f64>(out, &format!("{plain}_{k}_{clock}")))
            .collect();
        xs.sort_by(f64::total_cmp);
        (xs[COPIES / 2 - 1] + xs[COPIES / 2]) / 2.0
    };
    let ns = |out: &str, key: &str| child::field::<f64>(out, key) / VALUES as f64;

    let _block = Block::begin(block_id);
    println!(
        "Binary: {binary}. Seed data, {VALUES} values per round, {ROUNDS} interleaved rounds per \
         process; one process per row (thread × bytes allocated before the histograms); every \
         record loop compiled {COPIES} times (a function per copy, the histogram passed by \
         reference). Ratio = thread-local ÷ plain of the same width and copy, medians of the \
         thread's CPU time per round (wall-clock medians in parentheses); the worst of the \
         {COPIES} copies. `static`: the thread-local histogram in a `LazyLock` static, ÷ the \
         median plain copy. Cells − thread pointer: the thread-local `u32` shard's cells, \
         mod 4096."
    );
    println!();
    header(&[
        "thread",
        "pad (bytes)",
        "cells − thread pointer mod 4096",
        "plain u64 ns",
        "thread-local u64 ÷ plain, worst copy",
        "plain u32 ns",
        "thread-local u32 ÷ plain, worst copy",
        "`static` u64 ÷ plain",
        "`static` u32 ÷ plain",
    ]);
    let mut worst_all: f64 = 0.0;
    for (thread, pad, out) in &rows {
        let offset: i64 = child::field(out, "cells_offset");
        let offset = if offset < 0 {
            "n/a".to_string()
        } else {
            format!("{offset:#05x}")
        };
        let (w64, w32) = (
            worst(out, "local_u64", "plain_u64", "cpu"),
            worst(out, "local_u32", "plain_u32", "cpu"),
        );
        worst_all = worst_all.max(w64).max(w32);
        let static_ratio = |name: &str, plain: &str, clock: &str| {
            child::field::<f64>(out, &format!("{name}_{clock}")) / plain_median(out, plain, clock)
        };
        println!(
            "| {thread} | {pad} | {offset} | {:.2} | {w64:.2}× ({:.2}×) | {:.2} | {w32:.2}× \
             ({:.2}×) | {:.2}× ({:.2}×) | {:.2}× ({:.2}×) |",
            ns(out, "plain_u64_0_cpu"),
            worst(out, "local_u64", "plain_u64", "wall"),
            ns(out, "plain_u32_0_cpu"),
            worst(out, "local_u32", "plain_u32", "wall"),
            static_ratio("static_u64", "plain_u64", "cpu"),
            static_ratio("static_u64", "plain_u64", "wall"),
            static_ratio("static_u32", "plain_u32", "cpu"),
            static_ratio("static_u32", "plain_u32", "wall"),
        );
    }
    // In words, not ✔/✘: a CPU-time ratio moves with the load of the machine, and `✘` is kept
    // for repeatable targets (instruction counts), which fail CI.
    let mark = if worst_all <= TARGET { "met" } else { "missed" };
    println!(
        "| **target: thread-local ≤ {TARGET}× plain, every layout and copy (by reference)** | \
         | | | worst of both widths: {worst_all:.2}× {mark} | | | | |"
    );
    println!();
    println!(
        "{} processes in {:.1} s.",
        rows.len(),
        started.elapsed().as_secs_f64()
    );
}
