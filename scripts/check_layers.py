#!/usr/bin/env python3
# Copyright 2026 The evx Authors
# SPDX-License-Identifier: Apache-2.0
"""Checks that src/ is layered one way, and that its functions are short.

usage: check_layers.py [SRC_DIR]

Layers: no file includes, or calls a function defined in, a file of a
higher layer (docs/design.md, "Source layout", gives each file's layer),
and the files of one layer use each other without a cycle: a module (a
source file with its private header, x.cpp and x.hpp) that uses another of
its layer must not be used by it, directly or through others. Each problem
names the arrow (file:line) or every arrow of the cycle.

Includes are read from `#include "..."` lines. Calls are found by name: the
functions each file defines (at the start of a line, as evx's style writes
them; inline functions of headers included) are collected, and a call (or
a declaration) `name(` (not a member's, not a qualified one) in a file to a
name that only files of another module define is an arrow to them. The host
emulation (src/host/) is a driver of its own: it must include nothing of
the library.

docs/design.md's table of the source layout must give each file the layer
it has here.

Lengths: no function of src/ or src/host/ is longer than MAX_LINES lines,
from the line of its name to its closing brace.
"""
import pathlib
import re
import sys

# Bottom to top. A file may use its own layer (without a cycle) and those
# below.
LAYERS = [
    ["status.cpp",                                # names of status codes,
     "futex_lock.hpp"],                           # the lock of short hot sections
    ["thread.hpp", "thread.cpp"],                 # per-thread records
    ["error.hpp", "error.cpp"],                   # the last error, words for statuses
    ["driver.hpp", "driver.cpp",                  # the driver and its entry points
     "sized.hpp", "sized.cpp"],                   # size-tagged structs
    ["event_object.hpp", "stream_object.hpp"],    # the event and stream objects (data)
    ["handle.hpp", "handle.cpp"],                 # the handle table
    ["reclaim.hpp", "reclaim.cpp"],               # hazards, retire, reclaim, free hooks
    ["cache.hpp", "cache.cpp"],                   # reuse of driver events
    ["scope.hpp", "scope.cpp"],                   # how a public call starts and ends
    ["event_state.hpp",                           # an event's publication and claim
     "lifetime.hpp",                              # the end of a borrow
     "nvtx.hpp", "nvtx.cpp"],                     # NVTX ranges of timing marks
    ["capture.hpp", "capture.cpp"],               # services to the modules: captures,
    ["contexts.hpp", "contexts.cpp",              # other contexts,
     "hostfn.hpp", "hostfn.cpp"],                 # host functions that can fail
    ["pool.hpp", "pool.cpp"],                     # event pools
    ["event.hpp", "event.cpp",                    # the modules of the public calls
     "mark.hpp", "mark.cpp", "timer.hpp", "timer.cpp", "timeline.cpp",
     "fence.hpp", "fence.cpp", "fence_ipc.cpp", "fence_reclaim.cpp",
     "fence_pool.cpp", "fence_release.cpp", "notify.cpp", "ipc.cpp",
     "event_wrap.hpp", "event_wrap.cpp"],
    ["stream.hpp", "stream.cpp",                  # streams, and the modules that use
     "device.cpp", "version.cpp", "trace.cpp"],   # the others' public calls
    ["lifetime.cpp"],                             # borrows with a release callback
]

# The module of a file, for cycles: its name without the suffix, but for
# files that share a private header with another module.
MODULE_OF = {"fence_ipc.cpp": "fence", "fence_reclaim.cpp": "fence", "fence_pool.cpp": "fence",
             "fence_release.cpp": "fence"}

# Functions longer than MAX_LINES that are known and being split: (file,
# function, why). Each must still be too long (so the list cannot go stale).
MAX_LINES = 80
LONG = []

KEYWORDS = {"if", "for", "while", "switch", "return", "sizeof", "alignof", "decltype",
            "static_assert", "defined", "catch", "noexcept", "operator", "new", "delete",
            "void", "bool", "char", "int", "unsigned", "long", "short", "float", "double",
            "CUresult", "evx_status_t", "__attribute__"}  # and the types of function pointers: T (*f)(...)


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    return re.sub(r'"(?:[^"\\\n]|\\.)*"', '""', text)


