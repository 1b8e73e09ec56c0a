#!/usr/bin/env bash
# ci-time-limit: 1500
# ThreadSanitizer over the lock-free code's tests, with the standard library rebuilt
# instrumented (-Zbuild-std; nightly's rust-src, installed by .ci/run):
# - picollo-ring: the frame ring (its unit tests, among them the concurrent writer/reader
#   stress test);
# - picollo-core: the atomic kind and its seqlock (atomic::, tests/atomic.rs);
# - picollo-alloc: the thread-local registry (tests/thread_local.rs: shard claims, thread-exit
#   folds, resets and reads racing); sparse storage's lock-free installation of its directory,
#   pages and cold tables (tests/sparse.rs's page race: about 16 s with the build, 2026-12-03);
# - picollo-linux: the shared-memory rings (tests/shm.rs: in-process and cross-process
#   readers, fork);
# - picollo-tracing: the live-span and callsite tables (spans::, callsite::).
# Any report fails the run (halt_on_error). No suppressions: every racing access is atomic or
# ordered by atomics TSan understands; the ring's and seqlock's standalone fences only order
# atomic accesses, which TSan never reports.
set -euo pipefail
export RUSTFLAGS="-Zsanitizer=thread" CARGO_TARGET_DIR=target/tsan
# die_after_fork=0: the fork tests' children start a thread after a multi-threaded fork, which TSan
# refuses by default (it cannot vouch for its own state in such a child); it then goes on and
# checks the child too.
export TSAN_OPTIONS="halt_on_error=1 die_after_fork=0"
tsan() {
  cargo +nightly test -q -Zbuild-std --target x86_64-unknown-linux-gnu "$@"
}
tsan -p picollo-ring --lib
tsan -p picollo-core --lib -- atomic::
tsan -p picollo-core --test atomic
tsan -p picollo-alloc --test thread_local --test thread_local_reads
tsan -p picollo-alloc --test sparse -- page_installation_races_lose_no_count
tsan -p picollo-linux --test shm
tsan -p picollo-tracing --lib -- spans:: callsite::
# picollo-export: the `metrics` recorder's sharded index and registration race, and the
# registry's copy-on-write snapshot, under threads that create, record, drop and scrape series
# at once (tests/recorder_stress.rs).
tsan -p picollo-export --features metrics --test recorder_stress
