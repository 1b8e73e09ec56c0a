#!/usr/bin/env bash
# picollo-export's /metrics server (issue 23), a few seconds:
# - the default build has no async runtime: no tokio, hyper or mio among its normal
#   dependencies (the hyper server is feature `server-hyper`, enabled for tests and benches only);
# - the attack test (tests/server_attacks.rs: huge Content-Length, 50 pipelined GETs never
#   read, 1,200 idle sockets, slowloris, huge heads, against both servers) runs in the
#   workspace tests, which assert its thread counts; it is not run twice (CI time).
set -euo pipefail
deps="$(cargo tree -q -p picollo-export -e normal --prefix none)"
if grep -Eq '^(tokio|hyper|hyper-util|mio) ' <<<"$deps"; then
  echo "picollo-export's default build pulls an async runtime:" >&2
  grep -E '^(tokio|hyper|hyper-util|mio) ' <<<"$deps" >&2
  exit 1
fi
echo "picollo-export default build: no async runtime ($(wc -l <<<"$deps") dependency lines)"
