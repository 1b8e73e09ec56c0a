//! Proptest configuration for the test files that run in CI's miri step (`sparse.rs`,
//! `hdr_interop.rs`).

use picollo_testkit::miri_size;
use proptest::prelude::ProptestConfig;

/// A property's config with `cases` cases, and in CI's miri run none of the saved cases of the
/// file's `.proptest-regressions` (proptest replays every saved seed in every property of the
/// file, each case there costing up to a minute; they run natively and in `.ci/miri-full`).
pub fn cases(cases: u32) -> ProptestConfig {
    let mut config = ProptestConfig::with_cases(cases);
    if miri_size(false, false, true) {
        config.failure_persistence = None;
    }
    config
}
