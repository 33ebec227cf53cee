# Copyright 2026 The evx Authors
# SPDX-License-Identifier: Apache-2.0
"""Shared setup of the evx Python tests.

They run against whatever driver evx opens: the host emulation with
EVX_DRIVER=host (as scripts/test.sh runs them), or a GPU.

The package under test is the evx that Python imports: from PYTHONPATH (a
build tree's BUILD/bindings/python, where meson puts the package with its
compiled core, as scripts/test.sh sets it) or installed; when there
is none, the build tree at REPO/build. The source tree's bindings/python/evx
has no compiled core and is not importable by itself.
"""

import importlib.util

import os
import sys
import threading

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
PYROOT = os.path.dirname(HERE)
REPO = os.path.dirname(os.path.dirname(PYROOT))
# EVX_TEST_INSTALLED=1 (scripts/wheel_test.sh): test the evx that is
# installed (a wheel in a fresh venv), never a build tree's package.
INSTALLED = os.environ.get("EVX_TEST_INSTALLED", "") == "1"
if not INSTALLED and importlib.util.find_spec("evx") is None:
    sys.path.insert(0, os.path.join(REPO, "build", "bindings", "python"))
_spec = importlib.util.find_spec("evx")
#: The folder holding the package under test (put on the PYTHONPATH of the
#: interpreters run_python starts).
PKGROOT = (os.path.dirname(os.path.dirname(_spec.origin)) if _spec and _spec.origin
           else os.path.join(REPO, "build", "bindings", "python"))

# The host emulation shows two devices, so that cross-device refusals can be
# tested. Set before the first evx call opens the driver; a GPU ignores it.
os.environ.setdefault("EVX_HOST_DEVICES", "2")


@pytest.fixture(scope="session")
def evx():
    import evx as mod
    if INSTALLED:
        assert not mod.__file__.startswith(PYROOT + os.sep), (
            "EVX_TEST_INSTALLED=1, but evx was imported from the source tree: "
            + mod.__file__)
    return mod


@pytest.fixture
def dev(evx):
    return evx.Device(0)


@pytest.fixture
def stream(dev):
    s = dev.create_stream()
    yield s
    if not s.closed:
        s.sync()
        s.close()


class Gate:
    """Blocks a stream (through a host function) until opened, so that work
    queued behind it is pending for as long as a test needs."""

    def __init__(self, stream):
        self._ev = threading.Event()
        self.entered = threading.Event()

        def hold(ev=self._ev, entered=self.entered):
            entered.set()
            ev.wait(30)
        stream.launch_host_func(hold)

    def open(self):
        self._ev.set()


@pytest.fixture
def gate():
    gates = []

    def make(stream):
        g = Gate(stream)
        gates.append(g)
        return g
    yield make
    for g in gates:       # never leave a driver thread blocked
        g.open()


def run_python(code, env=None, timeout=60, module=None):
    """Runs code (or, with module, ``python -m module``) in a fresh
    interpreter, from the tests' folder, with the package under test
    importable (unless env sets PYTHONPATH itself); returns the
    CompletedProcess."""
    import subprocess
    e = dict(os.environ)
    e["PYTHONPATH"] = PKGROOT + os.pathsep + e.get("PYTHONPATH", "")
    if env:
        e.update(env)
    argv = ["-m", module] if module else ["-c", code]
    return subprocess.run([sys.executable] + argv, env=e, capture_output=True,
                          text=True, timeout=timeout, cwd=HERE)
