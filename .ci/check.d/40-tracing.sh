#!/usr/bin/env bash
# picollo-tracing: the lock-free callsite and live-span tables under miri (about 1.5 min),
# among them the stress test of the live-span table's publication order
# (spans::tests::readers_never_see_a_half_filled_state: ids handed to other threads through
# relaxed atomics must never reveal a half-filled state). The layer's instruction counts
# (tracing_iai) run with the other benches in the bench step.
set -euo pipefail
cargo +nightly miri test -p picollo-tracing --lib
