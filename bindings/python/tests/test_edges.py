# Copyright 2026 The evx Authors
# SPDX-License-Identifier: Apache-2.0
"""Clean edges (issue 12, item 5): every Python value that reaches a C
integer is checked before ctypes could truncate it, with an error that names
the value the caller gave and the Python operation they called; errors name
the Python operation; a closed object says "closed", an event given back to
its pool "released to its pool". Also the external record and wait flags."""

import pytest

BIG = 10 ** 20          # truncated by ctypes to c_int 1661992960 and more


def refused(exc, *words):
    """pytest.raises(exc) whose message must hold every word, in order."""
    import re
    return pytest.raises(exc, match=".*".join(re.escape(w) for w in words))


# --------------------------------------------------------------------------
# C int: stream priority


@pytest.mark.parametrize("bad", [BIG, -BIG, 1 << 31, -(1 << 31) - 1])
def test_create_stream_priority_outside_c_int(dev, bad):
    with refused(ValueError, "Device.create_stream: priority %d is outside the C int "
                 "range (-2147483648 to 2147483647)" % bad):
        dev.create_stream(priority=bad)


@pytest.mark.parametrize("bad", [True, 1.0, "1"])
def test_create_stream_priority_not_an_int(dev, bad):
    with refused(TypeError, "Device.create_stream: priority must be an int"):
        dev.create_stream(priority=bad)


def test_create_stream_priority_in_c_int_reaches_the_library(evx, dev):
    # In the C int range but outside the device's: the library refuses it,
    # with the value the caller gave.
    with pytest.raises(evx.CudaError) as ei:
        dev.create_stream(priority=(1 << 31) - 1)
    assert ei.value.status == evx.Status.ERROR_INVALID_VALUE
    assert ei.value.message.startswith("Device.create_stream: ")
    assert "2147483647" in ei.value.message


# --------------------------------------------------------------------------
# uint32_t: timeline capacity


@pytest.mark.parametrize("bad", [-1, 1 << 32, 1 << 40, BIG])
def test_create_timeline_capacity_outside_uint32(dev, bad):
    with refused(ValueError, "Device.create_timeline: capacity %d is outside the "
                 "uint32_t range (0 to 4294967295)" % bad):
        dev.create_timeline(bad)


@pytest.mark.parametrize("bad", [-1, 1 << 32])
def test_timeline_constructor_capacity_outside_uint32(evx, dev, bad):
    with refused(ValueError, "evx.Timeline: capacity %d is outside" % bad):
        evx.Timeline(dev, bad)


def test_timeline_capacity_not_an_int(dev):
    with refused(TypeError, "Device.create_timeline: capacity must be an int, not float"):
        dev.create_timeline(4.0)
    with refused(TypeError, "Device.create_timeline: capacity must be an int, not bool"):
        dev.create_timeline(True)


# --------------------------------------------------------------------------
# Device ordinals


@pytest.mark.parametrize("bad", [-1, 1 << 31, BIG])
def test_timeline_device_outside_the_ordinals(evx, bad):
    with refused(ValueError, "evx.Timeline: device %d is outside the device ordinal "
                 "range (0 to 2147483647)" % bad):
        evx.Timeline(bad, 4)


@pytest.mark.parametrize("bad", [-1, 1 << 31, BIG])
def test_event_pool_device_outside_the_ordinals(evx, bad):
    with refused(ValueError, "evx.EventPool: device %d is outside the device ordinal "
                 "range" % bad):
        evx.EventPool(bad, 4)


@pytest.mark.parametrize("bad", [-1, 1 << 31, BIG])
def test_stream_wrap_device_outside_the_ordinals(evx, stream, bad):
    # -1 would be EVX_DEVICE_FROM_STREAM to the library: the Python API
    # names that device=None, so -1 is refused, not reinterpreted.
    with refused(ValueError, "Stream.wrap: device %d is outside the device ordinal "
                 "range" % bad):
        evx.Stream.wrap(stream.native, device=bad)


