// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//
// The exported names of the emulated driver, and cuGetProcAddress, which
// maps a base name and a CUDA version to the right variant as the real
// driver does (see tests/gpu/probe_semantics.out.txt, section 9).
//
// cuda.h renames some calls with macros (cuEventDestroy -> cuEventDestroy_v2
// ...). The definitions below use the exported names explicitly, after
// removing those macros; cuda.h's declarations get default visibility.
#pragma GCC visibility push(default)
#include <cuda.h>
#pragma GCC visibility pop

#include <cstring>

#include "api.hpp"

#undef cuDevicePrimaryCtxRelease
#undef cuCtxPushCurrent
#undef cuCtxPopCurrent
#undef cuEventDestroy
#undef cuStreamDestroy
#undef cuEventElapsedTime
#undef cuGetProcAddress
#undef cuCtxCreate
#undef cuCtxDestroy
#undef cuStreamBeginCapture
#undef cuStreamGetCaptureInfo
#undef cuGraphInstantiate
#undef cuMemHostGetDevicePointer
#undef cuMemHostRegister
#undef cuStreamWriteValue64
#undef cuStreamWaitValue64

#define EVXH_API extern "C" __attribute__((visibility("default")))
// An injected fault (debug.cpp) fails the call before it does anything.
#define EVXH_FAULT(name)                                            \
    do {                                                            \
        if (const CUresult fault_ = fault_check(name)) return fault_; \
    } while (0)
// An exported entry point: its base name (for faults), parameters, and call.
#define EVXH_CALL(name, base, params, call) \
    EVXH_API CUresult name params {         \
        EVXH_FAULT(base);                   \
        host_free_gate();                   \
        return call;                        \
    }

using namespace evxh;

EVXH_API const char *evx_host_emulation_version(void) { return "evx host emulation 1"; }

EVXH_API CUresult cuInit(unsigned int flags) {
    EVXH_FAULT("cuInit");
    if (!fault_env_ok()) return CUDA_ERROR_INVALID_VALUE;  // a malformed EVX_HOST_FAULT
    if (driver_version() < 0) return CUDA_ERROR_INVALID_VALUE;  // EVX_HOST_DRIVER_VERSION
    return init(flags);
}
EVXH_CALL(cuDriverGetVersion, "cuDriverGetVersion", (int *v), driver_get_version(v))
EVXH_CALL(cuGetErrorName, "cuGetErrorName", (CUresult e, const char **s), get_error_name(e, s))
EVXH_CALL(cuGetErrorString, "cuGetErrorString", (CUresult e, const char **s), get_error_string(e, s))
EVXH_CALL(cuDeviceGetCount, "cuDeviceGetCount", (int *n), device_get_count(n))
EVXH_CALL(cuDeviceGet, "cuDeviceGet", (CUdevice *d, int ordinal), device_get(d, ordinal))
EVXH_CALL(cuDeviceGetName, "cuDeviceGetName", (char *name, int len, CUdevice d),
          device_get_name(name, len, d))
EVXH_CALL(cuDeviceGetAttribute, "cuDeviceGetAttribute", (int *v, CUdevice_attribute a, CUdevice d),
          device_get_attribute(v, a, d))
EVXH_CALL(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", (CUcontext *c, CUdevice d),
          primary_ctx_retain(c, d))
EVXH_CALL(cuDevicePrimaryCtxRelease_v2, "cuDevicePrimaryCtxRelease", (CUdevice d), primary_ctx_release(d))
EVXH_CALL(cuCtxGetCurrent, "cuCtxGetCurrent", (CUcontext *c), ctx_get_current(c))
EVXH_CALL(cuCtxSetCurrent, "cuCtxSetCurrent", (CUcontext c), ctx_set_current(c))
EVXH_CALL(cuCtxPushCurrent_v2, "cuCtxPushCurrent", (CUcontext c), ctx_push_current(c))
EVXH_CALL(cuCtxPopCurrent_v2, "cuCtxPopCurrent", (CUcontext *c), ctx_pop_current(c))
EVXH_CALL(cuCtxGetDevice, "cuCtxGetDevice", (CUdevice *d), ctx_get_device(d, nullptr))
EVXH_CALL(cuCtxGetDevice_v2, "cuCtxGetDevice", (CUdevice *d, CUcontext c), ctx_get_device(d, c))
EVXH_CALL(cuCtxGetStreamPriorityRange, "cuCtxGetStreamPriorityRange", (int *least, int *greatest),
          ctx_get_stream_priority_range(least, greatest))
