# Shared helpers for .ci/run and the drop-in steps in .ci/install.d and .ci/check.d.
# Sourced, not executed.

# Starts a step: says how long the previous one took (the log shows where the time goes),
# and gives the new one a time limit, LIMIT seconds (the second argument; 600 when absent).
# A step that passes its limit fails CI with its name, the seconds it ran and what was running
# then (the test binary among it), instead of hanging until the CI's own limit kills the run
# without a word: a watchdog process, started here and stopped by the next `step` or
# `steps_done`, waits for the limit, prints that report, then ends the run: SIGTERM to the
# shell running .ci/run and to everything under it, SIGKILL to what is left 10 s later.
# Limits are about three times a step's length on a fresh 2-core machine on a slow day (the
# 2026-12-01 cold run: tests 712 s, TSan 464, loom 273; the same machine ran the same steps
# two to three times faster two days before): a slow machine passes, a hang costs minutes.
step() {
  local now; now=$(date +%s)
  step_finished "$now"
  steps_watchdog_stop
  PICOLLO_STEP_START=$now
  PICOLLO_STEP_NAME=$1
  printf '\n==> %s\n' "$1"
  local limit=${2:-600}
  local name=$1 ci_shell=$$
  # Only a sleep that ran its course reports: `steps_watchdog_stop` kills the sleep before
  # the watchdog, and a watchdog woken by that kill (before its own TERM arrives) must not
  # take the step for an overrun (it did, in a test of two one-second steps).
  ( trap 'exit 0' TERM
    sleep "$limit" & wait $! || exit 0
    step_overrun "$ci_shell" "$name" "$limit" >&2 ) &
  PICOLLO_WATCHDOG=$!
}

# Stops the current step's watchdog, and prints the last step's seconds.
steps_done() {
  steps_watchdog_stop
  step_finished "$(date +%s)"
  PICOLLO_STEP_START=
}

# Ends the current step at time $1: prints its seconds and keeps them for `steps_summary`.
PICOLLO_STEP_TIMES=()
step_finished() {
  [ -n "${PICOLLO_STEP_START:-}" ] || return 0
  local seconds=$(( $1 - PICOLLO_STEP_START ))
  printf '(%s s)\n' "$seconds"
  PICOLLO_STEP_TIMES+=("$(printf '%6d s  %s' "$seconds" "$PICOLLO_STEP_NAME")")
}

# The seconds of every step so far, the one running (or failed) last, then the total: .ci/run
# prints it on exit, passed or failed, so the end of any log says where the time went. It also
# stops the last step's watchdog: a run that failed in a step left it sleeping out that step's
# limit, holding the run's lock (2026-12-03: a run started after a firmware failure was
# refused as "another .ci/run is running" for the 15 minutes left of that step's limit, and
# the watchdog then printed its overrun into the next run's log).
steps_summary() {
  steps_watchdog_stop
  local now; now=$(date +%s)
  echo
  echo "Step times:"
  printf '%s\n' "${PICOLLO_STEP_TIMES[@]}"
  if [ -n "${PICOLLO_STEP_START:-}" ]; then
    printf '%6d s  %s (running when the run ended)\n' "$(( now - PICOLLO_STEP_START ))" \
      "$PICOLLO_STEP_NAME"
  fi
  [ -n "${PICOLLO_RUN_START:-}" ] && printf '%6d s  in all\n' "$(( now - PICOLLO_RUN_START ))"
  return 0
}

steps_watchdog_stop() {
  if [ -n "${PICOLLO_WATCHDOG:-}" ]; then
    pkill -TERM -P "$PICOLLO_WATCHDOG" sleep 2>/dev/null || true
    kill -TERM "$PICOLLO_WATCHDOG" 2>/dev/null || true
    wait "$PICOLLO_WATCHDOG" 2>/dev/null || true
    PICOLLO_WATCHDOG=
  fi
}

# The processes under PID, one per line, leaving out EXCLUDED and the processes under it.
descendants() {
  ps -e -o pid=,ppid= | awk -v root="$1" -v excluded="${2:-}" '
    { parent[$1] = $2 }
    END {
      found[root] = 1
      do { grew = 0
        for (p in parent)
          if (!(p in found) && p != excluded && (parent[p] in found)) { found[p] = 1; grew = 1 }
      } while (grew)
      for (p in found) if (p != root) print p
    }'
}

# The watchdog's report and kill (see `step`): CI_SHELL NAME LIMIT.
step_overrun() {
  local ci_shell=$1 name=$2 limit=$3 self=$BASHPID pids pid tests
  set +eu +o pipefail # a report, best effort: a process may end while it is written
  trap '' TERM # this watchdog ends the others, never itself halfway
  pids=$(descendants "$ci_shell" "$self" | sort -n)
  echo
  echo "error: CI step '$name' passed its time limit of $limit s; it ran $(( $(date +%s) - PICOLLO_STEP_START )) s."
  echo "Running when it was stopped (pid, seconds running, command):"
  for pid in $pids; do
    ps -o pid=,etimes=,args= -p "$pid" 2>/dev/null | cut -c1-240
  done | sort -n | sed 's/^/  /'
  # Test binaries: cargo's target/<profile>/deps/<name>-<hash>, and cargo-miri's runner.
  tests=$(for pid in $pids; do ps -o etimes=,args= -p "$pid" 2>/dev/null; done |
    grep -E '/deps/[A-Za-z0-9_]+-[0-9a-f]{16}( |$)' | grep -v 'rustc' || true)
  if [ -n "$tests" ]; then
    echo "Test binaries running:"
    printf '%s\n' "$tests" | awk '{ s = $1; $1 = ""; printf "  %s (for %s s)\n", substr($0, 2), s }' |
      cut -c1-240
  else
    echo "No test binary was running."
  fi
  kill -TERM "$ci_shell" 2>/dev/null
  for pid in $pids; do kill -TERM "$pid" 2>/dev/null; done
  sleep 10
  for pid in $pids; do kill -KILL "$pid" 2>/dev/null; done
  kill -KILL "$ci_shell" 2>/dev/null
}

# Runs a command as root: directly when we are root, else through sudo when it exists.
as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; elif command -v sudo >/dev/null 2>&1; then sudo "$@"; else
    echo "error: need root to run: $*" >&2; return 1; fi
}

# Installs Debian packages that are missing, without recommends; `apt-get update` runs at
# most once per CI run.
apt_install() {
  local missing=()
  for pkg in "$@"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
  done
  [ "${#missing[@]}" -eq 0 ] && return 0
  command -v apt-get >/dev/null 2>&1 || { echo "error: apt-get missing; install ${missing[*]} by hand" >&2; return 1; }
  if [ -z "${PICOLLO_APT_UPDATED:-}" ]; then
    as_root apt-get update -qq
    export PICOLLO_APT_UPDATED=1
  fi
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq --no-install-recommends "${missing[@]}"
}
