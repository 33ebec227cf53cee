// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//
// The emulated driver calls, as internal functions. entry.cpp gives them the
// driver's exported names; the results follow the real driver as
// tests/gpu/probe_semantics.out.txt shows it.
#ifndef EVX_HOST_API_HPP
#define EVX_HOST_API_HPP

#include <cuda.h>

#include <atomic>
#include <cstddef>
#include <cstring>

namespace evxh {

constexpr int kDriverVersion = 13000;  // what cuDriverGetVersion reports by default
// The version the emulation reports and serves entry points up to:
// EVX_HOST_DRIVER_VERSION, 13000 (the default) or 13020 (CUDA 13.2, which
// adds cuLaunchHostFunc_v2); -1 for any other value, which cuInit refuses.
int driver_version();

// names.cpp
CUresult get_error_name(CUresult error, const char **str);
CUresult get_error_string(CUresult error, const char **str);
bool error_from_name(const char *name, CUresult *out);  // "CUDA_ERROR_OUT_OF_MEMORY"

// entry.cpp: whether cuGetProcAddress knows the base name.
bool known_entry(const char *name);

// debug.cpp: injected faults (see evx_host_debug.h). fault_check() returns
// CUDA_SUCCESS, or the status an armed fault gives this call of `entry`.
extern std::atomic<int> g_faults_armed;
CUresult fault_hit(const char *entry);
inline CUresult fault_check(const char *entry) {
    if (__builtin_expect(g_faults_armed.load(std::memory_order_relaxed) == 0, 1)) return CUDA_SUCCESS;
    return fault_hit(entry);
}
bool fault_env_ok();  // EVX_HOST_FAULT was well formed (or unset)

// memops.cpp: while a cuMemFreeHost or cuMemHostUnregister waits for queued
// work, every other entry point of the process waits at its start until it
// returns, as on the driver (which holds a lock there; a cuCtxSynchronize
// holds none). host_free_gate() is that wait.
extern std::atomic<int> g_host_frees;
void host_free_gate_wait();
inline void host_free_gate() {
    if (__builtin_expect(g_host_frees.load(std::memory_order_acquire) != 0, 0)) host_free_gate_wait();
}

// context.cpp
CUresult init(unsigned flags);
CUresult driver_get_version(int *version);
CUresult device_get_count(int *count);
CUresult device_get(CUdevice *device, int ordinal);
CUresult device_get_name(char *name, int len, CUdevice dev);
CUresult device_get_attribute(int *value, CUdevice_attribute attr, CUdevice dev);
CUresult primary_ctx_retain(CUcontext *pctx, CUdevice dev);
CUresult primary_ctx_release(CUdevice dev);
CUresult ctx_get_current(CUcontext *pctx);
CUresult ctx_set_current(CUcontext ctx);
CUresult ctx_push_current(CUcontext ctx);
CUresult ctx_pop_current(CUcontext *pctx);
CUresult ctx_get_device(CUdevice *device, CUcontext ctx);  // ctx NULL: current
CUresult ctx_get_stream_priority_range(int *least, int *greatest);
CUresult ctx_synchronize(CUcontext ctx);                   // ctx NULL: current
// cuCtxCreate (all three signatures: params, or affinity params, or neither)
CUresult ctx_create(CUcontext *pctx, const CUctxCreateParams *params, unsigned flags, CUdevice dev);
CUresult ctx_create_v3(CUcontext *pctx, const CUexecAffinityParam *params, int nparams,
                       unsigned flags, CUdevice dev);
CUresult ctx_destroy(CUcontext ctx);

// stream.cpp (ptsz: a NULL stream means the per-thread stream)
CUresult stream_create(CUstream *ph, unsigned flags, int priority);
CUresult stream_destroy(CUstream h);
CUresult stream_wait_event(CUstream h, CUevent e, unsigned flags, bool ptsz);
CUresult stream_query(CUstream h, bool ptsz);
CUresult stream_synchronize(CUstream h, bool ptsz);
CUresult launch_host_func(CUstream h, CUhostFn fn, void *data, bool ptsz);
// cuLaunchHostFunc_v2: sync_mode is CUhostTaskSyncMode (0 blocking, 1
// spin-wait); the emulation's worker runs the function the same either way.
CUresult launch_host_func_v2(CUstream h, CUhostFn fn, void *data, unsigned sync_mode, bool ptsz);
CUresult stream_get_priority(CUstream h, int *priority, bool ptsz);
CUresult stream_get_flags(CUstream h, unsigned *flags, bool ptsz);
CUresult stream_get_device(CUstream h, CUdevice *device, bool ptsz);
CUresult stream_get_ctx(CUstream h, CUcontext *pctx, CUgreenCtx *pgreen, bool ptsz);
CUresult stream_get_id(CUstream h, unsigned long long *id, bool ptsz);

// capture.cpp
// mode: the caller's bits (capture_mode_bits()), which may name no mode.
CUresult stream_begin_capture(CUstream h, unsigned mode, bool ptsz);
// The bits of a CUstreamCaptureMode argument, copied rather than loaded as
// the enum: a caller may pass a value the enum does not name.
inline unsigned capture_mode_bits(const CUstreamCaptureMode *m) {
    unsigned v = 0;
    static_assert(sizeof v == sizeof *m, "CUstreamCaptureMode is not an unsigned's size");
    std::memcpy(&v, m, sizeof v);
    return v;
}
CUresult stream_end_capture(CUstream h, CUgraph *out, bool ptsz);
CUresult stream_is_capturing(CUstream h, CUstreamCaptureStatus *status, bool ptsz);
CUresult stream_get_capture_info(CUstream h, CUstreamCaptureStatus *status, cuuint64_t *id, CUgraph *graph,
                                 const CUgraphNode **deps, const CUgraphEdgeData **edges, std::size_t *ndeps,
                                 bool ptsz);
// cuThreadExchangeStreamCaptureMode: the calling thread's capture interaction mode.
CUresult thread_exchange_capture_mode(CUstreamCaptureMode *mode);
CUresult graph_instantiate(CUgraphExec *out, CUgraph g, unsigned long long flags);
CUresult graph_launch(CUgraphExec e, CUstream h, bool ptsz);
CUresult graph_exec_destroy(CUgraphExec e);
CUresult graph_destroy(CUgraph g);
// User objects: a destructor run once the last reference is released.
CUresult user_object_create(CUuserObject *out, void *ptr, CUhostFn destroy, unsigned initial, unsigned flags);
CUresult user_object_retain(CUuserObject o, unsigned count);
CUresult user_object_release(CUuserObject o, unsigned count);
CUresult graph_retain_user_object(CUgraph g, CUuserObject o, unsigned count, unsigned flags);
CUresult graph_release_user_object(CUgraph g, CUuserObject o, unsigned count);

// event.cpp
CUresult event_create(CUevent *ph, unsigned flags);
CUresult event_destroy(CUevent e);
CUresult event_record(CUevent e, CUstream h, unsigned flags, bool with_flags, bool ptsz);
CUresult event_query(CUevent e);
CUresult event_synchronize(CUevent e);
CUresult event_elapsed_time(float *ms, CUevent start, CUevent end);

// memops.cpp: pinned host memory (the device sees it at the same address,
// as under unified addressing) and the 64-bit stream memory operations.
CUresult mem_host_alloc(void **pp, std::size_t bytes, unsigned flags);
CUresult mem_free_host(void *p);
CUresult mem_host_get_device_pointer(CUdeviceptr *dptr, void *p, unsigned flags);
CUresult mem_host_register(void *p, std::size_t bytes, unsigned flags);
CUresult mem_host_unregister(void *p);
// EVX_HOST_NO_STREAM_MEM_OPS=1 (tests only): a device without 64-bit stream
// memory operations (the attributes read 0; the calls are NOT_SUPPORTED).
bool stream_mem_ops_off();
CUresult stream_write_value64(CUstream h, CUdeviceptr addr, cuuint64_t value, unsigned flags,
                              bool ptsz);
CUresult stream_wait_value64(CUstream h, CUdeviceptr addr, cuuint64_t value, unsigned flags,
                             bool ptsz);

// ipc.cpp
CUresult ipc_get_event_handle(CUipcEventHandle *handle, CUevent e);
CUresult ipc_open_event_handle(CUevent *ph, CUipcEventHandle handle);

}  // namespace evxh

#endif
