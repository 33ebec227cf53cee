# Copyright 2026 The evx Authors
# SPDX-License-Identifier: Apache-2.0
"""The Python examples of docs/*.md that need only evx, cut out by
scripts/doc_examples.py (the fenced block after a line
``<!-- example: NAME.py -->``) and run as written, each as a script file of
its own in a fresh interpreter, on the host emulation. (The README's run in
the wheel step; those that need PyTorch, CuPy or cuda.core,
``<!-- example-gpu: NAME.py -->``, in scripts/gpu-check.sh docs_examples.)"""

import importlib.util
import os
import subprocess
import sys

import pytest

from conftest import PKGROOT, REPO


def _doc_examples():
    spec = importlib.util.spec_from_file_location(
        "doc_examples", os.path.join(REPO, "scripts", "doc_examples.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def examples():
    return [pytest.param(code, id="%s:%s" % (page, name))
            for name, page, code in _doc_examples().examples("example")
            if name.endswith(".py") and page.startswith("docs/")]


def test_the_docs_have_examples():
    # The pages whose examples ran before this list was generated.
    ids = " ".join(p.id for p in examples())
    for name in ("hostfn_example.py", "trace_example.py", "fences_example.py"):
        assert name in ids


def test_every_block_is_an_example_or_a_fragment():
    r = subprocess.run([sys.executable, os.path.join(REPO, "scripts", "doc_examples.py"),
                        "check"], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.parametrize("code", examples())
def test_example_runs(evx, code, tmp_path):
    script = tmp_path / "example.py"
    script.write_text(code)
    env = dict(os.environ)
    env["PYTHONPATH"] = PKGROOT + os.pathsep + env.get("PYTHONPATH", "")
    env.setdefault("EVX_DRIVER", "host")
    r = subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                       text=True, timeout=120, cwd=str(tmp_path))
    assert r.returncode == 0, r.stdout + r.stderr
