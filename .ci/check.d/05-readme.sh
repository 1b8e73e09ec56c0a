#!/usr/bin/env bash
# ci-time-limit: 900
# The README's first command, as written there, in this fresh copy (.ci/run runs every step in
# one, with nothing beside it); the second, cargo test --workspace, is the test step. The
# release build of picollo-cli (no other step builds the release profile) takes about 80 s of
# CPU, 1 to 2 minutes on 2 idle cores (7.5 min measured on a machine loaded 12 deep); the
# 20 runs about 2 s.
set -euo pipefail
cd "$(dirname "$0")/../.."
cmd=$(sed -n '/^```sh$/,/^```$/{/^cargo run /p}' README.md | head -n 1)
[ -n "$cmd" ] || { echo "error: no 'cargo run' line in README.md's first sh block" >&2; exit 1; }
echo "+ $cmd"
out=$(bash -c "$cmd")
printf '%s\n' "$out"
grep -q "page-faults" <<<"$out" || { echo "error: the README's stat command printed no page-faults row" >&2; exit 1; }
