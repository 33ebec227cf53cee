#!/usr/bin/env python3
# Copyright 2026 The evx Authors
# SPDX-License-Identifier: Apache-2.0
"""Checks that src/ is layered one way: no file includes, or calls a
function defined in, a file of a higher layer (docs/design.md, "Source
layout", gives each file's layer).

usage: check_layers.py [SRC_DIR]

Includes are read from `#include "..."` lines. Calls are found by name: the
functions each file defines (at the start of a line, as evx's style writes
them; inline functions of headers included) are collected, and a call
`name(` (not a member's, not a qualified one) in a file of a lower layer to a name that only files of higher
layers define is an upward call. Files of one layer may use each other. The
host emulation (src/host/) is a driver of its own: it must include nothing
of the library.
"""
import pathlib
import re
import sys

# Bottom to top. A file may use its own layer and those below.
LAYERS = [
    ["status.cpp"],                               # names of status codes
    ["thread.hpp", "thread.cpp"],                 # per-thread records
    ["error.hpp", "error.cpp"],                   # the last error, words for statuses
    ["driver.hpp", "driver.cpp",                  # the driver and its entry points
     "sized.hpp", "sized.cpp"],                   # size-tagged structs
    ["handle.hpp", "handle.cpp",                  # the handle table, free hooks
     "cache.hpp", "cache.cpp"],                   # reuse of driver events
    ["scope.hpp", "scope.cpp"],                   # how a public call starts and ends
    ["event.cpp", "stream.cpp", "pool.cpp", "timing.cpp", "device.cpp",  # the modules,
     "version.cpp", "notify.cpp", "ipc.cpp", "capture.cpp", "lifetime.cpp", "contexts.cpp",
     "fence.hpp", "fence.cpp", "fence_ipc.cpp",
     "hostfn.cpp", "hostfn.hpp", "trace.cpp", "nvtx.cpp", "nvtx.hpp",
     "event_wrap.cpp", "event_wrap.hpp",
     "objects.hpp"],                              # and what they share of each other
]

# Upward arrows that are known and being removed: (file, target, why). Each
# must still exist (so the list cannot go stale); remove an entry with the
# arrow.
KNOWN = []

KEYWORDS = {"if", "for", "while", "switch", "return", "sizeof", "alignof", "decltype",
            "static_assert", "defined", "catch", "noexcept", "operator", "new", "delete",
            "void", "bool", "char", "int", "unsigned", "long", "short", "float", "double",
            "CUresult", "evx_status_t"}  # and the types of function pointers: T (*f)(...)


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    return re.sub(r'"(?:[^"\\\n]|\\.)*"', '""', text)


def definitions(text):
    """Names of the functions a file defines (members included): a line
    `... name(...)` followed by a body."""
    names = set()
    for m in re.finditer(r"^[ \t]*(?:[A-Za-z_][\w:<>,*& ]*?[\s*&])?(~?[A-Za-z_]\w*)\s*\(([^;{]*?)\)"
                         r"[^;{]*\{", text, re.M | re.S):
        name = m.group(1)
        if name not in KEYWORDS:
            names.add(name.split("::")[-1])
    return names


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
    defined_in = {}
    for f, text in texts.items():
        for name in definitions(text):
            defined_in.setdefault(name, set()).add(f)

    arrows = set()
    for f, text in texts.items():
        if f not in layer:
            continue
        for inc in re.findall(r'^\s*#\s*include\s+"([^"]+)"', (src / f).read_text(), re.M):
            if inc in layer and layer[inc] > layer[f]:
                arrows.add((f, inc, "includes"))
        mine = definitions(text)
        # calls by a plain name: not members (a.f(), p->f()), not qualified
        for name in set(re.findall(r"(?<![\w.>:])([A-Za-z_]\w*)\s*\(", text)):
            if name in mine or name in KEYWORDS or name not in defined_in:
                continue
            where = defined_in[name]
            if all(w in layer and layer[w] > layer[f] for w in where):
                for w in sorted(where):
                    arrows.add((f, w, "calls %s() of" % name))

    known = {(f, t) for f, t, _ in KNOWN}
    for f, t, what in sorted(arrows):
        if (f, t) in known or (f, t.replace(".cpp", ".hpp")) in known:
            continue
        problems.append("%s (layer %d) %s %s (layer %d): an arrow upward" % (
            f, layer[f], what, t, layer[t]))
    for f, t, why in KNOWN:
        if not any(a[0] == f and a[1] in (t, t.replace(".hpp", ".cpp")) for a in arrows):
            problems.append("KNOWN lists %s -> %s (%s), which is gone: remove the entry"
                            % (f, t, why))
        else:
            print("known, to be removed: %s -> %s (%s)" % (f, t, why))

    host = src / "host"
    if host.is_dir():
        for p in sorted(host.iterdir()):
            if p.suffix in (".cpp", ".hpp", ".inc", ".h"):
                for inc in re.findall(r'^\s*#\s*include\s+"([^"]+)"', p.read_text(), re.M):
                    if "/" in inc and not inc.startswith("evx/") or inc in layer:
                        problems.append("host/%s includes %s: the emulation shares no code "
                                        "with the library" % (p.name, inc))

    for p in problems:
        print("layers: " + p)
    if problems:
        return 1
    print("layers: %d files in %d layers, no arrow upward" % (len(files), len(LAYERS)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