def definitions(text):
    """Names of the functions a file defines (members included): a line
    `... name(...)` followed by a body."""
    names = set()
    for m in re.finditer(r"^[ \t]*(?:[A-Za-z_][\w:<>,*& ]*?[\s*&])?((?:[A-Za-z_]\w*::)*~?[A-Za-z_]\w*)\s*\(([^;{]*?)\)"
                         r"[^;{]*\{", text, re.M | re.S):
        name = m.group(1)
        if name not in KEYWORDS:
            names.add(name.split("::")[-1])
    return names


def module(f):
    return MODULE_OF.get(f, f.rsplit(".", 1)[0])


def arrows_of(src, files, layer, texts):
    """(from file, line, to file, what) for each use of another module's
    file: its includes, and its calls to names only that module defines."""
    defined_in = {}
    for f, text in texts.items():
        for name in definitions(text):
            defined_in.setdefault(name, set()).add(f)
    arrows = {}
    for f, text in texts.items():
        if f not in layer:
            continue
        raw = (src / f).read_text().split("\n")
        for n, line in enumerate(raw, 1):
            m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
            if m and m.group(1) in layer and module(m.group(1)) != module(f):
                arrows.setdefault((f, m.group(1)), (n, "includes"))
        mine = definitions(text)
        # calls by a plain name: not members (a.f(), p->f()), not qualified
        for n, line in enumerate(text.split("\n"), 1):
            for name in re.findall(r"(?<![\w.>:])([A-Za-z_]\w*)\s*\(", line):
                if name in mine or name in KEYWORDS or name not in defined_in:
                    continue
                where = defined_in[name]
                if any(w not in layer or module(w) == module(f) for w in where):
                    continue
                for w in sorted(where):
                    arrows.setdefault((f, w), (n, "calls %s() of" % name))
    return arrows


def cycles(arrows, layer):
    """The cycles among the modules of one layer: lists of arrows
    (from, line, to, what), one per cycle found."""
    edges = {}
    for (f, t), (n, what) in sorted(arrows.items()):
        if layer[f] == layer[t]:
            edges.setdefault(module(f), {}).setdefault(module(t), (f, n, t, what))
    found, seen = [], set()
    for start in sorted(edges):
        # the shortest way back to start, breadth first
        back = {start: None}
        queue = [start]
        while queue:
            a = queue.pop(0)
            for b in sorted(edges.get(a, {})):
                if b == start:
                    path = [edges[a][b]]
                    while back[a] is not None:
                        path.insert(0, edges[back[a]][a])
                        a = back[a]
                    key = frozenset((x[0], x[2]) for x in path)
                    if key not in seen:
                        seen.add(key)
                        found.append(path)
                    queue = []
                    break
                if b not in back:
                    back[b] = a
                    queue.append(b)
    return found


def functions(text):
    """(name, first line, length in lines) of each function a text defines."""
    out = []
    for m in re.finditer(r"^[ \t]*(?:[A-Za-z_][\w:<>,*& ]*?[\s*&])?((?:[A-Za-z_]\w*::)*~?[A-Za-z_]\w*)\s*\(([^;{]*?)\)"
                         r"[^;{]*\{", text, re.M | re.S):
        name = m.group(1).split("::")[-1]
        if name in KEYWORDS:
            continue
        depth, k = 0, m.end() - 1
        while k < len(text):
            depth += {"{": 1, "}": -1}.get(text[k], 0)
            if depth == 0:
                break
            k += 1
        first = text.count("\n", 0, m.start(1)) + 1
        out.append((name, first, text.count("\n", 0, k) + 2 - first))
    return out


