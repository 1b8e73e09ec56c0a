#!/usr/bin/env bash
# ci-time-limit: 120
# picollo-hdrhistogram is a drop-in for the `hdrhistogram` crate (issue 45): that crate's own
# integration tests and doc examples (7.6.0's, from the cargo registry; tests/quantile.rs left
# out, it needs GMP) run unchanged against the facade in a scratch crate under
# target/hdrhistogram-suite (picollo-hdrhistogram/suite/run.sh, which says how). Fails when a
# test fails, or unless exactly 113 integration tests and 15 doc examples ran, so a file that
# compiles to nothing cannot pass. The scratch crate has its own target folder (its own feature
# set of the facade, the dev profile at opt-level 0). Measured on 2 cores lightly shared: 7 to
# 8 s cold (its target folder empty: 5 s of build, 18 crates), 3.5 to 4 s warm (the test
# files are copied afresh each run, so their binaries and the doc examples build again); beside
# another build (load 3 to 4), 9 s cold and 5 s warm.
set -euo pipefail
cd "$(dirname "$0")/../.."
bash picollo-hdrhistogram/suite/run.sh
