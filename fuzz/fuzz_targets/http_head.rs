//! The `/metrics` server's request-head parser on hostile bytes: the checks are
//! `picollo_export::server::testing::fuzz_head`'s (its docs list them).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| picollo_export::server::testing::fuzz_head(data));
