/*
 * Copyright 2026 The evx Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/*
 * libevx-insn-marks: callgrind's instrumentation marks as functions, for
 * bench/py_insn_count.py, which calls them through ctypes (Python cannot
 * execute a client request itself). Outside valgrind they do nothing.
 */
#include "callgrind_marks.h"

#ifndef CALLGRIND_DUMP_STATS_AT
#define CALLGRIND_DUMP_STATS_AT(name) ((void)(name))
#endif

void evx_insn_start(void);
void evx_insn_stop(void);
void evx_insn_dump(const char *name);

void evx_insn_start(void) { CALLGRIND_START_INSTRUMENTATION; }
void evx_insn_stop(void) { CALLGRIND_STOP_INSTRUMENTATION; }
void evx_insn_dump(const char *name) { CALLGRIND_DUMP_STATS_AT(name); }
