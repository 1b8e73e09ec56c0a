#!/usr/bin/env bash
# Publishing, rehearsed (issue 32):
# 1. `cargo package` of every published crate (all but `publish = false`), with verification:
#    cargo packages them in dependency order and builds each from its .crate alone, the
#    unpublished Picollo dependencies served from its local overlay of crates.io. (Its one
#    warning, "manifest has no documentation", is picollo-cli's: a binary has no docs.rs page;
#    crates.io shows its README.)
# 2. .ci/release-lint on what would be published: metadata, license texts in each .crate,
#    doc(cfg) badges, the README's Install section, the changelog.
# 3. `cargo install picollo-cli --locked` as a user would, from a directory source that
#    replaces crates.io: `cargo vendor` of the lock file's crates.io packages plus the .crate
#    files of step 1, unpacked with their checksums. The installed `picollo` runs.
# The install is `--debug`: what a release build adds is code generation, which the README
# step builds already (release, from the same sources); the install checks that the packages
# resolve, build and run as installed. It compiles its dependencies again (a registry package's
# fingerprint holds its source path, here the vendored copy), about 50 s of CPU in debug
# against 90 s in release. Measured (2 shared cores, CPU time): step 1 about 70 s after the
# test step, the vendoring 5 s (350 MB, in a temporary folder), the install 50 s, the runs 1 s.
set -euo pipefail
cd "$(dirname "$0")/../.."
metadata=$(cargo metadata --no-deps --format-version 1 --locked)
published=$(python3 -c '
import json, sys
print(" ".join("-p " + p["name"] for p in json.load(sys.stdin)["packages"] if p["publish"] != []))' <<<"$metadata")
target=$(python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])' <<<"$metadata")
rm -rf "$target/package"
# shellcheck disable=SC2086 # the -p arguments are words
cargo package --locked --allow-dirty $published  # the tree under test, committed or not
python3 .ci/release-lint "$target/package"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
registry="$work/registry"
cargo vendor --locked --versioned-dirs --quiet "$registry" >/dev/null
python3 - "$registry" "$target"/package/*.crate <<'PY'
# Each .crate unpacked as `cargo vendor` lays out a package: NAME-VERSION/ with a
# .cargo-checksum.json of every file's SHA-256 and the .crate's own (which the lock file of
# picollo-cli's package records).
import hashlib, json, pathlib, sys, tarfile
registry = pathlib.Path(sys.argv[1])
for crate in map(pathlib.Path, sys.argv[2:]):
    with tarfile.open(crate) as tar:  # the "data" filter where this Python has it (3.12)
        tar.extractall(registry, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
    unpacked = registry / crate.name.removesuffix(".crate")
    files = {str(f.relative_to(unpacked)): hashlib.sha256(f.read_bytes()).hexdigest()
             for f in sorted(unpacked.rglob("*")) if f.is_file()}
    checksum = {"files": files, "package": hashlib.sha256(crate.read_bytes()).hexdigest()}
    (unpacked / ".cargo-checksum.json").write_text(json.dumps(checksum))
    print(f"directory source: {unpacked.name} ({len(files)} files)")
PY
cargo install --locked --debug --quiet --root "$work/root" --target-dir "$target" \
  --config "source.crates-io.replace-with = 'packaged'" \
  --config "source.packaged.directory = '$registry'" \
  picollo-cli
"$work/root/bin/picollo" --version
"$work/root/bin/picollo" stat -r 2 -- true
