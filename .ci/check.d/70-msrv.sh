#!/usr/bin/env bash
# The MSRV is true (issue 32): with the toolchain of Cargo.toml's `rust-version` (installed by
# .ci/install.d/70-msrv.sh) and the committed lock file (`--locked`), every published crate
# builds, its tests and examples included, the CLI too. `cargo check`: nothing here needs code
# generated. The benchmarks, picollo-guest, firmware/ and fuzz/ are not covered (README,
# "Install"). Newer std APIs are kept out of every target by clippy's incompatible_msrv (the
# clippy step), newer dependencies by the MSRV-aware resolver (.cargo/config.toml).
# Measured cold, 2 cores lightly shared: 80 s (25 s of it the libraries and the CLI, the rest
# their tests' dependencies: proptest, hdrhistogram, tokio's runtime, hyper).
set -euo pipefail
cd "$(dirname "$0")/../.."
msrv=$(sed -n 's/^rust-version = "\(.*\)"$/\1/p' Cargo.toml)
published=$(python3 .ci/published.py | sed 's/^/-p /' | tr '\n' ' ')
echo "Rust $msrv: cargo check --all-targets $published"
# shellcheck disable=SC2086 # the -p arguments are words
cargo "+$msrv" check --locked --quiet --all-targets $published
