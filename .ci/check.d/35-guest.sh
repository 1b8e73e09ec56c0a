#!/usr/bin/env bash
# Hardware counters on a real kernel PMU driver: Debian's arm64 kernel under
# qemu-system-aarch64 -icount shift=0 with picollo and picollo-guest (guest/run.sh): exact
# counts through every read path, groups, multiplexing, spans, the tracing layer, `picollo
# stat`/`counters`/`attach` and capability detection. The hardware tests that skip on this
# VM (.ci/check.d/10-hardware-skips.sh) have their paths covered here. About 2.5 min: the
# release build for aarch64-unknown-linux-musl (~1.5 min cold), the boot and the checks
# (~30 s, limit 150 s).
set -euo pipefail
cd "$(dirname "$0")/../.."
bash guest/run.sh
