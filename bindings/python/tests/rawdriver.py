# Copyright 2026 The evx Authors
# SPDX-License-Identifier: Apache-2.0
"""The driver's own calls that evx does not wrap (capture, graphs, primary
contexts, host functions, events made outside evx), opened with ctypes from
the driver evx opened (``evx.driver_path()``: the host emulation or
libcuda), as a framework would call them. Shared by the graph tests
(test_graphs.py), the borrowed-event tests (test_borrowed_events.py) and
bench/py_graph_bench.py's driver backend, which puts this folder on its path.
"""

import ctypes

#: ``CUhostFn``: ``void (*)(void *user_data)``.
HOSTFN = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
#: ``CUstreamCaptureMode`` values.
CAPTURE_GLOBAL = 0
CAPTURE_THREAD_LOCAL = 1
CAPTURE_RELAXED = 2
#: ``CU_STREAM_CAPTURE_STATUS_ACTIVE``.
CAPTURE_ACTIVE = 1
#: ``CU_STREAM_NON_BLOCKING``.
NON_BLOCKING = 1

_P = ctypes.c_void_p
_ARGTYPES = {
    "cuCtxGetCurrent": None,
    "cuCtxSetCurrent": [_P],
    "cuDevicePrimaryCtxRetain": None,
    "cuDevicePrimaryCtxRelease_v2": None,
    "cuStreamBeginCapture_v2": [_P, ctypes.c_int],
    "cuStreamEndCapture": [_P, _P],
    "cuGraphInstantiateWithFlags": [_P, _P, ctypes.c_ulonglong],
    "cuGraphLaunch": [_P, _P],
    "cuGraphExecDestroy": [_P],
    "cuGraphDestroy": [_P],
    "cuLaunchHostFunc": [_P, HOSTFN, _P],
    "cuStreamCreate": [_P, ctypes.c_uint],
    "cuStreamDestroy_v2": [_P],
    "cuStreamIsCapturing": [_P, _P],
    "cuStreamSynchronize": [_P],
    "cuEventCreate": [_P, ctypes.c_uint],
    "cuEventDestroy_v2": [_P],
    "cuEventRecord": [_P, _P],
    "cuEventQuery": [_P],
}


def open_driver(evx):
    """The ``ctypes.CDLL`` of the driver evx opened, with the calls above
    returning ``CUresult`` (an int) and their pointer arguments typed."""
    cu = ctypes.CDLL(evx.driver_path())
    for name, argtypes in _ARGTYPES.items():
        fn = getattr(cu, name)
        fn.restype = ctypes.c_int
        if argtypes is not None:
            fn.argtypes = argtypes
    return cu
