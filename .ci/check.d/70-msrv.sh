#!/usr/bin/env bash
# The MSRV is true (issue 32): with the toolchain of Cargo.toml's `rust-version` (installed by
# .ci/install.d/70-msrv.sh) and the committed lock file (`--locked`), the published crates
# build, tests, examples and the CLI included; then every feature combination of every
# published library crate, and of picollo-core for thumbv6m-none-eabi (no compare-and-swap:
# the `critical-section` and `unsafe-assume-single-core` sets), through .ci/feature-powerset.
# `cargo check`: nothing here needs code generated. The feature sets run at the MSRV too, so
# they share its dependencies instead of compiling them again for stable, and a feature set
# that needs a newer Rust is caught. The benchmarks, picollo-guest, firmware/ and fuzz/ are
# not covered (README, "Install"). Measured cold on 2 cores shared with other builds: 175 s of
# CPU (user + sys), about half the check (its dependencies) and half the 37 feature sets, which
# run one at a time (each line prints its seconds).
set -euo pipefail
cd "$(dirname "$0")/../.."
msrv=$(sed -n 's/^rust-version = "\(.*\)"$/\1/p' Cargo.toml)
published=$(python3 .ci/published.py | sed 's/^/-p /' | tr '\n' ' ')
echo "Rust $msrv: cargo check --all-targets $published"
# shellcheck disable=SC2086 # the -p arguments are words
cargo "+$msrv" check --locked --quiet --all-targets $published
RUSTUP_TOOLCHAIN="$msrv" .ci/feature-powerset
RUSTUP_TOOLCHAIN="$msrv" .ci/feature-powerset --target thumbv6m-none-eabi -p picollo-core
