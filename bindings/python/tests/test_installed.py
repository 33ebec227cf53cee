# Copyright 2026 The evx Authors
# SPDX-License-Identifier: Apache-2.0
"""The installed wheel (EVX_TEST_INSTALLED=1, scripts/wheel_test.sh): the
package runs on what the wheel holds, next to it, with no EVX_* setting."""

import os

import pytest

from conftest import INSTALLED

pytestmark = pytest.mark.skipif(not INSTALLED, reason="tests an installed wheel "
                                "(EVX_TEST_INSTALLED=1, scripts/wheel_test.sh)")


def test_libevx_is_the_one_next_to_the_package(evx):
    assert "EVX_LIBRARY" not in os.environ
    here = os.path.dirname(evx.__file__)
    assert evx.library_path == os.path.join(here, "libevx.so.0")


def test_the_compiled_core_is_in_use(evx):
    assert evx.implementation == "cython"
    here = os.path.dirname(evx.__file__)
    assert os.path.dirname(evx._core.__file__) == here


def test_the_emulation_is_the_one_in_the_wheel(evx):
    if os.environ.get("EVX_DRIVER") != "host":
        pytest.skip("EVX_DRIVER=host selects the emulation")
    here = os.path.dirname(evx.__file__)
    assert evx.is_emulation()
    assert evx.driver_path() == os.path.join(here, "libevx-host.so")


def test_the_package_carries_its_types(evx):
    here = os.path.dirname(evx.__file__)
    assert os.path.isfile(os.path.join(here, "py.typed"))
    assert os.path.isfile(os.path.join(here, "__init__.pyi"))
