# Copyright 2026 The evx Authors
# SPDX-License-Identifier: Apache-2.0
"""The layout check, Python side: bindings/layout/evx_layout.c is compiled
with the C compiler (CC, else cc) against include/evx and run; every value it
prints must equal what the generated ctypes module holds, and every item of
the module must be printed (nothing missing on either side)."""

import ctypes
import os
import shlex
import subprocess

import pytest

from conftest import REPO

import evx._capi as capi


@pytest.fixture(scope="module")
def c_values(tmp_path_factory):
    exe = str(tmp_path_factory.mktemp("layout") / "evx_layout")
    cc = shlex.split(os.environ.get("CC", "cc"))
    cmd = cc + ["-std=c99", "-Wall", "-Wextra", "-Werror",
                "-I", os.path.join(REPO, "include"),
                os.path.join(REPO, "bindings", "layout", "evx_layout.c"), "-o", exe]
    r = subprocess.run(cmd, capture_output=True, text=True)
    assert r.returncode == 0, "compiling the layout program failed:\n" + r.stderr
    out = subprocess.run([exe], capture_output=True, text=True, check=True).stdout
    values = {}
    for line in out.splitlines():
        kind, name, *nums = line.split()
        key = (kind, name)
        assert key not in values, "duplicate line " + line
        values[key] = [int(n) for n in nums]
    return values


def python_values():
    """The same keys, from the generated module."""
    v = {}
    for name in capi.MACROS:
        v[("const", name)] = [getattr(capi, name)]
    for ename, (ctype, cls, members) in capi.ENUMS.items():
        v[("enumsize", ename)] = [ctypes.sizeof(ctype)]
        for m in members:
            v[("enum", m)] = [getattr(capi, m)]
    for tname, t in capi.TYPEDEFS.items():
        v[("typedef", tname)] = [ctypes.sizeof(t), ctypes.alignment(t)]
    for sname, cls in capi.STRUCTS.items():
        v[("struct", sname)] = [ctypes.sizeof(cls), ctypes.alignment(cls)]
        for fname, ftype in cls._fields_:
            v[("field", "%s.%s" % (sname, fname))] = [getattr(cls, fname).offset,
                                                      ctypes.sizeof(ftype)]
    for proto in capi.FUNCTIONS:
        v[("func", proto.name)] = [len(proto.params)]
    return v


def test_every_value_matches(c_values):
    py = python_values()
    assert len(c_values) > 150
    missing_in_py = sorted(set(c_values) - set(py))
    missing_in_c = sorted(set(py) - set(c_values))
    assert not missing_in_py, "printed by C, absent from _capi: %s" % missing_in_py
    assert not missing_in_c, "in _capi, not printed by C: %s" % missing_in_c
    wrong = ["%s %s: C %s, Python %s" % (k[0], k[1], c_values[k], py[k])
             for k in sorted(c_values) if c_values[k] != py[k]]
    assert not wrong, "layout mismatches:\n" + "\n".join(wrong)


def test_enum_classes_hold_the_enumerators(c_values):
    for ename, (ctype, cls, members) in capi.ENUMS.items():
        named = {m.value for m in cls.__members__.values()}
        for m in members:
            if m.endswith("FORCE_32BIT"):
                assert c_values[("enum", m)] == [0x7FFFFFFF]
                continue
            assert c_values[("enum", m)][0] in named, (ename, m)


def test_prototype_argtypes_have_the_c_sizes():
    # Each ctypes argument type has the size of the C parameter type: a
    # pointer for every pointer and handle, 4 bytes for int/unsigned.
    for proto in capi.FUNCTIONS:
        for pname, t in proto.params:
            assert ctypes.sizeof(t) in (4, 8), (proto.name, pname)
