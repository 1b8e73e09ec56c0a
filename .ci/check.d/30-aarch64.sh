#!/usr/bin/env bash
# picollo-linux on arm64: the crate builds for aarch64-unknown-linux-gnu (the MRS reads of
# PMEVCNTR<n>_EL0 / PMCCNTR_EL0 / PMICNTR_EL0 and CNTVCT_EL0 are assembled), and the
# mmap-page read tests (synthetic pages, the arm64 register mapping, sign extension by
# pmc_width, the fall back to read()) run under qemu user mode. About 40 s.
set -euo pipefail
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUNNER="qemu-aarch64 -L /usr/aarch64-linux-gnu"
cargo build -q -p picollo-linux --lib --examples --target aarch64-unknown-linux-gnu
# perf_event_open is not emulated by qemu user mode: only the tests that make no syscall.
cargo test -q -p picollo-linux --lib --target aarch64-unknown-linux-gnu -- page:: session::builder::tests::arm64
