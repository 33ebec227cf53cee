/*
 * Copyright 2026 The evx Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/*
 * Helpers shared by the conformance cases: gates (host functions that hold
 * a stream until the test opens them), small host functions, clocks,
 * message checks, and the raw driver API reached the way other CUDA code
 * would reach it (dlopen of evx's driver + cuGetProcAddress_v2).
 */
#ifndef EVX_CONF_UTIL_H
#define EVX_CONF_UTIL_H

#include <cuda.h>
#include <stdint.h>

#include <evx/evx.h>

#include "hostdebug.h"

/* ---- gates ------------------------------------------------------------- */

/* A gate: a host function launched on a stream blocks in it until the test
 * opens the gate. Gates live for the whole run (work that reaches them after
 * a case ends must find them), and the harness opens every gate left closed
 * at the end of the case that made it, failing that case. */
typedef struct conf_gate conf_gate;

conf_gate *gate_new(void);
/* Queues a host function on the stream that blocks until the gate opens. */
evx_status_t gate_launch(evx_stream_t stream, conf_gate *gate);
void gate_open(conf_gate *gate);
/* How many of the gate's host functions have started and finished. */
int gate_entered(conf_gate *gate);
int gate_passed(conf_gate *gate);
/* Opens every gate made since the last call; returns how many were closed. */
int gate_open_all_for_case(void);
/* Opens the gate from another thread after about delay_ms. The thread is
 * joined by gate_join_opener(). */
void gate_open_later(conf_gate *gate, int delay_ms);
void gate_join_opener(conf_gate *gate);

/* ---- host functions ---------------------------------------------------- */

/* Sleeps (intptr_t)user_data milliseconds. */
void host_sleep_ms(void *user_data);
/* Sets the int user_data points to, to 1 (atomically). */
void host_set_flag(void *user_data);
/* A log that host functions append to in the order they run. */
typedef struct conf_log {
    int values[64];
    int count;
} conf_log;
typedef struct conf_log_entry {
    conf_log *log;
    int value;
} conf_log_entry;
/* Appends entry->value to entry->log (user_data is a conf_log_entry *). */
void host_log(void *user_data);
/* Copies *src to *dst, with src = ((int **)user_data)[0] and dst = [1]:
 * lets a host function on one stream observe what another stream did. */
void host_observe(void *user_data);

int flag_get(const int *flag);
void flag_set(int *flag, int value);

/* ---- time -------------------------------------------------------------- */

double now_ms(void);
void sleep_ms(int ms);
/* Polls evx_event_query / evx_stream_query until it is not NOT_READY or
 * timeout_ms has passed; returns the last status. For places where a bug
 * would otherwise hang the suite. */
evx_status_t poll_event(evx_event_t event, int timeout_ms);
evx_status_t poll_stream(evx_stream_t stream, int timeout_ms);
/* Polls until *flag is nonzero; returns 1 if it became so in time. */
int poll_flag(const int *flag, int timeout_ms);

/* ---- messages ---------------------------------------------------------- */

/* Case-insensitive substring search. */
int str_has(const char *haystack, const char *needle);
/* Whether the message names device `device`: "device 1", "device: 1",
 * "device=1", "devices 0 and 1", "device #1" and the like. */
int msg_names_device(const char *msg, int device);
/* Whether the message contains the integer n as a whole number. */
int msg_has_int(const char *msg, long n);

/* ---- handles ----------------------------------------------------------- */

#define AS_EVENT(h) ((evx_event_t)(void *)(h))
#define AS_STREAM(h) ((evx_stream_t)(void *)(h))
#define AS_POOL(h) ((evx_event_pool_t)(void *)(h))
#define AS_TIMER(h) ((evx_timer_t)(void *)(h))
#define AS_TIMELINE(h) ((evx_timeline_t)(void *)(h))
#define FORGE(type, v) ((type)(uintptr_t)(v))
/* A value that is not NULL and not a live handle, put in out-pointers to see
 * that failing calls set them to NULL. */
#define JUNK(type) ((type)(uintptr_t)0x5eed5eed5eed0001ULL)

/* Destroy helpers for cleanup paths: destroy if not NULL, expect success,
 * set to NULL. */
void drop_event(evx_event_t *event);
void drop_stream(evx_stream_t *stream);
void drop_pool(evx_event_pool_t *pool);
void drop_timer(evx_timer_t *timer);
void drop_timeline(evx_timeline_t *timeline);

