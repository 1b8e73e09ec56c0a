#!/usr/bin/env bash
# picollo-tracing: the lock-free callsite and live-span tables under miri (about 1.5 min),
# and the layer's instruction counts against the bare Registry and the peer layers (about 1 min).
set -euo pipefail
cargo +nightly miri test -p picollo-tracing --lib
cargo bench -p picollo-benches --bench tracing_iai
