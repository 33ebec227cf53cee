#!/usr/bin/env python3
# Copyright 2026 The evx Authors
# SPDX-License-Identifier: Apache-2.0
"""A two-stage pipeline across two processes (and two GPUs where there
are), handing buffers over by evx fences, by IPC events, or by host
synchronization, measured in one run (README.md beside this file).

    python examples/pipeline/pipeline.py --method all --sizes 64K,4M,64M \\
        --buffers 500 --slots 4 --out DIR [--order-test]

Writes DIR/pipeline.json (every figure), DIR/pipeline.md (the table),
DIR/traces/ (each stage's Chrome trace and the two merged on the host's
clock, for https://ui.perfetto.dev). Exits 1 if a consumer saw a buffer it
should not have (a wrong stamp or wrong data) or a stage failed.

On the host emulation (EVX_DRIVER=host, EVX_HOST_DEVICES=2) the buffers are
shared host memory and the work is host functions (``--backend host``); on
a GPU with PyTorch, tensors (``--backend torch``).
"""

import argparse
import json
import os
import platform
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import report  # noqa: E402
import stages  # noqa: E402

METHODS = ("fence", "event", "host")
JOIN_TIMEOUT_S = 600.0


def parse_size(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    t = text.strip().upper().rstrip("IB").rstrip("B")
    if t and t[-1] in units:
        return int(float(t[:-1]) * units[t[-1]])
    return int(t)


def pick_backend(name):
    """host on the emulation or without PyTorch; torch on a GPU."""
    if name != "auto":
        return name
    if os.environ.get("EVX_DRIVER") == "host":
        return "host"
    try:
        import torch
    except ImportError:
        return "host"
    return "torch" if torch.cuda.is_available() else "host"


def device_count(backend):
    if backend == "torch":
        import torch
        return torch.cuda.device_count()
    import evx
    return evx.device_count()


def mp_context(backend):
    """spawn: CUDA cannot be forked. torch's context registers the
    reductions that send CUDA tensors as IPC handles."""
    if backend == "torch":
        import torch.multiprocessing as tmp
        return tmp.get_context("spawn")
    import multiprocessing
    return multiprocessing.get_context("spawn")


def run_pair(ctx, cfg):
    """One run: the two stages, each in a process; their reports."""
    fwd, back, results = ctx.Queue(), ctx.Queue(), ctx.Queue()
    procs = [ctx.Process(target=stages.producer, args=(cfg, fwd, back, results)),
             ctx.Process(target=stages.consumer, args=(cfg, fwd, back, results))]
    reps = {r["role"]: r for r in stages.collect(procs, results, cfg["tag"], JOIN_TIMEOUT_S)}
    return reps["producer"], reps["consumer"]


def run_one(ctx, args, backend, devices, method, size):
    tag = "%s-%s" % (method, report.size_name(size))
    cfg = {"backend": backend, "method": method, "size": size, "buffers": args.buffers,
           "slots": args.slots, "producer_device": devices[0], "consumer_device": devices[1],
           "trace_dir": os.path.join(args.out, "traces"), "tag": tag}
    prod, cons = run_pair(ctx, cfg)
    import evx.trace
    merged = os.path.join(cfg["trace_dir"], tag + ".json")
    evx.trace.merge([prod["trace"], cons["trace"]], out=merged,
                    names=["producer, device %d" % devices[0],
                           "consumer, device %d" % devices[1]])
    row = report.summarize(cfg, prod, cons)
    row["trace"] = os.path.relpath(merged, args.out)
    print(report.row_line(row), flush=True)
    return row


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--method", default="all", help="fence, event, host or all")
    ap.add_argument("--sizes", default="64K,4M,64M", help="buffer sizes, comma-separated")
    ap.add_argument("--buffers", type=int, default=500, help="buffers per run")
    ap.add_argument("--slots", type=int, default=4, help="buffers in the ring (N)")
    ap.add_argument("--backend", default="auto", help="auto, host or torch")
    ap.add_argument("--devices", default="auto",
                    help="producer,consumer device ordinals (auto: 0,1 with two devices)")
    ap.add_argument("--order-test", action="store_true",
                    help="also run the many-producer, many-consumer ordering test")
    ap.add_argument("--out", required=True, help="output folder")
    args = ap.parse_args(argv)
    methods = METHODS if args.method == "all" else tuple(args.method.split(","))
    for m in methods:
        if m not in METHODS:
            ap.error("unknown method %r (fence, event, host or all)" % m)
    if args.buffers < args.slots + 4 or args.slots < 1:
        ap.error("need --slots >= 1 and --buffers >= slots + 4")
    backend = pick_backend(args.backend)
    ndev = device_count(backend)
    if ndev < 1:
        sys.exit("pipeline: no device (backend %s)" % backend)
    devices = ((0, 1 if ndev >= 2 else 0) if args.devices == "auto"
               else tuple(int(d) for d in args.devices.split(",")))
    os.makedirs(os.path.join(args.out, "traces"), exist_ok=True)
    ctx = mp_context(backend)
    sizes = [parse_size(s) for s in args.sizes.split(",")]
    print("pipeline: backend %s, producer on device %d, consumer on device %d, %d buffers, "
          "ring of %d" % (backend, devices[0], devices[1], args.buffers, args.slots), flush=True)
    rows = [run_one(ctx, args, backend, devices, m, s) for s in sizes for m in methods]
    result = {"backend": backend, "devices": list(devices), "device_names": rows[0]["device_names"],
              "host": platform.node(), "buffers": args.buffers, "slots": args.slots,
              "command": " ".join(["python", os.path.relpath(__file__, os.path.dirname(os.path.dirname(HERE)))]
                                + list(argv or sys.argv[1:])),
              "runs": rows}
    if args.order_test:
        import ordering
        result["order_test"] = ordering.run(ctx, backend, devices, args.out)
    with open(os.path.join(args.out, "pipeline.json"), "w") as f:
        json.dump(result, f, indent=1)
    table = report.table(result)
    with open(os.path.join(args.out, "pipeline.md"), "w") as f:
        f.write(table + "\n")
    print(table)
    bad = [r for r in rows if r["errors"]]
    if bad or (args.order_test and result["order_test"]["errors"]):
        sys.exit("pipeline: a consumer read a buffer before its producer's signal (see above)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
