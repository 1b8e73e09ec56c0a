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


if __name__ == "__main__":
    for package in published(libs="--libs" in sys.argv[1:]):
        print(f"{package['name']}@{package['version']}")
