#!/usr/bin/env bash
# picollo-export's /metrics server (issue 23), a few seconds:
# - the build has no async runtime: no tokio, hyper or mio among its normal dependencies (a
#   program with its own hyper stack mounts server::negotiate + server::render; the bench
#   metrics_server does, as a dev-dependency of the benches);
# - the attack test (tests/server_attacks.rs: huge Content-Length, 50 pipelined GETs never
#   read, 1,200 idle sockets, slowloris, huge heads) runs in the workspace tests, which assert
#   its thread counts; it is not run twice (CI time). The fuzz targets http_head and
#   http_conn run in .ci/run's fuzz step.
set -euo pipefail
deps="$(cargo tree -q -p picollo-export -e normal --prefix none)"
if grep -Eq '^(tokio|hyper|hyper-util|mio) ' <<<"$deps"; then
  echo "picollo-export's default build pulls an async runtime:" >&2
  grep -E '^(tokio|hyper|hyper-util|mio) ' <<<"$deps" >&2
  exit 1
fi
echo "picollo-export default build: no async runtime ($(wc -l <<<"$deps") dependency lines)"
