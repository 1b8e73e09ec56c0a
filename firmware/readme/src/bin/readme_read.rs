//! The README's `static`, recorded, then read with the integer read path the README names:
//! `try_fixed_percentiles` (seven ranks), `try_int_stats`, `try_min`, `try_max`. Prints the
//! stack depth of the seven-rank batch (its output array is the caller's, outside the
//! figure).
#![no_std]
#![no_main]

use picollo_core::{EquivalentValue, FixedPercentile, ReadExt};
use picollo_firmware_readme::{print_stack, record_stream, LATENCY, RANKS};
use picollo_firmware_rt::{semihosting, stack_use};

/// The measured batch, in a frame of its own: inlined into the probe, its locals would sit in
/// the probe's frame, above the painted stack, and go uncounted.
#[inline(never)]
fn seven_ranks(batch: &mut [FixedPercentile; RANKS.len()]) -> bool {
    LATENCY.try_fixed_percentiles(&RANKS, EquivalentValue::Midpoint, batch).is_ok()
}

/// The entry point the runtime calls after reset.
#[no_mangle]
pub fn firmware_main() -> ! {
    record_stream();
    let mut batch = [FixedPercentile::default(); RANKS.len()];
    let mut ok = false;
    let stack = stack_use(1024, || ok = seven_ranks(&mut batch));
    core::hint::black_box(&batch);
    let stats = core::hint::black_box(LATENCY.try_int_stats());
    let min = core::hint::black_box(LATENCY.try_min());
    let max = core::hint::black_box(LATENCY.try_max());
    print_stack(b"try_fixed_percentiles", stack);
    // 64 values, some above the window: all reads succeed and agree.
    let agree = matches!((stats, min, max), (Ok(s), Ok(lo), Ok(hi))
        if s.total + s.overflow == 64 && s.min == lo && s.max == hi && lo.is_some());
    semihosting::exit(ok && agree)
}
