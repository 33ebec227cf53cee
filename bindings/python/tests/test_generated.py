# Copyright 2026 The evx Authors
# SPDX-License-Identifier: Apache-2.0
"""Documentation travels from the headers to both bindings, and the
generated tables cover every declaration of the headers. The headers are read
here with plain text matching, independently of libclang."""

import glob
import os
import re

import pytest

from conftest import REPO

import evx._capi as capi

DECL = re.compile(
    r"/\*\*((?:(?!\*/).)*?)\*/\s*EVX_API\s+[^;(]*?\b(evx_\w+)\s*\(", re.S)


def header_briefs():
    briefs = {}
    for path in sorted(glob.glob(os.path.join(REPO, "include", "evx", "*.h"))):
        text = open(path).read()
        for m in DECL.finditer(text):
            comment, name = m.group(1), m.group(2)
            b = re.search(r"@brief\s+(.*?)(?:\n\s*\*\s*\n|\n\s*\*\s*@|$)", comment, re.S)
            assert b, "%s has no @brief" % name
            brief = re.sub(r"\s*\n\s*\*\s*", " ", b.group(1)).strip()
            briefs[name] = brief
    return briefs


def normalize(text):
    text = re.sub(r"::|[@\\]p\s+|[@\\]c\s+", "", text)
    return re.sub(r"\s+", " ", text).strip()


def test_every_header_function_is_generated():
    names = set(header_briefs())
    assert len(names) > 40
    assert names == {p.name for p in capi.FUNCTIONS}


def test_python_prototypes_carry_the_brief(evx):
    for name, brief in header_briefs().items():
        proto = getattr(capi, name)
        assert normalize(brief) in normalize(proto.__doc__), name
        # and the function bound to the loaded library carries it too
        assert normalize(brief) in normalize(getattr(evx.capi, name).__doc__), name


def test_rust_functions_carry_the_doc():
    # bindgen writes the header's comment as #[doc = "..."] attributes
    rs = open(os.path.join(REPO, "bindings/rust/evx-sys/src/bindings.rs")).read()
    for name, brief in header_briefs().items():
        m = re.search(r'((?:\s*#\[doc = "(?:\\.|[^"\\])*"\]\n)+)\s*pub fn %s\(' % name, rs)
        assert m, "no #[doc] attributes above %s in bindings.rs" % name
        docs = " ".join(re.sub(r'\\(["\\])', r"\1", d) for d in
                        re.findall(r'#\[doc = "((?:\\.|[^"\\])*)"\]', m.group(1)))
        assert normalize(brief) in normalize(docs), name


def test_generated_files_have_no_absolute_paths_or_times():
    for rel in ("bindings/python/evx/_capi.py", "bindings/layout/evx_layout.c",
                "bindings/rust/evx-sys/src/bindings.rs",
                "bindings/rust/evx-sys/tests/layout/items.rs"):
        text = open(os.path.join(REPO, rel)).read()
        assert REPO not in text, rel
        assert not re.search(r"\b20\d\d-\d\d-\d\d\b|\d\d:\d\d:\d\d", text), rel
        assert "do not edit" in text.splitlines()[0], rel


def test_status_enum_is_generated_from_the_header(evx):
    text = open(os.path.join(REPO, "include/evx/status.h")).read()
    pairs = re.findall(r"^\s*(EVX_(?:SUCCESS|ERROR_\w+))\s*=\s*(\d+)", text, re.M)
    assert len(pairs) > 80
    for name, value in pairs:
        member = evx.Status[name[len("EVX_"):]]
        assert int(member) == int(value)
        # the library names each code the same way
        assert evx.capi.evx_status_name(int(value)).decode() == name
    assert len(evx.Status) == len(pairs)


def test_unknown_status_is_a_pseudo_member(evx):
    s = evx.Status(12345)
    assert s == 12345 and isinstance(s, evx.Status)
    with pytest.raises(ValueError):
        evx.Status("x")
