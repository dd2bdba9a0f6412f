#!/usr/bin/env python3
"""Every source path the documentation names exists.

    scripts/check-doc-paths.py

reads the Markdown files (README.md, docs/**/*.md except the dated
history under docs/bench-log/) and the comments of every Rust source file,
collects each path of the form `crates/<crate>/src/…` or `<crate>/src/…`
(a crate folder of this workspace), and prints the ones that do not exist
in the tree, with where they were named. It also flags references to a
design document outside the repository. Exit status 1 when anything is
missing, so a file that moves takes its references with it.
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CRATES = sorted(d for d in os.listdir(os.path.join(ROOT, "crates"))
                if os.path.isdir(os.path.join(ROOT, "crates", d)))
PATH = re.compile(r"(?<![A-Za-z0-9_./-])(?:crates/)?(" + "|".join(CRATES) +
                  r")/((?:src|tests|benches)(?:/[A-Za-z0-9_.-]+)*/?)")
OUTSIDE = re.compile(r"\.\./shared/DESIGN\.md|shared/DESIGN\.md")


def markdown_files():
    for top in ["README.md"]:
        yield os.path.join(ROOT, top)
    for root, dirs, files in os.walk(os.path.join(ROOT, "docs")):
        dirs[:] = [d for d in dirs if d != "bench-log"]
        for f in files:
            if f.endswith(".md"):
                yield os.path.join(root, f)


def rust_files():
    for root, dirs, files in os.walk(os.path.join(ROOT, "crates")):
        dirs[:] = [d for d in dirs if d != "target"]
        for f in files:
            if f.endswith(".rs"):
                yield os.path.join(root, f)


def comment_lines(path):
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            i = line.find("//")
            if i >= 0:
                yield n, line[i:]


def text_lines(path):
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            yield n, line


def main():
    missing = []
    sources = [(p, text_lines) for p in markdown_files() if os.path.exists(p)]
    sources += [(p, comment_lines) for p in rust_files()]
    for path, lines in sources:
        rel = os.path.relpath(path, ROOT)
        for n, line in lines(path):
            if OUTSIDE.search(line):
                missing.append((rel, n, "a design document outside the repository"))
            for m in PATH.finditer(line):
                crate, tail = m.group(1), m.group(2).rstrip("/.")
                target = os.path.join(ROOT, "crates", crate, tail)
                if not os.path.exists(target):
                    missing.append((rel, n, f"crates/{crate}/{tail}"))
    for rel, n, what in missing:
        print(f"{rel}:{n}: {what} does not exist")
    print(f"{len(missing)} missing")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