EVXH_CALL(cuCtxSynchronize, "cuCtxSynchronize", (void), ctx_synchronize(nullptr))
EVXH_CALL(cuThreadExchangeStreamCaptureMode, "cuThreadExchangeStreamCaptureMode",
          (CUstreamCaptureMode *mode), thread_exchange_capture_mode(mode))
EVXH_CALL(cuCtxSynchronize_v2, "cuCtxSynchronize", (CUcontext c), ctx_synchronize(c))
EVXH_CALL(cuCtxCreate_v2, "cuCtxCreate", (CUcontext *c, unsigned int flags, CUdevice d),
          ctx_create(c, nullptr, flags, d))
EVXH_CALL(cuCtxCreate_v3, "cuCtxCreate",
          (CUcontext *c, CUexecAffinityParam *p, int n, unsigned int flags, CUdevice d),
          ctx_create_v3(c, p, n, flags, d))
EVXH_CALL(cuCtxCreate_v4, "cuCtxCreate", (CUcontext *c, CUctxCreateParams *p, unsigned int flags, CUdevice d),
          ctx_create(c, p, flags, d))
EVXH_CALL(cuCtxDestroy_v2, "cuCtxDestroy", (CUcontext c), ctx_destroy(c))

EVXH_CALL(cuEventCreate, "cuEventCreate", (CUevent *e, unsigned int flags), event_create(e, flags))
EVXH_CALL(cuEventDestroy_v2, "cuEventDestroy", (CUevent e), event_destroy(e))
EVXH_CALL(cuEventRecord, "cuEventRecord", (CUevent e, CUstream s), event_record(e, s, 0, false, false))
EVXH_CALL(cuEventRecord_ptsz, "cuEventRecord", (CUevent e, CUstream s), event_record(e, s, 0, false, true))
EVXH_CALL(cuEventRecordWithFlags, "cuEventRecordWithFlags", (CUevent e, CUstream s, unsigned int f),
          event_record(e, s, f, true, false))
EVXH_CALL(cuEventRecordWithFlags_ptsz, "cuEventRecordWithFlags", (CUevent e, CUstream s, unsigned int f),
          event_record(e, s, f, true, true))
EVXH_CALL(cuEventQuery, "cuEventQuery", (CUevent e), event_query(e))
EVXH_CALL(cuEventSynchronize, "cuEventSynchronize", (CUevent e), event_synchronize(e))
EVXH_CALL(cuEventElapsedTime, "cuEventElapsedTime", (float *ms, CUevent a, CUevent b),
          event_elapsed_time(ms, a, b))
EVXH_CALL(cuEventElapsedTime_v2, "cuEventElapsedTime", (float *ms, CUevent a, CUevent b),
          event_elapsed_time(ms, a, b))
EVXH_CALL(cuIpcGetEventHandle, "cuIpcGetEventHandle", (CUipcEventHandle *h, CUevent e),
          ipc_get_event_handle(h, e))
EVXH_CALL(cuIpcOpenEventHandle, "cuIpcOpenEventHandle", (CUevent *e, CUipcEventHandle h),
          ipc_open_event_handle(e, h))

EVXH_CALL(cuStreamCreate, "cuStreamCreate", (CUstream *s, unsigned int flags), stream_create(s, flags, 0))
EVXH_CALL(cuStreamCreateWithPriority, "cuStreamCreateWithPriority", (CUstream *s, unsigned int flags, int priority),
          stream_create(s, flags, priority))
EVXH_CALL(cuStreamDestroy_v2, "cuStreamDestroy", (CUstream s), stream_destroy(s))

