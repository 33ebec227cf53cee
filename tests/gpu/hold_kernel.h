/*
 * Copyright 2026 The evx Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/*
 * The stream hold of the notifier's GPU tests and benchmarks
 * (tests/conformance/notify.c, bench/notify_latency.c; bench/py_async_bench.py
 * carries the same text as a Python string): a one-thread kernel,
 * evx_hold(flag, limit), that spins until the u32 at `flag` (mapped host
 * memory) is nonzero, or until `limit` ns have passed on the GPU's global
 * timer, so that a call which waits for the kernel ends and shows the wait
 * instead of hanging. Loaded with cuModuleLoadData (the driver JIT-compiles
 * it: no nvcc at build time).
 */
#ifndef EVX_TESTS_HOLD_KERNEL_H
#define EVX_TESTS_HOLD_KERNEL_H

static const char evx_hold_kernel_ptx[] =
    ".version 7.0\n"
    ".target sm_70\n"
    ".address_size 64\n"
    ".visible .entry evx_hold(.param .u64 flag, .param .u64 limit)\n"
    "{\n"
    "  .reg .pred p, q;\n"
    "  .reg .b32 v;\n"
    "  .reg .b64 a, lim, t0, t, d;\n"
    "  ld.param.u64 a, [flag];\n"
    "  ld.param.u64 lim, [limit];\n"
    "  cvta.to.global.u64 a, a;\n"
    "  mov.u64 t0, %globaltimer;\n"
    "WAIT:\n"
    "  ld.volatile.global.u32 v, [a];\n"
    "  setp.ne.u32 p, v, 0;\n"
    "  @p bra DONE;\n"
    "  mov.u64 t, %globaltimer;\n"
    "  sub.u64 d, t, t0;\n"
    "  setp.lt.u64 q, d, lim;\n"
    "  @q bra WAIT;\n"
    "DONE:\n"
    "  ret;\n"
    "}\n";

#endif
