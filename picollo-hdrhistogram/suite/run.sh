#!/usr/bin/env bash
# `hdrhistogram`'s own tests against picollo-hdrhistogram (issue 45): its integration tests
# and doc examples, taken from its source in the cargo registry (it is a dev-dependency of the
# workspace's benches; its code is not copied into this repository), run unchanged in a
# scratch crate whose `hdrhistogram` is `{ package = "picollo-hdrhistogram" }` and whose
# features mirror the crate's, so that the files' `#[cfg(feature = ...)]` tests compile in.
# `tests/quantile.rs` is left out: it needs GMP (`rug`). Fails unless the number of tests that
# ran is the number the crate has (113 in 7.6.0's integration tests, plus every runnable doc
# example), so a file that compiles to nothing cannot pass.
#
# usage: picollo-hdrhistogram/suite/run.sh [cargo test arguments]
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
expected_integration=113
upstream=$(cargo metadata --format-version 1 --locked |
  python3 -c 'import json,sys,os
m=json.load(sys.stdin)
p=[p for p in m["packages"] if p["name"]=="hdrhistogram" and p["version"]=="7.6.0"]
print(os.path.dirname(p[0]["manifest_path"]) if p else "")')
if [[ -z $upstream || ! -d $upstream/tests ]]; then
  echo "error: hdrhistogram 7.6.0's source is not in the cargo registry (cargo fetch)" >&2
  exit 1
fi
scratch=$root/target/hdrhistogram-suite
rm -rf "$scratch/tests" "$scratch/src"
mkdir -p "$scratch/tests" "$scratch/src"
tests=()
for file in "$upstream"/tests/*.rs; do
  name=$(basename "$file" .rs)
  [[ $name == quantile ]] && continue
  cp "$file" "$scratch/tests/"
  tests+=("$name")
done
rm -rf "$scratch/tests/data"
cp -r "$upstream/tests/data" "$scratch/tests/data"
examples=$(python3 picollo-hdrhistogram/suite/doc_examples.py "$upstream/src" "$scratch/src/lib.rs")
{
  cat <<TOML
[package]
name = "hdrhistogram-suite"
version = "0.0.0"
edition = "2024"
publish = false

[workspace]

[features]
default = ["serialization", "sync"]
serialization = ["hdrhistogram/serialization"]
sync = ["hdrhistogram/sync"]

[dependencies]
hdrhistogram = { package = "picollo-hdrhistogram", path = "$root/picollo-hdrhistogram", default-features = false }

[dev-dependencies]
rand = "0.10"
# The upstream crate's own dependency, which its interval-log tests use directly.
base64 = "0.22.1"
TOML
  for name in "${tests[@]}"; do
    printf '\n[[test]]\nname = "%s"\npath = "tests/%s.rs"\n' "$name" "$name"
  done
} >"$scratch/Cargo.toml"
# The workspace's lock first, so that shared dependencies keep the versions tested here.
[[ -f $scratch/Cargo.lock ]] || cp Cargo.lock "$scratch/Cargo.lock"
log=$scratch/test.log
# The scratch crate's own target folder: its `hdrhistogram` is the workspace's path crate, built
# with the scratch crate's feature set.
if ! (cd "$scratch" && cargo test --no-fail-fast "$@" 2>&1) | tee "$log" | grep -E '^(test result|error|failures|---- )'; then
  :
fi
python3 - "$log" "$expected_integration" "$examples" <<'PY'
import re, sys
log, want_int, want_doc = open(sys.argv[1]).read(), int(sys.argv[2]), int(sys.argv[3])
runs = re.findall(r"^\s*Running (?:unittests )?(\S+)|^\s*Doc-tests (\S+)|^test result: (\w+)\. (\d+) passed; (\d+) failed; (\d+) ignored", log, re.M)
current, passed, failed, ignored, doc = None, 0, 0, 0, None
integration = docs = 0
bad = False
for r in runs:
    if r[0] or r[1]:
        current = "doc" if r[1] else r[0]
        continue
    ok, p, f, i = r[2], int(r[3]), int(r[4]), int(r[5])
    if f or ok != "ok":
        bad = True
    if current == "doc":
        docs += p + f
    elif current and "/tests/" not in current and "src/lib.rs" in current:
        pass
    else:
        integration += p + f
    ignored += i
print(f"hdrhistogram suite: {integration} integration tests run (want {want_int}), {docs} doc examples run (want {want_doc}), {ignored} ignored")
if bad:
    sys.exit("error: a test of hdrhistogram's suite failed (see the log above)")
if integration != want_int or docs != want_doc:
    sys.exit("error: the suite ran a different number of tests than hdrhistogram has")
PY
