#!/usr/bin/env bash
# picollo-tracing: the lock-free callsite table under miri (about 30 s), and the layer's
# instruction counts against the bare Registry and the peer layers (about 1 min).
set -euo pipefail
cargo +nightly miri test -p picollo-tracing --lib
cargo bench -p picollo-benches --bench tracing_iai
