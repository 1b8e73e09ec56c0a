//! Code size of the `f64` read path for comparison: recording, `f64` percentiles (the same
//! seven ranks) and `stats()` with the standard deviation.
#![no_std]
#![no_main]

use picollo_core::{Percentile, ReadExt};
use picollo_firmware_plain as size;
use picollo_firmware_rt::semihosting;

const RANKS: [f64; 7] = [0.0, 50.0, 90.0, 99.0, 99.9, 99.99, 100.0];

/// The entry point the runtime calls after reset.
#[no_mangle]
pub fn firmware_main() -> ! {
    size::record_stream();
    let mut out = [Percentile::default(); RANKS.len()];
    let ok = size::read(|h| h.percentiles(&RANKS, &mut out)).is_ok();
    core::hint::black_box(&out);
    core::hint::black_box(size::read(|h| h.stats()));
    semihosting::exit(ok)
}
