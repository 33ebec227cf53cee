/* Read off the real CUDA driver the results that the host emulation
 * (src/host/) must reproduce. Run on a GPU machine:
 *   cc -O2 tests/gpu/probe_semantics.c -I/usr/local/cuda/include \
 *      -L/usr/local/cuda/lib64/stubs -lcuda -lpthread -ldl -o /tmp/probe
 *   /tmp/probe [errors.txt]
 * Each line is "label -> CUresult name" (plus values where relevant).
 * With an argument it also writes the driver's name and description of
 * every CUresult it knows to that file.
 * Nothing here destroys an object twice or uses a destroyed object; the
 * calls most likely to misbehave run last. Two calls found to crash the
 * driver (cuGetProcAddress_v2 with pfn NULL, cuGetErrorName with str NULL)
 * are no longer made. Output of the run on an H200 (driver 580.159.04):
 * tests/gpu/probe_semantics.out.txt.
 * The cases a driver transcript can express are also in the transcripts'
 * probe program (tests/transcript/probe.c), which CI replays against the
 * emulation; this probe is kept for what a transcript cannot express: the
 * calls before cuInit, cuGetProcAddress_v2's variants, the error-name
 * table, device names and attribute values, kernels and times. */
#include <cuda.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *rname(CUresult r) {
  const char *n = NULL;
  if (cuGetErrorName(r, &n) != CUDA_SUCCESS || n == NULL) return "(unknown)";
  return n;
}
#define SHOW(label, call) do { CUresult r_ = (call); printf("%-66s -> %s\n", label, rname(r_)); } while (0)
#define SHOWV(label, call, fmt, val) do { CUresult r_ = (call); printf("%-66s -> %s", label, rname(r_)); \
    if (r_ == CUDA_SUCCESS) { printf("  [" fmt "]", val); } \
    printf("\n"); } while (0)
#define SECTION(t) printf("\n== %s\n", t)

struct gate { int open; };
static void gate_fn(void *p) {
  struct gate *g = (struct gate *)p;
  while (!__atomic_load_n(&g->open, __ATOMIC_ACQUIRE)) usleep(200);
}
static void gate_open(struct gate *g) { __atomic_store_n(&g->open, 1, __ATOMIC_RELEASE); }
static int counter;
static void count_fn(void *p) { (void)p; __atomic_add_fetch(&counter, 1, __ATOMIC_ACQ_REL); }
static int count_read(void) { return __atomic_load_n(&counter, __ATOMIC_ACQUIRE); }
static void nap(void) { usleep(30000); }

static CUcontext g_ctx;
struct pt_arg { CUevent ev; CUresult rec, query; };
static void *pt_thread(void *p) {
  struct pt_arg *a = (struct pt_arg *)p;
  cuCtxSetCurrent(g_ctx);
  a->rec = cuEventRecord(a->ev, CU_STREAM_PER_THREAD);
  usleep(30000);
  a->query = cuEventQuery(a->ev);
  return NULL;
}

#include <time.h>
static double now_ms(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1e3 + t.tv_nsec / 1e6; }
static void *opener(void *p) { usleep(150000); gate_open((struct gate *)p); return NULL; }
static void *pt_leaver(void *p) {
  cuCtxSetCurrent(g_ctx);
  cuLaunchHostFunc(CU_STREAM_PER_THREAD, gate_fn, p);
  cuLaunchHostFunc(CU_STREAM_PER_THREAD, count_fn, NULL);
  return NULL;
}
static void write_errors(const char *path) {
  FILE *f = fopen(path, "w");
  if (!f) return;
  for (int i = 0; i < 1100; i++) {
    const char *n = NULL, *s = NULL;
    if (cuGetErrorName((CUresult)i, &n) != CUDA_SUCCESS || !n) continue;
    cuGetErrorString((CUresult)i, &s);
    fprintf(f, "%d\t%s\t%s\n", i, n, s ? s : "(null)");
  }
  fclose(f);
}

static const char *procnames[] = {
  "cuInit", "cuDriverGetVersion", "cuGetErrorName", "cuGetErrorString", "cuDeviceGetCount", "cuDeviceGet",
  "cuDeviceGetName", "cuDeviceGetAttribute", "cuDevicePrimaryCtxRetain", "cuDevicePrimaryCtxRelease",
  "cuCtxGetCurrent", "cuCtxSetCurrent", "cuCtxPushCurrent", "cuCtxPopCurrent", "cuCtxGetDevice",
  "cuCtxGetStreamPriorityRange", "cuCtxSynchronize", "cuEventCreate", "cuEventDestroy", "cuEventRecord",
  "cuEventRecordWithFlags", "cuEventQuery", "cuEventSynchronize", "cuEventElapsedTime", "cuStreamCreate",
  "cuStreamCreateWithPriority", "cuStreamDestroy", "cuStreamWaitEvent", "cuStreamQuery", "cuStreamSynchronize",
  "cuLaunchHostFunc", "cuStreamGetPriority", "cuStreamGetFlags", "cuStreamGetDevice", "cuStreamGetCtx",
  "cuIpcGetEventHandle", "cuStreamIsCapturing", "cuGetProcAddress", NULL };

/* which exported name a cuGetProcAddress result is */
static const char *which(void *lib, const char *base, void *p) {
  static char buf[128];
  const char *suf[] = { "", "_v2", "_v3", "_v4", "_ptsz", "_v2_ptsz", "_ptds", "_v2_ptds", NULL };
  if (!p) return "(null)";
  for (int i = 0; suf[i]; i++) {
    snprintf(buf, sizeof buf, "%s%s", base, suf[i]);
    if (dlsym(lib, buf) == p) return buf;
  }
  return "(other)";
}

