# Copyright 2026 The evx Authors
# SPDX-License-Identifier: Apache-2.0
"""Checks of the Python values that become C integers.

ctypes converts an int to a C width by truncating it (``c_int(10**20)`` is
1661992960, ``c_uint32(-1)`` is 4294967295), so every value a caller gives
that reaches a C integer is checked here first: TypeError for what is not an
int (a bool included), ValueError for an int outside the C type's range.
Each message names the Python operation the caller called and the value
they gave, e.g. ``Device.create_stream: priority 100000000000000000000 is
outside the C int range (-2147483648 to 2147483647)``.
"""

import operator

# (lowest, highest, the C type's name)
C_INT = (-(1 << 31), (1 << 31) - 1, "C int")
UINT32 = (0, (1 << 32) - 1, "uint32_t")
# A device ordinal: a C int that is not negative (the negative values are
# the library's special devices, which the Python API names by None).
ORDINAL = (0, (1 << 31) - 1, "device ordinal")


def integer(value, op, what, limits=C_INT):
    """``value`` as an int within ``limits``; ``op`` is the operation the
    caller called (``"Device.create_stream"``), ``what`` the argument."""
    if isinstance(value, bool):
        raise TypeError("%s: %s must be an int, not bool (%r)" % (op, what, value))
    try:
        v = operator.index(value)
    except TypeError:
        raise TypeError("%s: %s must be an int, not %s" % (
            op, what, type(value).__name__)) from None
    lo, hi, name = limits
    if not lo <= v <= hi:
        raise ValueError("%s: %s %d is outside the %s range (%d to %d)" % (
            op, what, v, name, lo, hi))
    return v


def flag(value, op, what):
    """``value`` as a bool for a yes/no argument (``external=``,
    ``timing=``): True, False, or an int that is 0 or 1. Anything else is
    refused rather than taken for its truth value (``external="no"`` would
    be true)."""
    if value is True or value is False:
        return value
    try:
        v = operator.index(value)
    except TypeError:
        raise TypeError("%s: %s must be a bool, not %s" % (
            op, what, type(value).__name__)) from None
    if v not in (0, 1):
        raise ValueError("%s: %s must be a bool (or 0 or 1), not %d" % (op, what, v))
    return bool(v)


def ordinal(device, op):
    """A device ordinal from an evx.Device (through its ``__index__``) or an
    int (not a bool), for ``op``."""
    if isinstance(device, bool) or not hasattr(type(device), "__index__"):
        raise TypeError("%s: a device must be an evx.Device or an int, not %s"
                        % (op, type(device).__name__))
    return integer(device, op, "device", ORDINAL)


def handle_bytes(handle, op, size, source, what):
    """``handle`` as ``size`` bytes (any buffer), for ``op``: an IPC handle
    that ``source`` (``"Event.ipc_handle"``) gave; ``what`` names it in the
    message (``"an IPC event handle"``). TypeError for a str or what is not
    a buffer, ValueError for another length."""
    if isinstance(handle, str):
        raise TypeError("%s: handle must be the %d bytes of %s, not a str (%r)"
                        % (op, size, source, handle[:80]))
    try:
        data = bytes(memoryview(handle))
    except TypeError:
        raise TypeError("%s: handle must be the %d bytes of %s, not %s"
                        % (op, size, source, type(handle).__name__)) from None
    if len(data) != size:
        shown = repr(handle)
        raise ValueError("%s: handle has %d bytes (%s); %s has %d (%s)"
                         % (op, len(data), shown if len(shown) <= 80 else shown[:77] + "...",
                            what, size, source))
    return data