def test_device_of_the_wrong_type(evx, stream):
    with refused(TypeError, "Stream.wrap: a device must be an evx.Device or an int, "
                 "not str"):
        evx.Stream.wrap(stream.native, device="0")
    with refused(TypeError, "evx.Timeline: a device must be an evx.Device or an int, "
                 "not bool"):
        evx.Timeline(True, 4)


def test_device_constructor_names_the_ordinal(evx):
    with pytest.raises(evx.CudaError) as ei:
        evx.Device(BIG)
    assert ei.value.status == evx.Status.ERROR_INVALID_DEVICE
    assert "evx.Device(%d)" % BIG in ei.value.message


def test_stream_wrap_address_outside_a_pointer(evx):
    with refused(ValueError, "Stream.wrap: %d is not a stream address" % (1 << 64)):
        evx.Stream.wrap(1 << 64, device=0)
    with refused(ValueError, "Stream.wrap: -1 is not a stream address"):
        evx.Stream.wrap(-1, device=0)


# --------------------------------------------------------------------------
# uint32_t: event pool capacity and prewarm counts


@pytest.mark.parametrize("bad", [-1, 1 << 32, BIG])
def test_create_event_pool_capacity_outside_uint32(dev, bad):
    with refused(ValueError, "Device.create_event_pool: capacity %d is outside the "
                 "uint32_t range" % bad):
        dev.create_event_pool(bad)


@pytest.mark.parametrize("bad", [-1, 1 << 32, BIG])
def test_event_pool_constructor_prewarm_outside_uint32(evx, dev, bad):
    with refused(ValueError, "evx.EventPool: prewarm %d is outside the uint32_t "
                 "range" % bad):
        evx.EventPool(dev, 4, prewarm=bad)


@pytest.mark.parametrize("bad", [-1, 1 << 32, BIG])
def test_event_pool_prewarm_count_outside_uint32(dev, bad):
    with dev.create_event_pool(4) as pool:
        with refused(ValueError, "EventPool.prewarm: count %d is outside the "
                     "uint32_t range" % bad):
            pool.prewarm(bad)
        assert pool.stats.idle == 0            # nothing was made


# --------------------------------------------------------------------------
# Messages name the Python operation; closed and released objects


def test_wait_for_a_closed_stream_names_stream_wait(evx, dev, stream):
    other = dev.create_stream()
    other.close()
    with pytest.raises(evx.CudaError) as ei:
        stream.wait(other)
    assert ei.value.status == evx.Status.ERROR_INVALID_HANDLE
    assert ei.value.message == "Stream.wait: the stream waited for is closed"


def test_wait_on_a_closed_stream(evx, dev, stream):
    s = dev.create_stream()
    s.close()
    with pytest.raises(evx.CudaError) as ei:
        s.wait(stream)
    assert ei.value.message == "Stream.wait: the stream is closed"


def test_closed_event_says_closed(evx, dev, stream):
    e = dev.create_event()
    e.close()
    for call, op in ((lambda: e.record(stream), "Event.record: the event"),
                     (e.sync, "Event.sync: the event"),
                     (lambda: e.is_done, "Event.is_done: the event"),
                     (lambda: stream.record(e), "Stream.record: the event"),
                     (lambda: stream.wait(e), "Stream.wait: the event waited for"),
                     (lambda: e.flags, "Event.flags: the event"),
                     (lambda: e.native, "Event.native: the event")):
        with pytest.raises(evx.CudaError) as ei:
            call()
        assert ei.value.status == evx.Status.ERROR_INVALID_HANDLE
        assert ei.value.message == op + " is closed"


def test_event_released_to_its_pool_says_so(evx, dev, stream):
    with dev.create_event_pool(2) as pool:
        a, b = pool.acquire(), pool.acquire()
        a.record(stream)
        b.record(stream)
        stream.sync()
        pool.release(a)             # given back by the pool
        b.close()                   # closing a pool's event gives it back too
        for ev in (a, b):
            for call, op in ((lambda: ev.record(stream), "Event.record: the event"),
                             (ev.sync, "Event.sync: the event"),
                             (lambda: stream.wait(ev), "Stream.wait: the event waited for"),
                             (lambda: pool.release(ev), "EventPool.release: the event")):
                with pytest.raises(evx.CudaError) as ei:
                    call()
                assert ei.value.status == evx.Status.ERROR_INVALID_HANDLE
                assert ei.value.message == op + " is released to its pool"


