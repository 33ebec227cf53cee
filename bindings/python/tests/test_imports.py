# Copyright 2026 The evx Authors
# SPDX-License-Identifier: Apache-2.0
"""The package's import graph (docs/bindings.md, "The package's layout"),
read from the sources in bindings/python/evx: every module imports at its
top only, the modules of the package import one another without a cycle,
and the compiled core imports nothing of the package."""

import ast
import os
import re

from conftest import REPO

PKG = os.path.join(REPO, "bindings", "python", "evx")


def modules():
    return sorted(f[:-3] for f in os.listdir(PKG) if f.endswith(".py"))


def _targets(node):
    """The package's modules one import statement names."""
    if isinstance(node, ast.ImportFrom):
        if node.level == 1:
            return [node.module.split(".")[0]] if node.module else [a.name for a in node.names]
        if node.level == 0 and (node.module or "").split(".")[0] == "evx":
            parts = node.module.split(".")
            return [parts[1]] if len(parts) > 1 else [a.name for a in node.names]
    if isinstance(node, ast.Import):
        return [(a.name.split(".") + ["__init__"])[1] for a in node.names
                if a.name.split(".")[0] == "evx"]
    return []


def _tree(name):
    with open(os.path.join(PKG, name + ".py"), encoding="utf-8") as f:
        return ast.parse(f.read(), name + ".py")


def graph():
    """{module: the package's modules it imports}, module-level imports."""
    return {m: {t for node in _tree(m).body for t in _targets(node)} for m in modules()}


def function_level_imports():
    out = []
    for m in modules():
        for fn in ast.walk(_tree(m)):
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                out += ["%s.py:%d: %s" % (m, n.lineno, ast.unparse(n)) for n in ast.walk(fn)
                        if isinstance(n, (ast.Import, ast.ImportFrom))]
    return sorted(set(out))


def cycles(g):
    """Each cycle found by a depth-first walk, as a list of modules."""
    found, state = [], {}

    def walk(m, path):
        state[m] = 1
        for t in sorted(g.get(m, ())):
            if state.get(t) == 1:
                found.append(path[path.index(t):] + [t])
            elif t not in state:
                walk(t, path + [t])
        state[m] = 2

    for m in sorted(g):
        if m not in state:
            walk(m, [m])
    return found


def test_no_import_inside_a_function():
    assert function_level_imports() == []


def test_no_import_cycle():
    g = graph()
    assert g["_device"], "the graph was read"
    assert cycles(g) == []


def test_the_checks_can_fail():
    # The walk finds a cycle and the reader finds a function-level import
    # when there is one.
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == [["a", "b", "c", "a"]]
    tree = ast.parse("def f():\n    from . import _device\n")
    assert [_targets(n) for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)] == [["_device"]]


def test_device_module_is_a_leaf_of_the_classes():
    g = graph()
    for m in ("_event", "_stream", "_timing", "_pool", "_fence", "aio", "_notify"):
        assert m not in g["_device"], "_device imports %s" % m


def test_the_core_imports_nothing_of_the_package():
    with open(os.path.join(PKG, "_core.pyx"), encoding="utf-8") as f:
        text = f.read()
    # (``from .libevx cimport *`` is the C declarations, not the package.)
    found = re.findall(r"^\s*(?:from\s+(?:evx\b|\.)\S*\s+import\b|import\s+evx\b)[^\n]*",
                       text, re.M)
    assert found == []
