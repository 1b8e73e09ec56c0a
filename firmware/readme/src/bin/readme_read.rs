//! The README's `static`, recorded, then read with the integer read path the README names,
//! each through `try_read` (wait-free): `fixed_percentiles` (seven ranks), `int_stats`, `min`,
//! `max`. Prints the stack depth of the seven-rank batch (its output array is the caller's,
//! outside the figure).
#![no_std]
#![no_main]

use picollo_core::{EquivalentValue, FixedPercentile, ReadExt};
use picollo_firmware_readme::{print_stack, record_stream, LATENCY, RANKS};
use picollo_firmware_rt::{semihosting, stack_use};

/// The measured batch, in a frame of its own: inlined into the probe, its locals would sit in
/// the probe's frame, above the painted stack, and go uncounted.
#[inline(never)]
fn seven_ranks(batch: &mut [FixedPercentile; RANKS.len()]) -> bool {
    let read = LATENCY.try_read(|r| r.fixed_percentiles(&RANKS, EquivalentValue::Midpoint, batch));
    matches!(read, Ok(Ok(())))
}

/// The entry point the runtime calls after reset.
#[no_mangle]
pub fn firmware_main() -> ! {
    record_stream();
    let mut batch = [FixedPercentile::default(); RANKS.len()];
    let mut ok = false;
    let stack = stack_use(1024, || ok = seven_ranks(&mut batch));
    core::hint::black_box(&batch);
    let stats = core::hint::black_box(LATENCY.try_read(|r| r.int_stats()));
    let min = core::hint::black_box(LATENCY.try_read(|r| r.min()));
    let max = core::hint::black_box(LATENCY.try_read(|r| r.max()));
    print_stack(b"try_read fixed_percentiles", stack);
    // 64 values, some above the window: all reads succeed and agree.
    let agree = matches!((stats, min, max), (Ok(s), Ok(lo), Ok(hi))
        if s.total + s.overflow == 64 && s.min == lo && s.max == hi && lo.is_some());
    semihosting::exit(ok && agree)
}
