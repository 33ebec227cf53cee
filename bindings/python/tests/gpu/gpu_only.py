# Copyright 2026 The evx Authors
# SPDX-License-Identifier: Apache-2.0
"""The gate of the GPU-only test modules in this folder."""

import pytest


def torch_and_evx_on_gpu(purpose, on_emulation):
    """(torch, evx) for a module that needs PyTorch on a GPU and evx on the
    real driver; else the whole module is skipped with the reason:
    ``purpose`` says what the GPU is for ("to capture on"), ``on_emulation``
    why the host emulation will not do."""
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    if not torch.cuda.is_available():
        pytest.skip("torch.cuda.is_available() is False: no GPU %s" % purpose,
                    allow_module_level=True)
    import evx
    if evx.is_emulation():
        pytest.skip("evx opened the host emulation (EVX_DRIVER=host), " + on_emulation,
                    allow_module_level=True)
    return torch, evx


def cupy_or_skip():
    """The cupy module; else the test is skipped."""
    return pytest.importorskip("cupy", reason="CuPy is not installed")


def cuda_core_or_skip():
    """The cuda.core module (or cuda.core.experimental, its name in older
    releases); else the test is skipped."""
    try:
        import cuda.core as cc
        cc.Device  # noqa: B018 (older releases have it only in .experimental)
        return cc
    except (ImportError, AttributeError):
        try:
            import cuda.core.experimental as cc
            return cc
        except ImportError:
            pytest.skip("cuda.core is not installed")
