/* The driver under test: its entry points, looked up through
 * cuGetProcAddress as evx looks them up (src/driver.hpp), and one call
 * descriptor that either thread of a program executes. */
#ifndef EVX_TRANSCRIPT_DRV_H
#define EVX_TRANSCRIPT_DRV_H

#include <cuda.h>

/* X(id, name, max_version, min_version, type): the entry points evx loads
 * (EVX_DRIVER_ENTRY_POINTS), then the extra ones a program needs to make
 * and undo its objects (captures, created contexts). Versions as evx pins
 * them: the signature of `type` is asked for at min(driver, max_version);
 * below min_version it is not asked for. */
#define TX_ENTRIES(X) \
  X(Init, "cuInit", 0, 0, (unsigned)) \
  X(DriverGetVersion, "cuDriverGetVersion", 0, 0, (int *)) \
  X(DeviceGetCount, "cuDeviceGetCount", 0, 0, (int *)) \
  X(DeviceGet, "cuDeviceGet", 0, 0, (CUdevice *, int)) \
  X(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", 0, 0, (CUcontext *, CUdevice)) \
  X(CtxGetCurrent, "cuCtxGetCurrent", 0, 0, (CUcontext *)) \
  X(CtxPushCurrent, "cuCtxPushCurrent", 0, 0, (CUcontext)) \
  X(CtxPopCurrent, "cuCtxPopCurrent", 0, 0, (CUcontext *)) \
  X(CtxGetStreamPriorityRange, "cuCtxGetStreamPriorityRange", 0, 0, (int *, int *)) \
  X(EventCreate, "cuEventCreate", 0, 0, (CUevent *, unsigned)) \
  X(EventDestroy, "cuEventDestroy", 0, 0, (CUevent)) \
  X(EventRecord, "cuEventRecord", 0, 0, (CUevent, CUstream)) \
  X(EventRecordWithFlags, "cuEventRecordWithFlags", 0, 0, (CUevent, CUstream, unsigned)) \
  X(EventQuery, "cuEventQuery", 0, 0, (CUevent)) \
  X(EventSynchronize, "cuEventSynchronize", 0, 0, (CUevent)) \
  X(EventElapsedTime, "cuEventElapsedTime", 0, 0, (float *, CUevent, CUevent)) \
  X(StreamCreateWithPriority, "cuStreamCreateWithPriority", 0, 0, (CUstream *, unsigned, int)) \
  X(StreamDestroy, "cuStreamDestroy", 0, 0, (CUstream)) \
  X(StreamWaitEvent, "cuStreamWaitEvent", 0, 0, (CUstream, CUevent, unsigned)) \
  X(StreamQuery, "cuStreamQuery", 0, 0, (CUstream)) \
  X(StreamSynchronize, "cuStreamSynchronize", 0, 0, (CUstream)) \
  X(StreamGetPriority, "cuStreamGetPriority", 0, 0, (CUstream, int *)) \
  X(StreamGetFlags, "cuStreamGetFlags", 0, 0, (CUstream, unsigned *)) \
  X(LaunchHostFunc, "cuLaunchHostFunc", 13010, 0, (CUstream, CUhostFn, void *)) \
  X(StreamGetDevice, "cuStreamGetDevice", 0, 0, (CUstream, CUdevice *)) \
  X(StreamGetCtx, "cuStreamGetCtx", 12040, 0, (CUstream, CUcontext *)) \
  X(CtxGetDevice, "cuCtxGetDevice", 12090, 0, (CUdevice *)) \
  X(StreamGetCtx_v2, "cuStreamGetCtx", 0, 12050, (CUstream, CUcontext *, CUgreenCtx *)) \
  X(IpcGetEventHandle, "cuIpcGetEventHandle", 0, 0, (CUipcEventHandle *, CUevent)) \
  X(IpcOpenEventHandle, "cuIpcOpenEventHandle", 0, 0, (CUevent *, CUipcEventHandle)) \
  X(StreamIsCapturing, "cuStreamIsCapturing", 0, 0, (CUstream, CUstreamCaptureStatus *)) \
  X(StreamGetCaptureInfo, "cuStreamGetCaptureInfo", 0, 12030, (CUstream, CUstreamCaptureStatus *, cuuint64_t *, CUgraph *, const CUgraphNode **, const CUgraphEdgeData **, size_t *)) \
  X(UserObjectCreate, "cuUserObjectCreate", 0, 0, (CUuserObject *, void *, CUhostFn, unsigned, unsigned)) \
  X(UserObjectRelease, "cuUserObjectRelease", 0, 0, (CUuserObject, unsigned)) \
  X(GraphRetainUserObject, "cuGraphRetainUserObject", 0, 0, (CUgraph, CUuserObject, unsigned, unsigned)) \
  X(ThreadExchangeStreamCaptureMode, "cuThreadExchangeStreamCaptureMode", 0, 0, (CUstreamCaptureMode *)) \
  X(DeviceGetAttribute, "cuDeviceGetAttribute", 0, 0, (int *, CUdevice_attribute, CUdevice)) \
  X(MemHostAlloc, "cuMemHostAlloc", 0, 0, (void **, size_t, unsigned)) \
  X(MemFreeHost, "cuMemFreeHost", 0, 0, (void *)) \
  X(MemHostGetDevicePointer, "cuMemHostGetDevicePointer", 0, 0, (CUdeviceptr *, void *, unsigned)) \
  X(MemHostRegister, "cuMemHostRegister", 0, 0, (void *, size_t, unsigned)) \
  X(MemHostUnregister, "cuMemHostUnregister", 0, 0, (void *)) \
  X(StreamWriteValue64, "cuStreamWriteValue64", 0, 0, (CUstream, CUdeviceptr, cuuint64_t, unsigned)) \
  X(StreamWaitValue64, "cuStreamWaitValue64", 0, 0, (CUstream, CUdeviceptr, cuuint64_t, unsigned)) \
  /* extras: not loaded by evx */ \
  X(GetErrorName, "cuGetErrorName", 0, 0, (CUresult, const char **)) \
  X(DeviceGetName, "cuDeviceGetName", 0, 0, (char *, int, CUdevice)) \
  X(DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease", 0, 0, (CUdevice)) \
  X(CtxSetCurrent, "cuCtxSetCurrent", 0, 0, (CUcontext)) \
  X(CtxCreate, "cuCtxCreate", 11000, 0, (CUcontext *, unsigned, CUdevice)) \
  X(CtxDestroy, "cuCtxDestroy", 0, 0, (CUcontext)) \
  X(StreamBeginCapture, "cuStreamBeginCapture", 0, 10010, (CUstream, CUstreamCaptureMode)) \
  X(StreamEndCapture, "cuStreamEndCapture", 0, 0, (CUstream, CUgraph *)) \
  X(GraphDestroy, "cuGraphDestroy", 0, 0, (CUgraph)) \
  X(StreamGetId, "cuStreamGetId", 0, 12000, (CUstream, unsigned long long *))

/* The number of entry points evx itself loads (the first ones above). */
#define TX_EVX_ENTRIES 44

enum {
#define TX_ENUM(id, name, maxv, minv, ...) F_##id,
  TX_ENTRIES(TX_ENUM)
#undef TX_ENUM
  F_COUNT
};

struct tx_driver {
#define TX_MEMBER(id, name, maxv, minv, ...) CUresult(*id) __VA_ARGS__;
  TX_ENTRIES(TX_MEMBER)
#undef TX_MEMBER
  int version;
};

extern struct tx_driver D;

/* Opens the library and looks up every entry; returns 0 or prints why not. */
int tx_load(const char *path);
const char *tx_entry_name(int f);
int tx_entry_present(int f);
/* A CUresult by the driver's own name for it, or "CUresult(N)". */
const char *tx_status_name(CUresult r);

#endif
