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
# unbounded does not finish in 10 minutes.
# Beside those: the registry's copy-on-write snapshot and the recorder's registration race
# (picollo-export/tests/loom.rs; its locks come through picollo-export/src/sync.rs), and the
# live-span table's publication order in picollo-tracing (tests/loom.rs; its atomics come
# through picollo-tracing/src/sync.rs, its planted bug from its own list there).
# One build of the four crates' models, without default features: picollo-tracing's `counters`
# needs picollo-linux, which has no loom build, and none of the models needs a default
# feature of the others (69 s cold, where a build per crate took 94 s). Its own target folder,
# since RUSTFLAGS differ.
# Every model runs in a process of its own, two at a time (.ci/tests-apart): two in one process
# spend most of their time in the kernel. On 2 cores (2026-12-05): all 39 models and twins in
# 52 s, where picollo-alloc's 22 alone took 149 to 156 s as `cargo test` runs them (and 45 s
# before their reads waited at the spawned threads' start flags, which let loom run those
# threads first: see `spawn_started` there). The longest: sparse_cold_table_race 30 s,
# sparse_pages_only_race 26 s.
set -euo pipefail
RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom LOOM_MAX_PREEMPTIONS=3 \
  python3 .ci/tests-apart -p picollo-ring -p picollo-alloc -p picollo-export -p picollo-tracing \
  --no-default-features --test loom
