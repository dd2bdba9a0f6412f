#!/usr/bin/env python3
"""Import circles inside each crate: files that reach each other through
`use crate::…`, `crate::…` paths, `super::…` and `self::…`.

    scripts/import-circles.py [crates/NAME ...] [--max-circles N] [--max-files M]

prints, per crate, every circle (a strongly connected set of two or more
files) with its files, and a last line with the count; with the limits
given it exits 1 when there are more circles or a larger one. Test modules
(`#[cfg(test)] mod tests`) are left out: the structure is what the
crate's code imports. A path is resolved to the deepest module file it
names; a name a `mod.rs` or `lib.rs` re-exports (`pub use a::B`) is
followed to the file that defines it. A module's relative path into its
own child module (`use child::x` in a `mod.rs`) is not counted: that is
how a module split for length reaches its parts (the parts' `super::`
paths are counted), so a parent and its own children alone make no circle.
"""
import os
import re
import sys
from collections import defaultdict

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"


def module_files(src):
    """Module path (tuple) -> file, for every .rs file under src."""
    mods = {}
    for root, _, files in os.walk(src):
        for f in files:
            if not f.endswith(".rs"):
                continue
            path = os.path.join(root, f)
            rel = os.path.relpath(path, src)[:-3].split(os.sep)
            if rel[-1] in ("lib", "main", "mod"):
                rel = rel[:-1]
            mods[tuple(rel)] = path
    return mods


def strip(text):
    """The text without comments, strings and test modules."""
    text = re.sub(r"//[^\n]*", "", text)
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    text = re.sub(r'"(?:\\.|[^"\\])*"', '""', text)
    m = re.search(r"#\[cfg\(test\)\]\s*(pub(\([^)]*\))?\s+)?mod\s+\w+\s*\{", text)
    if m:
        text = text[: m.start()]
    return text


def expand_use(tree):
    """`a::{b, c::{d, self}}` -> ['a::b', 'a::c::d', 'a::c']."""
    tree = re.sub(r"\s+as\s+" + IDENT, "", tree)
    tree = re.sub(r"\s+", "", tree)
    out = []

    def go(prefix, t):
        i = t.find("{")
        if i < 0:
            for part in t.split(","):
                part = part.split(" as ")[0]
                if not part:
                    continue
                if part == "self":
                    out.append(prefix.rstrip(":"))
                else:
                    out.append(prefix + part)
            return
        head = t[:i]
        # split the group's top-level items
        depth, items, cur = 0, [], ""
        body = t[i + 1 : t.rfind("}")]
        for ch in body:
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
            if ch == "," and depth == 0:
                items.append(cur)
                cur = ""
            else:
                cur += ch
        items.append(cur)
        for it in items:
            if it:
                go(prefix + head, it)

    go("", tree)
    return out


def paths_of(text):
    """Every path the code names that starts at crate, super or self."""
    out = []
    for m in re.finditer(r"\buse\s+([^;]+);", text):
        out += expand_use(m.group(1))
    body = re.sub(r"\buse\s+[^;]+;", "", text)
    out += re.findall(r"\b(?:crate|super|self)(?:::" + IDENT + ")+", body)
    return [p for p in out if p.split("::")[0] in ("crate", "super", "self")]


def resolve(path, here, mods, reexports, depth=0):
    """The module (tuple) a path lands in, or None."""
    parts = path.split("::")
    if parts[0] == "crate":
        base, rest = (), parts[1:]
    elif parts[0] == "self":
        base, rest = here, parts[1:]
    else:
        base = here
        while parts and parts[0] == "super":
            base = base[:-1]
            parts = parts[1:]
        rest = parts
    full = base + tuple(rest)
    for n in range(len(full), -1, -1):
        m = full[:n]
        if m in mods:
            if n < len(full) and depth < 4:
                name = full[n]
                target = reexports.get(m, {}).get(name)
                if target:
                    r = resolve(target, m, mods, reexports, depth + 1)
                    if r is not None:
                        return r
            return m
    return None


def circles(src):
    mods = module_files(src)
    texts = {m: strip(open(f, encoding="utf-8").read()) for m, f in mods.items()}
    reexports = defaultdict(dict)
    for m, text in texts.items():
        for u in re.finditer(r"\bpub(?:\([^)]*\))?\s+use\s+([^;]+);", text):
            for p in expand_use(u.group(1)):
                reexports[m][p.split("::")[-1]] = p
    edges = defaultdict(set)
    for m, text in texts.items():
        for p in paths_of(text):
            t = resolve(p, m, mods, reexports)
            if t is not None and t != m and t != ():
                edges[m].add(t)
    # Tarjan's strongly connected components.
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def strong(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(mods[c] for c in comp))

    sys.setrecursionlimit(10000)
    for v in list(mods):
        if v not in index:
            strong(v)
    return out


def main():
    args = sys.argv[1:]
    limits = {}
    for flag in ("--max-circles", "--max-files"):
        if flag in args:
            i = args.index(flag)
            limits[flag] = int(args[i + 1])
            del args[i : i + 2]
    roots = args or sorted(
        os.path.join("crates", d) for d in os.listdir("crates") if os.path.isdir(os.path.join("crates", d, "src"))
    )
    total = largest = 0
    for crate in roots:
        for comp in circles(os.path.join(crate, "src")):
            total += 1
            largest = max(largest, len(comp))
            print(f"{crate}: {len(comp)} files")
            for f in comp:
                print(f"    {f}")
    print(f"{total} import circles")
    over = total > limits.get("--max-circles", total) or largest > limits.get("--max-files", largest)
    if over:
        print(f"over the limits {limits}: at most that many circles, none larger")
        sys.exit(1)


if __name__ == "__main__":
    main()
