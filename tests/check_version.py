#!/usr/bin/env python3
# Copyright 2026 The evx Authors
# SPDX-License-Identifier: Apache-2.0
"""Checks that every place that states evx's version states the same one.

usage: check_version.py SOURCE_ROOT PROJECT_VERSION LIBEVX EVX_PC

The version is written once, in include/evx/common.h (EVX_VERSION_MAJOR,
_MINOR, _PATCH); meson reads it from there (scripts/version.py), and so do
evx.pc and the wheel (pyproject.toml's version is dynamic: meson's). What is
written elsewhere, or built, must agree with it:
- meson's project version (PROJECT_VERSION) and evx.pc's Version;
- evx_version() and evx_version_string() of the built libevx;
- the generated Python constants (bindings/python/evx/_capi.py), which
  evx.__version__ is made of;
- pyproject.toml takes its version from meson and writes none of its own;
- the Rust crates' versions (evx-sys, evx), evx's requirement on evx-sys if
  it states one, and Cargo.lock.
"""
import ctypes
import pathlib
import re
import subprocess
import sys

root = pathlib.Path(sys.argv[1])
project_version, libevx, evx_pc = sys.argv[2], sys.argv[3], pathlib.Path(sys.argv[4])

header = subprocess.run([sys.executable, str(root / "scripts/version.py"),
                         str(root / "include/evx/common.h")],
                        check=True, capture_output=True, text=True).stdout.strip()
major, minor, patch = (int(p) for p in header.split("."))
problems = []


def agree(where, value):
    if value != header:
        problems.append("%s says %r, include/evx/common.h says %s" % (where, value, header))


agree("meson's project version", project_version)

pc = re.search(r"^Version:\s*(\S+)\s*$", evx_pc.read_text(), re.M)
agree("%s (Version)" % evx_pc, pc.group(1) if pc else None)

lib = ctypes.CDLL(libevx)
lib.evx_version.restype = ctypes.c_uint
lib.evx_version_string.restype = ctypes.c_char_p
agree("evx_version_string() of %s" % libevx, lib.evx_version_string().decode())
number = lib.evx_version()
if number != major * 10000 + minor * 100 + patch:
    problems.append("evx_version() of %s is %d, not %d for %s" % (
        libevx, number, major * 10000 + minor * 100 + patch, header))

capi = (root / "bindings/python/evx/_capi.py").read_text()
parts = [re.search(r"^EVX_VERSION_%s = (\d+)$" % p, capi, re.M) for p in ("MAJOR", "MINOR", "PATCH")]
agree("bindings/python/evx/_capi.py (evx.__version__; run bindings/generate)",
      ".".join(m.group(1) if m else "?" for m in parts))

pyproject = (root / "pyproject.toml").read_text()
project_table = re.search(r"^\[project\]\n(.*?)(?=^\[)", pyproject, re.M | re.S).group(1)
if re.search(r"^version\s*=", project_table, re.M) or \
        not re.search(r"^dynamic\s*=\s*\[[^\]]*\"version\"", project_table, re.M):
    problems.append("pyproject.toml must take its version from meson "
                    "(dynamic = [\"version\"], no version = ...)")

for crate in ("evx-sys", "evx"):
    toml = (root / "bindings/rust" / crate / "Cargo.toml").read_text()
    m = re.search(r"^\[package\]\n(?:.*\n)*?version\s*=\s*\"([^\"]+)\"", toml, re.M)
    agree("bindings/rust/%s/Cargo.toml" % crate, m.group(1) if m else None)
    dep = re.search(r"^evx-sys\s*=\s*\{[^}]*version\s*=\s*\"=?([^\"]+)\"", toml, re.M)
    if crate == "evx" and dep:
        agree("bindings/rust/evx/Cargo.toml's requirement on evx-sys", dep.group(1))
lock = (root / "bindings/rust/Cargo.lock").read_text()
for crate in ("evx-sys", "evx"):
    m = re.search(r"^name = \"%s\"\nversion = \"([^\"]+)\"" % re.escape(crate), lock, re.M)
    agree("bindings/rust/Cargo.lock (%s)" % crate, m.group(1) if m else None)

for p in problems:
    print("version: " + p)
if problems:
    sys.exit(1)
print("version %s: header, meson, evx.pc, libevx, Python and Rust agree" % header)
