#!/usr/bin/env bash
# picollo-tracing: the lock-free callsite and live-span tables under miri (about 1.5 min). The
# layer's instruction counts (tracing_iai) run with the other benches in the bench step.
set -euo pipefail
cargo +nightly miri test -p picollo-tracing --lib
