//! The workload under a timer interrupt: thread mode records its stream while the timer
//! interrupt (SysTick / CLINT) records another into the same `static` histograms, values
//! below and above the window included. Prints the report (which `run.sh` compares with the
//! host's) and, as `#` lines, how many ticks overlapped thread-mode recording and the stack
//! depth of an integer percentile batch. A hang (the old lock-based 64-bit atomics) is caught
//! by `run.sh`'s time limit.
#![no_std]
#![no_main]

use core::fmt::Write;
use core::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use picollo_core::scalable::XorShift;
use picollo_core::{EquivalentValue, FixedPercentile, PercentileError, ReadExt};
use picollo_firmware_rt::{fail, semihosting, stack_use, start_timer, stop_timer, Console};
use picollo_firmware_workload::{Histograms, IRQ_BATCHES, RANKS};

static HISTOGRAMS: Histograms = Histograms::new();

/// Interrupt batches recorded so far (written by the interrupt only).
static BATCHES_DONE: AtomicU32 = AtomicU32::new(0);
/// Whether thread mode is recording.
static THREAD_RECORDING: AtomicBool = AtomicBool::new(false);
/// Ticks that recorded while thread mode was recording (written by the interrupt only).
static OVERLAPPING_TICKS: AtomicU32 = AtomicU32::new(0);
/// Every tick (written by the interrupt only).
static TICKS: AtomicU32 = AtomicU32::new(0);

/// Timer period: SysTick cycles (25 MHz on mps2-an386, 16 MHz on the micro:bit) or `mtime`
/// ticks (10 MHz on `virt`).
#[cfg(target_arch = "arm")]
const PERIOD: u32 = 2_000;
#[cfg(target_arch = "riscv32")]
const PERIOD: u32 = 1_000;

fn tick() {
    TICKS.store(TICKS.load(Ordering::Relaxed) + 1, Ordering::Release);
    let done = BATCHES_DONE.load(Ordering::Relaxed);
    if done < IRQ_BATCHES {
        let mut rng = XorShift::from_seed_and_thread(0x1A7E, done as u64);
        HISTOGRAMS.record_irq_batch(done, &mut rng);
        if THREAD_RECORDING.load(Ordering::Relaxed) {
            let n = OVERLAPPING_TICKS.load(Ordering::Relaxed);
            OVERLAPPING_TICKS.store(n + 1, Ordering::Relaxed);
        }
        BATCHES_DONE.store(done + 1, Ordering::Release);
    }
}

/// The measured batch, in a frame of its own: inlined into the stack probe, its locals would
/// sit in the probe's frame, above the painted stack, and go uncounted.
#[inline(never)]
fn seven_ranks(batch: &mut [FixedPercentile; RANKS.len()]) -> Result<(), PercentileError> {
    HISTOGRAMS.shared.fixed_percentiles(&RANKS, EquivalentValue::Midpoint, batch)
}

/// The entry point the runtime calls after reset.
#[no_mangle]
pub fn firmware_main() -> ! {
    let mut out = Console::new();
    start_timer(PERIOD, tick);
    THREAD_RECORDING.store(true, Ordering::Relaxed);
    HISTOGRAMS.record_thread_values(|| {
        // Wait for the next tick: interrupts then record in the middle of this stream.
        let seen = TICKS.load(Ordering::Acquire);
        while TICKS.load(Ordering::Acquire) == seen {
            core::hint::spin_loop();
        }
    });
    THREAD_RECORDING.store(false, Ordering::Relaxed);
    while BATCHES_DONE.load(Ordering::Acquire) < IRQ_BATCHES {
        core::hint::spin_loop();
    }
    stop_timer();
    let overlap = OVERLAPPING_TICKS.load(Ordering::Relaxed);
    if overlap == 0 {
        fail(format_args!(
            "no timer interrupt recorded while thread mode was recording"
        ));
    }
    let mut batch = [FixedPercentile::default(); RANKS.len()];
    let stack = stack_use(2048, || {
        core::hint::black_box(seven_ranks(&mut batch)).ok();
    });
    core::hint::black_box(&batch);
    if HISTOGRAMS.report(&mut out).is_err() {
        fail(format_args!("report formatting failed"));
    }
    let _ = writeln!(out, "# ticks during thread-mode recording: {overlap}");
    let _ = writeln!(out, "# stack fixed_percentiles: {stack} bytes");
    out.flush();
    semihosting::exit(true)
}
