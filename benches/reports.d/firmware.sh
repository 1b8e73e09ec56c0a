#!/usr/bin/env bash
# The firmware figures (issue 11) for benches/RESULTS.md: firmware/run.sh builds the images,
# runs them under QEMU and checks them; its markdown report (instruction counts from QEMU
# execution traces, code size, stack) becomes result block `firmware`. Needs what
# .ci/install.d/20-firmware.sh installs (QEMU, the three targets, llvm-tools).
set -euo pipefail
cd "$(dirname "$0")/../.."
# Under CI, the images already ran in this run's check step (.ci/check.d/20-firmware.sh, same
# tree): its report is reused rather than building and running them a second time.
if [ -n "${CI:-}" ] && [ -s target/firmware-report/ci-report.md ]; then
  echo "firmware: the report of this CI run's check step (.ci/check.d/20-firmware.sh)" >&2
  cat target/firmware-report/ci-report.md
  exit 0
fi
report=$(mktemp)
trap 'rm -f "$report"' EXIT
REPORT="$report" firmware/run.sh >&2
cat "$report"
