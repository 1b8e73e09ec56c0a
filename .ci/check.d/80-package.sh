#!/usr/bin/env bash
# Publishing, rehearsed (issue 32), into a local registry in place of crates.io:
# 1. A directory source that replaces crates.io: `cargo vendor` of the lock file's crates.io
#    packages.
# 2. Each published crate (all but `publish = false`), in dependency order, as `cargo publish`
#    would take them: `cargo package` with verification (the crate built from its .crate
#    alone, its Picollo dependencies from the registry), then the .crate unpacked into the
#    directory source with its checksums, as `cargo vendor` lays out a package.
# 3. .ci/release-lint on the .crate files: metadata, license texts, doc(cfg) badges, the
#    README's Install section, the changelog.
# 4. `cargo install picollo-cli --locked` from that registry, as a user would from crates.io,
#    and the installed `picollo` runs.
# Verification and install build the same packages from the same sources with the dev profile
# (the install is `--debug`), so the install compiles picollo-cli alone: what a release build
# adds is code generation, which the README step checks already. Everything happens in a target
# folder and a temporary folder of this step, emptied at the end (the directory source is new
# each run, so nothing of an earlier run's packages can pass for this one's).
# Measured cold on 2 cores lightly shared: 61 s (81 s of CPU), nearly all of it the
# verification builds; the vendoring 5 s (350 MB in the temporary folder), the install 8 s of
# CPU (picollo-cli alone), the runs 1 s.
set -euo pipefail
cd "$(dirname "$0")/../.."
# No debug info in these builds (nothing here runs a debugger): less to generate and link.
export CARGO_PROFILE_DEV_DEBUG=0
packages=$(python3 .ci/published.py) # NAME@VERSION, dependencies first
target=$(cargo metadata --no-deps --format-version 1 --locked |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
rehearsal="$target/release-rehearsal"
work=$(mktemp -d)
trap 'rm -rf "$work" "$rehearsal"' EXIT
rm -rf "$rehearsal"
registry="$work/registry"
local_registry=(--config "source.crates-io.replace-with = 'rehearsal'"
  --config "source.rehearsal.directory = '$registry'")

cargo vendor --locked --versioned-dirs --quiet "$registry" >/dev/null
for package in $packages; do
  # --allow-dirty: the tree under test, committed or not.
  cargo package --locked --allow-dirty --target-dir "$rehearsal" "${local_registry[@]}" \
    -p "$package"
  python3 - "$registry" "$rehearsal/package/${package/@/-}.crate" <<'PY'
import hashlib, json, pathlib, sys, tarfile
registry, crate = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
with tarfile.open(crate) as tar:  # the "data" filter where this Python has it (3.12)
    tar.extractall(registry, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
unpacked = registry / crate.name.removesuffix(".crate")
files = {str(f.relative_to(unpacked)): hashlib.sha256(f.read_bytes()).hexdigest()
         for f in sorted(unpacked.rglob("*")) if f.is_file()}
# The .crate's own checksum is the one the lock files of its dependents record.
checksum = {"files": files, "package": hashlib.sha256(crate.read_bytes()).hexdigest()}
(unpacked / ".cargo-checksum.json").write_text(json.dumps(checksum))
print(f"{unpacked.name}: in the local registry ({len(files)} files)")
PY
done
python3 .ci/release-lint "$rehearsal/package"

cargo install --locked --debug --quiet --root "$work/root" --target-dir "$rehearsal" \
  "${local_registry[@]}" picollo-cli
"$work/root/bin/picollo" --version
"$work/root/bin/picollo" stat -r 2 -- true
