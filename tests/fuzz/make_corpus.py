#!/usr/bin/env python3
# Copyright 2026 The evx Authors
# SPDX-License-Identifier: Apache-2.0
"""Writes the seed corpus of evx-fuzz-api (tests/fuzz/corpus/): twenty
hand-written programs in the harness's input format, one per area of the
API, so that a run starts from inputs that reach deep states (recorded
events, pending host functions, pools handed out, timers stopped) instead of
finding them byte by byte. Run it again after changing the format of
fuzz_api.c, and commit the result:

    tests/fuzz/make_corpus.py tests/fuzz/corpus

The opcodes and argument bytes follow LLVMFuzzerTestOneInput and the op_*
functions of fuzz_api.c. A handle selector byte below 0xa0 picks a table
slot (selector % table size); 0xa0 NULL, 0xb0 + i the i-th dead handle
(0xb8 + i the value its slot's key took when it was destroyed),
0xc0 a live handle of another kind, 0xd0 + 8 bytes a random value, 0xe0 + 1
byte a bit flipped, 0xf0 + 1 byte a generation shifted.
"""
import os
import sys

# opcodes (LLVMFuzzerTestOneInput's switch)
EV_CREATE, EV_DESTROY, EV_RECORD, EV_RECORD_FLAGS, EV_QUERY, EV_ELAPSED, EV_GET = range(7)
ST_CREATE, ST_WRAP, ST_DESTROY, ST_WAIT, ST_QUERY, ST_HOSTFN, ST_GET = range(7, 14)
POOL_CREATE, POOL_DESTROY, POOL_PREWARM, POOL_ACQUIRE, POOL_RELEASE, POOL_STATS = range(14, 20)
TIMER, TIMELINE, DEVICE, MISC = 20, 21, 22, 23
NOTIFIER, IPC, WRAP_RELEASE, CAPTURE = 24, 25, 26, 27
CAPTURE_BEGIN_END, GRAPH = 28, 29

DEV0, DEV1, DEV_BAD = 0, 6, 11   # pick_device bytes
NULL_SEL, OTHER_KIND = 0xa0, 0xc0


def dead(i):
    return 0xb0 + i


def flags(v):          # pick_flags: a valid combination
    return v << 2


def ev_create(dev=DEV0, f=0, slot=0, null=0):
    return [EV_CREATE, dev, flags(f), slot, 7 if null else 0]


def st_create(dev=DEV0, f=1, prio=0, slot=0, null=0):
    return [ST_CREATE, dev, flags(f), prio, slot, 7 if null else 0]


def st_wrap(kind, dev=DEV0, slot=0, arg=None):
    """kind: 0 NULL, 1 legacy, 2 per-thread, 3 a table stream's CUstream
    (arg: its slot), 6 a small forged value (arg), 7 a random one (arg:
    8 bytes); 0x80 | kind reads the device from the stream."""
    out = [ST_WRAP, kind] + ([] if kind & 0x80 else [dev])
    if (kind & 7) in (3, 6):
        out.append(arg)
    elif (kind & 7) == 7:
        out += list(arg)
    return out + [slot, 0]


def wrap_release(kind, dev=DEV0, slot=0, arg=None, null_release=0):
    """st_wrap, with a release callback (NULL when null_release)."""
    return [WRAP_RELEASE] + st_wrap(kind, dev, slot, arg)[1:] + [7 if null_release else 0]


def notifier_create(sz=0, f=0, max_streams=2, slot=0, null_opts=0, null=0):
    """sz: 0 the struct as compiled, 192 + n n bytes, 224 + n n bytes more;
    f: a flags byte (pick_flags); max_streams: a byte (below 200: % 9)."""
    return [NOTIFIER, 0, sz, f, max_streams, slot, 7 if null_opts else 0, 7 if null else 0]


def watch(nt=0, ev=0, token=1):
    return [NOTIFIER, 3, nt, ev, 0] + list(token.to_bytes(8, "little"))


def watch_callback(nt=0, ev=0, destroy_own=False, null_fn=False):
    return [NOTIFIER, 4, nt, ev, 7 if null_fn else (8 if destroy_own else 0)]


def notifier_read(nt=0, cap=4, null_tokens=False, null=0):
    return [NOTIFIER, 5, nt, 3 if null_tokens else cap << 2, 7 if null else 0]