def long_functions(src):
    problems = []
    found = set()
    long_ok = {(f, name) for f, name, _ in LONG}
    paths = sorted(p for d in (src, src / "host") if d.is_dir()
                   for p in d.iterdir() if p.suffix in (".cpp", ".hpp", ".h", ".inc"))
    for p in paths:
        rel = p.relative_to(src).as_posix()
        for name, line, n in functions(strip_comments(p.read_text())):
            if n <= MAX_LINES:
                continue
            if (rel, name) in long_ok:
                found.add((rel, name))
                print("layers: known, to be split: %s:%d %s() (%d lines)" % (rel, line, name, n))
                continue
            problems.append("%s:%d: %s() is %d lines long (at most %d)" %
                            (rel, line, name, n, MAX_LINES))
    problems += ["LONG lists %s() of %s, which is not longer than %d lines any more: remove "
                 "the entry" % (name, f, MAX_LINES) for f, name, _ in LONG
                 if (f, name) not in found]
    return problems


def documented_layers(design):
    """The (file, layer) pairs of the table in design.md's "Source layout"."""
    text = design.read_text()
    start = text.find("## Source layout")
    end = text.find("\n## ", start + 1)
    pairs = set()
    for row in text[start:end].split("\n"):
        cells = [c.strip() for c in row.strip().strip("|").split("|")]
        if len(cells) < 3 or not cells[1].isdigit():
            continue
        for name in re.findall(r"`([\w.]+(?:/\.\w+)?)`", cells[0]):
            stem, _, other = name.partition("/")
            pairs.add((stem, int(cells[1])))
            if other:
                pairs.add((stem.rsplit(".", 1)[0] + other, int(cells[1])))
    return pairs


def main():
    src = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else
                       pathlib.Path(__file__).resolve().parent.parent / "src")
    layer = {f: i for i, files in enumerate(LAYERS) for f in files}
    files = sorted(p.name for p in src.iterdir() if p.suffix in (".cpp", ".hpp"))
    problems = []
    missing = [f for f in files if f not in layer]
    problems += ["%s is in no layer (add it to LAYERS here and to docs/design.md)" % f
                 for f in missing]
    problems += ["%s is in LAYERS but not in src/" % f for f in layer if f not in files]

    texts = {f: strip_comments((src / f).read_text()) for f in files}
    arrows = arrows_of(src, files, layer, texts)
    for (f, t), (n, what) in sorted(arrows.items()):
        if layer[t] > layer[f]:
            problems.append("%s:%d (layer %d) %s %s (layer %d): an arrow upward" % (
                f, n, layer[f], what, t, layer[t]))
    for path in cycles(arrows, layer):
        problems.append("a cycle in layer %d: %s" % (layer[path[0][0]], "; ".join(
            "%s:%d %s %s" % (f, n, what, t) for f, n, t, what in path)))

    host = src / "host"
    if host.is_dir():
        for p in sorted(host.iterdir()):
            if p.suffix in (".cpp", ".hpp", ".inc", ".h"):
                for inc in re.findall(r'^\s*#\s*include\s+"([^"]+)"', p.read_text(), re.M):
                    if "/" in inc and not inc.startswith("evx/") or inc in layer:
                        problems.append("host/%s includes %s: the emulation shares no code "
                                        "with the library" % (p.name, inc))
    problems += long_functions(src)
    design = src.parent / "docs" / "design.md"
    if design.is_file():
        documented = documented_layers(design)
        actual = {(f, layer[f]) for f in files if f in layer}
        problems += ["docs/design.md, \"Source layout\", gives %s layer %d; it is in layer %d"
                     % (f, n, layer[f]) for f, n in sorted(documented - actual) if f in layer]
        problems += ["docs/design.md, \"Source layout\", does not list %s (layer %d)" % (f, n)
                     for f, n in sorted(actual - documented)
                     if f not in {d for d, _ in documented}]
        problems += ["docs/design.md, \"Source layout\", lists %s, which is not in src/" % f
                     for f, _ in sorted(documented) if f not in files]

    for p in problems:
        print("layers: " + p)
    if problems:
        return 1
    print("layers: %d files in %d layers, no arrow upward, no cycle; no function over %d "
          "lines" % (len(files), len(LAYERS), MAX_LINES))
    return 0


if __name__ == "__main__":
    sys.exit(main())
