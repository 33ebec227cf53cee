# Copyright 2026 The evx Authors
# SPDX-License-Identifier: Apache-2.0
"""examples/pipeline end to end on its host backend (shared memory and host
functions; no PyTorch): two spawned processes on devices 0 and 1 hand
buffers over by fences, IPC events and host synchronization; the ordering
test with 4 producer streams and 4 consumer processes, and its negative
control; timeline anchors and evx.trace.merge."""

import json
import multiprocessing
import os
import sys

import pytest

from conftest import REPO

PIPELINE = os.path.join(REPO, "examples", "pipeline")


@pytest.fixture(scope="module")
def pipeline_modules():
    sys.path.insert(0, PIPELINE)
    try:
        import ordering
        import pipeline
        import report
        yield pipeline, ordering, report
    finally:
        sys.path.remove(PIPELINE)


def _devices(evx):
    return (0, 1) if evx.device_count() >= 2 else (0, 0)


def test_anchor_maps_marks_to_the_host_clock(evx, dev, stream):
    import time
    import evx.trace
    tl = dev.create_timeline(8)
    seen = []
    tl.mark(stream, "before", "begin")
    stream.launch_host_func(lambda: seen.append(time.monotonic_ns()))
    tl.mark(stream, "before", "end")
    stream.sync()
    a = tl.anchor(stream)
    assert a.monotonic_before_ns <= a.monotonic_after_ns and a.realtime_ns > 0
    marks = tl.marks()
    assert marks[a.number].kind == "anchor" and marks[a.number].label == "anchor"
    assert tl.anchors() == [a]
    clock = evx.trace.HostClock([dict(a._asdict(), ts=marks[a.number].ms * 1000.0)])
    end_us = clock(marks[1].ms * 1000.0)
    # The end mark runs after the host function: on the host's clock no
    # earlier than it, up to the anchor's uncertainty (and the float ms).
    assert end_us >= seen[0] / 1000.0 - clock.uncertainty_us - 50.0, (end_us, seen)
    from evx._plot import slices
    spans, instants = slices(marks)
    assert (marks[a.number].stream, marks[a.number].ms, "anchor") in instants
    assert all(label != "anchor" for *_, label, _kind in spans)
    with pytest.raises(ValueError, match="anchor"):
        tl.mark(stream, "x", "anchor")
    tl.reset()
    tl.mark(stream)
    assert tl.anchors() == []


def test_merge_puts_traces_on_one_clock(evx):
    import evx.trace

    def trace(name, ts0_us, host_mid_ns):
        return {"traceEvents": [
            {"name": "process_name", "ph": "M", "pid": 1, "tid": 0, "args": {"name": name}},
            {"name": "work", "ph": "X", "ts": ts0_us, "dur": 5.0, "pid": 1, "tid": 1}],
            "evx": {"clock": "CLOCK_MONOTONIC", "anchors": [
                {"index": 0, "ts": 0.0, "monotonic_before_ns": host_mid_ns - 1000,
                 "monotonic_after_ns": host_mid_ns + 1000, "realtime_ns": 1}]}}
    # a: its mark 0 at host 1000 us, work at +10 us; b: mark 0 at 1020 us, work at +0
    merged = evx.trace.merge([trace("a", 10.0, 1000000), trace("b", 0.0, 1020000)])
    work = {e["pid"]: e for e in merged["traceEvents"] if e["name"] == "work"}
    assert work[1]["ts"] == 0.0 and work[2]["ts"] == 10.0
    names = {e["pid"]: e["args"]["name"] for e in merged["traceEvents"]
             if e["name"] == "process_name"}
    assert names == {1: "a", 2: "b"}
    assert merged["evx"]["origin_monotonic_us"] == 1010.0
    assert [p["uncertainty_us"] for p in merged["evx"]["processes"]] == [1.0, 1.0]
    bare = trace("c", 0.0, 0)
    del bare["evx"]
    with pytest.raises(ValueError, match="has no anchors"):
        evx.trace.merge([bare])


def test_host_clock_rate_from_first_and_last_anchor(evx):
    import evx.trace

    def anchor(ts_us, mid_us, half_window_ns):
        mid = int(mid_us * 1000)
        return {"ts": ts_us, "monotonic_before_ns": mid - half_window_ns,
                "monotonic_after_ns": mid + half_window_ns}
    # a device clock 10 ppm fast: 1 s of it is 0.99999 s of the host's
    clock = evx.trace.HostClock([anchor(0.0, 5000.0, 2000), anchor(1e6, 5000.0 + 999990.0, 4000)])
    assert abs(clock.rate - 0.99999) < 1e-12
    assert abs(clock(5e5) - (5000.0 + 499995.0)) < 1e-6
    assert clock.uncertainty_us == 4.0
    # several anchors at each end: the narrowest of each half of the span
    several = evx.trace.HostClock([anchor(0.0, 5000.0, 20000), anchor(10.0, 5010.0, 1000),
                                   anchor(1e6, 1004990.0, 4000),
                                   anchor(1e6 + 10.0, 1004990.0 + 50.0, 8000)])
    assert abs(several.rate - 999980.0 / (1e6 - 10.0)) < 1e-12
    assert several.uncertainty_us == 4.0 and several(10.0) == 5010.0
    # closer than MIN_RATE_SPAN_US: an offset from the narrowest window
    near = evx.trace.HostClock([anchor(0.0, 100.0, 3000), anchor(10.0, 111.0, 1000)])
    assert near.rate == 1.0 and near.uncertainty_us == 1.0 and near(0.0) == 101.0
    with pytest.raises(ValueError, match="no anchors"):
        evx.trace.HostClock([])