/* A non-blocking stream of default priority on the device, or NULL (the
 * failure is reported). */
evx_stream_t make_stream(int device);
evx_event_t make_event(int device, unsigned flags);

/* ---- the raw driver ---------------------------------------------------- */

typedef struct conf_cu {
    CUresult (*ctx_get_current)(CUcontext *);
    CUresult (*ctx_set_current)(CUcontext);
    CUresult (*ctx_pop_current)(CUcontext *);
    CUresult (*primary_retain)(CUcontext *, CUdevice);
    CUresult (*primary_release)(CUdevice);
    CUresult (*stream_create_with_priority)(CUstream *, unsigned, int);
    CUresult (*stream_destroy)(CUstream);
    CUresult (*event_destroy)(CUevent);
    CUresult (*stream_query)(CUstream);
    CUresult (*event_query)(CUevent);
    CUresult (*event_elapsed_time)(float *, CUevent, CUevent);
    CUresult (*stream_wait_event)(CUstream, CUevent, unsigned);
    /* Optional (NULL when the driver lacks them). */
    CUresult (*device_get)(CUdevice *, int);
    CUresult (*stream_get_priority)(CUstream, int *);
    CUresult (*stream_get_flags)(CUstream, unsigned *);
    CUresult (*stream_get_device)(CUstream, CUdevice *); /* NULL before CUDA 12.8 */
    CUresult (*ctx_get_stream_priority_range)(int *, int *);
    /* Stream capture and graphs (both drivers have them). */
    CUresult (*stream_begin_capture)(CUstream, CUstreamCaptureMode);
    CUresult (*stream_end_capture)(CUstream, CUgraph *);
    CUresult (*graph_destroy)(CUgraph);
    CUresult (*stream_is_capturing)(CUstream, CUstreamCaptureStatus *);
    CUresult (*graph_instantiate)(CUgraphExec *, CUgraph, unsigned long long);
    CUresult (*graph_launch)(CUgraphExec, CUstream);
    CUresult (*graph_exec_destroy)(CUgraphExec);
    CUresult (*thread_exchange_capture_mode)(CUstreamCaptureMode *);
    CUresult (*stream_get_capture_info)(CUstream, CUstreamCaptureStatus *,
                                        cuuint64_t *, CUgraph *,
                                        const CUgraphNode **,
                                        const CUgraphEdgeData **, size_t *);
    CUresult (*launch_host_func)(CUstream, CUhostFn, void *);
    CUresult (*stream_synchronize)(CUstream);
    CUresult (*event_record_with_flags)(CUevent, CUstream, unsigned);
    CUresult (*event_synchronize)(CUevent);
    CUresult (*ctx_synchronize)(void);
    /* Contexts the caller makes (contexts.c); the CUDA 13 signatures. */
    CUresult (*ctx_create)(CUcontext *, CUctxCreateParams *, unsigned,
                           CUdevice);
    CUresult (*ctx_destroy)(CUcontext);
    CUresult (*ctx_push_current)(CUcontext);
    CUresult (*event_create)(CUevent *, unsigned);
    CUresult (*event_record)(CUevent, CUstream);
    CUresult (*stream_get_ctx)(CUstream, CUcontext *, CUgreenCtx *);
    /* Green contexts: the host emulation has none of these. */
    CUresult (*device_get_dev_resource)(CUdevice, CUdevResource *,
                                        CUdevResourceType);
    CUresult (*dev_sm_resource_split_by_count)(CUdevResource *, unsigned *,
                                               const CUdevResource *,
                                               CUdevResource *, unsigned,
                                               unsigned);
    CUresult (*dev_resource_generate_desc)(CUdevResourceDesc *,
                                           CUdevResource *, unsigned);
    CUresult (*green_ctx_create)(CUgreenCtx *, CUdevResourceDesc, CUdevice,
                                 unsigned);
    CUresult (*green_ctx_destroy)(CUgreenCtx);
    CUresult (*green_ctx_stream_create)(CUstream *, CUgreenCtx, unsigned,
                                        int);
    /* Kernels from PTX and mapped host memory: the host emulation runs no
     * kernels and has none of these. */
    CUresult (*module_load_data)(CUmodule *, const void *);
    CUresult (*module_unload)(CUmodule);
    CUresult (*module_get_function)(CUfunction *, CUmodule, const char *);
    CUresult (*launch_kernel)(CUfunction, unsigned, unsigned, unsigned,
                              unsigned, unsigned, unsigned, unsigned,
                              CUstream, void **, void **);
    CUresult (*mem_host_alloc)(void **, size_t, unsigned);
    CUresult (*mem_host_get_device_pointer)(CUdeviceptr *, void *, unsigned);
    CUresult (*mem_free_host)(void *);
} conf_cu;