def ipc_export(ev=0, slot=0, null=0):
    return [IPC, 0, ev, slot, 7 if null else 0]


def ipc_open(slot=0, how=0, extra=(), dev=DEV0, null_handle=0, null=0):
    """how: below 128 the handle as exported, 128 + bit with a bit flipped
    (extra: the byte's index), 192 random bytes, 193 the emulation's magic
    first (extra: 64 bytes)."""
    return [IPC, 1, slot, how] + list(extra) + [dev, 15 if null_handle else 0, 7 if null else 0]


def record(ev=0, st=0):
    return [EV_RECORD, ev, st, 0]


def query(ev=0, sync=0):
    return [EV_QUERY, ev, sync]


def elapsed(a=0, b=1, null=0):
    return [EV_ELAPSED, a, b, 7 if null else 0]


def hostfn(st=0):
    return [ST_HOSTFN, st, 0, 0]


def hostfn_status(st=0, fails=True):
    """evx_stream_launch_host_func_status, options as compiled, named;
    odd user data fails."""
    return [ST_HOSTFN, st, 0, 11, 0, 1 if fails else 2]


def capture_begin(st=0, mode=2):
    """op_capture_begin_end: a capture of table stream st in mode 0 global,
    1 thread-local, 2 relaxed."""
    return [CAPTURE_BEGIN_END, mode << 1, st]


def capture_end(i=0):
    return [CAPTURE_BEGIN_END, 1 | (i << 1)]


def graph(op, g=0, x=0, st=None):
    """op_graph: op 0 instantiate graph g into exec x, 1 launch exec x on
    table stream st, 2 destroy graph g, 3 destroy exec x."""
    return [GRAPH, op | (g << 2) | (x << 4)] + ([] if st is None else [st])


def probe_dead(i=0):
    return [MISC, 0, i]


def churn(n, dev=DEV0, f=0, st=0, all_live=False):
    """n events made, recorded on table stream st and destroyed (one by one,
    or all made before any is destroyed)."""
    return [MISC, 2, (n - 1) | (0x80 if all_live else 0), dev, flags(f), st]


def fence(dev=DEV0, fb=0, initial=5, ops=()):
    """op_fence: a fence made (fb & 1: EVX_FENCE_INTERPROCESS), up to 8
    steps (each op byte and its arguments, as op_fence reads them), then
    destroyed (twice)."""
    return [MISC, 4, dev, fb, initial, max(len(ops), 1) - 1] + [b for op in ops for b in op]


def status(which, value):
    return [MISC, 1, which] + list(value.to_bytes(4, "little", signed=True))


