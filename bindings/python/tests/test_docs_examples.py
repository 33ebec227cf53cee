# Copyright 2026 The evx Authors
# SPDX-License-Identifier: Apache-2.0
"""The Python examples of docs/host-functions.md and docs/trace.md, cut out
as scripts/readme_examples.sh cuts the README's (the fenced block after a
line ``<!-- example: NAME.py -->``) and run as written."""

import os
import re

import pytest

from conftest import REPO, run_python

PAGES = ("host-functions.md", "trace.md")


def examples():
    out = []
    for page in PAGES:
        text = open(os.path.join(REPO, "docs", page), encoding="utf-8").read()
        for m in re.finditer(r"^<!-- example: (\S+\.py) -->\n```python\n(.*?)^```$",
                             text, re.M | re.S):
            out.append(pytest.param(m.group(2), id="%s:%s" % (page, m.group(1))))
    return out


def test_every_page_has_an_example():
    assert len(examples()) == len(PAGES)


@pytest.mark.parametrize("code", examples())
def test_example_runs(evx, code):
    r = run_python(code, env={"EVX_DRIVER": os.environ.get("EVX_DRIVER", "host")})
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.strip(), "the example prints what it found"
