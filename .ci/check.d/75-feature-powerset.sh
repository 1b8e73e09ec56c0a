#!/usr/bin/env bash
# Every feature combination of every published library crate (issue 32), through
# .ci/feature-powerset: `cargo check --lib` of each set on the host, warnings included (the
# clippy step sees one set per crate, the workspace's union), sharing the clippy step's
# dependencies; and the no_std crates' sets for thumbv6m-none-eabi (picollo-core's and
# picollo-ring's, whose `std` is host-only), the target without compare-and-swap where
# `critical-section` and `unsafe-assume-single-core` matter (and where picollo-ring, without
# 64-bit atomics, builds empty), built (code generated: the atomics lowered), so that
# .ci/run's no_std builds for thumbv6m that follow find theirs done. Measured on 2 cores
# lightly shared: about 60 s for the 25 host sets (35 with picollo-ring's, picollo-spans' and
# picollo-hdrhistogram's: its 5 sets took 6 s cold; one at a time, each line gives its
# seconds), 20 s for the 12 thumbv6m ones (14 with picollo-ring). picollo-hdrhistogram's
# no_std set (no features) is built and linted for thumbv7em in .ci/run's no_std step.
set -euo pipefail
cd "$(dirname "$0")/../.."
.ci/feature-powerset
.ci/feature-powerset --build --target thumbv6m-none-eabi -p picollo-core -p picollo-ring
