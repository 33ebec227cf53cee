# Copyright 2026 The evx Authors
# SPDX-License-Identifier: Apache-2.0
"""Errors: CudaError with the generated Status, the name and the library's
message; finding the library."""

import os
import pickle

import pytest

from conftest import run_python


def test_elapsed_of_never_recorded_event(evx, dev):
    a, b = dev.create_event(), dev.create_event()
    with pytest.raises(evx.CudaError) as ei:
        b - a
    err = ei.value
    assert err.status is evx.Status.ERROR_INVALID_HANDLE
    assert isinstance(err.status, evx.Status)
    assert err.name == "EVX_ERROR_INVALID_HANDLE"
    assert err.message and "record" in err.message.lower()
    assert str(err).startswith("EVX_ERROR_INVALID_HANDLE (400): ")
    assert isinstance(err, RuntimeError)


def test_timing_disabled_elapsed(evx, dev, stream):
    a = dev.create_event(timing=False)
    b = dev.create_event()
    a.record(stream)
    b.record(stream)
    stream.sync()
    with pytest.raises(evx.CudaError) as ei:
        b - a
    assert ei.value.status == evx.Status.ERROR_INVALID_HANDLE


def test_ipc_needs_timing_off(evx, dev):
    with pytest.raises(evx.CudaError) as ei:
        dev.create_event(ipc=True)
    assert ei.value.status == evx.Status.ERROR_INVALID_VALUE
    assert ei.value.message


def test_message_is_the_library_message_of_this_call(evx, dev):
    # Two different failures in a row: each error carries its own message.
    with pytest.raises(evx.CudaError) as first:
        dev.create_event(ipc=True)
    e = dev.create_event()
    e.close()
    with pytest.raises(evx.CudaError) as second:
        e.sync()
    assert first.value.message != second.value.message
    assert second.value.status == evx.Status.ERROR_INVALID_HANDLE


def test_subtracting_a_non_event(dev):
    e = dev.create_event()
    with pytest.raises(TypeError):
        e - 1.0


def test_cuda_error_pickles(evx, dev):
    with pytest.raises(evx.CudaError) as ei:
        dev.create_event(ipc=True)
    back = pickle.loads(pickle.dumps(ei.value))
    assert back.status == ei.value.status and back.message == ei.value.message


def test_missing_library_lists_every_place_tried():
    r = run_python("import evx", env={"EVX_LIBRARY": "/nonexistent/libevx.so.0"})
    assert r.returncode != 0
    assert "LibraryNotFoundError" in r.stderr
    assert "EVX_LIBRARY=/nonexistent/libevx.so.0" in r.stderr


def test_unset_library_path_tries_package_then_system(tmp_path, evx):
    # A copy of the package without its libraries (an installed wheel holds
    # libevx.so.0 next to the package, which would end the search there).
    import shutil
    shutil.copytree(os.path.dirname(evx.__file__), tmp_path / "pkg" / "evx",
                    ignore=shutil.ignore_patterns("__pycache__", "*.so*"))
    env = {"EVX_LIBRARY": "", "LD_LIBRARY_PATH": str(tmp_path)}
    code = ("import ctypes.util, sys\n"
            "if ctypes.util.find_library('evx'): sys.exit(77)\n"
            "sys.path.insert(0, %r)\n"
            "import evx\n" % str(tmp_path / "pkg"))
    r = run_python(code, env=env)
    if r.returncode == 77:
        pytest.skip("libevx is installed on this system: the search cannot fail")
    assert r.returncode != 0
    for place in ("EVX_LIBRARY: not set", "libevx.so.0: no such file",
                  "find_library('evx')", "dynamic linker"):
        assert place in r.stderr, (place, r.stderr)


def test_library_found_next_to_the_package(tmp_path, evx):
    # A copy of the package with the library beside it loads without
    # EVX_LIBRARY.
    import shutil
    pkg = tmp_path / "evx"
    shutil.copytree(os.path.dirname(evx.__file__), pkg,
                    ignore=shutil.ignore_patterns("__pycache__", "*.so*"))
    shutil.copy(os.path.realpath(evx.library_path), pkg / "libevx.so.0")
    code = ("import sys; sys.path.insert(0, %r); import evx; "
            "print(evx.library_path); print(evx.library_version())" % str(tmp_path))
    r = run_python(code, env={"EVX_LIBRARY": ""})
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[0] == str(pkg / "libevx.so.0")
