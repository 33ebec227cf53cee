# Copyright 2026 The evx Authors
# SPDX-License-Identifier: Apache-2.0
"""Loading the compiled core evx._core and the libevx it linked.

The core links libevx, so the dynamic linker finds the library when the core
is imported: through the core's rpath (``$ORIGIN``, the folder of the core
itself, where a wheel puts libevx; then the install's libdir, or in a build
tree the build's ``src`` folder), ``LD_LIBRARY_PATH`` and the system's
search. ``EVX_LIBRARY`` (the path of a libevx, or of a folder holding
``libevx.so.0``) picks another file: it is opened before the core is
imported, and the dynamic linker then uses that copy for the core too (it
matches the core's ``libevx.so.0`` by soname).

The ctypes layer (``evx.capi``) then opens the very file the core reports
(:func:`evx._core.library_path`, dladdr on a libevx function); the dynamic
linker hands back the copy already loaded, so both layers share one library
and one handle table.

Importing this module loads both: :data:`path` is the library's file and
:data:`capi` its C functions bound through ctypes (argtypes and restype
set), which the package's modules call for what is not hot.

Errors: :class:`LibraryNotFoundError` names every place tried and why each
failed; :class:`CoreNotBuiltError` says how to build the core.
"""

import ctypes
import importlib.machinery
import os
from typing import Any

from . import _capi

__all__ = ["CoreNotBuiltError", "LibraryNotFoundError", "SONAME", "capi", "path"]

SONAME = "libevx.so.0"
_HERE = os.path.dirname(os.path.abspath(__file__))


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


class CoreNotBuiltError(ImportError):
    """The package has no compiled core (evx._core) beside it."""

    def __init__(self):
        super().__init__(
            "evx's compiled core (evx._core) is not in %s: the package needs "
            "it. Build it with meson (meson setup build && meson compile -C "
            "build; it needs Cython and the Python headers), then import evx "
            "from build/bindings/python (PYTHONPATH=build/bindings/python), "
            "or install the package (pip install . from a clone, or meson "
            "install)." % _HERE)


def _core_file():
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        path = os.path.join(_HERE, "_core" + suffix)
        if os.path.exists(path):
            return path
    return None


def _open(path):
    return ctypes.CDLL(path)


def _explicit_library(explicit):
    """Opens EVX_LIBRARY's file; returns its path."""
    path = explicit
    if os.path.isdir(path):
        path = os.path.join(path, SONAME)
    if not os.path.exists(path):
        raise LibraryNotFoundError([("EVX_LIBRARY=%s" % explicit, "no such file")])
    try:
        _open(path)
    except OSError as e:
        raise LibraryNotFoundError([("EVX_LIBRARY=%s" % explicit, str(e))]) from None
    return path


def _core_not_imported(err, explicit, core_file, env):
    """The LibraryNotFoundError of a core that did not import."""
    where = ("EVX_LIBRARY=%s" % explicit) if explicit else "EVX_LIBRARY: not set"
    return LibraryNotFoundError([
        (where, "opened" if explicit else "the core's own search follows"),
        ("%s, through its rpath, LD_LIBRARY_PATH=%s and the system's "
         "search" % (core_file, env.get("LD_LIBRARY_PATH", "")), str(err)),
    ])


def _linked_library(core, explicit, wanted, core_file):
    """Opens, with ctypes, the libevx the imported core linked (which must
    be EVX_LIBRARY's file when it is set); returns ``(the CDLL, its path)``."""
    path = os.path.normpath(core.library_path())
    if wanted is not None and not os.path.samefile(path, wanted):
        raise ImportError(
            "EVX_LIBRARY=%s was opened, but evx._core (%s) linked %s: the "
            "file EVX_LIBRARY names must be a libevx with the soname %s"
            % (explicit, core_file, path, SONAME))
    core.check_library_version()
    return _open(path), path


# In this order, at import: EVX_LIBRARY's file opened (so the dynamic linker
# gives the core that copy), the core imported, the library it linked
# opened with ctypes. Raises LibraryNotFoundError or CoreNotBuiltError.
_explicit = os.environ.get("EVX_LIBRARY")
_wanted = _explicit_library(_explicit) if _explicit else None
_core_path = _core_file()
if _core_path is None:
    raise CoreNotBuiltError()
try:
    from . import _core
except ImportError as _e:
    raise _core_not_imported(_e, _explicit, _core_path, os.environ) from None
_cdll, path = _linked_library(_core, _explicit, _wanted, _core_path)
#: Every C function of the loaded library (argtypes and restype set).
#: (Any: _capi.Functions sets them as attributes of the loaded library.)
capi: Any = _capi.Functions(_cdll)
