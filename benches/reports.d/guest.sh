#!/usr/bin/env bash
# Counter reads on a real kernel PMU driver (issue 19) for benches/RESULTS.md: guest/run.sh
# boots Debian's arm64 kernel under qemu-system-aarch64 -icount shift=0, runs every guest
# check and measures, in guest instructions (exact: one instruction per cycle), a
# CounterSession::read through the user-space path (mmap page + MRS) and through read().
# Its markdown becomes result block `guest`. Needs what .ci/install.d/35-guest.sh installs.
set -euo pipefail
cd "$(dirname "$0")/../.."
# Under CI, the guest already ran in this run's check step (.ci/check.d/35-guest.sh, same
# tree): its report is reused rather than booting the guest a second time (about 1.5 min).
if [ -n "${CI:-}" ] && [ -s target/guest/ci-report.md ]; then
  echo "guest: the report of this CI run's check step (.ci/check.d/35-guest.sh)" >&2
  cat target/guest/ci-report.md
  exit 0
fi
report=$(mktemp)
trap 'rm -f "$report"' EXIT
REPORT="$report" guest/run.sh >&2
cat "$report"
