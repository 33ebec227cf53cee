/* One program's objects, their symbols, the model that keeps its answers
 * timing-free, and the transcript lines it writes. */
#ifndef EVX_TRANSCRIPT_PROG_H
#define EVX_TRANSCRIPT_PROG_H

#include <signal.h>
#include <stdio.h>

#include "drv.h"

/* The generator's version: a change in the programs drawn for a seed makes
 * a new one. The recorder draws the programs of older versions too
 * (--generator N, down to TX_GENERATOR_OLDEST), so that the transcripts
 * recorded with them still replay. */
#define TX_GENERATOR_NAME "evx-transcript"
enum { TX_GENERATOR = 5, TX_GENERATOR_OLDEST = 3 };
enum { NS = 6, NE = 8, NC = 4, NG = 16, NM = 2, NGR = 4, NU = 4 };
/* Stream operands that are not slots. */
enum { S_NULL = -1, S_LEGACY = -2, S_PTDS = -3 };
/* An event's state as the model knows it. */
enum { EV_NONE, EV_DONE, EV_DIRTY, EV_BLOCKED, EV_CAPTURED };

struct sslot {
  CUstream h;
  int live, ctx, nonblock;
  int blocked; /* behind a closed gate or an unmet wait value */
  int dirty;   /* work queued since its last synchronize */
  int cap;     /* the origin slot of the capture it is in, or -1 */
};
struct eslot {
  CUevent h;
  int live, ctx, flags, state;
  int cap; /* EV_CAPTURED: the origin slot of its capture */
  int src; /* opened from the IPC handle of this slot (its state is that one's), or -1 */
};

struct prog {
  FILE *out;
  unsigned long long rng;
  long index, calls;
  int ndev, stale_ok;
  int generator; /* the version whose programs are drawn */
  const char *driver; /* for a child process */
  CUdevice dev[2];
  struct sslot s[NS];
  struct eslot e[NE];
  CUcontext ctx[NC]; /* 0, 1: primary contexts of dev0, dev1; 2, 3: created */
  int ctx_live[NC], ctx_dev[NC];
  int stack[16], depth; /* this thread's context stack, as slots */
  int *gates;           /* NG words: 0 closed, 1 open */
  int ngates;
  struct { unsigned long long *p; CUdeviceptr dp; int live, ctx; } m[NM];
  CUgraph g[NGR];
  CUuserObject u[NU];
  int cap_mode[NS];
  int special_dirty[2][NC]; /* work queued on a default stream: [thread][context] */
};

/* One driver call, made by the program's thread (th 0) or its helper. */
struct call {
  int f, th, null_out;
  CUstream s;
  CUevent e, e2;
  CUcontext c;
  CUdevice d;
  unsigned flags;
  int i;
  unsigned long long v;
  void *p;
  CUhostFn fn;
  cuuint64_t cap_id;
  CUdeviceptr dp;
  CUgraph g;
  CUuserObject u;
  CUipcEventHandle ipc;
  CUcontext helper_ctx;
  /* out-values */
  CUstream os;
  CUevent oe;
  CUcontext oc;
  CUgreenCtx ogc;
  CUdevice od;
  unsigned ou;
  int oi, oi2;
  float of;
  CUgraph og;
  CUstreamCaptureStatus ocs;
  CUstreamCaptureMode mode;
  unsigned long long oid;
  void *op;
  CUdeviceptr odp;
  CUuserObject ouo;
  CUresult r;
  int missing;
};

/* The entry point each of the two threads is in (F_COUNT: none). */
extern volatile sig_atomic_t tx_in_call[2];
/* --timing: time each entry point; tx_timing_report prints the costliest. */
extern int tx_timing;
void tx_timing_report(FILE *f);

/* Runs c on its thread (c->th) and waits for it. */
void tx_exec(struct call *c);
void tx_helper_start(void);
void tx_helper_stop(void);

/* Transcript: "  [T ]name(args) -> STATUS[ out]". */
void tx_line(struct prog *p, const struct call *c, const char *args, const char *out);
void tx_note(struct prog *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Symbols. */
const char *sym_s(const struct prog *p, int si, char *buf);
const char *sym_e(const struct prog *p, int ei, char *buf);
const char *sym_ctx(const struct prog *p, CUcontext c, char *buf);
const char *sym_dev(const struct prog *p, CUdevice d, char *buf);
CUstream stream_h(const struct prog *p, int si);
const char *capstatus_name(CUstreamCaptureStatus st);
const char *mode_name(int mode);

unsigned rnd(struct prog *p, unsigned n);
unsigned long long tx_mix(unsigned long long z); /* splitmix64's finalizer */
#endif
