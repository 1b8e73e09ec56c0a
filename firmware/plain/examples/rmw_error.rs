//! Must not compile on a target without compare-and-swap (thumbv6m, riscv32imc) when neither
//! `--cfg portable_atomic_unsafe_assume_single_core` nor picollo-core's `critical-section` /
//! `unsafe-assume-single-core` feature is given: `run.sh` builds it and checks that the error
//! names those options. (On thumbv7em, which has compare-and-swap, it builds and runs.)
#![no_std]
#![no_main]

use picollo_core::scalable::{ScalableCounter, XorShift};
use picollo_core::{storage_len, AtomicHistogram, AtomicU32, ConstLayout, ConstWindow};
use picollo_firmware_rt::semihosting;

static SHARED: AtomicHistogram<
    [AtomicU32; storage_len(ConstLayout::<7>::LAYOUT, 1, 1000)],
    ConstLayout<7>,
    ConstWindow<1, 1000>,
> = AtomicHistogram::empty();
static EVENTS: ScalableCounter = ScalableCounter::new();

/// The entry point the runtime calls after reset.
#[no_mangle]
pub fn firmware_main() -> ! {
    SHARED.record_u32(5);
    EVENTS.inc(&mut XorShift::new(1));
    semihosting::exit(true)
}
