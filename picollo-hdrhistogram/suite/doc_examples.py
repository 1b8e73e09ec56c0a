#!/usr/bin/env python3
"""Collects the doc examples of the `hdrhistogram` crate's sources into one Rust file of doc
comments, so that `cargo test --doc` runs each, unchanged, against what `hdrhistogram` names
in the scratch crate (picollo-hdrhistogram, switched in by `package =`).

usage: doc_examples.py UPSTREAM_SRC_DIR OUT_LIB_RS
Prints the number of examples that run (not `ignore`, not `text`, not `compile_fail`); each
example keeps its fence attributes (`no_run`, `should_panic`) and hidden `# ` lines.
"""
import pathlib
import re
import sys

src, out = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
examples = []  # (origin, fence info, lines)
for path in sorted(src.rglob("*.rs")):
    # `src/tests/*` and `*/tests.rs` are the crate's unit tests, not documentation.
    rel = path.relative_to(src)
    if rel.parts[0] == "tests" or rel.name in ("tests.rs", "benchmarks.rs"):
        continue
    lines = path.read_text().splitlines()
    block = None
    for number, line in enumerate(lines, 1):
        m = re.match(r"^\s*//[/!] ?(.*)$", line)
        if not m:
            block = None if block is None or True else block
            continue
        text = m.group(1)
        fence = re.match(r"^```(.*)$", text.strip())
        if fence and block is None:
            block = (f"{rel}:{number}", fence.group(1).strip(), [])
        elif fence and block is not None:
            examples.append(block)
            block = None
        elif block is not None:
            block[2].append(text)

def runs(info):
    attrs = {a.strip() for a in info.split(",") if a.strip()}
    if attrs & {"ignore", "text", "compile_fail", "toml", "sh", "console"}:
        return False
    return not attrs or attrs <= {"rust", "no_run", "should_panic", "edition2018", "edition2021"}

count = 0
parts = [
    "//! The doc examples of `hdrhistogram`'s sources, collected by doc_examples.py; each runs\n"
    "//! as a doc test against the facade.\n",
]
for n, (origin, info, body) in enumerate(examples):
    if not runs(info):
        continue
    count += 1
    doc = "\n".join("/// " + l if l else "///" for l in body)
    parts.append(f"/// From `{origin}`.\n///\n/// ```{info}\n{doc}\n/// ```\npub struct Example{n};\n")
out.write_text("\n".join(parts))
print(count)
