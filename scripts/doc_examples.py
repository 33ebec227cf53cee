#!/usr/bin/env python3
# Copyright 2026 The evx Authors
# SPDX-License-Identifier: Apache-2.0
"""The code blocks of README.md and docs/*.md: each is run, or says that it
is not a complete program.

A fenced block is marked by the line before it (blank lines between are
allowed):

    <!-- example: NAME.EXT -->      a complete program that needs only evx:
                                   run in CI on the host emulation (.py by
                                   bindings/python/tests/test_docs_examples.py
                                   and the wheel step, .c by
                                   scripts/readme_examples.sh docs, the
                                   README's .c and .rs by readme_examples.sh)
    <!-- example-gpu: NAME.py -->  a complete program that needs PyTorch,
                                   CuPy or cuda.core: run on a GPU by
                                   scripts/gpu-check.sh docs_examples
    <!-- fragment -->              not a complete program (the text around it
                                   says what it leaves out)

Blocks of commands, output and configuration (```sh, ```text, ```toml) are
not programs and need no marker; every other block needs one.

    doc_examples.py check               fails naming each unmarked block and
                                        each marker with no block after it
    doc_examples.py list [KIND]         NAME FILE per example (KIND: example
                                        or example-gpu; default example)
    doc_examples.py extract NAME [OUT]  one example's code
    doc_examples.py run-gpu             runs every example-gpu program with
                                        this Python, each in a fresh process
"""

import glob
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MARK_RE = re.compile(r"^<!-- (example|example-gpu): (\S+) -->$|^<!-- (fragment) -->$")
FENCE_RE = re.compile(r"^\s{0,3}```(\S*)")
NOT_PROGRAMS = ("sh", "text", "toml")


def pages():
    return ["README.md"] + sorted(os.path.relpath(p, ROOT)
                                  for p in glob.glob(os.path.join(ROOT, "docs", "*.md")))


def blocks(page):
    """(line, language, marker kind or None, name or None, code) per block,
    and (line, kind) per marker that no block follows."""
    with open(os.path.join(ROOT, page), encoding="utf-8") as f:
        lines = f.read().split("\n")
    out, dangling, mark, i = [], [], None, 0
    while i < len(lines):
        m = MARK_RE.match(lines[i])
        fence = FENCE_RE.match(lines[i])
        if m:
            if mark:
                dangling.append((mark[0], mark[1]))
            mark = (i + 1, m.group(1) or m.group(3), m.group(2))
        elif fence:
            j = i + 1
            while j < len(lines) and not FENCE_RE.match(lines[j]):
                j += 1
            kind, name = (mark[1], mark[2]) if mark else (None, None)
            out.append((i + 1, fence.group(1), kind, name, "\n".join(lines[i + 1:j]) + "\n"))
            mark, i = None, j
        elif lines[i].strip() and mark:
            dangling.append((mark[0], mark[1]))
            mark = None
        i += 1
    return out, dangling


def check():
    bad = n = 0
    for page in pages():
        found, dangling = blocks(page)
        for line, lang, kind, _, _ in found:
            n += 1
            if kind is None and lang not in NOT_PROGRAMS:
                bad += 1
                print("%s:%d: a ```%s block that is neither an example nor marked "
                      "<!-- fragment -->" % (page, line, lang or ""))
        for line, kind in dangling:
            bad += 1
            print("%s:%d: <!-- %s --> is not followed by a code block" % (page, line, kind))
    print("doc_examples: %d blocks, %d problems" % (n, bad))
    return 1 if bad else 0


def examples(kind):
    return [(name, page, code) for page in pages()
            for _, _, k, name, code in blocks(page)[0] if k == kind]


def run_gpu():
    failed = 0
    found = examples("example-gpu")
    for name, page, code in found:
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           cwd=ROOT, timeout=600)
        ok = r.returncode == 0
        failed += not ok
        print("%s %s (%s)" % ("ok  " if ok else "FAIL", name, page))
        if not ok:
            print(r.stdout + r.stderr)
    print("docs_examples: %d passed, %d failed" % (len(found) - failed, failed))
    return 1 if failed or not found else 0


def main(argv):
    if argv == ["check"]:
        return check()
    if argv[:1] == ["list"] and len(argv) <= 2:
        for name, page, _ in examples(argv[1] if len(argv) == 2 else "example"):
            print(name, page)
        return 0
    if argv[:1] == ["extract"] and len(argv) in (2, 3):
        code = [c for name, _, c in examples("example") + examples("example-gpu")
                if name == argv[1]]
        if len(code) != 1:
            print("doc_examples: %d examples named %s" % (len(code), argv[1]), file=sys.stderr)
            return 1
        if len(argv) == 3:
            with open(argv[2], "w", encoding="utf-8") as f:
                f.write(code[0])
        else:
            sys.stdout.write(code[0])
        return 0
    if argv == ["run-gpu"]:
        return run_gpu()
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
