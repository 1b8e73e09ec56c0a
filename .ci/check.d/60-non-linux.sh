#!/usr/bin/env bash
# ci-time-limit: 900
# picollo-tracing builds and records time only where picollo-linux is not built: checked for
# Windows (all targets: the lib, its tests and example, the README's snippet in tests/readme.rs)
# and macOS (the lib, the README's snippet, and the SIGTERM handling of tests/sigterm.rs), and built,
# linted and tested on Linux with the `counters` feature off (the same time-only module).
# About 1.5 min.
set -euo pipefail
cargo check -q -p picollo-tracing --all-targets --target x86_64-pc-windows-gnu
cargo check -q -p picollo-tracing --lib --test readme --test sigterm --target x86_64-apple-darwin
cargo clippy -q -p picollo-tracing --all-targets --no-default-features -- -D warnings
cargo test -q -p picollo-tracing --no-default-features
