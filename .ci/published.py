#!/usr/bin/env python3
"""The crates this workspace publishes: every member but those with `publish = false`,
dependencies first (as `cargo publish` must take them; every kind of dependency counts, since
a package's lock file covers its dev-dependencies too).

As a program: one `NAME@VERSION` a line (`--libs`: the library crates only), for the CI
scripts. As a module: `published()`, the `cargo metadata` packages in that order.
"""

import json
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent


def workspace_metadata():
    """`cargo metadata --no-deps` of this repository's workspace."""
    return json.loads(subprocess.run(
        ["cargo", "metadata", "--no-deps", "--format-version", "1", "--locked"],
        cwd=ROOT, check=True, capture_output=True, text=True).stdout)


def is_lib(package):
    return any("lib" in target["kind"] for target in package["targets"])


def published(metadata=None, libs=False):
    """The published packages of `metadata` (the workspace's by default), dependencies first."""
    metadata = metadata or workspace_metadata()
    packages = {p["name"]: p for p in metadata["packages"] if p["publish"] != []}
    order = []

    def visit(name):
        if name in order:
            return
        for dependency in packages[name]["dependencies"]:
            if dependency["name"] in packages and dependency["name"] != name:
                visit(dependency["name"])
        order.append(name)

    for name in packages:
        visit(name)
    return [packages[name] for name in order if not libs or is_lib(packages[name])]


def docs_rs(package):
    """How docs.rs documents `package`, from its [package.metadata.docs.rs]: (the cargo feature
    arguments, the targets (the first is the default page), the extra rustdoc arguments)."""
    rs = ((package.get("metadata") or {}).get("docs") or {}).get("rs") or {}
    args = []
    if rs.get("all-features"):
        args.append("--all-features")
    if rs.get("no-default-features"):
        args.append("--no-default-features")
    if rs.get("features"):
        args.append("--features=" + ",".join(rs["features"]))
    targets = rs.get("targets") or ["x86_64-unknown-linux-gnu"]
    return args, targets, rs.get("rustdoc-args") or []


if __name__ == "__main__":
    for package in published(libs="--libs" in sys.argv[1:]):
        print(f"{package['name']}@{package['version']}")