def test_elapsed_with_a_closed_event_names_which(evx, dev, stream):
    a, b = stream.record(), stream.record()
    b.sync()
    a.close()
    with pytest.raises(evx.CudaError) as ei:
        b - a
    assert ei.value.message == "Event.__sub__ (end - start): the start event is closed"
    with pytest.raises(evx.CudaError) as ei:
        b.elapsed_since(a)
    assert ei.value.message == "Event.elapsed_since: the start event is closed"


def test_closed_timeline_and_pool_say_closed(evx, dev, stream):
    tl = dev.create_timeline(4)
    tl.close()
    with pytest.raises(evx.CudaError) as ei:
        tl.mark(stream)
    assert ei.value.message == "Timeline.mark: the timeline is closed"
    pool = dev.create_event_pool(2)
    pool.close()
    with pytest.raises(evx.CudaError) as ei:
        pool.acquire()
    assert ei.value.message == "EventPool.acquire: the pool is closed"


def test_closed_stream_properties_say_closed(evx, dev):
    s = dev.create_stream()
    s.close()
    for prop in ("native", "priority", "flags", "owned"):
        with pytest.raises(evx.CudaError) as ei:
            getattr(s, prop)
        assert ei.value.message == "Stream.%s: the stream is closed" % prop
    with pytest.raises(evx.CudaError) as ei:
        s.launch_host_func(lambda: None)
    assert ei.value.message == "Stream.launch_host_func: the stream is closed"


def test_library_errors_name_the_python_operation(evx, dev, stream):
    # A refusal from the library (an event of another device) starts with
    # the Python operation, then gives the library's own message.
    if evx.device_count() < 2:
        pytest.skip("needs two devices (EVX_HOST_DEVICES=2 on the emulation)")
    other = evx.Device(1).create_event()
    with pytest.raises(evx.CudaError) as ei:
        other.record(stream)
    assert ei.value.status == evx.Status.ERROR_INVALID_HANDLE
    assert ei.value.message.startswith("Event.record: evx_event_record")
    with pytest.raises(evx.CudaError) as ei:
        stream.wait(other)
    assert ei.value.message.startswith("Stream.wait: evx_stream_wait_event")
    other.close()


def test_timeline_mark_needs_an_evx_stream(dev):
    with dev.create_timeline(4) as tl:
        with refused(TypeError, "Timeline.mark() needs an evx.Stream, not int"):
            tl.mark(0)


# --------------------------------------------------------------------------
# External record and wait (the C API's EVX_EVENT_RECORD_EXTERNAL and
# EVX_EVENT_WAIT_EXTERNAL)


def test_record_external_outside_capture_is_refused(evx, dev, stream):
    # The driver records an external event node only inside stream capture;
    # outside it, cuEventRecordWithFlags answers CUDA_ERROR_ILLEGAL_STATE.
    e = dev.create_event()
    with pytest.raises(evx.CudaError) as ei:
        e.record(stream, external=True)
    assert ei.value.status == evx.Status.ERROR_ILLEGAL_STATE
    assert ei.value.message.startswith("Event.record: ")
    e.record(stream, external=False)           # the default record
    e.sync()
    e.close()


def test_wait_external_outside_capture_is_refused(evx, dev, stream):
    e = stream.record()
    with pytest.raises(evx.CudaError) as ei:
        stream.wait(e, external=True)
    assert ei.value.status == evx.Status.ERROR_ILLEGAL_STATE
    assert ei.value.message.startswith("Stream.wait: ")
    stream.wait(e, external=False)
    other = dev.create_stream()
    with pytest.raises(evx.CudaError) as ei:
        other.wait(stream, external=True)      # through the temporary event
    assert ei.value.status == evx.Status.ERROR_ILLEGAL_STATE
    other.wait(stream)
    other.sync()
    other.close()
    e.close()


