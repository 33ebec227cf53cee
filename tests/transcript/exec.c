/* Making one call on the program's thread or on its helper thread, and
 * writing its transcript line. */
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "prog.h"

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static struct call *pending;
static int done, stopping;
static pthread_t helper;

#define OUT(field) (c->null_out ? NULL : &c->field)

static CUresult dispatch(struct call *c) {
  switch (c->f) {
  case F_DeviceGetCount: return D.DeviceGetCount(OUT(oi));
  case F_DeviceGet: return D.DeviceGet(OUT(od), c->i);
  case F_DevicePrimaryCtxRetain: return D.DevicePrimaryCtxRetain(OUT(oc), c->d);
  case F_DevicePrimaryCtxRelease: return D.DevicePrimaryCtxRelease(c->d);
  case F_CtxGetCurrent: return D.CtxGetCurrent(OUT(oc));
  case F_CtxSetCurrent: return D.CtxSetCurrent(c->c);
  case F_CtxPushCurrent: return D.CtxPushCurrent(c->c);
  case F_CtxPopCurrent: return D.CtxPopCurrent(OUT(oc));
  case F_CtxGetDevice: return D.CtxGetDevice(OUT(od));
  case F_CtxCreate: return D.CtxCreate(OUT(oc), c->flags, c->d);
  case F_CtxDestroy: return D.CtxDestroy(c->c);
  case F_CtxGetStreamPriorityRange:
    return D.CtxGetStreamPriorityRange(OUT(oi), c->null_out ? NULL : &c->oi2);
  case F_EventCreate: return D.EventCreate(OUT(oe), c->flags);
  case F_EventDestroy: return D.EventDestroy(c->e);
  case F_EventRecord: return D.EventRecord(c->e, c->s);
  case F_EventRecordWithFlags: return D.EventRecordWithFlags(c->e, c->s, c->flags);
  case F_EventQuery: return D.EventQuery(c->e);
  case F_EventSynchronize: return D.EventSynchronize(c->e);
  case F_EventElapsedTime: return D.EventElapsedTime(OUT(of), c->e, c->e2);
  case F_StreamCreateWithPriority: return D.StreamCreateWithPriority(OUT(os), c->flags, c->i);
  case F_StreamDestroy: return D.StreamDestroy(c->s);
  case F_StreamWaitEvent: return D.StreamWaitEvent(c->s, c->e, c->flags);
  case F_StreamQuery: return D.StreamQuery(c->s);
  case F_StreamSynchronize: return D.StreamSynchronize(c->s);
  case F_StreamGetPriority: return D.StreamGetPriority(c->s, OUT(oi));
  case F_StreamGetFlags: return D.StreamGetFlags(c->s, OUT(ou));
  case F_StreamGetDevice: return D.StreamGetDevice(c->s, OUT(od));
  case F_StreamGetCtx: return D.StreamGetCtx(c->s, OUT(oc));
  case F_StreamGetCtx_v2: return D.StreamGetCtx_v2(c->s, OUT(oc), &c->ogc);
  case F_StreamGetId: return D.StreamGetId(c->s, OUT(oid));
  case F_LaunchHostFunc: return D.LaunchHostFunc(c->s, c->fn, c->op);
  case F_IpcGetEventHandle: return D.IpcGetEventHandle(c->null_out ? NULL : &c->ipc, c->e);
  case F_IpcOpenEventHandle: return D.IpcOpenEventHandle(OUT(oe), c->ipc);
  case F_StreamIsCapturing: return D.StreamIsCapturing(c->s, OUT(ocs));
  case F_StreamGetCaptureInfo:
    return D.StreamGetCaptureInfo(c->s, OUT(ocs), &c->cap_id, NULL, NULL, NULL, NULL);
  case F_StreamBeginCapture: return D.StreamBeginCapture(c->s, (CUstreamCaptureMode)c->i);
  case F_StreamEndCapture: return D.StreamEndCapture(c->s, OUT(og));
  case F_GraphDestroy: return D.GraphDestroy(c->g);
  case F_ThreadExchangeStreamCaptureMode: return D.ThreadExchangeStreamCaptureMode(OUT(mode));
  case F_UserObjectCreate:
    return D.UserObjectCreate(OUT(ouo), c->op, c->fn, (unsigned)c->i, c->flags);
  case F_UserObjectRelease: return D.UserObjectRelease(c->u, (unsigned)c->i);
  case F_GraphRetainUserObject: return D.GraphRetainUserObject(c->g, c->u, (unsigned)c->i, c->flags);
  case F_DeviceGetAttribute: return D.DeviceGetAttribute(OUT(oi), (CUdevice_attribute)c->i, c->d);
  case F_MemHostAlloc: return D.MemHostAlloc(OUT(op), (size_t)c->v, c->flags);
  case F_MemFreeHost: return D.MemFreeHost(c->p);
  case F_MemHostGetDevicePointer: return D.MemHostGetDevicePointer(OUT(odp), c->p, c->flags);
  case F_MemHostRegister: return D.MemHostRegister(c->p, (size_t)c->v, c->flags);
  case F_MemHostUnregister: return D.MemHostUnregister(c->p);
  case F_StreamWriteValue64: return D.StreamWriteValue64(c->s, c->dp, c->v, c->flags);
  case F_StreamWaitValue64: return D.StreamWaitValue64(c->s, c->dp, c->v, c->flags);
  }
  return CUDA_ERROR_UNKNOWN;
}

