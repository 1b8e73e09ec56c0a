#!/usr/bin/env bash
# picollo-alloc's sparse storage under miri: the lock-free page and table installation raced
# by threads that record into fresh blocks (page_installation_races_lose_no_count), and the
# property test against dense storage at small block scales (every kind, the thread-local one
# folding exiting threads). The thread-local suite, whose shards are sparse by default, runs
# under miri in .ci/run's miri step.
set -euo pipefail
cargo +nightly miri test -p picollo-alloc --test sparse -- \
    page_installation_races_lose_no_count plain_and_atomic_sparse_read_like_dense