# --------------------------------------------------------------------------
# Found by tests/fuzz/py_fuzz.py in strict mode (issue 13): every error is a
# CudaError, TypeError or ValueError, and a bad value is named.


@pytest.mark.parametrize("bad", ["no", None, 1.0, [], object()])
def test_external_flag_of_the_wrong_type(dev, stream, bad):
    # Not taken for its truth value: external="no" would be true.
    e = dev.create_event()
    with refused(TypeError, "Event.record: external must be a bool, not %s"
                 % type(bad).__name__):
        e.record(stream, external=bad)
    with refused(TypeError, "Stream.wait: external must be a bool, not %s"
                 % type(bad).__name__):
        stream.wait(e, external=bad)
    e.close()


@pytest.mark.parametrize("bad", [2, -1, BIG])
def test_external_flag_int_other_than_0_or_1(dev, stream, bad):
    e = dev.create_event()
    with refused(ValueError, "Event.record: external must be a bool (or 0 or 1), not %d" % bad):
        e.record(stream, external=bad)
    with refused(ValueError, "Stream.wait: external must be a bool (or 0 or 1), not %d" % bad):
        stream.wait(e, external=bad)
    e.record(stream, external=0)               # 0 and 1 are the bools' values
    stream.wait(e, external=0)
    e.sync()
    e.close()


@pytest.mark.parametrize("arg", ["timing", "blocking_sync", "ipc"])
def test_create_event_flags_are_checked(dev, arg):
    with refused(TypeError, "Device.create_event: %s must be a bool, not str" % arg):
        dev.create_event(**{arg: "yes"})
    with refused(ValueError, "Device.create_event: %s must be a bool (or 0 or 1), not 7" % arg):
        dev.create_event(**{arg: 7})


def test_create_stream_non_blocking_is_checked(dev):
    with refused(TypeError, "Device.create_stream: non_blocking must be a bool, not NoneType"):
        dev.create_stream(non_blocking=None)
    with refused(ValueError, "Device.create_stream: non_blocking must be a bool (or 0 or 1), "
                 "not 2"):
        dev.create_stream(non_blocking=2)
    s = dev.create_stream(non_blocking=1)
    assert s.flags == 1
    s.close()


def test_timed_misuse_is_the_c_timers_illegal_state(evx, stream):
    # evx_timer_elapsed on a timer not stopped and evx_timer_stop on one not
    # started answer EVX_ERROR_ILLEGAL_STATE; evx.timed says the same (a
    # CudaError, still a RuntimeError for code that caught that before).
    t = evx.timed(stream)
    with pytest.raises(evx.CudaError) as ei:
        t.elapsed_ms
    assert ei.value.status == evx.Status.ERROR_ILLEGAL_STATE
    assert ei.value.message.startswith("evx.timed.elapsed_ms: known once the with-block")
    assert isinstance(ei.value, RuntimeError)
    with pytest.raises(evx.CudaError) as ei:
        t.__exit__(None, None, None)
    assert ei.value.status == evx.Status.ERROR_ILLEGAL_STATE
    assert "__exit__ without __enter__" in ei.value.message
    with t:
        with pytest.raises(evx.CudaError) as ei:
            t.elapsed_ms
        assert ei.value.status == evx.Status.ERROR_ILLEGAL_STATE
    assert t.elapsed_ms >= 0.0
    with pytest.raises(evx.CudaError) as ei:
        t.__enter__()
    assert ei.value.status == evx.Status.ERROR_ILLEGAL_STATE
    assert ei.value.message.startswith("evx.timed.__enter__: this evx.timed object was "
                                       "entered already")


def test_open_ipc_event_wrong_length_names_the_value(dev):
    with refused(ValueError, "open_ipc_event: handle has 3 bytes (bytearray(b'abc'))"):
        dev.open_ipc_event(bytearray(b"abc"))
    with refused(ValueError, "handle has 2 bytes (<memory at 0x"):
        dev.open_ipc_event(memoryview(b"ab"))
