# Copyright 2026 The evx Authors
# SPDX-License-Identifier: Apache-2.0
"""Errors: CudaError with the generated Status, the name and the library's
message; finding the library."""

import ctypes
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


def _library_copy(evx, folder):
    """Copies libevx (and the host emulation, which libevx looks for beside
    itself) into folder; returns the copy's path."""
    import shutil
    real = os.path.realpath(evx.library_path)
    shutil.copy(real, os.path.join(folder, "libevx.so.0"))
    for host in (os.path.join(os.path.dirname(real), "host", "libevx-host.so"),
                 os.path.join(os.path.dirname(real), "libevx-host.so")):
        if os.path.exists(host):
            shutil.copy(host, os.path.join(folder, "libevx-host.so"))
            break
    return os.path.join(folder, "libevx.so.0")


def _package_copy(evx, tmp_path, with_library):
    """A copy of the package under test (its compiled core included) in
    tmp_path/evx, with a copy of its libevx beside the core or not."""
    import shutil
    pkg = tmp_path / "evx"
    shutil.copytree(os.path.dirname(evx.__file__), pkg,
                    ignore=shutil.ignore_patterns("__pycache__", "libevx*"))
    if with_library:
        _library_copy(evx, str(pkg))
    return pkg


def test_core_that_finds_no_library_lists_what_it_tried(evx, tmp_path):
    # A copy of the package away from the build tree, with nothing on the
    # library path: the core's own search fails, and the error says where.
    _package_copy(evx, tmp_path, with_library=False)
    code = ("import ctypes.util, sys\n"
            "if ctypes.util.find_library('evx'): sys.exit(77)\n"
            "import evx\n")
    r = run_python(code, env={"EVX_LIBRARY": "", "LD_LIBRARY_PATH": "",
                              "PYTHONPATH": str(tmp_path)})
    if r.returncode == 77:
        pytest.skip("libevx is installed on this system: the search cannot fail")
    assert r.returncode != 0
    assert "LibraryNotFoundError" in r.stderr
    for place in ("EVX_LIBRARY: not set", "_core", "through its rpath",
                  "libevx.so.0: cannot open shared object file"):
        assert place in r.stderr, (place, r.stderr)


def test_library_found_next_to_the_core(evx, tmp_path):
    # As a wheel lays it out: libevx beside the core ($ORIGIN in its rpath),
    # found with no environment variable.
    pkg = _package_copy(evx, tmp_path, with_library=True)
    code = ("import evx; print(evx.library_path); print(evx._core.library_path()); "
            "d = evx.Device(0); s = d.create_stream(); e = s.record(); e.sync(); "
            "print(evx.library_version())")
    r = run_python(code, env={"EVX_LIBRARY": "", "LD_LIBRARY_PATH": "",
                              "PYTHONPATH": str(tmp_path)})
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == str(pkg / "libevx.so.0") == os.path.normpath(lines[1])
    assert lines[2] == evx.library_version()


def test_evx_library_picks_the_file_for_both_layers(evx, tmp_path):
    # EVX_LIBRARY is opened first; the core's libevx.so.0 is then that copy,
    # and the ctypes layer shares its handles.
    lib = _library_copy(evx, str(tmp_path))
    code = ("import ctypes, evx\n"
            "print(evx.library_path); print(evx._core.library_path())\n"
            "d = evx.Device(0); s = d.create_stream()\n"
            "h = ctypes.c_void_p()\n"
            "assert evx.capi.evx_device_create_event(0, 0, ctypes.byref(h)) == 0\n"
            "e = evx._core.new_event(evx.Event, h, 0)\n"
            "e.record(s); e.sync(); e.close()\n"
            "print('shared')\n")
    r = run_python(code, env={"EVX_LIBRARY": str(lib)})
    assert r.returncode == 0, r.stderr
    a, b, shared = r.stdout.splitlines()
    assert a == str(lib) and os.path.samefile(b, lib) and shared == "shared"


def test_evx_library_of_another_soname_is_refused(evx):
    # A file that cannot stand in for the core's libevx.so.0 (the host
    # emulation) is refused, naming both files, instead of two libraries
    # with two handle tables.
    # The emulation sits in host/ beside libevx in a build tree, and beside it
    # in a wheel or an install.
    here = os.path.dirname(os.path.realpath(evx.library_path))
    host = next((p for p in (os.path.join(here, "host", "libevx-host.so"),
                             os.path.join(here, "libevx-host.so")) if os.path.exists(p)), None)
    if host is None:
        pytest.skip("no host emulation beside %s" % evx.library_path)
    r = run_python("import evx", env={"EVX_LIBRARY": host})
    assert r.returncode != 0
    assert "EVX_LIBRARY=%s was opened, but evx._core" % host in r.stderr
    assert "soname libevx.so.0" in r.stderr


def test_capi_and_core_share_one_library(evx, dev):
    assert os.path.samefile(evx.library_path, evx._core.library_path())
    h = ctypes.c_void_p()
    assert evx.capi.evx_device_create_event(dev.device_id, 0, ctypes.byref(h)) == 0
    e = evx._core.new_event(evx.Event, h, dev.device_id)      # a ctypes-made handle
    s = dev.create_stream()
    e.record(s)
    e.sync()
    flags = ctypes.c_uint()
    assert evx.capi.evx_event_get_flags(e._h, ctypes.byref(flags)) == 0
    e.close()
    s.close()
