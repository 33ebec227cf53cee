#!/usr/bin/env python3
# Copyright 2026 The evx Authors
# SPDX-License-Identifier: Apache-2.0
"""Checks that the documentation cites only files in the repository.

    scripts/check_links.py [FILE.md ...]    (default: README.md docs/*.md,
                                             and the source files' citations)

Two kinds of citation are checked, outside fenced code blocks:

- Markdown links and images, `[text](target)`, reference definitions
  `[id]: target` and HTML `href=`/`src=`: a relative target (after dropping
  `#fragment` and `?query`) must resolve, from the folder of the file that
  cites it, to a file or folder inside the repository. URLs with a scheme
  (`https:`, `mailto:`) and bare `#fragment`s are not checked.
- Paths written as code spans, the way these docs mostly cite files: a span
  with no spaces that names a path (it contains a `/`) and starts either
  with `../` (relative to the citing file) or with a folder at the top of
  the repository (`docs/`, `bench/`, `tests/`, ...: relative to the root)
  must name a file or folder that exists. Spans with wildcards or
  placeholders (`*`, `<`, `{`, `$`, `...`) are not paths and are skipped.

In the repository's source files (C, C++, Python, Cython, shell, Rust,
meson and the other files git tracks with those suffixes), every script a
comment or a string cites by its path from the top of the repository
(`scripts/test.sh`, `tests/fuzz/py_fuzz.py`: a path ending in `.sh` or
`.py` whose first folder is one at the top) must exist.

A target that git ignores (a build output) does not count as in the
repository. Prints one line per broken citation (FILE:LINE: what) and a
summary line; the exit status is 1 if any citation is broken.
"""

import glob
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

LINK_RE = re.compile(r"!?\[(?:[^\]\\]|\\.)*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFDEF_RE = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)")
HTML_RE = re.compile(r"\b(?:href|src)\s*=\s*\"([^\"]+)\"")
SPAN_RE = re.compile(r"(?<!`)`([^`\n]+)`(?!`)")
FENCE_RE = re.compile(r"^\s{0,3}(```|~~~)")
SCHEME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def top_level_dirs():
    """The repository's top-level folders (not build folders git ignores)."""
    dirs = {e for e in os.listdir(ROOT)
            if os.path.isdir(os.path.join(ROOT, e)) and not e.startswith(".")}
    return dirs - git_ignored(dirs)


def git_ignored(paths):
    """The subset of paths (relative to ROOT) that git ignores; empty when
    this is not a git checkout."""
    if not paths:
        return set()
    try:
        r = subprocess.run(["git", "-C", ROOT, "check-ignore", "--stdin"],
                           input="\n".join(sorted(paths)) + "\n",
                           capture_output=True, text=True)
    except OSError:
        return set()
    if r.returncode not in (0, 1):
        return set()
    return set(r.stdout.split())


def citations(path, tops):
    """(line number, kind, target as written, path relative to ROOT or None
    when it leaves the repository) for each citation in one file."""
    here = os.path.dirname(os.path.relpath(path, ROOT))
    out = []
    fenced = False
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    for no, line in enumerate(lines, 1):
        if FENCE_RE.match(line):
            fenced = not fenced
            continue
        if fenced:
            continue
        targets = []
        for m in LINK_RE.finditer(line):
            targets.append(("link", m.group(1), here))
        m = REFDEF_RE.match(line)
        if m:
            targets.append(("link", m.group(1), here))
        for m in HTML_RE.finditer(line):
            targets.append(("link", m.group(1), here))
        for m in SPAN_RE.finditer(line):
            span = m.group(1).strip()
            if " " in span or "/" not in span or re.search(r"[*<>{}$]|\.\.\.", span):
                continue
            if span.startswith("../"):
                targets.append(("path", span, here))
            elif span.split("/", 1)[0] in tops:
                targets.append(("path", span, ""))
        for kind, target, base in targets:
            if SCHEME_RE.match(target) or target.startswith("#"):
                continue
            plain = target.split("#", 1)[0].split("?", 1)[0]
            if not plain:
                continue
            if plain.startswith("/"):
                out.append((no, kind, target, None))
                continue
            resolved = os.path.normpath(os.path.join(base, plain))
            inside = not (resolved == ".." or resolved.startswith("../"))
            out.append((no, kind, target, resolved if inside else None))
    return out


SOURCE_SUFFIXES = (".c", ".h", ".cpp", ".hpp", ".py", ".pyx", ".pyi", ".pxd", ".sh",
                   ".rs", ".build", ".toml", ".txt", ".in", ".cfg", ".yml", ".yaml")
SCRIPT_RE = re.compile(r"(?<![\w./-])([A-Za-z_][\w.-]*(?:/[\w.-]+)+\.(?:sh|py))\b")


def tracked_sources():
    """The files git tracks that are source (by suffix, or executable
    scripts without one such as bindings/generate)."""
    try:
        r = subprocess.run(["git", "-C", ROOT, "ls-files"], capture_output=True, text=True)
    except OSError:
        return []
    out = []
    for f in r.stdout.split():
        full = os.path.join(ROOT, f)
        if f.endswith(SOURCE_SUFFIXES) or ("." not in os.path.basename(f)
                                           and os.access(full, os.X_OK)):
            out.append(f)
    return out


def source_citations(tops):
    """(file, line number, kind, target, resolved) for each script path a
    source file cites."""
    out = []
    for f in tracked_sources():
        try:
            with open(os.path.join(ROOT, f), encoding="utf-8") as fh:
                lines = fh.read().split("\n")
        except (OSError, UnicodeDecodeError):
            continue
        for no, line in enumerate(lines, 1):
            for m in SCRIPT_RE.finditer(line):
                if m.group(1).split("/", 1)[0] in tops:
                    out.append((f, no, "script", m.group(1), os.path.normpath(m.group(1))))
    return out


def main(argv):
    files = argv or ["README.md"] + sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))
    files = [f if os.path.isabs(f) else os.path.join(ROOT, f) for f in files]
    tops = top_level_dirs()
    found = []
    for f in files:
        for no, kind, target, resolved in citations(f, tops):
            found.append((os.path.relpath(f, ROOT), no, kind, target, resolved))
    if not argv:
        found.extend(source_citations(tops))
    ignored = git_ignored({r for *_, r in found if r and os.path.exists(os.path.join(ROOT, r))})
    broken = 0
    for name, no, kind, target, resolved in found:
        if resolved is None:
            why = "is outside the repository"
        elif not os.path.exists(os.path.join(ROOT, resolved)):
            why = "does not exist (%s)" % resolved
        elif resolved in ignored:
            why = "is ignored by git (a build output, not in the repository)"
        else:
            continue
        broken += 1
        print("%s:%d: %s %s %s" % (name, no, kind, target, why))
    print("check_links: %d citations in %d files, %d broken" % (len(found), len(files), broken))
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
