#!/usr/bin/env bash
# How many hardware tests did not run, and why: libtest reports a test that returned early
# as passed and hides its stderr, so a green run alone says nothing about the PMU. Tests
# that skip for lack of hardware, or of the kernel setting they need (perf_event_paranoid,
# privileges to drop; the no-PMU tests on a machine with one), call
# picollo_linux::skip::hardware, which appends `hardware<TAB><test><TAB><reason>` to
# $PICOLLO_SKIP_LOG. (Child processes of other tests are `#[ignore]`d instead, so they are
# never counted as passes.) Prints, for the CI log summary:
#
#   hardware tests: 5 skipped: no PMU
#     cache_events_count: no hardware PMU: perf_event_open(cycles) failed with …
#
# With PICOLLO_SKIP_LOG exported by .ci/run before `cargo test --workspace`, this reads that
# run's log (every crate); without it, it runs picollo-linux's tests again (compiled
# already, a few seconds) with a log of its own. Never fails CI: skipping is allowed, not
# saying so is not.
#
# Tests whose path the arm64 guest checks on a real kernel PMU driver (guest/run.sh, run by
# check.d/35-guest.sh) call picollo_linux::skip::covered_by_guest instead, which logs
# `guest<TAB>…`: they are listed apart and not counted as hardware skips. What stays counted
# needs silicon the guest does not have (x86 rdpmc, generic cache events).
set -euo pipefail
log="${PICOLLO_SKIP_LOG:-}"
if [ -z "$log" ] || [ ! -e "$log" ]; then
  log="$(mktemp)"
  trap 'rm -f "$log"' EXIT
  echo "(PICOLLO_SKIP_LOG not set by the test step: running picollo-linux's tests to count)"
  PICOLLO_SKIP_LOG="$log" cargo test -q -p picollo-linux --lib --tests >/dev/null 2>&1 || {
    echo "error: picollo-linux's tests failed when run again to count skips" >&2
    exit 1
  }
fi
covered=$(awk -F'\t' '$1 == "guest" { print $2 }' "$log" | sort -u | wc -l)
if [ "$covered" -gt 0 ]; then
  echo "hardware tests covered by the arm64 guest instead (guest/run.sh): $covered"
  awk -F'\t' '$1 == "guest" && !seen[$2]++ {
    reason = $3
    sub(/^.*; covered by /, "covered by ", reason)
    printf "  %s: %s\n", $2, reason
  }' "$log" | sort
fi
n=$(awk -F'\t' '$1 == "hardware" { print $2 }' "$log" | sort -u | wc -l)
if [ "$n" -eq 0 ]; then
  echo "hardware tests: none skipped (they ran on this machine's PMU)"
  exit 0
fi
if awk -F'\t' '$1 == "hardware" && $3 !~ /^no hardware PMU/ { bad = 1 } END { exit bad }' "$log"; then
  echo "hardware tests: $n skipped: no PMU"
else
  echo "hardware tests: $n skipped (see the reasons)"
fi
awk -F'\t' '$1 == "hardware" && !seen[$2]++ {
  reason = $3
  if (length(reason) > 110) reason = substr(reason, 1, 107) "..."
  printf "  %s: %s\n", $2, reason
}' "$log" | sort