/* The call each thread is in (F_COUNT: none), read by the recorder's
 * signal handler to say where a program hung or crashed; and, with
 * --timing, the time spent in each entry point, to say where a recording's
 * time goes on a real driver. */
volatile sig_atomic_t tx_in_call[2] = {F_COUNT, F_COUNT};
int tx_timing;
static double spent[2][F_COUNT];
static long made[2][F_COUNT];

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void run_here(struct call *c) {
  if (!tx_entry_present(c->f)) {
    c->missing = 1;
    return;
  }
  const int th = c->th ? 1 : 0;
  const double t0 = tx_timing ? now_s() : 0.0;
  tx_in_call[th] = c->f;
  c->r = dispatch(c);
  tx_in_call[th] = F_COUNT;
  if (tx_timing) spent[th][c->f] += now_s() - t0, made[th][c->f]++;
}

static int by_time(const void *a, const void *b) {
  const double x = spent[0][*(const int *)a] + spent[1][*(const int *)a];
  const double y = spent[0][*(const int *)b] + spent[1][*(const int *)b];
  return (x < y) - (x > y);
}

void tx_timing_report(FILE *f) {
  int order[F_COUNT];
  double total = 0;
  for (int i = 0; i < F_COUNT; i++) order[i] = i, total += spent[0][i] + spent[1][i];
  qsort(order, F_COUNT, sizeof order[0], by_time);
  fprintf(f, "record: %.3f s in driver calls; the 12 costliest entry points:\n", total);
  for (int k = 0; k < 12 && k < F_COUNT; k++) {
    const int i = order[k];
    const long n = made[0][i] + made[1][i];
    if (!n) break;
    fprintf(f, "record:   %-34s %8ld calls %9.3f s %10.1f us each\n", tx_entry_name(i), n,
            spent[0][i] + spent[1][i], 1e6 * (spent[0][i] + spent[1][i]) / (double)n);
  }
}

static void *helper_main(void *arg) {
  (void)arg;
  pthread_mutex_lock(&mu);
  for (;;) {
    while (!pending && !stopping) pthread_cond_wait(&cv, &mu);
    if (stopping) break;
    struct call *c = pending;
    pthread_mutex_unlock(&mu);
    /* The helper works in the program's current context, as a second
     * thread of the same application would. */
    if (D.CtxSetCurrent) D.CtxSetCurrent(c->helper_ctx);
    run_here(c);
    pthread_mutex_lock(&mu);
    pending = NULL;
    done = 1;
    pthread_cond_broadcast(&cv);
  }
  pthread_mutex_unlock(&mu);
  return NULL;
}

void tx_helper_start(void) { pthread_create(&helper, NULL, helper_main, NULL); }

void tx_helper_stop(void) {
  pthread_mutex_lock(&mu);
  stopping = 1;
  pthread_cond_broadcast(&cv);
  pthread_mutex_unlock(&mu);
  pthread_join(helper, NULL);
}

void tx_exec(struct call *c) {
  if (c->th == 0) {
    run_here(c);
    return;
  }
  pthread_mutex_lock(&mu);
  pending = c;
  done = 0;
  pthread_cond_broadcast(&cv);
  while (!done) pthread_cond_wait(&cv, &mu);
  pthread_mutex_unlock(&mu);
}

void tx_line(struct prog *p, const struct call *c, const char *args, const char *out) {
  p->calls++;
  const char *who = c->th ? "T " : "";
  if (c->missing) {
    fprintf(p->out, "  %s%s(%s) -> MISSING\n", who, tx_entry_name(c->f), args);
    return;
  }
  fprintf(p->out, "  %s%s(%s) -> %s%s%s\n", who, tx_entry_name(c->f), args,
          tx_status_name(c->r), out && *out ? " " : "", out ? out : "");
}

void tx_note(struct prog *p, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("  # ", p->out);
  vfprintf(p->out, fmt, ap);
  fputc('\n', p->out);
  va_end(ap);
}
