/* The capture-legality programs: for each entry point evx loads, each
 * capture mode and each place (the capturing stream; another stream;
 * another stream from another thread), one call made while s0 captures,
 * then whether s0's capture survived it. Generator 5 adds a fourth place,
 * the legacy default stream, with s0 a blocking stream (the legacy stream
 * synchronizes with it, so a call there may touch s0's capture). */
#include <stddef.h>

#include "gen.h"
#include "ops.h"

static const int k_entries[] = {
    F_StreamQuery, F_StreamSynchronize, F_StreamGetPriority, F_StreamGetFlags,
    F_StreamGetDevice, F_StreamGetCtx, F_StreamGetCtx_v2, F_StreamGetId,
    F_StreamIsCapturing, F_StreamGetCaptureInfo, F_EventRecord, F_EventRecordWithFlags,
    F_StreamWaitEvent, F_LaunchHostFunc, F_StreamWriteValue64, F_StreamWaitValue64,
    F_StreamCreateWithPriority, F_StreamDestroy, F_EventCreate, F_EventDestroy,
    F_EventQuery, F_EventSynchronize, F_EventElapsedTime, F_IpcGetEventHandle,
    F_CtxGetCurrent, F_CtxPushCurrent, F_CtxGetDevice, F_CtxGetStreamPriorityRange,
    F_DevicePrimaryCtxRetain, F_DeviceGet, F_DeviceGetCount, F_DeviceGetAttribute,
    F_MemHostAlloc, F_MemHostGetDevicePointer, F_UserObjectCreate,
    F_ThreadExchangeStreamCaptureMode,
};
enum { NENTRY = sizeof k_entries / sizeof k_entries[0], NMODE = 3, NPLACE = 4 };
static const char *k_places[NPLACE] = {"capturing-stream", "other-stream", "other-thread",
                                       "legacy-stream"};

static int places(int generator) { return generator >= 5 ? NPLACE : NPLACE - 1; }

int legality_count(int generator) { return NENTRY * NMODE * places(generator); }

/* The one call, on stream si from thread th. Fixtures: e0, e1 recorded and
 * complete, e2 interprocess, e3 free, m0 pinned memory, s2 spare. */
static void probe(struct prog *p, int f, int si, int th) {
  switch (f) {
  case F_StreamQuery: op_stream_query(p, si, th); break;
  case F_StreamSynchronize: op_stream_sync(p, si, th); break;
  case F_EventRecord: op_record(p, 3, si, th, 0, 0); break;
  case F_EventRecordWithFlags: op_record(p, 3, si, th, 1, 0); break;
  case F_StreamWaitEvent: op_wait(p, si, 0, 0, th); break;
  case F_LaunchHostFunc: op_gate(p, si, th); break;
  case F_StreamWriteValue64: op_write_value(p, si, 0, th); break;
  case F_StreamWaitValue64: op_wait_value(p, si, 0, 0, th); break;
  case F_StreamCreateWithPriority: op_stream_create(p, 4, 1, 0, 0); break;
  case F_StreamDestroy: op_stream_destroy(p, 2); break; /* s0 would leave its capture behind */
  case F_EventCreate: op_event_create(p, 4, 2, 0); break;
  case F_EventDestroy: op_event_destroy(p, 1); break;
  case F_EventQuery: op_event_query(p, 0, th); break;
  case F_EventSynchronize: op_event_sync(p, 0, th); break;
  case F_EventElapsedTime: op_elapsed(p, 0, 1, 0); break;
  case F_IpcGetEventHandle: op_ipc(p, 2, 5, 0); break;
  case F_CtxPushCurrent: op_push(p, 0); op_pop(p, 0); break;
  case F_DevicePrimaryCtxRetain: op_retain_primary(p, 0); op_release_primary(p, 0); break;
  case F_DeviceGet: op_device(p, 0, 0); break;
  case F_DeviceGetCount: op_device(p, 2, 0); break;
  case F_DeviceGetAttribute: op_device(p, 1, 1); break;
  case F_MemHostAlloc: op_host_alloc(p, 1, 2); break;
  case F_MemHostGetDevicePointer: op_devptr(p, 0, 0); break;
  case F_UserObjectCreate: op_uobj_create(p, 0, 1); break;
  case F_ThreadExchangeStreamCaptureMode: op_exchange(p, CU_STREAM_CAPTURE_MODE_RELAXED, th);
    op_exchange(p, CU_STREAM_CAPTURE_MODE_GLOBAL, th); break;
  case F_CtxGetCurrent: case F_CtxGetDevice: case F_CtxGetStreamPriorityRange:
    op_ctx_call(p, f, th, 0); break;
  default: op_getter(p, f, si, th, 0); break;
  }
}

void prog_legality(struct prog *p, int k) {
  const int np = places(p->generator);
  int f = k_entries[k / (NMODE * np)], mode = k / np % NMODE, place = k % np;
  fprintf(p->out, "  # legality %s %s %s\n", tx_entry_name(f), mode_name(mode), k_places[place]);
  for (int i = 0; i < 3; i++) op_stream_create(p, i, i == 0 && place == 3 ? 0 : 1, 0, 0);
  for (int i = 0; i < 4; i++) op_event_create(p, i, i == 2 ? 6 : 0, 0);
  op_record(p, 0, 1, 0, 0, 0);
  op_record(p, 1, 1, 0, 0, 0);
  op_host_alloc(p, 0, 2);
  op_devptr(p, 0, 0);
  op_release(p);
  op_begin(p, 0, mode, 0);
  tx_note(p, "probe");
  probe(p, f, place == 0 ? 0 : place == 3 ? S_LEGACY : 1, place == 2);
  tx_note(p, "check");
  op_getter(p, F_StreamIsCapturing, 0, 0, 0);
  op_end(p, 0, 0);
}
