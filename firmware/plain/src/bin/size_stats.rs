//! Code size with recording, integer percentiles and integer statistics (total, outside
//! counts, min, max, mean).
#![no_std]
#![no_main]

use picollo_core::{FixedPercentile, Rank, ReadExt};
use picollo_firmware_plain as size;
use picollo_firmware_rt::semihosting;

const RANKS: [Rank; 7] = [
    Rank::MIN,
    Rank::percent(50),
    Rank::percent(90),
    Rank::percent(99),
    Rank::parse("99.9").unwrap(),
    Rank::parse("99.99").unwrap(),
    Rank::MAX,
];

/// The entry point the runtime calls after reset.
#[no_mangle]
pub fn firmware_main() -> ! {
    size::record_stream();
    let mut out = [FixedPercentile::default(); RANKS.len()];
    let ok = size::read(|h| h.fixed_percentiles(&RANKS, &mut out)).is_ok();
    core::hint::black_box(&out);
    core::hint::black_box(size::read(|h| h.int_stats()));
    semihosting::exit(ok)
}
