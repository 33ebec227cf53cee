/* Copyright 2026 The evx Authors
 * SPDX-License-Identifier: Apache-2.0
 *
 * Callgrind's instrumentation marks, so that a counting program measures
 * only its loop (valgrind --instr-atstart=no); without valgrind's header
 * they are nothing, and the program still builds and runs. */
#ifndef EVX_BENCH_CALLGRIND_MARKS_H
#define EVX_BENCH_CALLGRIND_MARKS_H

#if defined(__has_include)
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#endif
#endif
#ifndef CALLGRIND_START_INSTRUMENTATION
#define CALLGRIND_START_INSTRUMENTATION
#define CALLGRIND_STOP_INSTRUMENTATION
#endif

#endif /* EVX_BENCH_CALLGRIND_MARKS_H */
