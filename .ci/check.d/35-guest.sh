#!/usr/bin/env bash
# Hardware counters on a real kernel PMU driver: Debian's arm64 kernel under
# qemu-system-aarch64 -icount shift=0 with picollo and picollo-guest (guest/run.sh): exact
# counts through every read path, groups, multiplexing, spans, the tracing layer, `picollo
# stat`/`counters`/`attach` and capability detection. The hardware tests that skip on this
# VM (.ci/check.d/10-hardware-skips.sh) run there, with the others of picollo-linux that
# take another branch on a PMU. Measured on the shared 2-core machine: the boot and every
# check 30 to 65 s (limit 150 s); the whole step 45 s to 1.5 min with the build cached, and
# the cold release build for aarch64-unknown-linux-musl (picollo, picollo-guest, three test
# binaries) about 1.5 min more. The .debs (60 MB) download once into target/guest.
set -euo pipefail
cd "$(dirname "$0")/../.."
# The report (read costs for benches/RESULTS.md) is kept for the bench step's
# benches/reports.d/guest.sh, which reuses it under CI instead of booting the guest again.
mkdir -p target/guest
REPORT="$PWD/target/guest/ci-report.md" bash guest/run.sh
