#!/usr/bin/env bash
# Loom models of the lock-free protocols, over the real code (picollo-core/tests/loom.rs: in a
# `--cfg loom` build the modeled modules' atomics are loom's, see picollo-core/src/sync.rs).
# Each model runs as written, and again with a bug planted (`planted::with`), where it must fail
# with its own assertion (`#[should_panic(expected = ...)]`): so each model is shown able to
# fail. The preemption bound keeps the state space small: every interleaving with at most 3
# preemptions, and every value each load may read; 4 costs about 5 times as long, unbounded
# does not finish in 10 minutes. Its own target folder, since RUSTFLAGS differ.
set -euo pipefail
RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom LOOM_MAX_PREEMPTIONS=3 \
  cargo test -p picollo-core --test loom
