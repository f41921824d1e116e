#!/usr/bin/env python3
"""include-graph.py - fail on a circle in the module-level include graph.

A module is foo.c and foo.h in one directory; module A depends on B when
A's .c or .h includes B's .h ("..." includes, resolved against the
including file's directory). Every source directory under ROOT (default:
the current directory) is read except agent/, tests/ and build output.
A header-only internal header (NAME_int.h, no NAME_int.c: the private
declarations its directory's files share) is part of each module that
includes it: its includes count as theirs, so a private header and the
public one it builds on make no circle, while a circle through it still
shows. cmd/ is the top room (the command line's options and output): a
module outside it that includes a cmd/ module is printed as "include
upward: tools/x -> cmd/y" and fails too, so that tools/ and the library
stay usable without the command. cmd/ reaches an object store only
through the store's backend (store/backend.h): a cmd/ module including
an s3/ module is printed as "include past the store: cmd/x -> s3/s3"
and fails. Exit 0 when the graph has no circle, nothing includes upward
and cmd/ includes no s3/; else print each circle found, as
"include circle: a -> b -> a", and exit 1.

Usage: include-graph.py [ROOT]"""
import os
import re
import sys

SKIP = {"agent", "tests", "build", "build-asan", "bin", ".git"}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def modules(root):
    """{module: [files]}, module being 'dir/stem' relative to root."""
    mods = {}
    for d, subdirs, files in os.walk(root):
        rel = os.path.relpath(d, root)
        top = rel.split(os.sep)[0]
        if top in SKIP or top.startswith("build"):
            subdirs[:] = []
            continue
        subdirs.sort()
        for f in sorted(files):
            if f.endswith((".c", ".h")):
                path = os.path.normpath(os.path.join(rel, f))
                mods.setdefault(path[:-2], []).append(path)
    return mods


def edges(root, mods):
    """{module: sorted list of the modules it includes}."""
    out = {}
    for m, files in mods.items():
        deps = set()
        for f in files:
            with open(os.path.join(root, f), encoding="utf-8",
                      errors="replace") as fh:
                text = fh.read()
            for inc in INCLUDE.findall(text):
                target = os.path.normpath(
                    os.path.join(os.path.dirname(f), inc))
                if target.endswith(".h") and target[:-2] in mods and \
                        target[:-2] != m:
                    deps.add(target[:-2])
        out[m] = deps
    # Fold the internal headers into their includers (to a fixed point,
    # as one may include another).
    internal = {m for m, files in mods.items()
                if m.endswith("_int") and files == [m + ".h"]}
    changed = True
    while changed:
        changed = False
        for m in out:
            for i in list(out[m] & internal):
                out[m].discard(i)
                new = out[i] - out[m] - {m}
                if new:
                    out[m] |= new
                    changed = True
    return {m: sorted(d) for m, d in out.items() if m not in internal}


def circles(graph):
    """Each circle reached by a depth-first walk, as a list of modules
    whose last one includes the first."""
    found, state, stack = [], {}, []

    def walk(m):
        state[m] = 1
        stack.append(m)
        for n in graph[m]:
            if state.get(n) == 1:
                found.append(stack[stack.index(n):])
            elif n not in state:
                walk(n)
        stack.pop()
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            walk(m)
    return found


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    if not os.path.isdir(root):
        print("include-graph: %s: not a directory" % root, file=sys.stderr)
        return 2
    sys.setrecursionlimit(10000)
    mods = modules(root)
    if not mods:
        print("include-graph: no .c or .h files under %s" % root,
              file=sys.stderr)
        return 2
    graph = edges(root, mods)
    found = circles(graph)
    for c in found:
        print("include circle: " + " -> ".join(c + [c[0]]))
    up = [(m, n) for m in sorted(graph) if not m.startswith("cmd/")
          for n in graph[m] if n.startswith("cmd/")]
    for m, n in up:
        print("include upward: %s -> %s" % (m, n))
    past = [(m, n) for m in sorted(graph) if m.startswith("cmd/")
            for n in graph[m] if n.startswith("s3/")]
    for m, n in past:
        print("include past the store: %s -> %s" % (m, n))
    if found or up or past:
        return 1
    print("include-graph: %d modules, %d edges, no circle" %
          (len(graph), sum(len(v) for v in graph.values())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