// Calls taking a stream, in the legacy flavour (NULL is the legacy default
// stream) and the _ptsz one (NULL is the per-thread default stream).
#define EVXH_STREAM_CALL(name, base, impl, params, args) \
    EVXH_CALL(name, base, params, impl(args, false))      \
    EVXH_CALL(name##_ptsz, base, params, impl(args, true))
#define EVXH_ARGS(...) __VA_ARGS__

EVXH_STREAM_CALL(cuStreamWaitEvent, "cuStreamWaitEvent", stream_wait_event, (CUstream s, CUevent e, unsigned int f), EVXH_ARGS(s, e, f))
EVXH_STREAM_CALL(cuStreamQuery, "cuStreamQuery", stream_query, (CUstream s), s)
EVXH_STREAM_CALL(cuStreamSynchronize, "cuStreamSynchronize", stream_synchronize, (CUstream s), s)
EVXH_STREAM_CALL(cuLaunchHostFunc, "cuLaunchHostFunc", launch_host_func, (CUstream s, CUhostFn fn, void *d), EVXH_ARGS(s, fn, d))
EVXH_STREAM_CALL(cuLaunchHostFunc_v2, "cuLaunchHostFunc", launch_host_func_v2,
                 (CUstream s, CUhostFn fn, void *d, unsigned int m), EVXH_ARGS(s, fn, d, m))
EVXH_STREAM_CALL(cuStreamGetPriority, "cuStreamGetPriority", stream_get_priority, (CUstream s, int *p), EVXH_ARGS(s, p))
EVXH_STREAM_CALL(cuStreamGetFlags, "cuStreamGetFlags", stream_get_flags, (CUstream s, unsigned int *f), EVXH_ARGS(s, f))
EVXH_STREAM_CALL(cuStreamGetDevice, "cuStreamGetDevice", stream_get_device, (CUstream s, CUdevice *d), EVXH_ARGS(s, d))
EVXH_STREAM_CALL(cuStreamGetCtx, "cuStreamGetCtx", stream_get_ctx, (CUstream s, CUcontext *c), EVXH_ARGS(s, c, nullptr))
EVXH_STREAM_CALL(cuStreamGetCtx_v2, "cuStreamGetCtx", stream_get_ctx, (CUstream s, CUcontext *c, CUgreenCtx *g), EVXH_ARGS(s, c, g))
EVXH_STREAM_CALL(cuStreamGetId, "cuStreamGetId", stream_get_id, (CUstream s, unsigned long long *id), EVXH_ARGS(s, id))
EVXH_CALL(cuMemHostAlloc, "cuMemHostAlloc", (void **p, size_t n, unsigned int f), mem_host_alloc(p, n, f))
EVXH_CALL(cuMemFreeHost, "cuMemFreeHost", (void *p), mem_free_host(p))
EVXH_CALL(cuMemHostGetDevicePointer_v2, "cuMemHostGetDevicePointer", (CUdeviceptr *d, void *p, unsigned int f),
          mem_host_get_device_pointer(d, p, f))
EVXH_CALL(cuMemHostRegister_v2, "cuMemHostRegister", (void *p, size_t n, unsigned int f), mem_host_register(p, n, f))
EVXH_CALL(cuMemHostUnregister, "cuMemHostUnregister", (void *p), mem_host_unregister(p))
EVXH_STREAM_CALL(cuStreamWriteValue64_v2, "cuStreamWriteValue64", stream_write_value64,
                 (CUstream s, CUdeviceptr a, cuuint64_t v, unsigned int f), EVXH_ARGS(s, a, v, f))
EVXH_STREAM_CALL(cuStreamWaitValue64_v2, "cuStreamWaitValue64", stream_wait_value64,
                 (CUstream s, CUdeviceptr a, cuuint64_t v, unsigned int f), EVXH_ARGS(s, a, v, f))
EVXH_STREAM_CALL(cuStreamIsCapturing, "cuStreamIsCapturing", stream_is_capturing, (CUstream s, CUstreamCaptureStatus *st),
                 EVXH_ARGS(s, st))
EVXH_STREAM_CALL(cuStreamBeginCapture_v2, "cuStreamBeginCapture", stream_begin_capture,
                 (CUstream s, CUstreamCaptureMode m), EVXH_ARGS(s, capture_mode_bits(&m)))
EVXH_STREAM_CALL(cuStreamEndCapture, "cuStreamEndCapture", stream_end_capture, (CUstream s, CUgraph *g),
                 EVXH_ARGS(s, g))
EVXH_STREAM_CALL(cuStreamGetCaptureInfo_v2, "cuStreamGetCaptureInfo", stream_get_capture_info,
                 (CUstream s, CUstreamCaptureStatus *st, cuuint64_t *id, CUgraph *g, const CUgraphNode **deps,
                  size_t *n),
                 EVXH_ARGS(s, st, id, g, deps, nullptr, n))
EVXH_STREAM_CALL(cuStreamGetCaptureInfo_v3, "cuStreamGetCaptureInfo", stream_get_capture_info,
                 (CUstream s, CUstreamCaptureStatus *st, cuuint64_t *id, CUgraph *g, const CUgraphNode **deps,
                  const CUgraphEdgeData **edges, size_t *n),
                 EVXH_ARGS(s, st, id, g, deps, edges, n))
EVXH_STREAM_CALL(cuGraphLaunch, "cuGraphLaunch", graph_launch, (CUgraphExec e, CUstream s), EVXH_ARGS(e, s))
EVXH_CALL(cuGraphInstantiateWithFlags, "cuGraphInstantiateWithFlags",
          (CUgraphExec *e, CUgraph g, unsigned long long flags), graph_instantiate(e, g, flags))
EVXH_CALL(cuGraphExecDestroy, "cuGraphExecDestroy", (CUgraphExec e), graph_exec_destroy(e))
EVXH_CALL(cuGraphDestroy, "cuGraphDestroy", (CUgraph g), graph_destroy(g))
EVXH_CALL(cuUserObjectCreate, "cuUserObjectCreate",
          (CUuserObject * o, void *p, CUhostFn d, unsigned int n, unsigned int f), user_object_create(o, p, d, n, f))
EVXH_CALL(cuUserObjectRetain, "cuUserObjectRetain", (CUuserObject o, unsigned int n), user_object_retain(o, n))
EVXH_CALL(cuUserObjectRelease, "cuUserObjectRelease", (CUuserObject o, unsigned int n), user_object_release(o, n))
EVXH_CALL(cuGraphRetainUserObject, "cuGraphRetainUserObject",
          (CUgraph g, CUuserObject o, unsigned int n, unsigned int f), graph_retain_user_object(g, o, n, f))
EVXH_CALL(cuGraphReleaseUserObject, "cuGraphReleaseUserObject", (CUgraph g, CUuserObject o, unsigned int n),
          graph_release_user_object(g, o, n))

EVXH_API CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                                      CUdriverProcAddressQueryResult *status);
EVXH_API CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags);

