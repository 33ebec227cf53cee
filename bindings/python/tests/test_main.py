# Copyright 2026 The evx Authors
# SPDX-License-Identifier: Apache-2.0
"""python -m evx: the report a user runs first when something is wrong."""

import os

import pytest

from conftest import run_python


def test_reports_the_driver_and_every_device(evx):
    r = run_python(None, module="evx")
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith("evx %s (Python package %s)"
                               % (evx.__version__, os.path.dirname(evx.__file__)))
    assert "library: %s (libevx %s)" % (os.path.realpath(evx.library_path),
                                        evx.library_version()) in lines
    assert ("core: %s" % evx.implementation) in r.stdout
    assert "driver: %s" % evx.driver_path() in lines
    v = evx.driver_version()
    assert "  version: %d (CUDA %d.%d)" % (v, v // 1000, v % 1000 // 10) in lines
    kind = [l for l in lines if l.startswith("  kind: ")]
    assert len(kind) == 1
    assert kind[0].startswith("  kind: host emulation" if evx.is_emulation()
                              else "  kind: GPU driver"), kind
    hf = [l for l in lines if l.startswith("  host functions: ")]
    assert len(hf) == 1 and hf[0].startswith(
        "  host functions: cuLaunchHostFunc_v2" if evx.host_func_sync_mode()
        else "  host functions: cuLaunchHostFunc (no sync mode"), hf
    n = evx.device_count()
    assert "devices: %d" % n in lines
    for i in range(n):
        least, greatest = evx.Device(i).stream_priority_range
        row = [l for l in lines if l.startswith("  %d: " % i)]
        assert len(row) == 1, lines
        assert row[0].endswith("; stream priorities %d (least) to %d (greatest)"
                               % (least, greatest)), row
        assert "name unknown" not in row[0], row


def test_a_reader_that_goes_away_gets_no_traceback(evx):
    # `python -m evx | head -3`: the pipe closes before the report is
    # written; the report stops quietly instead of printing a traceback.
    import subprocess
    import sys
    from conftest import HERE, PKGROOT
    e = dict(os.environ)
    e["PYTHONPATH"] = PKGROOT + os.pathsep + e.get("PYTHONPATH", "")
    p = subprocess.Popen([sys.executable, "-m", "evx"], env=e, cwd=HERE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p.stdout.close()                     # before the child has imported evx
    err = p.stderr.read().decode("utf-8", "replace")
    p.stderr.close()
    assert p.wait(60) == 1, err
    assert err == "", err


def test_names_the_emulated_devices_as_the_emulation_does(evx):
    if not evx.is_emulation():
        pytest.skip("checks the host emulation's device name")
    r = run_python(None, module="evx")
    assert r.returncode == 0, r.stderr
    assert "  0: evx host emulation; " in r.stdout


def test_a_driver_that_does_not_open_is_explained(tmp_path):
    bogus = str(tmp_path / "no-such-libcuda.so")
    r = run_python(None, module="evx", env={"EVX_DRIVER": bogus})
    assert r.returncode == 1, r.stdout + r.stderr
    assert "environment: EVX_DRIVER=%s" % bogus in r.stdout
    assert "driver: none opened: EVX_ERROR_NOT_INITIALIZED (3)" in r.stdout
    assert "tried %s (no such file)" % bogus in r.stdout
    assert "devices:" not in r.stdout


def test_a_library_that_is_not_a_driver_is_explained(evx):
    # libevx itself opens, but exports no cuGetProcAddress.
    lib = os.path.realpath(evx.library_path)
    r = run_python(None, module="evx", env={"EVX_DRIVER": lib})
    assert r.returncode == 1, r.stdout + r.stderr
    assert "driver: none opened: EVX_ERROR_NOT_INITIALIZED (3)" in r.stdout
    assert "not a CUDA driver" in r.stdout, r.stdout


def test_report_says_the_sync_mode_path_of_a_cuda_13_2_emulation(evx):
    if not evx.is_emulation():
        pytest.skip("EVX_HOST_DRIVER_VERSION is the host emulation's")
    r = run_python(None, module="evx", env={"EVX_HOST_DRIVER_VERSION": "13020"})
    assert r.returncode == 0, r.stdout + r.stderr
    assert "  version: 13020 (CUDA 13.2)" in r.stdout
    assert "  host functions: cuLaunchHostFunc_v2 (CUDA 13.2 and later)" in r.stdout


def test_trace_command_writes_a_valid_trace(evx, tmp_path):
    import json
    from test_trace import validate_trace
    out = tmp_path / "demo.json"
    import subprocess
    import sys
    from conftest import HERE, PKGROOT
    e = dict(os.environ)
    e["PYTHONPATH"] = PKGROOT + os.pathsep + e.get("PYTHONPATH", "")
    r = subprocess.run([sys.executable, "-m", "evx", "trace", str(out)], env=e,
                       capture_output=True, text=True, timeout=120, cwd=HERE)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.startswith("wrote %s: " % out)
    doc = json.loads(out.read_text())
    validate_trace(doc)
    names = {ev["name"] for ev in doc["traceEvents"] if ev["ph"] != "M"}
    assert {"step 0", "step 1", "forward", "backward", "optimizer",
            "copy", "end"} <= names, names
    assert {"name": "process_name", "ph": "M", "pid": 1, "tid": 0,
            "args": {"name": "evx trace demo"}} in doc["traceEvents"]
    bad = subprocess.run([sys.executable, "-m", "evx", "trace"], env=e,
                         capture_output=True, text=True, timeout=60, cwd=HERE)
    assert bad.returncode == 2 and "usage" in bad.stderr
