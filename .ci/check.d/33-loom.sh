#!/usr/bin/env bash
# Loom models of the lock-free protocols, over the real code: the frame ring's writer/reader
# handshake (picollo-ring/tests/loom.rs; the ring's atomics are loom's in a `--cfg loom` build,
# see picollo-ring/src/sync.rs), sparse storage's page and cold-table installation races and
# its walk cache beside a record and a clear (picollo-alloc/tests/loom.rs; its atomics come
# through picollo-alloc/src/sparse/install.rs), and the thread-local kind's shard life: claim,
# record, thread-exit fold and release beside a reader (the same file; its atomics come through
# picollo-alloc/src/thread_local/sync.rs).
# Each model runs as written, and again with a bug planted (`planted::with`), where it must fail
# with its own assertion or loom's (`#[should_panic(expected = ...)]`): so each model is shown
# able to fail. The preemption bound keeps the state space small: every interleaving with at
# most 3 preemptions, and every value each load may read; 4 costs about 5 times as long,
# unbounded does not finish in 10 minutes. picollo-alloc's 22 models take about 170 s on 2
# cores (45 s before their reads waited at the spawned threads' start flags, which let loom
# run those threads first: see `spawn_started` there); picollo-ring's 6 about 18 s. Its own
# target folder, since RUSTFLAGS differ.
set -euo pipefail
RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom LOOM_MAX_PREEMPTIONS=3 \
  cargo test -p picollo-ring -p picollo-alloc --test loom
# The registry's copy-on-write snapshot and the recorder's registration race
# (picollo-export/tests/loom.rs; its locks come through picollo-export/src/sync.rs).
RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom LOOM_MAX_PREEMPTIONS=3 \
  cargo test -p picollo-export --test loom
# The live-span table's publication order in picollo-tracing (tests/loom.rs; its atomics come
# through picollo-tracing/src/sync.rs, its planted bug from its own list there), without the
# `counters` feature (picollo-linux has no loom build); under a second.
RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom LOOM_MAX_PREEMPTIONS=3 \
  cargo test -p picollo-tracing --no-default-features --test loom