/* The raw driver API of the library evx opened, loaded once. Returns NULL
 * (after reporting why as a failure of the running case) if it cannot be
 * loaded. */
const conf_cu *conf_cu_get(void);
/* The driver's CUdevice for an ordinal. */
CUdevice conf_cu_device(int ordinal);
/* Makes / destroys a stream with the raw driver, as other CUDA code would:
 * the device's primary context is made current around the call and the
 * caller's current context restored. Returns 1 on success (failures are
 * reported). */
int raw_stream_create(int device, unsigned flags, int priority,
                      CUstream *stream);
int raw_stream_destroy(int device, CUstream stream);
/* Makes an event with the raw driver (cuEventCreate) in the device's
 * primary context, as raw_stream_create() does. Returns 1 on success
 * (failures are reported). */
int raw_event_create(int device, unsigned flags, CUevent *event);
/* Makes a context on device `dev` with cuCtxCreate (which pushes it) and a
 * non-blocking stream in it, then pops it, so the caller's current context
 * is back; checks that cuStreamGetCtx names the new context. Returns 1 on
 * success (failures are reported). */
int conf_ctx_make(int dev, CUcontext *ctx, CUstream *cs);
/* Destroys the stream (if any) and the context made by conf_ctx_make(),
 * setting both to NULL. */
void conf_ctx_drop(CUcontext *ctx, CUstream *cs);
/* Fails the running case unless the calling thread's current context is
 * `want`; `after` names what was just called. */
void conf_check_ctx(CUcontext want, const char *after, const char *file,
                    int line);

/* Whether the driver has stream capture and graphs; on the host emulation
 * (which models them) a missing call fails the running case, elsewhere it
 * skips it. */
int conf_have_graphs(const conf_cu *cu);
/* Pushes device 0's primary context (retained) for raw graph calls, which
 * need a current context; conf_primary_pop() undoes it. Returns 1 on
 * success. */
int conf_primary_push(const conf_cu *cu);
void conf_primary_pop(const conf_cu *cu);

/* ---- release callbacks of borrows (lifetime.c, borrowed_events.c) ---- */

/* What a release callback (conf_on_release) saw. */
typedef struct conf_release {
    int calls;
    int gate_passed_then; /* gate_passed() of `gate` when it ran, or -1 */
    conf_gate *gate;
    /* destroyed by the callback when not NULL, as an engine frees what
     * evx's borrow ended; the status in destroy_result */
    CUstream stream;
    CUevent event;
    CUresult destroy_result;
} conf_release;

/* The release callback: user_data is a conf_release *. */
void conf_on_release(void *user_data);
int conf_release_calls(conf_release *r);

/* One attempt at a destroy racing a call held inside evx: held(h) (a
 * synchronize of work behind the gate rs->gate) runs on one thread,
 * destroy(h) on another 50 ms later, and the gate opens 100 ms after that.
 * Checks that the destroy succeeded and the release callback ran once; when
 * the held call got in first, also that the release and the destroy's
 * return waited for it. Returns 1 when the held call was inside evx as the
 * destroy began, 0 when the destroy came first (try again), -1 on failure.
 * The gate is opened whatever happens. */
int conf_race_release(void *h, evx_status_t (*held)(void *), evx_status_t (*destroy)(void *),
                      conf_release *rs, int attempt);

/* ---- child processes ----------------------------------------------------- */

/* Runs this executable as `--child mode` in a fresh process, with the
 * environment changed by vars ("NAME=value" strings, NULL-terminated: each
 * replaces a variable of that name). Returns the child's exit status,
 * 128 + the signal if it was killed, or -1 if it could not be run. */
int run_child_env(const char *mode, const char *const *vars);

/* ---- leak accounting (the host emulation only) ------------------------ */

/* After host_live_start(start): trims every device, waits for the counts to
 * come back (up to 2 s) and fails the running case, naming `where` and each
 * count that differs, if they do not. Returns 1 when back. Call it only
 * when host_live_start() returned 1. */
int live_expect_back(const evx_host_live *start, const char *where);

#endif /* EVX_CONF_UTIL_H */
