//! How large a test runs: natively, in CI's miri step, or in the full-size miri runs of
//! `.ci/miri-full` (`PICOLLO_MIRI_FULL=1`). The same file is in picollo-core's tests.
#![allow(dead_code)] // each test crate uses its own subset

/// Whether this is a full-size miri run: under miri with `PICOLLO_MIRI_FULL=1` (miri sees the
/// environment with `-Zmiri-disable-isolation`, as `.ci/miri-full` runs it).
pub fn miri_full() -> bool {
    cfg!(miri) && std::env::var_os("PICOLLO_MIRI_FULL").is_some_and(|v| v == "1")
}

/// `native` natively; under miri `full` in a full-size run (the sizes CI's miri step had
/// before its files were shrunk to fit its time), `ci` otherwise.
pub fn size<T>(native: T, full: T, ci: T) -> T {
    if !cfg!(miri) {
        native
    } else if miri_full() {
        full
    } else {
        ci
    }
}
