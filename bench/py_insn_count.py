"""The hot methods of the Python package, each COUNT times after 200
warm-up calls, for counting under callgrind the instructions its compiled
core (evx._core) executes per call: scripts/insn_budget.py runs it under
valgrind --tool=callgrind --instr-atstart=no and reads one dump per method.
Run alone it only makes the calls (the marks do nothing outside valgrind).

    python3 bench/py_insn_count.py COUNT MARKS_LIBRARY

MARKS_LIBRARY is BUILD/bench/libevx-insn-marks.so (bench/insn_marks.c).
As in bench/insn_count.c, instrumentation covers only batches of at most
1,000 calls; between them the stream is synchronized with it off.
"""
import ctypes
import sys

import evx


def methods(dev, s):
    done = dev.create_event(timing=False)
    a, b = dev.create_event(), dev.create_event()
    rec = dev.create_event(timing=False)
    for ev in (done, a, b):
        ev.record(s)
    s.sync()

    def pair():
        dev.create_event().close()

    return [
        ("py_event_record", lambda: rec.record(s)),
        ("py_event_is_done", lambda: done.is_done),
        ("py_event_sync", done.sync),
        ("py_elapsed", lambda: b - a),
        ("py_stream_wait", lambda: s.wait(done)),
        ("py_create_close_pair", pair),
    ]


def main():
    count, marks = int(sys.argv[1]), ctypes.CDLL(sys.argv[2])
    marks.evx_insn_dump.argtypes = [ctypes.c_char_p]
    dev = evx.Device(0)
    s = dev.create_stream()
    for name, call in methods(dev, s):
        for _ in range(200):
            call()
        s.sync()
        done_calls = 0
        while done_calls < count:
            batch = min(1000, count - done_calls)
            rng = range(batch)
            marks.evx_insn_start()
            for _ in rng:
                call()
            marks.evx_insn_stop()
            s.sync()
            done_calls += batch
        marks.evx_insn_dump(name.encode())
    s.close()


if __name__ == "__main__":
    main()