static void proc_case(void *lib, const char *name, int ver, cuuint64_t flags) {
  void *p = NULL; CUdriverProcAddressQueryResult st = (CUdriverProcAddressQueryResult)-1;
  CUresult r = cuGetProcAddress_v2(name, &p, ver, flags, &st);
  printf("getproc(%s, %d, flags %llu) -> %s status %d = %s\n", name, ver, (unsigned long long)flags, rname(r), (int)st,
         which(lib, name, p));
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  alarm(160);
  CUdevice dev; CUcontext ctx; int v = 0; unsigned u = 0; float ms = 0;
  CUcontext c = NULL;

  SECTION("before cuInit");
  SHOWV("cuDriverGetVersion before init", cuDriverGetVersion(&v), "%d", v);
  SHOWV("cuDeviceGetCount before init", cuDeviceGetCount(&v), "%d", v);
  SHOW("cuDeviceGet before init", cuDeviceGet(&dev, 0));
  SHOW("cuCtxGetCurrent before init", cuCtxGetCurrent(&c));
  SHOW("cuCtxSetCurrent(NULL) before init", cuCtxSetCurrent(NULL));
  SHOW("cuEventCreate before init", cuEventCreate(&(CUevent){0}, 0));
  { const char *s = NULL; SHOW("cuGetErrorName before init", cuGetErrorName(CUDA_ERROR_NOT_READY, &s)); }
  { void *p = NULL; CUdriverProcAddressQueryResult st;
    SHOW("cuGetProcAddress_v2(cuEventQuery) before init", cuGetProcAddress_v2("cuEventQuery", &p, 13000, 0, &st)); }
  SHOW("cuInit(0)", cuInit(0));

  SECTION("8. versions, devices");
  SHOWV("cuDriverGetVersion", cuDriverGetVersion(&v), "%d", v);
  SHOWV("cuDeviceGetCount", cuDeviceGetCount(&v), "%d", v);
  SHOW("cuDeviceGet(0)", cuDeviceGet(&dev, 0));
  { CUdevice d2; SHOW("cuDeviceGet(count)", cuDeviceGet(&d2, v)); SHOW("cuDeviceGet(-1)", cuDeviceGet(&d2, -1));
    SHOW("cuDeviceGet(NULL, 0)", cuDeviceGet(NULL, 0)); }
  { char name[256]; SHOWV("cuDeviceGetName", cuDeviceGetName(name, sizeof name, dev), "%s", name);
    SHOW("cuDeviceGetName(bad device 99)", cuDeviceGetName(name, sizeof name, 99)); }
  SHOWV("attr PCI_BUS_ID", cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, dev), "%d", v);
  SHOWV("attr PCI_DEVICE_ID", cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, dev), "%d", v);
  SHOWV("attr PCI_DOMAIN_ID", cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, dev), "%d", v);
  SHOWV("attr COMPUTE_CAPABILITY_MAJOR", cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev), "%d", v);
  SHOWV("attr COMPUTE_CAPABILITY_MINOR", cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev), "%d", v);
  SHOWV("attr MULTIPROCESSOR_COUNT", cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev), "%d", v);
  SHOWV("attr TIMELINE_SEMAPHORE_INTEROP", cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_TIMELINE_SEMAPHORE_INTEROP_SUPPORTED, dev), "%d", v);
  SHOWV("attr 9999", cuDeviceGetAttribute(&v, (CUdevice_attribute)9999, dev), "%d", v);
  SHOW("attr PCI_BUS_ID bad device 99", cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, 99));

  SECTION("contexts");
  SHOW("cuCtxGetCurrent after init, nothing set", cuCtxGetCurrent(&c)); printf("   current %s\n", c ? "non-NULL" : "NULL");
  SHOW("cuCtxGetDevice with no context", cuCtxGetDevice(&dev));
  SHOW("cuCtxSynchronize with no context", cuCtxSynchronize());
  SHOW("cuCtxPopCurrent with empty stack", cuCtxPopCurrent(&c));
  SHOW("cuDevicePrimaryCtxRetain(bad device 99)", cuDevicePrimaryCtxRetain(&c, 99));
  SHOW("cuDevicePrimaryCtxRelease(bad device 99)", cuDevicePrimaryCtxRelease(99));
  SHOW("cuDevicePrimaryCtxRetain(dev 0)", cuDevicePrimaryCtxRetain(&ctx, 0));
  { CUcontext c2 = NULL; SHOW("cuDevicePrimaryCtxRetain again", cuDevicePrimaryCtxRetain(&c2, 0));
    printf("   same CUcontext: %d\n", c2 == ctx); SHOW("cuDevicePrimaryCtxRelease (back to 1)", cuDevicePrimaryCtxRelease(0)); }
  SHOW("cuCtxPushCurrent(NULL)", cuCtxPushCurrent(NULL));
  SHOW("cuCtxPushCurrent(ctx)", cuCtxPushCurrent(ctx));
  SHOW("cuCtxPushCurrent(ctx) twice", cuCtxPushCurrent(ctx));
  SHOW("cuCtxSetCurrent(NULL) with 2 pushed", cuCtxSetCurrent(NULL));
  c = (CUcontext)1; SHOW("cuCtxGetCurrent", cuCtxGetCurrent(&c)); printf("   current %s\n", c == ctx ? "ctx" : c ? "other" : "NULL");
  c = (CUcontext)1; SHOW("cuCtxPopCurrent", cuCtxPopCurrent(&c)); printf("   popped %s\n", c == ctx ? "ctx" : c ? "other" : "NULL");
  c = (CUcontext)1; SHOW("cuCtxGetCurrent", cuCtxGetCurrent(&c)); printf("   current %s\n", c == ctx ? "ctx" : c ? "other" : "NULL");
  c = (CUcontext)1; SHOW("cuCtxPopCurrent", cuCtxPopCurrent(&c)); printf("   popped %s\n", c == ctx ? "ctx" : c ? "other" : "NULL");
  c = (CUcontext)1; SHOW("cuCtxPopCurrent", cuCtxPopCurrent(&c)); printf("   popped %s\n", c == ctx ? "ctx" : c ? "other" : "NULL");
  SHOW("cuCtxPopCurrent(NULL)", cuCtxPushCurrent(ctx) == CUDA_SUCCESS ? cuCtxPopCurrent(NULL) : CUDA_ERROR_UNKNOWN);
  c = (CUcontext)1; SHOW("cuCtxGetCurrent after pop(NULL)", cuCtxGetCurrent(&c)); printf("   current %s\n", c == ctx ? "ctx" : c ? "other" : "NULL");
  SHOW("cuCtxSetCurrent(ctx)", cuCtxSetCurrent(ctx));
  g_ctx = ctx;
  SHOW("cuCtxGetDevice", cuCtxGetDevice(&dev));
  { int lo = 99, hi = 99; CUresult r = cuCtxGetStreamPriorityRange(&lo, &hi);
    printf("%-66s -> %s  [least %d greatest %d]\n", "cuCtxGetStreamPriorityRange", rname(r), lo, hi);
    SHOW("cuCtxGetStreamPriorityRange(NULL, &hi)", cuCtxGetStreamPriorityRange(NULL, &hi));
    SHOW("cuCtxGetStreamPriorityRange(NULL, NULL)", cuCtxGetStreamPriorityRange(NULL, NULL)); }

  SECTION("4. flags");
  CUevent e7 = NULL, e3 = NULL, e5 = NULL, ex = NULL;
  SHOW("cuEventCreate flags 7", cuEventCreate(&e7, 7));
  SHOW("cuEventCreate flags 3", cuEventCreate(&e3, 3));
  SHOW("cuEventCreate flags 5", cuEventCreate(&e5, 5));
  if (e5) { cuEventDestroy(e5); e5 = NULL; }
  SHOW("cuEventCreate flags 6", cuEventCreate(&ex, 6)); if (ex) { cuEventDestroy(ex); ex = NULL; }
  SHOW("cuEventCreate flags 0x8", cuEventCreate(&ex, 0x8)); if (ex) { cuEventDestroy(ex); ex = NULL; }
  SHOW("cuEventCreate flags 0x10", cuEventCreate(&ex, 0x10)); if (ex) { cuEventDestroy(ex); ex = NULL; }
  SHOW("cuEventCreate(NULL, 0)", cuEventCreate(NULL, 0));
  CUstream s2f = NULL, s3f = NULL, sp2 = NULL, snb, sb;
  SHOW("cuStreamCreate flags 2", cuStreamCreate(&s2f, 2));
  SHOW("cuStreamCreate flags 3", cuStreamCreate(&s3f, 3));
  SHOW("cuStreamCreate(NULL, 0)", cuStreamCreate(NULL, 0));
  SHOW("cuStreamCreateWithPriority flags 2", cuStreamCreateWithPriority(&sp2, 2, 0));
  if (s2f) cuStreamDestroy(s2f);
  if (s3f) cuStreamDestroy(s3f);
  if (sp2) cuStreamDestroy(sp2);
  SHOW("cuStreamCreate NON_BLOCKING", cuStreamCreate(&snb, CU_STREAM_NON_BLOCKING));
  SHOW("cuStreamCreate DEFAULT", cuStreamCreate(&sb, CU_STREAM_DEFAULT));
  SHOWV("cuStreamGetFlags(NON_BLOCKING stream)", cuStreamGetFlags(snb, &u), "%u", u);
  SHOWV("cuStreamGetFlags(blocking stream)", cuStreamGetFlags(sb, &u), "%u", u);
  u = 77; SHOWV("cuStreamGetFlags(LEGACY)", cuStreamGetFlags(CU_STREAM_LEGACY, &u), "%u", u);
  u = 77; SHOWV("cuStreamGetFlags(NULL)", cuStreamGetFlags(NULL, &u), "%u", u);
  u = 77; SHOWV("cuStreamGetFlags(PER_THREAD)", cuStreamGetFlags(CU_STREAM_PER_THREAD, &u), "%u", u);
  v = 77; SHOWV("cuStreamGetPriority(LEGACY)", cuStreamGetPriority(CU_STREAM_LEGACY, &v), "%d", v);
  v = 77; SHOWV("cuStreamGetPriority(PER_THREAD)", cuStreamGetPriority(CU_STREAM_PER_THREAD, &v), "%d", v);
  v = 77; SHOWV("cuStreamGetPriority(NULL)", cuStreamGetPriority(NULL, &v), "%d", v);
  v = 77; SHOWV("cuStreamGetPriority(blocking stream)", cuStreamGetPriority(sb, &v), "%d", v);
  SHOW("cuStreamGetPriority(s, NULL)", cuStreamGetPriority(sb, NULL));
  SHOW("cuStreamGetFlags(s, NULL)", cuStreamGetFlags(sb, NULL));
  { CUdevice d = 77; SHOWV("cuStreamGetDevice(PER_THREAD)", cuStreamGetDevice(CU_STREAM_PER_THREAD, &d), "%d", d);
    SHOWV("cuStreamGetDevice(NULL)", cuStreamGetDevice(NULL, &d), "%d", d); }
  { CUcontext sc = NULL; SHOW("cuStreamGetCtx(LEGACY)", cuStreamGetCtx(CU_STREAM_LEGACY, &sc)); printf("   ctx %s\n", sc == ctx ? "ctx" : "other");
    SHOW("cuStreamGetCtx(snb)", cuStreamGetCtx(snb, &sc)); printf("   ctx %s\n", sc == ctx ? "ctx" : "other"); }
  { CUstreamCaptureStatus cs = (CUstreamCaptureStatus)77;
    SHOWV("cuStreamIsCapturing(snb)", cuStreamIsCapturing(snb, &cs), "%d", (int)cs);
    cs = (CUstreamCaptureStatus)77; SHOWV("cuStreamIsCapturing(LEGACY)", cuStreamIsCapturing(CU_STREAM_LEGACY, &cs), "%d", (int)cs); }

  SECTION("8. priorities");
  { CUstream sp; v = 77;
    SHOW("cuStreamCreateWithPriority(-100)", cuStreamCreateWithPriority(&sp, 0, -100));
    SHOWV("   priority", cuStreamGetPriority(sp, &v), "%d", v); cuStreamDestroy(sp);
    SHOW("cuStreamCreateWithPriority(7)", cuStreamCreateWithPriority(&sp, 0, 7));
    SHOWV("   priority", cuStreamGetPriority(sp, &v), "%d", v); cuStreamDestroy(sp);
    SHOW("cuStreamCreateWithPriority(-3, NON_BLOCKING)", cuStreamCreateWithPriority(&sp, 1, -3));
    SHOWV("   priority", cuStreamGetPriority(sp, &v), "%d", v);
    SHOWV("   flags", cuStreamGetFlags(sp, &u), "%u", u); cuStreamDestroy(sp); }

  SECTION("null handles / args");
  SHOW("cuEventQuery(NULL)", cuEventQuery(NULL));
  SHOW("cuEventSynchronize(NULL)", cuEventSynchronize(NULL));
  SHOW("cuEventRecord(NULL, snb)", cuEventRecord(NULL, snb));
  SHOW("cuEventElapsedTime(&ms, NULL, e3)", cuEventElapsedTime(&ms, NULL, e3));
  SHOW("cuEventDestroy(NULL)", cuEventDestroy(NULL));
  SHOW("cuStreamWaitEvent(snb, NULL, 0)", cuStreamWaitEvent(snb, NULL, 0));
  { CUevent a0; cuEventCreate(&a0, 0); cuEventRecord(a0, snb); cuEventSynchronize(a0);
    SHOW("cuEventElapsedTime(NULL ptr, a, a)", cuEventElapsedTime(NULL, a0, a0)); cuEventDestroy(a0); }

  SECTION("1/12. wait and record flags outside capture");
  CUevent a, b;
  cuEventCreate(&a, 0); cuEventCreate(&b, 0);
  cuEventRecord(a, snb); cuEventSynchronize(a);
  SHOW("cuStreamWaitEvent(s, recorded, EXTERNAL=1)", cuStreamWaitEvent(sb, a, 1));
  SHOW("cuStreamWaitEvent(s, recorded, 0x2)", cuStreamWaitEvent(sb, a, 2));
  SHOW("cuEventRecordWithFlags(ev, s, 0)", cuEventRecordWithFlags(b, snb, 0));
  SHOW("cuEventRecordWithFlags(ev, s, EXTERNAL)", cuEventRecordWithFlags(b, snb, 1));
  SHOW("cuEventRecordWithFlags(ev, NULL, EXTERNAL)", cuEventRecordWithFlags(b, NULL, 1));
  SHOW("cuEventRecordWithFlags(ev, NULL, 0x2)", cuEventRecordWithFlags(b, NULL, 2));
  cuCtxSynchronize();

  SECTION("3. elapsed combinations");
  {
    CUevent never, rec, rec2, dis_rec, dis_never, pend, bsync;
    struct gate g = {0};
    CUstream sg; cuStreamCreate(&sg, CU_STREAM_NON_BLOCKING);
    cuEventCreate(&never, 0); cuEventCreate(&rec, 0); cuEventCreate(&rec2, 0); cuEventCreate(&dis_rec, CU_EVENT_DISABLE_TIMING);
    cuEventCreate(&dis_never, CU_EVENT_DISABLE_TIMING); cuEventCreate(&pend, 0); cuEventCreate(&bsync, CU_EVENT_BLOCKING_SYNC);
    cuEventRecord(rec, snb); cuEventRecord(dis_rec, snb); cuEventRecord(bsync, snb); cuEventRecord(rec2, snb);
    cuStreamSynchronize(snb);
    cuLaunchHostFunc(sg, gate_fn, &g); cuEventRecord(pend, sg);
    SHOW("query(pending) [setup check]", cuEventQuery(pend));
    SHOW("query(never)", cuEventQuery(never));
    SHOW("query(dis_never)", cuEventQuery(dis_never));
    SHOW("elapsed(never, recorded)", cuEventElapsedTime(&ms, never, rec));
    SHOW("elapsed(recorded, never)", cuEventElapsedTime(&ms, rec, never));
    SHOW("elapsed(never, never)", cuEventElapsedTime(&ms, never, never));
    SHOW("elapsed(dis recorded, never)", cuEventElapsedTime(&ms, dis_rec, never));
    SHOW("elapsed(never, dis recorded)", cuEventElapsedTime(&ms, never, dis_rec));
    SHOW("elapsed(dis recorded, recorded)", cuEventElapsedTime(&ms, dis_rec, rec));
    SHOW("elapsed(recorded, dis recorded)", cuEventElapsedTime(&ms, rec, dis_rec));
    SHOW("elapsed(dis recorded, dis recorded)", cuEventElapsedTime(&ms, dis_rec, dis_rec));
    SHOW("elapsed(dis never, recorded)", cuEventElapsedTime(&ms, dis_never, rec));
    SHOW("elapsed(never, pending)", cuEventElapsedTime(&ms, never, pend));
    SHOW("elapsed(pending, never)", cuEventElapsedTime(&ms, pend, never));
    SHOW("elapsed(pending, dis recorded)", cuEventElapsedTime(&ms, pend, dis_rec));
    SHOW("elapsed(dis recorded, pending)", cuEventElapsedTime(&ms, dis_rec, pend));
    SHOW("elapsed(pending, dis never)", cuEventElapsedTime(&ms, pend, dis_never));
    SHOW("elapsed(pending, pending)", cuEventElapsedTime(&ms, pend, pend));
    SHOW("elapsed(pending, recorded)", cuEventElapsedTime(&ms, pend, rec));
    SHOW("elapsed(NULL, pending)", cuEventElapsedTime(&ms, NULL, pend));
    SHOW("elapsed(pending, NULL)", cuEventElapsedTime(&ms, pend, NULL));
    SHOW("elapsed(NULL, never)", cuEventElapsedTime(&ms, NULL, never));
    ms = -1; SHOWV("elapsed(bsync, recorded)", cuEventElapsedTime(&ms, bsync, rec2), "%.6f", ms);
    ms = -1; SHOWV("elapsed(recorded, bsync)", cuEventElapsedTime(&ms, rec, bsync), "%.6f", ms);
    ms = -1; SHOWV("elapsed(same recorded event)", cuEventElapsedTime(&ms, rec, rec), "%.6f", ms);
    ms = -1; SHOWV("elapsed(rec2, rec) end before start", cuEventElapsedTime(&ms, rec2, rec), "%.6f", ms);
    /* host funcs of two streams: run concurrently? */
    int before = count_read();
    cuLaunchHostFunc(snb, count_fn, NULL); nap();
    printf("%-66s -> %d\n", "host func on other stream ran while a gate host func blocks", count_read() - before);
    gate_open(&g);
    SHOW("synchronize(pending)", cuEventSynchronize(pend));
    ms = -1; SHOWV("elapsed(rec, pend) after done", cuEventElapsedTime(&ms, rec, pend), "%.3f", ms);
    cuStreamSynchronize(snb);
    cuEventDestroy(never); cuEventDestroy(rec); cuEventDestroy(rec2); cuEventDestroy(dis_rec); cuEventDestroy(dis_never);
    cuEventDestroy(pend); cuEventDestroy(bsync); cuStreamDestroy(sg);
  }

  SECTION("5. re-record of a pending event");
  {
    struct gate g = {0}; CUstream sg; CUevent e, e2; cuStreamCreate(&sg, CU_STREAM_NON_BLOCKING);
    cuEventCreate(&e, 0); cuEventCreate(&e2, 0);
    cuLaunchHostFunc(sg, gate_fn, &g); cuEventRecord(e, sg);
    SHOW("query(pending) [setup check]", cuEventQuery(e));
    /* a stream waits on the first record */
    CUstream sw; cuStreamCreate(&sw, CU_STREAM_NON_BLOCKING);
    SHOW("wait on the pending record", cuStreamWaitEvent(sw, e, 0));
    SHOW("re-record pending event on a free stream", cuEventRecord(e, snb));
    nap();
    SHOW("query after re-record (free stream done)", cuEventQuery(e));
    cuEventRecord(e2, sw); nap();
    SHOW("stream that waited on the first record: query", cuStreamQuery(sw));
    SHOW("event recorded after that wait: query", cuEventQuery(e2));
    ms = -1; SHOWV("elapsed(e, e)", cuEventElapsedTime(&ms, e, e), "%.3f", ms);
    /* re-record done event onto the gated stream */
    SHOW("re-record it again on the gated stream", cuEventRecord(e, sg));
    SHOW("query", cuEventQuery(e));
    /* destroy a pending event waited on by another stream */
    CUevent ed; cuEventCreate(&ed, 0); cuEventRecord(ed, sg);
    CUstream sw2; cuStreamCreate(&sw2, CU_STREAM_NON_BLOCKING);
    cuStreamWaitEvent(sw2, ed, 0);
    SHOW("destroy pending event that a stream waits on", cuEventDestroy(ed));
    nap();
    SHOW("query of the waiting stream", cuStreamQuery(sw2));
    gate_open(&g);
    SHOW("synchronize(e)", cuEventSynchronize(e));
    SHOW("synchronize(sw)", cuStreamSynchronize(sw));
    SHOW("synchronize(sw2)", cuStreamSynchronize(sw2));
    SHOW("query(sw)", cuStreamQuery(sw));
    cuEventDestroy(e); cuEventDestroy(e2); cuStreamDestroy(sg); cuStreamDestroy(sw); cuStreamDestroy(sw2);
  }

  SECTION("6. wait on an event behind a host function");
  {
    struct gate g = {0}; CUstream s1, s2; CUevent e, e2;
    cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING); cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING);
    cuEventCreate(&e, 0); cuEventCreate(&e2, 0);
    cuLaunchHostFunc(s1, gate_fn, &g); cuEventRecord(e, s1);
    SHOW("wait", cuStreamWaitEvent(s2, e, 0));
    nap();
    SHOW("query(waiting stream, nothing after the wait)", cuStreamQuery(s2));
    cuEventRecord(e2, s2); nap();
    SHOW("query(waiting stream, record after the wait)", cuStreamQuery(s2));
    SHOW("query(event after the wait)", cuEventQuery(e2));
    int before = count_read();
    cuLaunchHostFunc(s2, count_fn, NULL); nap();
    printf("%-66s -> %d\n", "host func after the wait ran before release", count_read() - before);
    gate_open(&g);
    SHOW("synchronize(waiting stream)", cuStreamSynchronize(s2));
    printf("%-66s -> %d\n", "host func after the wait ran after release", count_read() - before);
    SHOW("query(waiting stream) after", cuStreamQuery(s2));
    SHOW("query(s1) after", cuStreamQuery(s1));
    cuEventDestroy(e); cuEventDestroy(e2); cuStreamDestroy(s1); cuStreamDestroy(s2);
  }

  SECTION("7. legacy default stream");
  {
    CUstream sbl, snbl; CUevent e; cuStreamCreate(&sbl, 0); cuStreamCreate(&snbl, CU_STREAM_NON_BLOCKING);
    cuEventCreate(&e, 0);
    struct gate g1 = {0};
    cuLaunchHostFunc(sbl, gate_fn, &g1); nap();
    SHOW("blocking stream busy: query(LEGACY) with no legacy work", cuStreamQuery(CU_STREAM_LEGACY));
    SHOW("blocking stream busy: query(NULL) with no legacy work", cuStreamQuery(NULL));
    SHOW("blocking stream busy: query(PER_THREAD) no work", cuStreamQuery(CU_STREAM_PER_THREAD));
    cuEventRecord(e, CU_STREAM_LEGACY); nap();
    SHOW("blocking stream busy: event recorded on LEGACY", cuEventQuery(e));
    SHOW("blocking stream busy: query(LEGACY) after record", cuStreamQuery(CU_STREAM_LEGACY));
    CUevent e2; cuEventCreate(&e2, 0);
    cuEventRecord(e2, snbl); nap();
    SHOW("non-blocking stream after that LEGACY record: event", cuEventQuery(e2));
    CUevent e3; cuEventCreate(&e3, 0);
    cuEventRecord(e3, CU_STREAM_PER_THREAD); nap();
    SHOW("PER_THREAD record after that LEGACY record: event", cuEventQuery(e3));
    CUstream sb2; cuStreamCreate(&sb2, 0); CUevent e4; cuEventCreate(&e4, 0);
    cuEventRecord(e4, sb2); nap();
    SHOW("other blocking stream record after LEGACY record: event", cuEventQuery(e4));
    SHOW("query(ctx sync) not run; cuStreamQuery(sb2)", cuStreamQuery(sb2));
    gate_open(&g1);
    SHOW("cuCtxSynchronize", cuCtxSynchronize());
    SHOW("query(e) after", cuEventQuery(e));
    SHOW("query(e4) after", cuEventQuery(e4));

    /* legacy busy: does a blocking stream's new work wait? */
    struct gate g2 = {0};
    cuLaunchHostFunc(CU_STREAM_LEGACY, gate_fn, &g2); nap();
    SHOW("LEGACY busy: query(blocking stream, no work)", cuStreamQuery(sbl));
    cuEventRecord(e, sbl); nap();
    SHOW("LEGACY busy: event recorded on blocking stream", cuEventQuery(e));
    SHOW("LEGACY busy: query(blocking stream) after record", cuStreamQuery(sbl));
    cuEventRecord(e2, snbl); nap();
    SHOW("LEGACY busy: event recorded on NON_BLOCKING stream", cuEventQuery(e2));
    cuEventRecord(e3, CU_STREAM_PER_THREAD); nap();
    SHOW("LEGACY busy: event recorded on PER_THREAD", cuEventQuery(e3));
    cuStreamWaitEvent(snbl, e, 0); cuEventRecord(e2, snbl); nap();
    SHOW("LEGACY busy: NON_BLOCKING waited on blocking's event", cuEventQuery(e2));
    gate_open(&g2);
    SHOW("cuStreamSynchronize(LEGACY)", cuStreamSynchronize(CU_STREAM_LEGACY));
    SHOW("cuStreamSynchronize(sbl)", cuStreamSynchronize(sbl));
    SHOW("cuCtxSynchronize", cuCtxSynchronize());

    /* non-blocking busy: legacy does not wait */
    struct gate g3 = {0};
    cuLaunchHostFunc(snbl, gate_fn, &g3); nap();
    cuEventRecord(e, CU_STREAM_LEGACY); nap();
    SHOW("NON_BLOCKING busy: event recorded on LEGACY", cuEventQuery(e));
    SHOW("NON_BLOCKING busy: query(LEGACY)", cuStreamQuery(CU_STREAM_LEGACY));
    SHOW("NON_BLOCKING busy: cuStreamSynchronize(LEGACY)", cuStreamSynchronize(CU_STREAM_LEGACY));
    gate_open(&g3);
    cuCtxSynchronize();

    /* PER_THREAD busy: legacy? */
    struct gate g4 = {0};
    cuLaunchHostFunc(CU_STREAM_PER_THREAD, gate_fn, &g4); nap();
    struct pt_arg pa; pa.ev = e3; pthread_t th; pthread_create(&th, NULL, pt_thread, &pa); pthread_join(th, NULL);
    printf("%-66s -> %s / %s\n", "PER_THREAD busy: other thread records on its PER_THREAD: rec/query", rname(pa.rec), rname(pa.query));
    cuEventRecord(e2, sbl); nap();
    SHOW("PER_THREAD busy: event recorded on blocking stream", cuEventQuery(e2));
    cuEventRecord(e, CU_STREAM_LEGACY); nap();
    SHOW("PER_THREAD busy: event recorded on LEGACY", cuEventQuery(e));
    gate_open(&g4);
    SHOW("cuStreamSynchronize(PER_THREAD)", cuStreamSynchronize(CU_STREAM_PER_THREAD));
    cuCtxSynchronize();

    /* ctx sync waits on a NON_BLOCKING stream */
    struct gate g5 = {0};
    cuLaunchHostFunc(snbl, gate_fn, &g5);
    gate_open(&g5);
    SHOW("cuCtxSynchronize with a gated non-blocking stream (opened)", cuCtxSynchronize());
    SHOW("query(snbl) after ctx sync", cuStreamQuery(snbl));
    cuEventDestroy(e); cuEventDestroy(e2); cuEventDestroy(e3); cuEventDestroy(e4);
    cuStreamDestroy(sbl); cuStreamDestroy(snbl); cuStreamDestroy(sb2);
  }

  SECTION("destroy a stream with pending work");
  {
    struct gate g = {0}; CUstream sd; CUevent e; cuStreamCreate(&sd, CU_STREAM_NON_BLOCKING); cuEventCreate(&e, 0);
    int before = count_read();
    cuLaunchHostFunc(sd, gate_fn, &g); cuLaunchHostFunc(sd, count_fn, NULL); cuEventRecord(e, sd);
    SHOW("cuStreamDestroy(busy stream)", cuStreamDestroy(sd));
    nap();
    SHOW("query(event recorded on it)", cuEventQuery(e));
    gate_open(&g);
    SHOW("synchronize(event)", cuEventSynchronize(e));
    printf("%-66s -> %d\n", "host func queued before destroy ran", count_read() - before);
    cuEventDestroy(e);
  }

  SECTION("2. no current context");
  {
    CUevent en, rec1, rec2; CUstream sn; struct gate g = {0};
    cuEventCreate(&en, 0); cuEventCreate(&rec1, 0); cuEventCreate(&rec2, 0); cuStreamCreate(&sn, 0);
    CUstream sdel; CUevent edel; cuStreamCreate(&sdel, 0); cuEventCreate(&edel, 0);
    cuEventRecord(rec1, sn); cuEventRecord(rec2, sn); cuStreamSynchronize(sn);
    cuCtxSetCurrent(NULL);
    c = (CUcontext)1; cuCtxGetCurrent(&c); printf("   current now %s\n", c ? "non-NULL" : "NULL");
    SHOW("cuEventQuery(recorded)", cuEventQuery(rec1));
    SHOW("cuEventQuery(never recorded)", cuEventQuery(en));
    SHOW("cuEventSynchronize(recorded)", cuEventSynchronize(rec1));
    SHOW("cuEventSynchronize(never recorded)", cuEventSynchronize(en));
    ms = -1; SHOWV("cuEventElapsedTime(rec, rec)", cuEventElapsedTime(&ms, rec1, rec2), "%.4f", ms);
    SHOW("cuEventElapsedTime(never, rec)", cuEventElapsedTime(&ms, en, rec2));
    SHOW("cuStreamWaitEvent(real, rec)", cuStreamWaitEvent(sn, rec1, 0));
    SHOW("cuStreamWaitEvent(LEGACY, rec)", cuStreamWaitEvent(CU_STREAM_LEGACY, rec1, 0));
    SHOW("cuStreamWaitEvent(NULL, rec)", cuStreamWaitEvent(NULL, rec1, 0));
    SHOW("cuStreamQuery(real)", cuStreamQuery(sn));
    SHOW("cuStreamQuery(LEGACY)", cuStreamQuery(CU_STREAM_LEGACY));
    SHOW("cuStreamQuery(NULL)", cuStreamQuery(NULL));
    SHOW("cuStreamQuery(PER_THREAD)", cuStreamQuery(CU_STREAM_PER_THREAD));
    SHOW("cuStreamSynchronize(real)", cuStreamSynchronize(sn));
    SHOW("cuStreamSynchronize(LEGACY)", cuStreamSynchronize(CU_STREAM_LEGACY));
    SHOW("cuStreamSynchronize(NULL)", cuStreamSynchronize(NULL));
    int before = count_read();
    SHOW("cuLaunchHostFunc(real)", cuLaunchHostFunc(sn, count_fn, NULL));
    SHOW("cuLaunchHostFunc(NULL)", cuLaunchHostFunc(NULL, count_fn, NULL));
    SHOW("cuEventRecord(ev, real)", cuEventRecord(rec2, sn));
    SHOW("cuEventRecord(ev, NULL)", cuEventRecord(rec2, NULL));
    SHOW("cuEventRecord(ev, LEGACY)", cuEventRecord(rec2, CU_STREAM_LEGACY));
    SHOW("cuEventRecord(ev, PER_THREAD)", cuEventRecord(rec2, CU_STREAM_PER_THREAD));
    SHOW("cuEventRecordWithFlags(ev, NULL, 0)", cuEventRecordWithFlags(rec2, NULL, 0));
    v = 77; SHOWV("cuStreamGetPriority(LEGACY)", cuStreamGetPriority(CU_STREAM_LEGACY, &v), "%d", v);
    v = 77; SHOWV("cuStreamGetPriority(PER_THREAD)", cuStreamGetPriority(CU_STREAM_PER_THREAD, &v), "%d", v);
    v = 77; SHOWV("cuStreamGetPriority(real)", cuStreamGetPriority(sn, &v), "%d", v);
    u = 77; SHOWV("cuStreamGetFlags(LEGACY)", cuStreamGetFlags(CU_STREAM_LEGACY, &u), "%u", u);
    u = 77; SHOWV("cuStreamGetFlags(real)", cuStreamGetFlags(sn, &u), "%u", u);
    { CUdevice d = 77; SHOWV("cuStreamGetDevice(LEGACY)", cuStreamGetDevice(CU_STREAM_LEGACY, &d), "%d", d);
      d = 77; SHOWV("cuStreamGetDevice(PER_THREAD)", cuStreamGetDevice(CU_STREAM_PER_THREAD, &d), "%d", d);
      d = 77; SHOWV("cuStreamGetDevice(real)", cuStreamGetDevice(sn, &d), "%d", d); }
    { CUcontext sc = NULL; SHOW("cuStreamGetCtx(real)", cuStreamGetCtx(sn, &sc)); printf("   ctx %s\n", sc == ctx ? "ctx" : "other");
      SHOW("cuStreamGetCtx(LEGACY)", cuStreamGetCtx(CU_STREAM_LEGACY, &sc)); }
    { CUstreamCaptureStatus cs; SHOW("cuStreamIsCapturing(real)", cuStreamIsCapturing(sn, &cs));
      SHOW("cuStreamIsCapturing(LEGACY)", cuStreamIsCapturing(CU_STREAM_LEGACY, &cs)); }
    { int lo, hi; SHOW("cuCtxGetStreamPriorityRange", cuCtxGetStreamPriorityRange(&lo, &hi)); }
    { CUstream sx = NULL, sy = NULL; CUevent ex2 = NULL; SHOW("cuStreamCreate", cuStreamCreate(&sx, 0));
      SHOW("cuStreamCreateWithPriority", cuStreamCreateWithPriority(&sy, 0, 0));
      SHOW("cuEventCreate", cuEventCreate(&ex2, 0));
      if (sx) cuStreamDestroy(sx);
      if (sy) cuStreamDestroy(sy);
      if (ex2) cuEventDestroy(ex2); }
    SHOW("cuCtxSynchronize", cuCtxSynchronize());
    { CUdevice d; SHOW("cuCtxGetDevice", cuCtxGetDevice(&d)); }
    /* a pending record, synchronized with no context */
    cuLaunchHostFunc(sn, gate_fn, &g); cuEventRecord(rec1, sn);
    SHOW("cuEventQuery(pending)", cuEventQuery(rec1));
    gate_open(&g);
    SHOW("cuEventSynchronize(pending)", cuEventSynchronize(rec1));
    SHOW("cuStreamSynchronize(real)", cuStreamSynchronize(sn));
    printf("%-66s -> %d\n", "host funcs that ran", count_read() - before);
    SHOW("cuEventDestroy", cuEventDestroy(edel));
    SHOW("cuStreamDestroy", cuStreamDestroy(sdel));
    cuCtxSetCurrent(ctx);
    cuCtxSynchronize();
    cuEventDestroy(en); cuEventDestroy(rec1); cuEventDestroy(rec2); cuStreamDestroy(sn);
  }

  SECTION("round 2: host function serialization");
  {
    struct gate g = {0}; CUstream s1, s2; CUevent e; cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING); cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING);
    cuEventCreate(&e, 0);
    int before = count_read();
    cuLaunchHostFunc(s1, gate_fn, &g);
    cuLaunchHostFunc(s2, count_fn, NULL); cuEventRecord(e, s2);
    usleep(200000);
    printf("%-66s -> %d\n", "other stream's host func ran within 200 ms of a blocked one", count_read() - before);
    SHOW("event recorded after it", cuEventQuery(e));
    SHOW("query(s2)", cuStreamQuery(s2));
    CUcontext c2 = NULL;
    if (cuCtxCreate_v4(&c2, NULL, 0, dev) == CUDA_SUCCESS) {
      CUstream s3; CUevent e3; cuStreamCreate(&s3, CU_STREAM_NON_BLOCKING); cuEventCreate(&e3, 0);
      int b2 = count_read();
      cuLaunchHostFunc(s3, count_fn, NULL); cuEventRecord(e3, s3);
      usleep(200000);
      printf("%-66s -> %d\n", "host func in ANOTHER context ran while one is blocked", count_read() - b2);
      SHOW("event after it (other ctx)", cuEventQuery(e3));
      gate_open(&g);
      cuStreamSynchronize(s3); cuEventDestroy(e3); cuStreamDestroy(s3);
      cuCtxDestroy_v2(c2);
      cuCtxSetCurrent(ctx);
    }
    gate_open(&g);
    cuCtxSynchronize();
    printf("%-66s -> %d\n", "after release, host funcs that ran", count_read() - before);
    cuEventDestroy(e); cuStreamDestroy(s1); cuStreamDestroy(s2);
  }

  SECTION("round 2: legacy sync waits on blocking streams");
  {
    struct gate g = {0}; CUstream sbk; cuStreamCreate(&sbk, 0);
    cuLaunchHostFunc(CU_STREAM_PER_THREAD, gate_fn, &g); nap();
    SHOW("PER_THREAD busy: query(LEGACY) with no legacy work", cuStreamQuery(CU_STREAM_LEGACY));
    gate_open(&g); cuCtxSynchronize();
    struct gate g2 = {0};
    cuLaunchHostFunc(sbk, gate_fn, &g2);
    pthread_t th; pthread_create(&th, NULL, opener, &g2);
    double t0 = now_ms();
    SHOW("blocking busy: cuStreamSynchronize(LEGACY), no legacy work", cuStreamSynchronize(CU_STREAM_LEGACY));
    printf("   waited %.0f ms (gate opens after ~150 ms)\n", now_ms() - t0);
    pthread_join(th, NULL);
    cuCtxSynchronize();
    struct gate g3 = {0};
    cuLaunchHostFunc(CU_STREAM_LEGACY, gate_fn, &g3);
    pthread_create(&th, NULL, opener, &g3);
    t0 = now_ms();
    SHOW("LEGACY busy: cuStreamSynchronize(blocking, no work)", cuStreamSynchronize(sbk));
    printf("   waited %.0f ms (gate opens after ~150 ms)\n", now_ms() - t0);
    pthread_join(th, NULL);
    cuCtxSynchronize();
    /* a thread leaves work gated on its per-thread stream and exits */
    struct gate g4 = {0};
    int before = count_read();
    pthread_t op; pthread_create(&op, NULL, opener, &g4);
    t0 = now_ms();
    pthread_create(&th, NULL, pt_leaver, &g4); pthread_join(th, NULL);
    printf("   joining the thread took %.0f ms (gate opens after ~150 ms)\n", now_ms() - t0);
    pthread_join(op, NULL);
    SHOW("cuCtxSynchronize after a thread exited with PT work", cuCtxSynchronize());
    printf("%-66s -> %d\n", "its host func ran", count_read() - before);
    cuStreamDestroy(sbk);
  }

  SECTION("round 2: check order");
  {
    CUevent ev, nev; CUstream sx = NULL; cuEventCreate(&ev, 0); cuEventCreate(&nev, 0); cuStreamCreate(&sx, CU_STREAM_NON_BLOCKING);
    cuEventRecord(ev, sx); cuStreamSynchronize(sx);
    SHOW("cuEventRecordWithFlags(NULL, s, 0x40)", cuEventRecordWithFlags(NULL, sx, 0x40));
    SHOW("cuEventRecordWithFlags(NULL, s, EXTERNAL)", cuEventRecordWithFlags(NULL, sx, 1));
    SHOW("cuStreamWaitEvent(s, NULL, 0x10)", cuStreamWaitEvent(sx, NULL, 0x10));
    SHOW("cuStreamWaitEvent(s, NULL, EXTERNAL)", cuStreamWaitEvent(sx, NULL, 1));
    SHOW("cuStreamWaitEvent(s, never recorded, EXTERNAL)", cuStreamWaitEvent(sx, nev, 1));
    SHOW("cuEventCreate(NULL, 0x10)", cuEventCreate(NULL, 0x10));
    SHOW("cuStreamCreate(NULL, 0x4)", cuStreamCreate(NULL, 0x4));
    SHOW("cuEventRecordWithFlags(ev, s, 3)", cuEventRecordWithFlags(ev, sx, 3));
    SHOW("cuStreamWaitEvent(s, ev, 3)", cuStreamWaitEvent(sx, ev, 3));
    cuCtxSetCurrent(NULL);
    SHOW("no ctx: cuEventRecordWithFlags(ev, NULL, EXTERNAL)", cuEventRecordWithFlags(ev, NULL, 1));
    SHOW("no ctx: cuEventRecordWithFlags(ev, NULL, 0x40)", cuEventRecordWithFlags(ev, NULL, 0x40));
    SHOW("no ctx: cuEventRecordWithFlags(ev, s, EXTERNAL)", cuEventRecordWithFlags(ev, sx, 1));
    SHOW("no ctx: cuStreamWaitEvent(LEGACY, ev, 0x10)", cuStreamWaitEvent(CU_STREAM_LEGACY, ev, 0x10));
    SHOW("no ctx: cuStreamWaitEvent(LEGACY, NULL, 0)", cuStreamWaitEvent(CU_STREAM_LEGACY, NULL, 0));
    SHOW("no ctx: cuStreamWaitEvent(s, ev, EXTERNAL)", cuStreamWaitEvent(sx, ev, 1));
    SHOW("no ctx: cuEventRecord(NULL, LEGACY)", cuEventRecord(NULL, CU_STREAM_LEGACY));
    { CUevent t = NULL; SHOW("no ctx: cuEventCreate(&e, 0x10)", cuEventCreate(&t, 0x10)); if (t) cuEventDestroy(t); }
    SHOW("no ctx: cuEventCreate(NULL, 0)", cuEventCreate(NULL, 0));
    { CUstream t = NULL; SHOW("no ctx: cuStreamCreate(&s, 0x4)", cuStreamCreate(&t, 0x4)); if (t) cuStreamDestroy(t); }
    { CUstream t = NULL; SHOW("no ctx: cuStreamCreateWithPriority(&s, 4, 0)", cuStreamCreateWithPriority(&t, 4, 0)); if (t) cuStreamDestroy(t); }
    SHOW("no ctx: cuStreamCreate(NULL, 0)", cuStreamCreate(NULL, 0));
    SHOW("no ctx: cuCtxGetStreamPriorityRange(NULL, NULL)", cuCtxGetStreamPriorityRange(NULL, NULL));
    SHOW("no ctx: cuStreamGetPriority(LEGACY, NULL)", cuStreamGetPriority(CU_STREAM_LEGACY, NULL));
    SHOW("no ctx: cuLaunchHostFunc(LEGACY, NULL fn)", cuLaunchHostFunc(CU_STREAM_LEGACY, NULL, NULL));
    cuCtxSetCurrent(ctx);
    /* elapsed across contexts, pending/never */
    CUcontext c2 = NULL;
    if (cuCtxCreate_v4(&c2, NULL, 0, dev) == CUDA_SUCCESS) {
      CUevent ne; CUstream ns; cuEventCreate(&ne, 0); cuStreamCreate(&ns, CU_STREAM_NON_BLOCKING);
      cuEventRecord(ne, ns); cuStreamSynchronize(ns);
      struct gate g = {0}; CUevent pe; cuEventCreate(&pe, 0);
      cuLaunchHostFunc(sx, gate_fn, &g); cuEventRecord(pe, sx);
      SHOW("elapsed(other-ctx pending, recorded)", cuEventElapsedTime(&ms, pe, ne));
      SHOW("elapsed(recorded, other-ctx pending)", cuEventElapsedTime(&ms, ne, pe));
      SHOW("elapsed(other-ctx never, recorded)", cuEventElapsedTime(&ms, nev, ne));
      SHOW("elapsed(other-ctx recorded, recorded)", cuEventElapsedTime(&ms, ev, ne));
      SHOW("cuStreamWaitEvent(new stream, other-ctx pending)", cuStreamWaitEvent(ns, pe, 0));
      gate_open(&g);
      cuStreamSynchronize(ns); cuStreamSynchronize(sx);
      cuEventDestroy(pe); cuEventDestroy(ne); cuStreamDestroy(ns);
      cuCtxDestroy_v2(c2);
      cuCtxSetCurrent(ctx);
    }
    cuEventDestroy(ev); cuEventDestroy(nev); cuStreamDestroy(sx);
  }

  SECTION("per-thread stream identity");
  {
    CUcontext sc = NULL; cuStreamGetCtx(CU_STREAM_PER_THREAD, &sc);
    printf("   PER_THREAD ctx is %s\n", sc == ctx ? "ctx" : "other");
  }

  SECTION("10. objects of another context");
  {
    CUevent pa1, pa2, pdel; CUstream ps, pdels;
    cuEventCreate(&pa1, 0); cuEventCreate(&pa2, 0); cuEventCreate(&pdel, 0); cuStreamCreate(&ps, CU_STREAM_NON_BLOCKING);
    cuStreamCreate(&pdels, CU_STREAM_NON_BLOCKING);
    CUcontext c2 = NULL;
    CUresult r = cuCtxCreate_v4(&c2, NULL, 0, dev);
    printf("%-66s -> %s\n", "cuCtxCreate_v4(NULL params)", rname(r));
    if (r == CUDA_SUCCESS) {
      c = NULL; cuCtxGetCurrent(&c); printf("   current after create: %s\n", c == c2 ? "new" : c == ctx ? "primary" : "other");
      SHOW("record(primary ev, primary stream)", cuEventRecord(pa1, ps));
      SHOW("record(primary ev, primary stream) 2", cuEventRecord(pa2, ps));
      SHOW("synchronize(primary ev)", cuEventSynchronize(pa2));
      SHOW("query(primary ev)", cuEventQuery(pa1));
      ms = -1; SHOWV("elapsed(primary evs)", cuEventElapsedTime(&ms, pa1, pa2), "%.4f", ms);
      SHOW("query(primary stream)", cuStreamQuery(ps));
      SHOW("sync(primary stream)", cuStreamSynchronize(ps));
      SHOW("wait(primary stream, primary ev)", cuStreamWaitEvent(ps, pa1, 0));
      SHOW("wait(NULL = new ctx legacy, primary ev)", cuStreamWaitEvent(NULL, pa1, 0));
      SHOW("record(primary ev, NULL = new ctx legacy)", cuEventRecord(pa1, NULL));
      SHOW("record(primary ev, PER_THREAD of new ctx)", cuEventRecord(pa1, CU_STREAM_PER_THREAD));
      CUevent ne; CUstream ns;
      SHOW("create event in new ctx", cuEventCreate(&ne, 0));
      SHOW("create stream in new ctx", cuStreamCreate(&ns, CU_STREAM_NON_BLOCKING));
      SHOW("record(new ev, primary stream)", cuEventRecord(ne, ps));
      SHOW("record(primary ev, new stream)", cuEventRecord(pa1, ns));
      SHOW("wait(new stream, primary ev)", cuStreamWaitEvent(ns, pa2, 0));
      cuEventRecord(ne, ns); cuStreamSynchronize(ns);
      SHOW("elapsed(primary ev, new ev)", cuEventElapsedTime(&ms, pa2, ne));
      { CUcontext sc = NULL; cuStreamGetCtx(ps, &sc); printf("   GetCtx(primary stream) %s\n", sc == ctx ? "primary" : sc == c2 ? "new" : "other"); }
      { CUcontext sc = NULL; cuStreamGetCtx(CU_STREAM_LEGACY, &sc); printf("   GetCtx(LEGACY) %s\n", sc == ctx ? "primary" : sc == c2 ? "new" : "other"); }
      SHOW("destroy primary event from new ctx", cuEventDestroy(pdel));
      SHOW("destroy primary stream from new ctx", cuStreamDestroy(pdels));
      cuEventDestroy(ne); cuStreamDestroy(ns);
      SHOW("cuCtxDestroy(new)", cuCtxDestroy_v2(c2));
      c = (CUcontext)1; cuCtxGetCurrent(&c); printf("   current after destroy: %s\n", c == ctx ? "primary" : c ? "other" : "NULL");
    } else {
      cuEventDestroy(pdel); cuStreamDestroy(pdels);
    }
    cuCtxSetCurrent(ctx);
    cuCtxSynchronize();
    cuEventDestroy(pa1); cuEventDestroy(pa2); cuStreamDestroy(ps);
  }

  SECTION("11. IPC");
  {
    CUevent ie; CUipcEventHandle h;
    SHOW("create INTERPROCESS|DISABLE_TIMING", cuEventCreate(&ie, CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING));
    SHOW("cuIpcGetEventHandle", cuIpcGetEventHandle(&h, ie));
    SHOW("cuIpcGetEventHandle of flags-7 event", cuIpcGetEventHandle(&h, e7));
    SHOW("cuIpcGetEventHandle of flags-3 event", cuIpcGetEventHandle(&h, e3));
    cuEventDestroy(ie);
  }

  SECTION("13. resolution");
  {
    CUevent r1, r2; CUstream rs; cuEventCreate(&r1, 0); cuEventCreate(&r2, 0); cuStreamCreate(&rs, CU_STREAM_NON_BLOCKING);
    float best = 1e9f, worst = 0; int zeros = 0;
    for (int i = 0; i < 200; i++) {
      cuEventRecord(r1, rs); cuEventRecord(r2, rs); cuEventSynchronize(r2);
      float t = 0; cuEventElapsedTime(&t, r1, r2);
      if (t == 0) zeros++; else if (t < best) best = t;
      if (t > worst) worst = t;
    }
    printf("%-66s -> %.6f ms (zeros %d, max %.6f)\n", "smallest nonzero back-to-back elapsed", best, zeros, worst);
    cuEventDestroy(r1); cuEventDestroy(r2); cuStreamDestroy(rs);
  }

  SECTION("9. cuGetProcAddress_v2");
  {
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!lib) lib = dlopen("libcuda.so.1", RTLD_NOW);
    for (int i = 0; procnames[i]; i++) proc_case(lib, procnames[i], 13000, 0);
    proc_case(lib, "cuEventElapsedTime", 12000, 0);
    proc_case(lib, "cuEventElapsedTime", 12080, 0);
    proc_case(lib, "cuStreamGetDevice", 12000, 0);
    proc_case(lib, "cuStreamGetDevice", 12080, 0);
    proc_case(lib, "cuEventRecordWithFlags", 11000, 0);
    proc_case(lib, "cuGetProcAddress", 12000, 0);
    proc_case(lib, "cuCtxPushCurrent", 3000, 0);
    proc_case(lib, "cuCtxPushCurrent", 4000, 0);
    proc_case(lib, "cuStreamQuery", 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
    proc_case(lib, "cuEventRecord", 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
    proc_case(lib, "cuStreamWaitEvent", 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
    proc_case(lib, "cuEventQuery", 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
    proc_case(lib, "cuStreamQuery", 13000, CU_GET_PROC_ADDRESS_LEGACY_STREAM);
    proc_case(lib, "cuStreamQuery", 13000, 4);
    proc_case(lib, "cuEventQuery", 13000, 4);
    proc_case(lib, "cuEventQuery_v2", 13000, 0);
    proc_case(lib, "cuEventDestroy_v2", 13000, 0);
    proc_case(lib, "cuNoSuchThing", 13000, 0);
    { void *p = (void *)1; CUdriverProcAddressQueryResult st = (CUdriverProcAddressQueryResult)-1;
      CUresult r = cuGetProcAddress_v2("cuNoSuchThing", &p, 13000, 0, &st);
      printf("unknown: %s status %d pfn %s\n", rname(r), (int)st, p ? "non-NULL" : "NULL");
      r = cuGetProcAddress_v2("cuEventQuery", &p, 13000, 0, NULL);
      printf("status NULL: %s\n", rname(r));
      /* pfn NULL crashes the real driver (segfault, seen in the first run): not probed */
      p = (void *)1; r = cuGetProcAddress_v2("cuNoSuchThing", &p, 13000, 0, NULL);
      printf("unknown, status NULL: %s pfn %s\n", rname(r), p ? "non-NULL" : "NULL");
      p = (void *)1; r = cuGetProcAddress_v2("cuStreamGetDevice", &p, 12000, 0, NULL);
      printf("version too low, status NULL: %s pfn %s\n", rname(r), p ? "non-NULL" : "NULL");
      st = (CUdriverProcAddressQueryResult)-1; r = cuGetProcAddress_v2("cuEventQuery", &p, 13010, 0, &st);
      printf("version 13010 (> driver): %s status %d\n", rname(r), (int)st);
      st = (CUdriverProcAddressQueryResult)-1; r = cuGetProcAddress_v2("cuEventQuery", &p, 14000, 0, &st);
      printf("version 14000 (> driver): %s status %d\n", rname(r), (int)st);
      st = (CUdriverProcAddressQueryResult)-1; r = cuGetProcAddress_v2("cuNoSuchThing", &p, 14000, 0, &st);
      printf("unknown, version 14000: %s status %d\n", rname(r), (int)st);
      st = (CUdriverProcAddressQueryResult)-1; r = cuGetProcAddress_v2("cuEventQuery", &p, 13000, 3, &st);
      printf("flags 3: %s status %d\n", rname(r), (int)st);
      st = (CUdriverProcAddressQueryResult)-1; r = cuGetProcAddress_v2("", &p, 13000, 0, &st);
      printf("empty name: %s status %d\n", rname(r), (int)st);
      { CUresult (*v1)(const char *, void **, int, cuuint64_t) = NULL;
        *(void **)&v1 = dlsym(lib, "cuGetProcAddress");
        if (v1) {
          p = (void *)1; r = v1("cuNoSuchThing", &p, 13000, 0);
          printf("4-arg cuGetProcAddress(unknown): %s pfn %s\n", rname(r), p ? "non-NULL" : "NULL");
          p = NULL; r = v1("cuEventElapsedTime", &p, 13000, 0);
          printf("4-arg cuGetProcAddress(cuEventElapsedTime): %s = %s\n", rname(r), which(lib, "cuEventElapsedTime", p));
          p = (void *)1; r = v1("cuStreamGetDevice", &p, 12000, 0);
          printf("4-arg cuGetProcAddress(cuStreamGetDevice, 12000): %s pfn %s\n", rname(r), p ? "non-NULL" : "NULL");
        } }
      proc_case(lib, "cuCtxGetDevice", 12000, 0);
      proc_case(lib, "cuCtxSynchronize", 12090, 0);
      proc_case(lib, "cuStreamGetCtx", 12000, 0);
      proc_case(lib, "cuStreamGetCtx", 13000, 2);
      proc_case(lib, "cuLaunchHostFunc", 9000, 0);
      proc_case(lib, "cuEventElapsedTime", 13000, 2);
      r = cuGetProcAddress_v2("cuEventQuery", &p, 0, 0, &st);
      printf("version 0: %s status %d\n", rname(r), (int)st);
      r = cuGetProcAddress_v2("cuEventQuery", &p, -5, 0, &st);
      printf("version -5: %s status %d\n", rname(r), (int)st);
    }
  }

  SECTION("error names and strings");
  { const char *s = (const char *)1; CUresult r = cuGetErrorName((CUresult)9999, &s);
    printf("cuGetErrorName(9999) -> %s, str %s\n", rname(r), s ? "non-NULL" : "NULL");
    s = (const char *)1; r = cuGetErrorString((CUresult)9999, &s);
    printf("cuGetErrorString(9999) -> %s, str %s\n", rname(r), s ? "non-NULL" : "NULL");
    /* cuGetErrorName(x, NULL) crashes the real driver (segfault, second run): not probed */
    if (argc > 1) write_errors(argv[1]); }

  SECTION("last: riskier validation calls");
  SHOW("cuInit(1)", cuInit(1));
  cuCtxSynchronize();
  cuEventDestroy(a); cuEventDestroy(b); cuEventDestroy(e7); cuEventDestroy(e3);
  cuStreamDestroy(snb); cuStreamDestroy(sb);
  SHOW("cuDevicePrimaryCtxRelease (to 0)", cuDevicePrimaryCtxRelease(0));
  c = (CUcontext)1; SHOW("cuCtxGetCurrent after release to 0", cuCtxGetCurrent(&c)); printf("   current %s\n", c == ctx ? "ctx" : c ? "other" : "NULL");
  { CUevent z = NULL; SHOW("release to 0, still current: cuEventCreate", cuEventCreate(&z, 0)); if (z) cuEventDestroy(z); }
  SHOW("release to 0, still current: cuStreamQuery(LEGACY)", cuStreamQuery(CU_STREAM_LEGACY));
  SHOW("release to 0, still current: cuCtxSynchronize", cuCtxSynchronize());
  { CUdevice d; SHOW("release to 0, still current: cuCtxGetDevice", cuCtxGetDevice(&d)); }
  { int lo, hi; SHOW("release to 0, still current: cuCtxGetStreamPriorityRange", cuCtxGetStreamPriorityRange(&lo, &hi)); }
  SHOW("cuDevicePrimaryCtxRelease (below 0)", cuDevicePrimaryCtxRelease(0));
  { CUcontext c3 = NULL; SHOW("cuDevicePrimaryCtxRetain after release", cuDevicePrimaryCtxRetain(&c3, 0));
    printf("   same CUcontext as before: %d\n", c3 == ctx);
    cuCtxSetCurrent(c3);
    CUevent z; SHOW("cuEventCreate in re-retained ctx", cuEventCreate(&z, 0)); cuEventDestroy(z);
    SHOW("cuStreamDestroy(LEGACY)", cuStreamDestroy(CU_STREAM_LEGACY));
    SHOW("cuStreamDestroy(PER_THREAD)", cuStreamDestroy(CU_STREAM_PER_THREAD));
    SHOW("cuStreamDestroy(NULL)", cuStreamDestroy(NULL));
    CUstream sl; cuStreamCreate(&sl, CU_STREAM_NON_BLOCKING);
    SHOW("cuLaunchHostFunc(s, NULL fn)", cuLaunchHostFunc(sl, NULL, NULL));
    SHOW("cuStreamSynchronize after NULL fn", cuStreamSynchronize(sl));
    cuStreamDestroy(sl);
    SECTION("NULL output pointers");
    { CUstream so; CUevent eo; cuStreamCreate(&so, 0); cuEventCreate(&eo, CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING);
      SHOW("cuDriverGetVersion(NULL)", cuDriverGetVersion(NULL));
      SHOW("cuDeviceGetCount(NULL)", cuDeviceGetCount(NULL));
      SHOW("cuCtxGetCurrent(NULL)", cuCtxGetCurrent(NULL));
      SHOW("cuCtxGetDevice(NULL)", cuCtxGetDevice(NULL));
      SHOW("cuDevicePrimaryCtxRetain(NULL, 0)", cuDevicePrimaryCtxRetain(NULL, 0));
      SHOW("cuDeviceGetAttribute(NULL, PCI_BUS_ID, 0)", cuDeviceGetAttribute(NULL, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, 0));
      SHOW("cuStreamGetDevice(s, NULL)", cuStreamGetDevice(so, NULL));
      SHOW("cuStreamGetCtx(s, NULL)", cuStreamGetCtx(so, NULL));
      SHOW("cuStreamIsCapturing(s, NULL)", cuStreamIsCapturing(so, NULL));
      SHOW("cuIpcGetEventHandle(NULL, ipc ev)", cuIpcGetEventHandle(NULL, eo));
      SHOW("cuStreamCreateWithPriority(NULL, 0, 0)", cuStreamCreateWithPriority(NULL, 0, 0));
      { char nb[8] = "xxxxxxx"; SHOW("cuDeviceGetName(buf, 0, 0)", cuDeviceGetName(nb, 0, 0));
        SHOW("cuDeviceGetName(buf, 5, 0)", cuDeviceGetName(nb, 5, 0)); printf("   buf \"%.7s\"\n", nb); }
      SHOW("cuDeviceGetName(NULL, 10, 0)", cuDeviceGetName(NULL, 10, 0));
      SHOW("cuGetErrorString(0, NULL)", cuGetErrorString(CUDA_SUCCESS, NULL));
      cuEventDestroy(eo); cuStreamDestroy(so); }
    SHOW("cuDevicePrimaryCtxRelease", cuDevicePrimaryCtxRelease(0)); }
  printf("\nDONE\n");
  return 0;
}
