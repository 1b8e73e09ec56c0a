//! One `/metrics` connection's state machine on hostile bytes, sent in pieces while the
//! server's writes are doled out in pieces: the checks are
//! `picollo_export::server::testing::fuzz_connection`'s (its docs list them).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| picollo_export::server::testing::fuzz_connection(data));
