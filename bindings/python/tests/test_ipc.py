# Copyright 2026 The evx Authors
# SPDX-License-Identifier: Apache-2.0
"""Interprocess events from Python (evx.ipc): Event.ipc_handle,
Device.open_ipc_event, and events pickled to a multiprocessing child."""

import multiprocessing
import pickle

import pytest


def test_ipc_handle_is_64_bytes(evx, dev):
    a = dev.create_event(timing=False, ipc=True)
    b = dev.create_event(timing=False, ipc=True)
    ha, hb = a.ipc_handle, b.ipc_handle
    assert type(ha) is bytes and len(ha) == evx.ipc.HANDLE_SIZE == 64
    assert ha != hb
    a.close()
    b.close()


def test_ipc_handle_refused_without_ipc(evx, dev):
    for e in (dev.create_event(), dev.create_event(timing=False)):
        with pytest.raises(evx.CudaError) as info:
            e.ipc_handle
        assert info.value.status == evx.Status.ERROR_INVALID_HANDLE
        assert "EVX_EVENT_INTERPROCESS" in info.value.message
        e.close()
    e = dev.create_event(timing=False, ipc=True)
    e.close()
    with pytest.raises(evx.CudaError) as info:
        e.ipc_handle
    assert info.value.status == evx.Status.ERROR_INVALID_HANDLE


def test_open_in_exporting_process_refused(evx, dev):
    e = dev.create_event(timing=False, ipc=True)
    with pytest.raises(evx.CudaError) as info:
        dev.open_ipc_event(e.ipc_handle)
    assert info.value.status == evx.Status.ERROR_INVALID_CONTEXT
    assert "cuIpcOpenEventHandle" in info.value.message
    e.close()


def test_open_bad_values(evx, dev):
    with pytest.raises(TypeError, match="not a str"):
        dev.open_ipc_event("x" * 64)
    with pytest.raises(TypeError, match="not NoneType"):
        dev.open_ipc_event(None)
    with pytest.raises(TypeError, match="not int"):
        dev.open_ipc_event(64)
    with pytest.raises(ValueError, match="has 63 bytes"):
        dev.open_ipc_event(bytes(63))
    with pytest.raises(ValueError, match=r"open_ipc_event: handle has 65 bytes"):
        dev.open_ipc_event(bytearray(65))


def test_pickle_refused_without_ipc(evx, dev):
    e = dev.create_event()
    with pytest.raises(TypeError, match="only an interprocess event"):
        pickle.dumps(e)
    e.close()
    with pytest.raises(TypeError, match="closed"):
        pickle.dumps(e)


def test_pickle_holds_the_handle(evx, dev):
    e = dev.create_event(timing=False, ipc=True)
    data = pickle.dumps(e)
    assert e.ipc_handle in data
    # unpickled here, in the exporting process: the driver refuses to open it
    with pytest.raises(evx.CudaError) as info:
        pickle.loads(data)
    assert info.value.status == evx.Status.ERROR_INVALID_CONTEXT
    e.close()


# --- a spawned child waits for the parent's event ---------------------------


def _child(event, word, reports):
    """Runs in a spawned process: ``event`` was unpickled (opened) on the way
    in. Waits for it on a stream, then reads the word the parent wrote before
    its record; then records the event itself behind a slow writer."""
    import time

    import evx
    try:
        s = evx.Device(event.device).create_stream()
        reports.put(("opened", event.is_done, int(event.flags)))
        seen = []
        s.wait(event)
        s.launch_host_func(lambda: seen.append(word.value))
        s.sync()
        reports.put(("seen", seen[0]))
        try:
            event - event
            reports.put(("elapsed", "no error"))
        except evx.CudaError as e:
            reports.put(("elapsed", e.name))

        def slow_write():
            time.sleep(0.2)
            word.value = 2
        s.launch_host_func(slow_write)
        event.record(s)
        reports.put(("recorded",))
        s.sync()
        event.close()
        s.close()
        reports.put(("done",))
    except Exception as e:  # reported, so the parent fails with it
        reports.put(("error", repr(e)))


def test_spawned_child_waits(evx, dev, stream, gate):
    ctx = multiprocessing.get_context("spawn")
    word = ctx.Value("i", 0)
    reports = ctx.Queue()
    event = dev.create_event(timing=False, ipc=True)
    g = gate(stream)
    stream.launch_host_func(lambda: setattr(word, "value", 1))
    event.record(stream)
    child = ctx.Process(target=_child, args=(event, word, reports))
    child.start()
    try:
        msg = reports.get(timeout=60)
        assert msg[0] == "opened", msg
        assert msg[1] is False  # the parent's record is held by the gate
        assert msg[2] == int(evx.EventFlags.DISABLE_TIMING | evx.EventFlags.INTERPROCESS)
        # the child's synchronize does not return while the gate is closed
        with pytest.raises(Exception):
            reports.get(timeout=0.3)
        assert word.value == 0
        g.open()
        msg = reports.get(timeout=60)
        assert msg == ("seen", 1), msg
        assert reports.get(timeout=60) == ("elapsed", "EVX_ERROR_INVALID_HANDLE")
        msg = reports.get(timeout=60)
        assert msg == ("recorded",), msg
        event.sync()          # waits for the child's record
        assert word.value == 2
        assert reports.get(timeout=60) == ("done",)
    finally:
        g.open()
        child.join(60)
    assert child.exitcode == 0
    stream.sync()
    event.close()
