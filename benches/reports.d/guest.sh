#!/usr/bin/env bash
# Counter reads on a real kernel PMU driver (issue 19) for benches/RESULTS.md: guest/run.sh
# boots Debian's arm64 kernel under qemu-system-aarch64 -icount shift=0, runs every guest
# check and measures, in guest instructions (exact: one instruction per cycle), a
# CounterSession::read through the user-space path (mmap page + MRS) and through read().
# Its markdown becomes result block `guest`. Needs what .ci/install.d/35-guest.sh installs.
set -euo pipefail
cd "$(dirname "$0")/../.."
report=$(mktemp)
trap 'rm -f "$report"' EXIT
REPORT="$report" guest/run.sh >&2
cat "$report"
