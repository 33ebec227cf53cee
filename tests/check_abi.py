#!/usr/bin/env python3
# Copyright 2026 The evx Authors
# SPDX-License-Identifier: Apache-2.0
"""Checks the binary interface of the built libraries.

usage: check_abi.py LIBEVX [LIBEVX_HOST]

- libevx has no NEEDED entry naming CUDA: it opens the driver at run time;
- libevx exports only evx_* names;
- the host emulation exports only cu* names, evx_host_emulation_version and
  the test-only evx_host_get_live / _set_fault / _faults_fired / _set_stall /
  _stalled / _release_stalls, and needs no CUDA library either.

Version-node symbols (absolute, value 0, as a linker version script makes
them) are not exports of code or data and are listed but allowed.
"""
import re
import subprocess
import sys


# The emulation's own names besides the driver's: its version, and the
# test-only calls of src/host/evx_host_debug.h.
HOST_EXTRAS = ("evx_host_emulation_version", "evx_host_get_live",
               "evx_host_set_fault", "evx_host_faults_fired", "evx_host_set_stall",
               "evx_host_stalled", "evx_host_release_stalls")


def run(*cmd):
    return subprocess.run(cmd, check=True, capture_output=True,
                          text=True).stdout


def needed(lib):
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]",
                      run("readelf", "-d", "-W", lib))


def exports(lib):
    """(name, type) of every defined dynamic symbol, version nodes apart."""
    names, nodes = [], []
    for line in run("nm", "-D", "--defined-only", lib).splitlines():
        parts = line.split()
        if len(parts) < 3:
            continue
        value, kind, name = parts[0], parts[1], parts[2]
        name = name.split("@")[0]
        if kind == "A" and int(value, 16) == 0:
            nodes.append(name)
        else:
            names.append((name, kind))
    return names, nodes


def check(lib, label, allowed, min_count, failures):
    deps = needed(lib)
    print(f"{label}: {lib}")
    print(f"  NEEDED: {', '.join(deps) or '(none)'}")
    for d in deps:
        if "cuda" in d.lower():
            failures.append(f"{label} needs {d}: it must not link CUDA")
    names, nodes = exports(lib)
    if nodes:
        print(f"  version nodes: {', '.join(sorted(set(nodes)))}")
    bad = sorted(n for n, _ in names if not allowed(n))
    print(f"  exports: {len(names)} symbols, {len(bad)} not allowed")
    for n in bad:
        failures.append(f"{label} exports {n}")
    if len(names) < min_count:
        failures.append(f"{label} exports only {len(names)} symbols, "
                        f"expected at least {min_count}")
    return {n for n, _ in names}


def main(argv):
    if len(argv) < 2:
        print(__doc__)
        return 2
    failures = []
    evx = check(argv[1], "libevx", lambda n: n.startswith("evx_"), 50,
                failures)
    for must in ("evx_version", "evx_device_create_event",
                 "evx_device_create_event_pool", "evx_device_create_timer",
                 "evx_device_create_timeline",
                 "evx_stream_wrap_external", "evx_timeline_intervals"):
        if must not in evx:
            failures.append(f"libevx does not export {must}")
    for extra in HOST_EXTRAS:
        if extra in evx:
            failures.append(f"libevx exports the emulation's {extra}")
    if len(argv) < 3:
        failures.append("the host emulation library was not given (is "
                        "evx_host_lib defined in src/host/meson.build?)")
    else:
        host = check(argv[2], "libevx-host",
                     lambda n: (n.startswith("cu") or
                                n in HOST_EXTRAS), 2,
                     failures)
        for must in ("cuGetProcAddress_v2",) + HOST_EXTRAS:
            if must not in host:
                failures.append(f"libevx-host does not export {must}")
    for f in failures:
        print(f"FAIL: {f}")
    print("check_abi: " + ("FAILED" if failures else "ok"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
