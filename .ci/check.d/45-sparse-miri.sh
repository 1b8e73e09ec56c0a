#!/usr/bin/env bash
# picollo-alloc's sparse storage under miri: the lock-free page and table installation raced
# by threads that record into fresh blocks of fresh histograms
# (page_installation_races_lose_no_count). The thread-local suite, whose shards are sparse by
# default (pages and cold tables installed by their owner, read by other threads), runs under
# miri in .ci/run's miri step.
set -euo pipefail
cargo +nightly miri test -p picollo-alloc --test sparse -- page_installation_races_lose_no_count