def test_two_process_pipeline_every_hand_off(evx, tmp_path, pipeline_modules):
    pipeline, _, report = pipeline_modules
    out = str(tmp_path)
    d = _devices(evx)
    rc = pipeline.main(["--method", "all", "--sizes", "4K,64K", "--buffers", "24",
                        "--slots", "4", "--backend", "host", "--devices", "%d,%d" % d,
                        "--out", out])
    assert rc == 0
    with open(os.path.join(out, "pipeline.json")) as f:
        result = json.load(f)
    runs = result["runs"]
    assert [(r["method"], r["size"]) for r in runs] == [
        (m, s) for s in (4096, 65536) for m in ("fence", "event", "host")]
    for r in runs:
        assert r["errors"] == 0, r
        assert r["buffers_per_s"] > 0
        # a consumer starts a buffer only after its producer's end of it,
        # on the shared clock, up to the anchors' uncertainty
        assert r["handoff_min_us"] >= -r["clock_uncertainty_us"] - 50.0, r
        assert r["producer"]["device"] == d[0] and r["consumer"]["device"] == d[1]
        assert r["producer"]["pid"] != r["consumer"]["pid"]
        with open(os.path.join(out, r["trace"])) as f:
            merged = json.load(f)
        pids = {e["pid"] for e in merged["traceEvents"]}
        assert pids == {1, 2}
        begins = [e for e in merged["traceEvents"] if e["ph"] == "B"]
        assert len(begins) == 2 * 24
    table = open(os.path.join(out, "pipeline.md")).read()
    assert "| evx fences | 4KiB |" in table and table == report.table(result) + "\n"


def test_ordering_many_producers_and_consumers(evx, pipeline_modules):
    _, ordering, _ = pipeline_modules
    ctx = multiprocessing.get_context("spawn")
    res = ordering.run(ctx, "host", _devices(evx), producers=4, consumers=4, items=40)
    assert res["errors"] == 0, res
    # Without the consumers' waits the same check finds buffers read early:
    # the check can fail.
    bad = ordering.run(ctx, "host", _devices(evx), producers=4, consumers=4, items=12,
                       skip_wait=True, fill_delay_s=0.003)
    assert bad["errors"] > 0, bad


def test_report_writes_the_doc_table(tmp_path, pipeline_modules):
    _, _, report = pipeline_modules
    doc = tmp_path / "perf.md"
    doc.write_text("x\n%s\nold\n%s\ny\n" % (report.BEGIN, report.END))
    result = {"backend": "torch", "devices": [0, 1], "device_names": ["A", "B"],
              "buffers": 100, "slots": 4, "command": "python p.py", "runs": [
                  {"method": "fence", "size": 65536, "buffers_per_s": 10.0, "gib_per_s": 0.0,
                   "handoff_median_us": 1.0, "handoff_p99_us": 2.0, "errors": 0,
                   "clock_uncertainty_us": 3.0,
                   "producer": {"cpu_us_per_buffer": 1.0, "cpu_share": 0.5},
                   "consumer": {"cpu_us_per_buffer": 1.0, "cpu_share": 0.5}}]}
    report.write_doc(result, str(doc))
    text = doc.read_text()
    assert "old" not in text and "| evx fences | 64KiB | 10 |" in text
    assert text.startswith("x\n") and text.endswith("y\n")
    with open(os.path.join(REPO, "docs", "performance.md")) as f:
        perf = f.read()
    assert report.BEGIN in perf and report.END in perf


def test_a_failed_stage_fails_the_run_at_once(evx, tmp_path, pipeline_modules):
    """A stage that fails ends the run with its traceback, without waiting
    for the other stage (which waits for it) to time out."""
    import time
    pipeline, _, _ = pipeline_modules
    cfg = {"backend": "host", "method": "fence", "size": 100, "buffers": 8, "slots": 2,
           "producer_device": 0, "consumer_device": _devices(evx)[1],
           "trace_dir": str(tmp_path), "tag": "bad-size"}
    t0 = time.monotonic()
    with pytest.raises(RuntimeError, match="multiple of 8 bytes") as info:
        pipeline.run_pair(multiprocessing.get_context("spawn"), cfg)
    assert "--- producer" in str(info.value)
    assert time.monotonic() - t0 < 60
