# Copyright 2026 The evx Authors
# SPDX-License-Identifier: Apache-2.0
"""Timeline labels, marks(), to_trace() (validated against the trace event
format's required fields) and plot()."""

import json
import os
import time

import pytest


def _sleep(ms):
    return lambda: time.sleep(ms / 1000.0)


def _workload(evx, dev):
    a, b = dev.create_stream(), dev.create_stream()
    tl = dev.create_timeline(32)
    with tl.range("step", a):
        with tl.range("forward", a):
            a.launch_host_func(_sleep(3))
        tl.mark(a, "loss")
        a.launch_host_func(_sleep(1))
        with tl.range("backward", a):
            a.launch_host_func(_sleep(2))
    a.sync()
    tl.mark(b, "copy")
    b.launch_host_func(_sleep(1))
    tl.mark(b)
    return tl, a, b


def validate_trace(doc):
    """The trace event format's required fields: each event has name, ph,
    ts, pid and tid; X events a non-negative dur; B and E match per
    (pid, tid) in stack order; M (metadata) events name a process or
    thread."""
    assert isinstance(doc["traceEvents"], list) and doc["traceEvents"]
    stacks = {}
    for ev in doc["traceEvents"]:
        for key in ("name", "ph", "pid", "tid"):
            assert key in ev, (key, ev)
        assert isinstance(ev["pid"], int) and isinstance(ev["tid"], int)
        if ev["ph"] == "M":
            assert ev["name"] in ("process_name", "thread_name")
            assert isinstance(ev["args"]["name"], str)
            continue
        assert isinstance(ev["ts"], (int, float)), ev
        if ev["ph"] == "X":
            assert isinstance(ev["dur"], (int, float)) and ev["dur"] >= 0, ev
        elif ev["ph"] == "B":
            stacks.setdefault((ev["pid"], ev["tid"]), []).append(ev)
        elif ev["ph"] == "E":
            stack = stacks.get((ev["pid"], ev["tid"]))
            assert stack, "E without B: %r" % ev
            b = stack.pop()
            assert b["name"] == ev["name"] and ev["ts"] >= b["ts"], (b, ev)
        else:
            assert ev["ph"] == "i" and ev.get("s") in ("t", "p", "g"), ev
    assert all(not s for s in stacks.values()), "B without E"


def test_trace_is_valid_and_names_marks(evx, dev, tmp_path):
    tl, a, b = _workload(evx, dev)
    path = tmp_path / "t.json"
    assert tl.to_trace(str(path), title="test run") == str(path)
    doc = json.loads(path.read_text())
    validate_trace(doc)
    events = [e for e in doc["traceEvents"] if e["ph"] != "M"]
    names = {(e["ph"], e["name"]) for e in events}
    assert {("B", "step"), ("B", "forward"), ("B", "backward"), ("X", "loss"),
            ("X", "copy"), ("i", "interval 8")} <= names, names
    tids = {e["tid"] for e in events}
    assert len(tids) == 2, "one track per stream"
    meta = [e for e in doc["traceEvents"] if e["ph"] == "M"]
    assert {"name": "process_name", "ph": "M", "pid": 1, "tid": 0,
            "args": {"name": "test run"}} in meta
    # forward holds a 3 ms host function: its slice is at least that long.
    ts = {(e["ph"], e["name"]): e["ts"] for e in events}
    assert ts[("E", "forward")] - ts[("B", "forward")] >= 2500
    assert ts[("B", "step")] == 0
    a.close()
    b.close()


def test_marks_match_the_intervals(evx, dev):
    tl, a, b = _workload(evx, dev)
    marks = tl.marks()
    assert [m.number for m in marks] == list(range(len(tl)))
    assert [m.kind for m in marks[:3]] == ["begin", "begin", "end"]
    assert marks[3].label == "loss" and marks[-1].label == ""
    assert {m.stream for m in marks} == {a.handle, b.handle}
    iv = tl.intervals()
    for i, d in enumerate(iv):
        assert marks[i + 1].ms - marks[i].ms == pytest.approx(d, abs=0.01)
    a.close()
    b.close()


def test_same_bytes_as_the_c_call(evx, dev, tmp_path):
    tl, a, b = _workload(evx, dev)
    p1, p2 = tmp_path / "py.json", tmp_path / "c.json"
    tl.to_trace(str(p1))
    h = evx._errors.live(tl, "test", "the timeline")
    assert evx.capi.evx_timeline_write_trace(h, os.fsencode(str(p2)), None) == 0
    assert p1.read_bytes() == p2.read_bytes()
    a.close()
    b.close()


def test_bad_marks_and_ranges(evx, dev, stream, tmp_path):
    tl = dev.create_timeline(8)
    with pytest.raises(ValueError):
        tl.mark(stream, "x" * 64)
    with pytest.raises(ValueError):
        tl.mark(stream, "ok", kind="middle")
    with pytest.raises(TypeError):
        tl.mark(stream, 5)
    assert len(tl) == 0
    with pytest.raises(evx.CudaError) as ei:
        tl.to_trace(str(tmp_path / "empty.json"))
    assert ei.value.status == evx.Status.ERROR_INVALID_VALUE
    tl.mark(stream, "open", "begin")
    with pytest.raises(evx.CudaError) as ei:
        tl.to_trace(str(tmp_path / "open.json"))
    assert "open" in ei.value.message
    with pytest.raises(evx.CudaError) as ei:
        tl.to_trace(str(tmp_path / "no-such-dir" / "t.json"))
    assert ei.value.status in (evx.Status.ERROR_INVALID_VALUE,
                               evx.Status.ERROR_OPERATING_SYSTEM)


def test_plot_renders_a_png(evx, dev, tmp_path):
    pytest.importorskip("matplotlib", reason="Timeline.plot() needs matplotlib, "
                        "which is not installed here")
    tl, a, b = _workload(evx, dev)
    out = tmp_path / "t.png"
    ax = tl.plot(str(out), title="evx demo")
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(ax.get_yticklabels()) == 2
    a.close()
    b.close()


def test_plot_without_matplotlib_says_so(evx, dev, stream, monkeypatch):
    import sys
    # None in sys.modules: any import of it raises ImportError.
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    tl = dev.create_timeline(4)
    tl.mark(stream)
    with pytest.raises(ImportError, match="needs matplotlib"):
        tl.plot()
