// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//
// The driver evx runs on: which library, its entry points, its devices and
// their primary contexts. See docs/design.md, "Contexts".
#ifndef EVX_SRC_DRIVER_HPP
#define EVX_SRC_DRIVER_HPP

#include <cuda.h>

#include <atomic>
#include <mutex>

#include "evx/common.h"

namespace evx {

// The driver's entry points evx uses: one list, from which both DriverApi's
// members and the loader's lookup table (driver.cpp) are made. Each entry is
//   X(member, name, required, max_version, min_version, type)
// member:      the DriverApi member, of type `type *` (a function type);
// name:        the entry point looked up through cuGetProcAddress, with the
//              legacy-stream flavour (a NULL stream is the legacy default
//              stream);
// required:    kRequiredEntry: a driver without it is refused at load;
//              kOptionalEntry: left NULL, and the calls that need it say so;
// max_version: the newest CUDA version whose signature `type` is (looked up
//              at the older of it and the driver's version); 0: any;
// min_version: the oldest version with that signature; below the driver's
//              version it is not looked up (left NULL); 0: any. The list
//              declares each signature itself, so an entry newer than the
//              cuda.h evx was built with (min_version above CUDA_VERSION) is
//              looked up all the same, at min_version.
// cuDriverGetVersion is looked up first, on its own: the others are looked
// up at the driver's version.
// clang-format off
#define EVX_DRIVER_ENTRY_POINTS(X) \
    X(cuInit, cuInit, kRequiredEntry, 0, 0, CUresult(unsigned)) \
    X(cuDriverGetVersion, cuDriverGetVersion, kRequiredEntry, 0, 0, CUresult(int *)) \
    X(cuDeviceGetCount, cuDeviceGetCount, kRequiredEntry, 0, 0, CUresult(int *)) \
    X(cuDeviceGet, cuDeviceGet, kRequiredEntry, 0, 0, CUresult(CUdevice *, int)) \
    X(cuDevicePrimaryCtxRetain, cuDevicePrimaryCtxRetain, kRequiredEntry, 0, 0, CUresult(CUcontext *, CUdevice)) \
    X(cuCtxGetCurrent, cuCtxGetCurrent, kRequiredEntry, 0, 0, CUresult(CUcontext *)) \
    X(cuCtxPushCurrent, cuCtxPushCurrent, kRequiredEntry, 0, 0, CUresult(CUcontext)) \
    X(cuCtxPopCurrent, cuCtxPopCurrent, kRequiredEntry, 0, 0, CUresult(CUcontext *)) \
    X(cuCtxGetStreamPriorityRange, cuCtxGetStreamPriorityRange, kRequiredEntry, 0, 0, CUresult(int *, int *)) \
    X(cuEventCreate, cuEventCreate, kRequiredEntry, 0, 0, CUresult(CUevent *, unsigned)) \
    X(cuEventDestroy, cuEventDestroy, kRequiredEntry, 0, 0, CUresult(CUevent)) \
    X(cuEventRecord, cuEventRecord, kRequiredEntry, 0, 0, CUresult(CUevent, CUstream)) \
    X(cuEventRecordWithFlags, cuEventRecordWithFlags, kRequiredEntry, 0, 0, CUresult(CUevent, CUstream, unsigned)) \
    X(cuEventQuery, cuEventQuery, kRequiredEntry, 0, 0, CUresult(CUevent)) \
    X(cuEventSynchronize, cuEventSynchronize, kRequiredEntry, 0, 0, CUresult(CUevent)) \
    X(cuEventElapsedTime, cuEventElapsedTime, kRequiredEntry, 0, 0, CUresult(float *, CUevent, CUevent)) \
    X(cuStreamCreateWithPriority, cuStreamCreateWithPriority, kRequiredEntry, 0, 0, CUresult(CUstream *, unsigned, int)) \
    X(cuStreamDestroy, cuStreamDestroy, kRequiredEntry, 0, 0, CUresult(CUstream)) \
    X(cuStreamWaitEvent, cuStreamWaitEvent, kRequiredEntry, 0, 0, CUresult(CUstream, CUevent, unsigned)) \
    X(cuStreamQuery, cuStreamQuery, kRequiredEntry, 0, 0, CUresult(CUstream)) \
    X(cuStreamSynchronize, cuStreamSynchronize, kRequiredEntry, 0, 0, CUresult(CUstream)) \
    X(cuStreamGetPriority, cuStreamGetPriority, kRequiredEntry, 0, 0, CUresult(CUstream, int *)) \
    X(cuStreamGetFlags, cuStreamGetFlags, kRequiredEntry, 0, 0, CUresult(CUstream, unsigned *)) \
    /* Pinned below 13.2, whose "cuLaunchHostFunc" takes a sync mode too. */ \
    X(cuLaunchHostFunc, cuLaunchHostFunc, kRequiredEntry, cuda_version(13, 1), 0, CUresult(CUstream, CUhostFn, void *)) \
    /* "cuLaunchHostFunc" of CUDA 13.2 and later, with a sync mode \
       (CUhostTaskSyncMode: 0 blocking, 1 spin-wait). */ \
    X(cuLaunchHostFunc_v2, cuLaunchHostFunc, kOptionalEntry, 0, cuda_version(13, 2), CUresult(CUstream, CUhostFn, void *, unsigned)) \
    /* Drivers before 12.8 lack cuStreamGetDevice; evx then asks the \
       stream's context instead (the next two, pinned below the versions \
       that changed their signatures: 12.5 added a green-context argument to \
       cuStreamGetCtx, 13.0 a context argument to cuCtxGetDevice). */ \
    X(cuStreamGetDevice, cuStreamGetDevice, kOptionalEntry, 0, 0, CUresult(CUstream, CUdevice *)) \
    X(cuStreamGetCtx, cuStreamGetCtx, kOptionalEntry, cuda_version(12, 4), 0, CUresult(CUstream, CUcontext *)) \
    X(cuCtxGetDevice, cuCtxGetDevice, kOptionalEntry, cuda_version(12, 9), 0, CUresult(CUdevice *)) \
    X(cuCtxSynchronize, cuCtxSynchronize, kOptionalEntry, cuda_version(12, 9), 0, CUresult()) \
    /* "cuStreamGetCtx" of CUDA 12.5 and later, which tells a green \
       context's stream apart (its regular context is the primary one). */ \
    X(cuStreamGetCtx_v2, cuStreamGetCtx, kOptionalEntry, 0, cuda_version(12, 5), CUresult(CUstream, CUcontext *, CUgreenCtx *)) \
    /* IPC events (ipc.cpp) and the capture status (capture.cpp): a driver \
       without them gets NOT_SUPPORTED from those calls only. */ \
    X(cuIpcGetEventHandle, cuIpcGetEventHandle, kOptionalEntry, 0, 0, CUresult(CUipcEventHandle *, CUevent)) \
    X(cuIpcOpenEventHandle, cuIpcOpenEventHandle, kOptionalEntry, 0, 0, CUresult(CUevent *, CUipcEventHandle)) \
    X(cuStreamIsCapturing, cuStreamIsCapturing, kOptionalEntry, 0, 0, CUresult(CUstream, CUstreamCaptureStatus *)) \
    /* Host functions that can fail under capture (hostfn.cpp): the \
       capture's graph (the signature of 12.3 and later, with edge data), \
       and a user object that owns the function's record for the life of \
       the graph and its executables. A driver without them refuses such a \
       launch into a capture with NOT_SUPPORTED. */ \
    X(cuStreamGetCaptureInfo, cuStreamGetCaptureInfo, kOptionalEntry, 0, cuda_version(12, 3), CUresult(CUstream, CUstreamCaptureStatus *, cuuint64_t *, CUgraph *, const CUgraphNode **, const CUgraphEdgeData **, size_t *)) \
    X(cuUserObjectCreate, cuUserObjectCreate, kOptionalEntry, 0, 0, CUresult(CUuserObject *, void *, CUhostFn, unsigned, unsigned)) \
    X(cuUserObjectRelease, cuUserObjectRelease, kOptionalEntry, 0, 0, CUresult(CUuserObject, unsigned)) \
    X(cuGraphRetainUserObject, cuGraphRetainUserObject, kOptionalEntry, 0, 0, CUresult(CUgraph, CUuserObject, unsigned, unsigned)) \
    /* The thread's capture interaction mode, for the queries evx makes for \
       its own bookkeeping (internal_event_query()). */ \
    X(cuThreadExchangeStreamCaptureMode, cuThreadExchangeStreamCaptureMode, kOptionalEntry, 0, 0, CUresult(CUstreamCaptureMode *)) \
    /* Fences (fence.cpp), which refuse to work without them: attributes, \
       pinned host memory and the 64-bit stream memory operations. */ \
    X(cuDeviceGetAttribute, cuDeviceGetAttribute, kOptionalEntry, 0, 0, CUresult(int *, CUdevice_attribute, CUdevice)) \
    X(cuMemHostAlloc, cuMemHostAlloc, kOptionalEntry, 0, 0, CUresult(void **, size_t, unsigned)) \
    X(cuMemFreeHost, cuMemFreeHost, kOptionalEntry, 0, 0, CUresult(void *)) \
    X(cuMemHostGetDevicePointer, cuMemHostGetDevicePointer, kOptionalEntry, 0, 0, CUresult(CUdeviceptr *, void *, unsigned)) \
    X(cuMemHostRegister, cuMemHostRegister, kOptionalEntry, 0, 0, CUresult(void *, size_t, unsigned)) \
    X(cuMemHostUnregister, cuMemHostUnregister, kOptionalEntry, 0, 0, CUresult(void *)) \
    X(cuStreamWriteValue64, cuStreamWriteValue64, kOptionalEntry, 0, 0, CUresult(CUstream, CUdeviceptr, cuuint64_t, unsigned)) \
    X(cuStreamWaitValue64, cuStreamWaitValue64, kOptionalEntry, 0, 0, CUresult(CUstream, CUdeviceptr, cuuint64_t, unsigned))
// clang-format on

constexpr bool kRequiredEntry = true;
constexpr bool kOptionalEntry = false;

// A CUDA version as CUDA_VERSION and cuGetProcAddress write it (12.4: 12040).
constexpr int cuda_version(int major, int minor) { return major * 1000 + minor * 10; }

// A pointer to a function of type F (a function type, as the list gives it).
template <class F>
using DriverFn = F *;

// The entry points, as EVX_DRIVER_ENTRY_POINTS lists them.
struct DriverApi {
#define EVX_DRIVER_API_MEMBER(member, name, required, max_version, min_version, ...) \
    DriverFn<__VA_ARGS__> member;
    EVX_DRIVER_ENTRY_POINTS(EVX_DRIVER_API_MEMBER)
#undef EVX_DRIVER_API_MEMBER
};

// What evx knows of one device. Filled lazily, kept for the process.
struct DeviceState {
    std::mutex mu;                        // guards the slow paths below
    CUdevice dev = 0;                     // from cuDeviceGet at load
    std::atomic<CUcontext> ctx{nullptr};  // retained primary context
    std::atomic<bool> range_known{false};
    int least = 0;                        // stream priority range
    int greatest = 0;
};

struct Driver {
    DriverApi api;
    evx_status_t status;      // outcome of loading, kept forever
    int version;              // cuDriverGetVersion
    int device_count;         // cached at load
    int is_emulation;
    DeviceState *devices;     // device_count entries, never freed
    char path[1024];          // as passed to dlopen
    char message[1024];       // why loading failed ("" on success)
};

extern Driver g_driver;
extern std::atomic<bool> g_driver_ready;  // loaded and cuInit succeeded

inline const DriverApi &cu() { return g_driver.api; }

// cuEventQuery of an event that evx asks about for its own bookkeeping (a
// pool's released events, a notifier's early delivery), never one the
// caller asked about. It is made in relaxed capture mode for this thread:
// while another thread holds a global-mode capture, the driver forbids
// cuEventQuery on every thread and invalidates that capture, although the
// event queried is not captured (seen on a GPU: evx_event_pool_release
// invalidated another thread's torch.cuda.graph capture). Relaxed mode is
// the driver's own way for such a call; the thread's mode is restored.
// Before a cuMemFreeHost or cuMemHostUnregister of the current context. Those
// two wait for the work queued on the context, and while they wait every
// other driver call of the process waits for them (a lock the driver holds);
// cuCtxSynchronize waits without holding it. Synchronizing first leaves the
// free only the work queued since to wait for, so other threads' calls are
// held for that at most. A failing synchronize changes nothing: the free
// reports its own status.
inline void sync_before_host_free() {
    if (cu().cuCtxSynchronize) (void)cu().cuCtxSynchronize();
}

inline CUresult internal_event_query(CUevent ev) {
    CUresult (*exchange)(CUstreamCaptureMode *) = cu().cuThreadExchangeStreamCaptureMode;
    CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
    if (!exchange || exchange(&mode) != CUDA_SUCCESS) return cu().cuEventQuery(ev);
    const CUresult r = cu().cuEventQuery(ev);
    exchange(&mode);  // back to the thread's own mode
    return r;
}

// Loads the driver once; later calls return the same status. On failure it
// sets the last error to "<fn>: <why>".
evx_status_t driver_load_slow(const char *fn);

inline evx_status_t ensure_driver(const char *fn) {
    if (__builtin_expect(g_driver_ready.load(std::memory_order_acquire), 1))
        return 0;
    return driver_load_slow(fn);
}

evx_status_t device_out_of_range(const char *fn, int device);

// The driver must be loaded. INVALID_DEVICE with a message when out of range.
inline evx_status_t check_device(const char *fn, int device) {
    if (__builtin_expect(static_cast<unsigned>(device) <
                             static_cast<unsigned>(g_driver.device_count), 1))
        return 0;
    return device_out_of_range(fn, device);
}

// The device's primary context, retained on first use.
evx_status_t primary_context(const char *fn, int device, CUcontext *ctx);

// The device's primary context once primary_context() has retained it
// (every driver event and owned stream of the device was made after that).
inline CUcontext known_primary(int device) {
    return g_driver.devices[device].ctx.load(std::memory_order_acquire);
}

// The device's stream priority range, read once.
evx_status_t priority_range(const char *fn, int device, int *least,
                            int *greatest);

// The ordinal of a driver CUdevice, or -1.
int device_ordinal(CUdevice dev);

// EVX_DEVICE_CURRENT: the calling thread's current context and the ordinal
// of its device. No current context is no failure here: *ctx is nullptr,
// and the caller words what that means for its call.
evx_status_t current_context(const char *fn, CUcontext *ctx, int *device);

// Makes a device's primary context current, if it is not already, until
// leave() (or the end of its scope); leaves the caller's context stack as it
// found it. A call that made its driver call under the guard ends it with
// leave(), which reports a failing cuCtxPopCurrent; the destructor pops for
// the exits that already return a failure (a pop failing there is not
// reported over the first failure).
class ContextGuard {
public:
    ContextGuard() = default;
    ContextGuard(const ContextGuard &) = delete;
    ContextGuard &operator=(const ContextGuard &) = delete;
    ~ContextGuard() {
        if (__builtin_expect(pushed_, 0)) {
            CUcontext popped;
            cu().cuCtxPopCurrent(&popped);
        }
    }
    // Pops what enter() pushed. Returns 0, or the pop's failure with the
    // message "<fn>: cuCtxPopCurrent returned ... (<done>; the context evx
    // made current for the call stays current on this thread)": done says
    // what the call did before. Nothing pushed (the usual case): one test of
    // a flag.
    evx_status_t leave(const char *fn, const char *done) {
        return __builtin_expect(pushed_, 0) ? pop(fn, done) : 0;
    }
    // fn names the call for the message; nullptr sets no message.
    evx_status_t enter(const char *fn, int device);
    // device: for the message, or -1 for a context not known to be primary;
    // what: the message's words for a failing push instead ("making ...
    // current"), or nullptr.
    evx_status_t enter_context(const char *fn, CUcontext ctx, int device,
                               const char *what = nullptr);

private:
    evx_status_t pop(const char *fn, const char *done) __attribute__((cold, noinline));
    bool pushed_ = false;
};

// What a destroy helper or a free hook passes up, without a message: the
// driver's status, and whether the failing call was the guard's
// cuCtxPopCurrent after the work (which then was done). The public call
// words the message (see docs/robustness.md).
struct Freed {
    CUresult res = CUDA_SUCCESS;
    bool pop_failed = false;
    // The work's own status: a failing pop after it does not count.
    CUresult work() const { return pop_failed ? CUDA_SUCCESS : res; }
};

// "<fn>: <call> returned <NAME> (<detail>)": a failing driver status, passed
// through with a message naming the driver call. fn == nullptr: no message.
evx_status_t driver_failed(CUresult r, const char *fn, const char *call,
                           const char *fmt, ...)
    __attribute__((format(printf, 4, 5), cold, noinline));

}  // namespace evx

#endif  // EVX_SRC_DRIVER_HPP
