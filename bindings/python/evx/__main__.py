# Copyright 2026 The evx Authors
# SPDX-License-Identifier: Apache-2.0
"""``python -m evx``: what evx found on this machine.

Prints evx's version, the package and the C library it loaded, the core the
hot paths run on, the driver evx opened (path, version, GPU driver or host
emulation) and each device with its name and stream priority range. When no
driver opened, it prints what evx tried and why each failed (the library's
own message) and exits with status 1. Run it first when something is wrong.

When libevx itself cannot be found, ``import evx`` fails before this module
runs; Python then prints the loader's list of places tried
(:class:`evx.LibraryNotFoundError`).
"""

import ctypes
import os
import sys
import time

import evx

#: The environment variables that change what evx opens.
ENVIRONMENT = ("EVX_DRIVER", "EVX_HOST_DEVICES", "EVX_LIBRARY",
               "EVX_PYTHON_RELEASE_GIL")


def _version_text(v):
    """cuDriverGetVersion's number as "13000 (CUDA 13.0)"."""
    return "%d (CUDA %d.%d)" % (v, v // 1000, (v % 1000) // 10)


def device_name(driver_path, ordinal):
    """The device's name as the opened driver gives it (cuDeviceGetName:
    evx's C API has no name call), or ``None, why``."""
    try:
        # dlopen of a library already loaded returns that same copy: this is
        # the driver libevx opened, already initialized by it.
        drv = ctypes.CDLL(driver_path)
        get, get_name = drv.cuDeviceGet, drv.cuDeviceGetName
    except (OSError, AttributeError) as e:
        return None, str(e)
    dev = ctypes.c_int()
    r = get(ctypes.byref(dev), ctypes.c_int(ordinal))
    if r != 0:
        return None, "cuDeviceGet(%d) returned %d" % (ordinal, r)
    buf = ctypes.create_string_buffer(256)
    r = get_name(buf, ctypes.c_int(len(buf)), dev)
    if r != 0:
        return None, "cuDeviceGetName returned %d" % r
    return buf.value.decode("utf-8", "replace"), None


def report(out=None):
    """Writes the report to ``out`` (stdout); returns the exit status: 0
    when a driver opened, 1 when none did."""
    out = sys.stdout if out is None else out

    def say(*parts):
        print(*parts, file=out)

    say("evx %s (Python package %s)" % (evx.__version__,
                                        os.path.dirname(evx.__file__)))
    say("library: %s (libevx %s)" % (os.path.realpath(evx.library_path)
                                     if os.path.sep in evx.library_path
                                     else evx.library_path,
                                     evx.library_version()))
    say("core: %s (%s)" % (evx.implementation, evx._core.__file__))
    env = [(k, os.environ[k]) for k in ENVIRONMENT if k in os.environ]
    say("environment: %s" % (", ".join("%s=%s" % kv for kv in env) or
                             "no EVX_* variable set"))

    try:
        path = evx.driver_path()
        version = evx.driver_version()
        emulation = evx.is_emulation()
        count = evx.device_count()
    except evx.CudaError as e:
        say("driver: none opened: %s (%d)" % (e.name, int(e.status)))
        say("  %s" % e.message)
        if not os.environ.get("EVX_DRIVER"):
            say("  (no GPU driver here? EVX_DRIVER=host selects evx's host "
                "emulation, which runs on the CPU)")
        return 1

    say("driver: %s" % path)
    say("  version: %s" % _version_text(version))
    say("  kind: %s" % ("host emulation (evx's emulation of the driver on "
                        "the CPU, not a GPU)" if emulation else "GPU driver"))
    say("  host functions: %s" % (
        "cuLaunchHostFunc_v2 (CUDA 13.2 and later), with its sync mode"
        if evx.host_func_sync_mode() else
        "cuLaunchHostFunc (no sync mode before CUDA 13.2; the same error semantics)"))
    say("devices: %d" % count)
    for i in range(count):
        name, why = device_name(path, i)
        least, greatest = evx.Device(i).stream_priority_range
        say("  %d: %s; stream priorities %d (least) to %d (greatest)"
            % (i, name if name is not None else "name unknown (%s)" % why,
               least, greatest))
    return 0


def trace_demo(path, out=None):
    """``python -m evx trace OUT.json``: records a short demo workload (a
    training-like step of ranges and marks on two streams of device 0, the
    work being host functions that sleep, so that it runs on the emulation
    too) and writes its Chrome trace to ``path``; returns the timeline."""
    out = sys.stdout if out is None else out
    dev = evx.Device(0)
    compute, copy = dev.create_stream(), dev.create_stream()
    tl = dev.create_timeline(64)

    def work(ms):
        return lambda: time.sleep(ms / 1000.0)
    for step in range(2):
        with tl.range("step %d" % step, compute):
            with tl.range("forward", compute):
                compute.launch_host_func(work(4), name="forward")
            with tl.range("backward", compute):
                compute.launch_host_func(work(6), name="backward")
            tl.mark(compute, "optimizer")
            compute.launch_host_func(work(2), name="optimizer")
        done = compute.record()
        copy.wait(done)
        with tl.range("copy", copy):
            copy.launch_host_func(work(3), name="copy")
    tl.mark(compute, "end")
    copy.sync()
    tl.to_trace(path, title="evx trace demo")
    print("wrote %s: %d marks on 2 streams of device 0 (%s); open it in "
          "https://ui.perfetto.dev or chrome://tracing"
          % (path, len(tl), "host emulation" if evx.is_emulation() else "GPU"),
          file=out)
    compute.close()
    copy.close()
    return tl


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["trace"]:
        if len(argv) != 2:
            print("usage: python -m evx trace OUT.json", file=sys.stderr)
            return 2
        try:
            trace_demo(argv[1])
        except evx.CudaError as e:
            print("python -m evx trace: %s" % e, file=sys.stderr)
            return 1
        return 0
    if argv:
        print("usage: python -m evx [trace OUT.json]", file=sys.stderr)
        return 2
    try:
        status = report()
        sys.stdout.flush()
    except BrokenPipeError:
        # The reader went away (``python -m evx | head -3``): stop quietly,
        # with stdout pointed at /dev/null so that the interpreter's own
        # flush at exit does not fail again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
    return status


if __name__ == "__main__":
    sys.exit(main())