namespace {

using Fn = void (*)();
template <class F>
Fn fn(F *f) {
    return reinterpret_cast<Fn>(f);
}

// One variant of an entry point: the CUDA version that introduced it, and
// its legacy-stream and per-thread-stream functions.
struct Variant {
    int since;
    Fn legacy;
    Fn ptsz;
};
struct Proc {
    const char *name;
    Variant v[3];  // oldest first; unused ones have a null legacy
};

#define EVXH_P1(name, since, f) {name, {{since, fn(f), nullptr}, {0, nullptr, nullptr}, {0, nullptr, nullptr}}}
#define EVXH_PT(name, since, f) {name, {{since, fn(f), fn(f##_ptsz)}, {0, nullptr, nullptr}, {0, nullptr, nullptr}}}

// Versions from cudaTypedefs.h (PFN_<name>_v<version>). Where the emulation
// has one function for two variants of the same signature, the older
// version maps to it too (cuEventDestroy before 4000, for instance).
const Proc kProcs[] = {
    EVXH_P1("cuInit", 2000, &cuInit),
    EVXH_P1("cuDriverGetVersion", 2020, &cuDriverGetVersion),
    EVXH_P1("cuGetErrorName", 6000, &cuGetErrorName),
    EVXH_P1("cuGetErrorString", 6000, &cuGetErrorString),
    EVXH_P1("cuDeviceGetCount", 2000, &cuDeviceGetCount),
    EVXH_P1("cuDeviceGet", 2000, &cuDeviceGet),
    EVXH_P1("cuDeviceGetName", 2000, &cuDeviceGetName),
    EVXH_P1("cuDeviceGetAttribute", 2000, &cuDeviceGetAttribute),
    EVXH_P1("cuDevicePrimaryCtxRetain", 7000, &cuDevicePrimaryCtxRetain),
    EVXH_P1("cuDevicePrimaryCtxRelease", 7000, &cuDevicePrimaryCtxRelease_v2),
    EVXH_P1("cuCtxGetCurrent", 4000, &cuCtxGetCurrent),
    EVXH_P1("cuCtxSetCurrent", 4000, &cuCtxSetCurrent),
    EVXH_P1("cuCtxPushCurrent", 2000, &cuCtxPushCurrent_v2),
    EVXH_P1("cuCtxPopCurrent", 2000, &cuCtxPopCurrent_v2),
    {"cuCtxGetDevice", {{2000, fn(&cuCtxGetDevice), nullptr}, {13000, fn(&cuCtxGetDevice_v2), nullptr}}},
    {"cuCtxCreate",
     {{3020, fn(&cuCtxCreate_v2), nullptr}, {11040, fn(&cuCtxCreate_v3), nullptr}, {12050, fn(&cuCtxCreate_v4), nullptr}}},
    EVXH_P1("cuCtxDestroy", 4000, &cuCtxDestroy_v2),
    EVXH_P1("cuCtxGetStreamPriorityRange", 5050, &cuCtxGetStreamPriorityRange),
    {"cuCtxSynchronize", {{2000, fn(&cuCtxSynchronize), nullptr}, {13000, fn(&cuCtxSynchronize_v2), nullptr}}},
    EVXH_P1("cuEventCreate", 2000, &cuEventCreate),
    EVXH_P1("cuEventDestroy", 2000, &cuEventDestroy_v2),
    EVXH_PT("cuEventRecord", 2000, &cuEventRecord),
    EVXH_PT("cuEventRecordWithFlags", 11010, &cuEventRecordWithFlags),
    EVXH_P1("cuEventQuery", 2000, &cuEventQuery),
    EVXH_P1("cuEventSynchronize", 2000, &cuEventSynchronize),
    {"cuEventElapsedTime", {{2000, fn(&cuEventElapsedTime), nullptr}, {12080, fn(&cuEventElapsedTime_v2), nullptr}}},
    EVXH_P1("cuIpcGetEventHandle", 4010, &cuIpcGetEventHandle),
    EVXH_P1("cuIpcOpenEventHandle", 4010, &cuIpcOpenEventHandle),
    EVXH_P1("cuStreamCreate", 2000, &cuStreamCreate),
    EVXH_P1("cuStreamCreateWithPriority", 5050, &cuStreamCreateWithPriority),
    EVXH_P1("cuStreamDestroy", 2000, &cuStreamDestroy_v2),
    EVXH_PT("cuStreamWaitEvent", 3020, &cuStreamWaitEvent),
    EVXH_PT("cuStreamQuery", 2000, &cuStreamQuery),
    EVXH_PT("cuStreamSynchronize", 2000, &cuStreamSynchronize),
    {"cuLaunchHostFunc",
     {{10000, fn(&cuLaunchHostFunc), fn(&cuLaunchHostFunc_ptsz)},
      {13020, fn(&cuLaunchHostFunc_v2), fn(&cuLaunchHostFunc_v2_ptsz)}}},
    EVXH_PT("cuStreamGetPriority", 5050, &cuStreamGetPriority),
    EVXH_PT("cuStreamGetFlags", 5050, &cuStreamGetFlags),
    EVXH_PT("cuStreamGetDevice", 12080, &cuStreamGetDevice),
    {"cuStreamGetCtx",
     {{9020, fn(&cuStreamGetCtx), fn(&cuStreamGetCtx_ptsz)}, {12050, fn(&cuStreamGetCtx_v2), fn(&cuStreamGetCtx_v2_ptsz)}}},
    EVXH_PT("cuStreamGetId", 12000, &cuStreamGetId),
    EVXH_PT("cuStreamIsCapturing", 10000, &cuStreamIsCapturing),
    EVXH_P1("cuMemHostAlloc", 2020, &cuMemHostAlloc),
    EVXH_P1("cuMemFreeHost", 2000, &cuMemFreeHost),
    EVXH_P1("cuMemHostGetDevicePointer", 3020, &cuMemHostGetDevicePointer_v2),
    EVXH_P1("cuMemHostRegister", 6050, &cuMemHostRegister_v2),
    EVXH_P1("cuMemHostUnregister", 4000, &cuMemHostUnregister),
    // The v1 (9.0) and v2 (11.7) memory operations share a signature; the
    // emulation has the v2 semantics (no opt-in needed) for both.
    EVXH_PT("cuStreamWriteValue64", 9000, &cuStreamWriteValue64_v2),
    EVXH_PT("cuStreamWaitValue64", 9000, &cuStreamWaitValue64_v2),
    EVXH_P1("cuThreadExchangeStreamCaptureMode", 10010, &cuThreadExchangeStreamCaptureMode),
    EVXH_PT("cuStreamBeginCapture", 10010, &cuStreamBeginCapture_v2),
    EVXH_PT("cuStreamEndCapture", 10000, &cuStreamEndCapture),
    {"cuStreamGetCaptureInfo",
     {{11030, fn(&cuStreamGetCaptureInfo_v2), fn(&cuStreamGetCaptureInfo_v2_ptsz)},
      {12030, fn(&cuStreamGetCaptureInfo_v3), fn(&cuStreamGetCaptureInfo_v3_ptsz)}}},
    EVXH_P1("cuGraphInstantiateWithFlags", 11040, &cuGraphInstantiateWithFlags),
    EVXH_P1("cuGraphInstantiate", 12000, &cuGraphInstantiateWithFlags),
    EVXH_PT("cuGraphLaunch", 10000, &cuGraphLaunch),
    EVXH_P1("cuGraphExecDestroy", 10000, &cuGraphExecDestroy),
    EVXH_P1("cuGraphDestroy", 10000, &cuGraphDestroy),
    EVXH_P1("cuUserObjectCreate", 11030, &cuUserObjectCreate),
    EVXH_P1("cuUserObjectRetain", 11030, &cuUserObjectRetain),
    EVXH_P1("cuUserObjectRelease", 11030, &cuUserObjectRelease),
    EVXH_P1("cuGraphRetainUserObject", 11030, &cuGraphRetainUserObject),
    EVXH_P1("cuGraphReleaseUserObject", 11030, &cuGraphReleaseUserObject),
    {"cuGetProcAddress", {{11030, fn(&cuGetProcAddress), nullptr}, {12000, fn(&cuGetProcAddress_v2), nullptr}}},
};

constexpr int kPerThreadSince = 7000;  // the _ptsz variants appeared in CUDA 7.0

void set_pfn(void **pfn, Fn f) {
    void *p = nullptr;
    static_assert(sizeof p == sizeof f, "function and data pointers differ in size");
    std::memcpy(&p, &f, sizeof p);
    *pfn = p;
}

CUresult get_proc_address(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                          CUdriverProcAddressQueryResult *status) {
    const cuuint64_t known = CU_GET_PROC_ADDRESS_LEGACY_STREAM | CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
    if ((flags & ~known) != 0 || cudaVersion > driver_version()) return CUDA_ERROR_INVALID_VALUE;
    if (!symbol || !pfn) return CUDA_ERROR_INVALID_VALUE;  // the driver crashes on these
    const Proc *p = nullptr;
    for (const Proc &c : kProcs)
        if (std::strcmp(c.name, symbol) == 0) p = &c;
    CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    Fn f = nullptr;
    if (p) {
        // The newest variant not newer than cudaVersion. The driver answers a
        // negative version with success; here it gets the newest variant.
        const Variant *v = nullptr;
        for (const Variant &c : p->v)
            if (c.legacy && (cudaVersion < 0 || c.since <= cudaVersion)) v = &c;
        if (!v) {
            st = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
        } else {
            const bool per_thread = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) &&
                                    !(flags & CU_GET_PROC_ADDRESS_LEGACY_STREAM);
            f = per_thread && v->ptsz && (cudaVersion < 0 || cudaVersion >= kPerThreadSince) ? v->ptsz
                                                                                             : v->legacy;
            st = CU_GET_PROC_ADDRESS_SUCCESS;
        }
    }
    set_pfn(pfn, f);  // NULL unless found, as the driver
    if (status) *status = st;
    return CUDA_SUCCESS;
}

}  // namespace

bool evxh::known_entry(const char *name) {
    for (const Proc &c : kProcs)
        if (std::strcmp(c.name, name) == 0) return true;
    return false;
}

EVXH_CALL(cuGetProcAddress_v2, "cuGetProcAddress", (const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
          
                                      CUdriverProcAddressQueryResult *status), get_proc_address(symbol, pfn, cudaVersion, flags, status))

// The CUDA 11.3 form: a symbol it cannot give is CUDA_ERROR_NOT_FOUND, and
// *pfn is left as it was (as the driver does).
EVXH_API CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags) {
    EVXH_FAULT("cuGetProcAddress");
    if (!pfn) return CUDA_ERROR_INVALID_VALUE;
    void *p = nullptr;
    CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    CUresult r = get_proc_address(symbol, &p, cudaVersion, flags, &st);
    if (r != CUDA_SUCCESS) return r;
    if (st != CU_GET_PROC_ADDRESS_SUCCESS) return CUDA_ERROR_NOT_FOUND;
    *pfn = p;
    return CUDA_SUCCESS;
}