SEEDS = {
    # create, record, query, synchronize, time, destroy twice, probe the dead
    "event-lifecycle": st_create() + ev_create(slot=0) + ev_create(slot=1) +
        query(0) + record(0) + hostfn() + record(1) + query(1) + query(1, 1) +
        elapsed(0, 1) + elapsed(1, 0) + [EV_DESTROY, 0] + [EV_DESTROY, 0] +
        [EV_DESTROY, dead(0)] + probe_dead(0) + [EV_GET, 1, 0, 0, EV_GET, 1, 1, 0,
                                                EV_GET, 1, 2, 0],
    # every event flag, valid and not, and NULL out-pointers
    "event-flags": ev_create(f=1) + ev_create(f=2, slot=1) + ev_create(f=6, slot=2) +
        ev_create(f=4, slot=3) + [EV_CREATE, DEV0, 0x03, 0x40, 0x00, 0x00, 4, 0] +
        [EV_CREATE, DEV0, 0x07, 0x05, 0] + ev_create(null=1) + ev_create(dev=DEV_BAD) +
        [EV_RECORD_FLAGS, 0, 0, flags(1), EV_RECORD_FLAGS, 0, 0, 0x07, 0x08, 0, 0, 0],
    # default streams of both devices, borrowed, and a borrowed owned stream
    "stream-wrap": st_create(slot=0) + st_wrap(0, DEV0, 1) + st_wrap(1, DEV1, 2) +
        st_wrap(2, DEV0, 3) + st_wrap(0x81, slot=1) + st_wrap(3, DEV0, 2, 0) +
        st_wrap(0x83, slot=3, arg=0) + st_wrap(3, DEV1, 3, 0) + st_wrap(6, DEV0, 1, 5) +
        st_wrap(7, DEV0, 1, b"\x05\x10\x00\x00\x00\x00\x00\x00") +
        [ST_GET, 3, 4, 0, ST_GET, 2, 3, 0, ST_GET, 1, 2, 0] + [ST_DESTROY, 0] +
        [ST_QUERY, 2, 0, ST_QUERY, 2, 1],
    # priorities in and out of range, flags, getters
    "stream-priority": st_create(prio=5) + st_create(prio=4, slot=1) + st_create(prio=200 + 1) +
        st_create(prio=250) + [0x00, 0x00, 0x00, 0x80] + st_create(f=1, prio=7, slot=2) +
        [ST_GET, 0, 0, 0, ST_GET, 1, 1, 0, ST_GET, 0, 0, 7] +
        [ST_CREATE, DEV0, 0x03, 0x02, 0, 0, 0],
    # host functions queued, then the stream destroyed with work pending
    "stream-hostfn-destroy": st_create() + hostfn() + hostfn() + ev_create() + record() +
        hostfn() + [ST_DESTROY, 0] + query(0) + [ST_HOSTFN, NULL_SEL, 0, 0] +
        st_create() + [ST_HOSTFN, 0, 7, 0],
    # waits, also across devices and with bad flags
    "stream-wait": st_create(slot=0) + st_create(dev=DEV1, slot=1) + ev_create(slot=0) +
        ev_create(dev=DEV1, slot=1) + record(0, 0) + record(1, 1) +
        [ST_WAIT, 0, 0, 0, ST_WAIT, 1, 0, 0, ST_WAIT, 0, 1, 0, ST_WAIT, 0, 0, 0x07, 2, 0, 0, 0] +
        record(1, 0) + record(0, 1),
    # a pool: create, prewarm, acquire to exhaustion, release, stats, destroy
    "pool": [POOL_CREATE, 0, DEV0, 0, 3, 1, 0, 0, 0] + [POOL_PREWARM, 0, 2] +
        [POOL_ACQUIRE, 0, 0, 0, POOL_ACQUIRE, 0, 1, 0, POOL_ACQUIRE, 0, 2, 0,
         POOL_ACQUIRE, 0, 3, 0] + st_create() + record(0) + [POOL_RELEASE, 0, 0] +
        [POOL_STATS, 0, 0, 0] + [POOL_ACQUIRE, 0, 4, 0] + query(4) +
        [POOL_RELEASE, 0, 1] + [POOL_DESTROY, 0] + query(2),
    # pool options: sizes, flags, capacities, a release to the wrong pool
    "pool-options": [POOL_CREATE, 0xc0, DEV0, 0, 2, 0, 0, 0, 0] +
        [POOL_CREATE, 0xe8, DEV0, 0, 2, 0, 0, 0, 0] +
        [POOL_CREATE, 0, DEV0, flags(4), 2, 0, 0, 0, 0] +
        [POOL_CREATE, 0, DEV1, flags(2), 245, 0, 1, 0, 0] +
        [POOL_CREATE, 0, DEV0, 0, 0, 0, 0, 0, 0] + [POOL_CREATE, 0, DEV0, 0, 2, 3, 0, 0, 0] +
        [POOL_CREATE, 0, DEV0, 0, 2, 0, 0, 0x0f, 0] +
        [POOL_CREATE, 0, DEV0, 0, 4, 0, 0, 0, 0] + [POOL_ACQUIRE, 1, 0, 0] +
        [POOL_RELEASE, 0, 0] + [POOL_PREWARM, 0, 250, 0xff, 0xff, 0xff, 0xff] +
        [POOL_STATS, 1, 0xc5, 0, POOL_STATS, 1, 0xe3, 0],
    # a timer: start, stop, elapsed, synchronize, on both devices
    "timer": st_create() + [TIMER, 0, DEV0, 0, 0] + [TIMER, 2, 0, 0] + hostfn() +
        [TIMER, 3, 0, 0] + [TIMER, 4, 0, 0, TIMER, 5, 0, 0, TIMER, 3, 0, 0] +
        [TIMER, 0, DEV1, 1, 0] + [TIMER, 2, 1, 0] + [TIMER, 1, 0, TIMER, 1, 0] +
        [TIMER, 4, 1, 7],
    # a timeline: marks up to its capacity, intervals, reset, sync
    "timeline": st_create() + [TIMELINE, 0, DEV0, 3, 0, 0] +
        [TIMELINE, 2, 0, 0, 0] * 4 + [TIMELINE, 3, 0, 0] +
        [TIMELINE, 4, 0, 8 * 4, 0, TIMELINE, 4, 0, 3, 0, TIMELINE, 4, 0, 1, 5, 0, 0, 0, 0] +
        [TIMELINE, 5, 0, TIMELINE, 6, 0, TIMELINE, 4, 0, 0, 0] +
        [TIMELINE, 0, DEV0, 1, 1, 0] + [TIMELINE, 1, 0, TIMELINE, 1, 0],
    # driver and device calls, statuses and the last error
    "device-status": [DEVICE, 0, 0, DEVICE, 0, 7, DEVICE, 1, DEV0, 3, DEVICE, 1, DEV1, 0,
                      DEVICE, 1, DEV_BAD, 1, DEVICE, 2, DEV1, DEVICE, 2, 13, DEVICE, 3, 0,
                      DEVICE, 4, 7, DEVICE, 5, 0, DEVICE, 6, DEVICE, 7] +
        status(0, 400) + status(0, -1) + status(1, 600) + status(1, 0x7fffffff) +
        status(2, 0) + status(3, 0),
    # events reusing driver events with a former life (recorded, maybe
    # pending): never-recorded until recorded again, a new driver event for
    # get_native and waits, and the same through a pool
    "event-reuse": st_create() + hostfn() + churn(70) + ev_create(slot=0) + query(0) +
        [EV_GET, 0, 2, 0] + ev_create(slot=1) + [ST_WAIT, 0, 1, 0] + ev_create(slot=2) +
        record(2) + elapsed(0, 2) + churn(90, f=2, all_live=True) + ev_create(f=2, slot=3) + query(3, 1) +
        [POOL_CREATE, 0, DEV0, 0, 2, 2, 0, 0, 0] + [POOL_ACQUIRE, 0, 4, 0] + record(4) +
        [POOL_RELEASE, 0, 4] + [ST_QUERY, 0, 1] + [POOL_ACQUIRE, 0, 4, 0] + [EV_GET, 4, 2, 0] +
        [POOL_STATS, 0, 0, 0],
    # forged handles: NULL, random, bits flipped, generations shifted, wrong kinds
    "forged-handles": ev_create() + st_create() + [EV_DESTROY, 0xd0, 1, 0, 0, 0, 1, 0, 0, 0] +
        query(0xe0 | 0, 0) + [4] + [EV_QUERY, 0xe0, 36, 0] + [EV_QUERY, 0xf0, 2, 0] +
        [EV_QUERY, 0xf0, 0xfe, 0] + [EV_QUERY, OTHER_KIND, 0] + [ST_QUERY, OTHER_KIND, 0] +
        [EV_RECORD, 0xf0, 0, 0, 0] + [ST_DESTROY, 0xe0, 0] + [EV_DESTROY, 0] +
        [EV_QUERY, 0xf0, 2, 0] + probe_dead(0) + [ST_DESTROY, 0] + probe_dead(1),
    # the values destroyed handles' slots keep (0xb8 + i): a stream's and an
    # event's, asked of every call that reads the object
    "dead-key": st_create(slot=0) + st_create(slot=1) + ev_create(slot=0) +
        [ST_DESTROY, 0] + [EV_DESTROY, 0] +
        [ST_GET, 0xb8, 0, 0] + [ST_GET, 0xb8, 3, 0] + [ST_QUERY, 0xb8, 0] +
        query(0xb9, 0) + query(0xb9, 1) + [EV_RECORD, 0xb9, 1, 0] +
        [EV_DESTROY, 0xb9] + [ST_DESTROY, 0xb8] + probe_dead(0) + probe_dead(1),
    # notifiers: token and callback watches (one callback tries to destroy
    # its notifier), counts, reads, the fd, a destroy with watches pending
    "notifier": st_create() + ev_create(slot=0) + ev_create(dev=DEV1, slot=1) +
        notifier_create() + hostfn() + record(0) + watch(0, 0, 7) + watch(0, 1, 8) +
        watch_callback(0, 0) + watch_callback(0, 0, destroy_own=True) +
        [NOTIFIER, 6, 0, 3] + [ST_QUERY, 0, 1] + [NOTIFIER, 6, 0, 3] + notifier_read(0, 1) +
        notifier_read(0, 8) + notifier_read(0, 0) + notifier_read(0, null_tokens=True) +
        [NOTIFIER, 2, 0, 0] + notifier_create(slot=1) + hostfn() + record(0) +
        watch(1, 0, 9) + watch_callback(1, 0) + [NOTIFIER, 1, 1] + probe_dead(0),
    # notifier options: sizes, flags, stream caps, NULL options and out-pointer
    "notifier-options": notifier_create(sz=200) + notifier_create(f=0x13) +
        notifier_create(max_streams=235) + notifier_create(max_streams=250) +
        [0xff, 0xff, 0xff, 0x7f] + notifier_create(sz=230, max_streams=229) +
        notifier_create(null_opts=1, slot=1) + notifier_create(null=1) +
        notifier_create(max_streams=0),
    # IPC: export with and without EVX_EVENT_INTERPROCESS, open in the
    # exporting process, with a bit flipped, forged, after the event died
    "ipc": ev_create(f=6, slot=0) + ev_create(slot=1) + ipc_export(0, 0) + ipc_export(1, 1) +
        ipc_export(0, 2, null=1) + ipc_open(0) + ipc_open(0, dev=DEV1) + ipc_open(0, 130, [20]) +
        ipc_open(0, 193, list(range(64))) + ipc_open(0, 192, [0x41] * 64) +
        ipc_open(0, dev=DEV_BAD) + ipc_open(0, null_handle=1) + ipc_open(1) +
        [EV_DESTROY, 0] + ipc_open(0) + probe_dead(0),
    # fences: queued signals and waits on table streams, host signals (one
    # refused while a queued signal is pending, one far above the limit),
    # queries, a notifier watch, an export and its refused open
    "fence": st_create(slot=0) + st_create(slot=1) +
        fence(ops=[[1, 2, 0], [2, 0, 1], [0, 3], [3, 1], [5, 0], [4, 0, 0], [6, 0, 0],
                   [0x80] + [0xff] * 8]) +
        fence(fb=1, initial=0, ops=[[4, 0, 0], [1, 1, 1], [2, 1, 0], [0, 4], [5, 0]]) +
        fence(dev=DEV_BAD) + fence(fb=2, initial=0, ops=[[0, 1]]),
    # borrows with a release callback (also NULL), capture status
    # a capture (relaxed): a host function that can fail, a record, timer
    # marks; instantiated and launched three times on another stream, each
    # launch's failure reported by the waits after it; then a global-mode
    # capture that a query invalidates
    "capture-graph": st_create(slot=0) + st_create(slot=1) + ev_create(slot=0) +
        [TIMER, 0, DEV0, 0, 0] + capture_begin(0, 2) + hostfn_status(0) + record(0, 0) +
        [TIMER, 2, 0, 0] + hostfn_status(0, fails=False) + [TIMER, 3, 0, 0] + [CAPTURE, 0, 0] +
        capture_end(0) + graph(0) + (graph(1, st=1) + [ST_QUERY, 1, 1]) * 3 +
        [TIMER, 5, 0, 0] + capture_begin(1, 0) + hostfn_status(1) + [ST_QUERY, 1, 0] +
        capture_end(0) + graph(3) + graph(2),
    "wrap-release": st_create() + wrap_release(3, DEV0, 1, 0) + wrap_release(1, DEV1, 2) +
        wrap_release(2, DEV0, 3, null_release=1) + wrap_release(0x83, slot=3, arg=1) +
        wrap_release(7, DEV0, 2, b"\x05\x10\x00\x00\x00\x00\x00\x00") +
        [CAPTURE, 1, 0, CAPTURE, 2, 0, CAPTURE, 0, 7, CAPTURE, NULL_SEL, 0] +
        [ST_DESTROY, 1] + probe_dead(0) + [ST_DESTROY, 0] + [CAPTURE, 3, 0],
}


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "corpus")
    os.makedirs(out, exist_ok=True)
    for name, prog in SEEDS.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(bytes(b & 0xff for b in prog))
    print("wrote %d seeds to %s" % (len(SEEDS), out))


if __name__ == "__main__":
    main()
