# Copyright 2026 The evx Authors
# SPDX-License-Identifier: Apache-2.0
"""Finding and opening libevx.

Looked for, in order:

1. ``EVX_LIBRARY``: the path of the library (or of a folder holding
   ``libevx.so.0``). When it is set, nothing else is tried, so that a wrong
   setting is reported instead of silently loading another copy.
2. Next to this package: ``libevx.so.0`` or ``libevx.so`` in the ``evx``
   folder (a wheel, or a copy made by hand).
3. The system: ``ctypes.util.find_library("evx")``, then ``libevx.so.0``
   through the dynamic linker's own search (``LD_LIBRARY_PATH``, the
   ld.so cache, the default folders).

When none opens, :class:`LibraryNotFoundError` names every place tried and
why each failed.
"""

import ctypes
import ctypes.util
import os

__all__ = ["LibraryNotFoundError", "load_library", "SONAME"]

SONAME = "libevx.so.0"
_LOCAL_NAMES = ("libevx.so.0", "libevx.so")


class LibraryNotFoundError(ImportError):
    """libevx could not be opened; ``tried`` lists (place, reason) pairs."""

    def __init__(self, tried):
        self.tried = list(tried)
        lines = ["cannot open the evx C library (libevx); tried:"]
        lines += ["  - %s: %s" % (place, why) for place, why in self.tried]
        lines.append("Set EVX_LIBRARY to the path of libevx.so.0 (for a build "
                     "tree: BUILD/src/libevx.so.0), or install evx where the "
                     "dynamic linker finds it.")
        super().__init__("\n".join(lines))


def _open(path):
    return ctypes.CDLL(path)


def load_library(environ=None):
    """Opens libevx; returns ``(ctypes.CDLL, the path or name it was opened
    by)``. Raises :class:`LibraryNotFoundError`."""
    env = os.environ if environ is None else environ
    tried = []

    explicit = env.get("EVX_LIBRARY")
    if explicit:
        path = explicit
        if os.path.isdir(path):
            path = os.path.join(path, SONAME)
        if not os.path.exists(path):
            tried.append(("EVX_LIBRARY=%s" % explicit, "no such file"))
        else:
            try:
                return _open(path), path
            except OSError as e:
                tried.append(("EVX_LIBRARY=%s" % explicit, str(e)))
        raise LibraryNotFoundError(tried)
    tried.append(("EVX_LIBRARY", "not set"))

    here = os.path.dirname(os.path.abspath(__file__))
    for name in _LOCAL_NAMES:
        path = os.path.join(here, name)
        if not os.path.exists(path):
            tried.append((path, "no such file"))
            continue
        try:
            return _open(path), path
        except OSError as e:
            tried.append((path, str(e)))

    found = ctypes.util.find_library("evx")
    if found:
        try:
            return _open(found), found
        except OSError as e:
            tried.append(("ctypes.util.find_library('evx') -> %s" % found, str(e)))
    else:
        tried.append(("ctypes.util.find_library('evx')", "found nothing"))

    try:
        return _open(SONAME), SONAME
    except OSError as e:
        tried.append(("%s through the dynamic linker's search path "
                      "(LD_LIBRARY_PATH=%s)" % (SONAME, env.get("LD_LIBRARY_PATH", "")),
                      str(e)))
    raise LibraryNotFoundError(tried)
