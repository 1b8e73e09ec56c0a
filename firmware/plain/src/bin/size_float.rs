//! Code size of the `f64` read path for comparison: recording, `f64` percentiles (the same
//! seven ranks) and `stats()` with the standard deviation.
#![no_std]
#![no_main]

use picollo_core::{EquivalentValue, Percentile, ReadExt};
use picollo_firmware_plain as size;
use picollo_firmware_rt::semihosting;

/// The entry point the runtime calls after reset.
#[no_mangle]
pub fn firmware_main() -> ! {
    size::record_stream();
    let ranks = size::RANKS.map(|r| r.as_percent());
    let mut out = [Percentile::default(); size::RANKS.len()];
    let ok = size::read(|h| h.percentiles(&ranks, EquivalentValue::Midpoint, &mut out)).is_ok();
    core::hint::black_box((&out, size::read(|h| h.stats())));
    semihosting::exit(ok)
}
