/* Programs: the setup and cleanup every program has, the random grammar,
 * and the fixed capture-legality programs. */
#include <stdlib.h>
#include <string.h>

#include "gen.h"
#include "ops.h"

static int live_s(struct prog *p) { /* a live slot, or a special stream */
  int si = (int)rnd(p, NS + 3);
  if (si >= NS) return -1 - (si - NS);
  return si;
}
static int any_capturing(const struct prog *p) {
  for (int i = 0; i < NS; i++)
    if (p->s[i].live && p->s[i].cap >= 0) return 1;
  return 0;
}
static int stacked_below(const struct prog *p, int ci) {
  for (int i = 0; i + 1 < p->depth; i++)
    if (p->stack[i] == ci) return 1;
  return 0;
}
static int pick_e(struct prog *p) { return (int)rnd(p, NE); }

/* A record of an INTERPROCESS event whose last record waits behind a closed
 * gate waits for that one (the driver orders them): only a non-blocking
 * stream may take it, as a gate, since the legacy stream waits for every
 * blocking one. */
static int record_ok(const struct prog *p, int ei, int si) {
  if (!ev_ipc(p, ei) || ev_state(p, ei) != EV_BLOCKED) return 1;
  return si >= 0 && p->s[si].live && (p->s[si].nonblock || p->s[si].cap >= 0);
}

static int stream_ctx(const struct prog *p, int si) {
  return si >= 0 && p->s[si].live ? p->s[si].ctx : cur_ctx(p);
}

static int stream_dev(const struct prog *p, int si) {
  const int ci = stream_ctx(p, si);
  return ci >= 0 ? p->ctx_dev[ci] : -1;
}

/* cuStreamWaitEvent of an INTERPROCESS event never recorded, on a stream of
 * another device, crashes the driver (SIGSEGV, driver 580.159.04), though
 * the documentation allows an event of another device and one never
 * recorded: no transcript can hold it, and the emulation's answer (success)
 * is the documented one. */
static int wait_ok(const struct prog *p, int ei, int si) {
  if (!ev_ipc(p, ei) || ev_state(p, ei) != EV_NONE) return 1;
  const int ec = p->e[ei].ctx;
  if (ec < 0) return 1;
  /* Generator 4: on a stream of another context of the same device too
   * (SIGSEGV in cuStreamWaitEvent, programs 1650, 1743, 1840, ... of the
   * generator-3 transcripts). */
  if (p->generator >= 4) return stream_ctx(p, si) == ec;
  return stream_dev(p, si) == p->ctx_dev[ec];
}

/* Generator 4: cuIpcGetEventHandle only with the event's context current.
 * With another one current (a context made by cuCtxCreate), the driver
 * crashed (SIGSEGV, program 680 of the generator-3 transcripts, driver
 * 580.159.04): undefined behaviour, not for a transcript to hold. */
static int ipc_ok(const struct prog *p, int ei) {
  return p->generator < 4 || p->e[ei].ctx == cur_ctx(p);
}

void prog_setup(struct prog *p) {
  memset(p->s, 0, sizeof p->s);
  memset(p->e, 0, sizeof p->e);
  for (int i = 0; i < NS; i++) p->s[i].cap = -1;
  memset(p->ctx_live, 0, sizeof p->ctx_live);
  memset(p->m, 0, sizeof p->m);
  memset(p->g, 0, sizeof p->g);
  memset(p->u, 0, sizeof p->u);
  p->depth = 0, p->ngates = 0;
  memset(p->special_dirty, 0, sizeof p->special_dirty);
  /* a host function still queued on a stream destroyed while it waited
   * may read its gate after the program: gates are never freed */
  p->gates = calloc(NG, sizeof *p->gates);
  for (int d = 0; d < p->ndev; d++) op_retain_primary(p, d);
  op_set_current(p, 0);
}

/* Ends captures (joining their forks), opens gates, destroys everything,
 * leaves no context current: the next program starts from nothing. */
void prog_cleanup(struct prog *p) {
  for (int o = 0; o < NS; o++) {
    if (!p->s[o].live || p->s[o].cap != o) continue;
    for (int i = 0; i < NS; i++)
      if (i != o && p->s[i].live && p->s[i].cap == o && p->e[NE - 1].live) {
        op_record(p, NE - 1, i, 0, 0, 0);
        op_wait(p, o, NE - 1, 0, 0);
      }
    op_end(p, o, 0);
  }
  op_release(p);
  op_exchange(p, CU_STREAM_CAPTURE_MODE_GLOBAL, 0); /* each thread's mode back */
  op_exchange(p, CU_STREAM_CAPTURE_MODE_GLOBAL, 1);
  for (int i = 0; i < NGR; i++)
    if (p->g[i]) op_graph_destroy(p, i);
  for (int i = 0; i < NU; i++)
    if (p->u[i]) op_uobj_release(p, i, 1);
  for (int i = 0; i < NE; i++)
    if (p->e[i].live) op_event_destroy(p, i);
  for (int i = 0; i < NS; i++)
    if (p->s[i].live) op_stream_destroy(p, i);
  for (int i = 0; i < NM; i++)
    if (p->m[i].live) op_free_host(p, i);
  /* popped before the contexts are destroyed: a pop never meets one */
  while (p->depth > 0) op_pop(p, 0);
  op_set_current(p, -1);
  for (int ci = 2; ci < NC; ci++)
    if (p->ctx_live[ci]) op_ctx_destroy(p, ci);
  for (int d = 0; d < p->ndev; d++) op_release_primary(p, d);
}

static const int k_getters[] = {F_StreamGetPriority, F_StreamGetFlags, F_StreamGetDevice,
                                F_StreamGetCtx, F_StreamGetCtx_v2, F_StreamGetId,
                                F_StreamIsCapturing, F_StreamGetCaptureInfo};
static const int k_ctx_calls[] = {F_CtxGetCurrent, F_CtxGetDevice, F_CtxGetStreamPriorityRange};

static void random_stream_op(struct prog *p, unsigned k, int th) {
  int si = live_s(p), ei = pick_e(p);
  static const unsigned sflags[] = {0, 1, 1, 2};
  static const int prios[] = {0, -1, -5, 3, -100};
  static const unsigned eflags[] = {0, 2, 2, 1, 6, 4, 8};
  switch (k) {
  case 0: if (!p->s[ei % NS].live) op_stream_create(p, ei % NS, sflags[rnd(p, 4)], prios[rnd(p, 5)], rnd(p, 20) == 0); break;
  case 1: if (!p->e[ei].live) op_event_create(p, ei, eflags[rnd(p, 7)], rnd(p, 20) == 0); break;
  case 2:
    if (p->e[ei].live && record_ok(p, ei, si)) op_record(p, ei, si, th, rnd(p, 3) == 0, rnd(p, 4) == 0 ? 1 : 0);
    break;
  case 3: if (p->e[ei].live) op_event_query(p, ei, th); break;
  case 4: if (p->e[ei].live) op_event_sync(p, ei, th); break;
  case 5:
    if (p->e[ei].live && wait_ok(p, ei, si) &&
        (ev_state(p, ei) != EV_BLOCKED || (si >= 0 && p->s[si].live && p->s[si].nonblock)))
      op_wait(p, si, ei, rnd(p, 8) == 0 ? 3 : 0, th);
    break;
  case 6: op_stream_query(p, si, th); break;
  case 7: op_stream_sync(p, si, th); break;
  case 8: op_getter(p, k_getters[rnd(p, 8)], si, th, rnd(p, 15) == 0); break;
  case 9: op_ctx_call(p, k_ctx_calls[rnd(p, 3)], th, rnd(p, 15) == 0); break;
  case 10:
    if (si >= 0 && p->s[si].live && (p->s[si].nonblock || p->s[si].cap >= 0)) op_gate(p, si, th);
    break;
  case 11:
    if (si >= 0 && p->s[si].live && p->s[si].cap < 0) { /* a capture outlives its
      destroyed stream, and would leak into later programs */
      op_stream_destroy(p, si);
      /* a destroyed handle is never used again: the real driver may crash on
       * one (undefined behaviour, not for the emulation to copy). The draw is
       * kept so that the programs of transcripts recorded before stay the same. */
      if (p->stale_ok) (void)rnd(p, 3);
    }
    break;
  case 12:
    if (p->e[ei].live) {
      op_event_destroy(p, ei);
      if (p->stale_ok) (void)rnd(p, 3); /* as in case 11 */
    }
    break;
  }
}

static void random_capture_op(struct prog *p, unsigned k, int th) {
  int si = live_s(p), ei = pick_e(p);
  static const int modes[] = {0, 1, 2, 0, 1, 2, 7};
  switch (k) {
  case 0: /* on stream slots only: the model follows captures of slots */
    if (si >= 0 && p->s[si].live) op_begin(p, si, modes[rnd(p, 7)], 0);
    break;
  case 1: op_end(p, si, th); break;
  case 2: /* fork or join: an event recorded on one capture stream, waited on by another */
    if (p->e[ei].live) {
      int a = live_s(p), b = live_s(p);
      if (!record_ok(p, ei, a)) break;
      op_record(p, ei, a, 0, 0, 0);
      if (wait_ok(p, ei, b) && (ev_state(p, ei) != EV_BLOCKED || (b >= 0 && p->s[b].live && p->s[b].nonblock)))
        op_wait(p, b, ei, 0, th);
    }
    break;
  case 3: op_exchange(p, modes[rnd(p, 7)], th); break;
  case 4: op_elapsed(p, ei, pick_e(p), rnd(p, 10) == 0); break;
  }
}

static void random_other_op(struct prog *p, unsigned k) {
  int mi = (int)rnd(p, NM), si = live_s(p), ci = 2 + (int)rnd(p, 2);
  switch (k) {
  case 0: if (!p->m[mi].live) op_host_alloc(p, mi, rnd(p, 4) == 0 ? 0 : 2); break;
  case 1: op_devptr(p, mi, rnd(p, 5) == 0 ? 1 : 0); break;
  case 2: if (p->m[mi].live) op_write_value(p, si, mi, 0); break;
  case 3:
    if (p->m[mi].live && (si < 0 ? 0 : p->s[si].live && (p->s[si].nonblock || p->s[si].cap >= 0)))
      op_wait_value(p, si, mi, rnd(p, 2), 0);
    break;
  case 4: /* generator 5: 1 in 8 as often (a context costs the driver up to a
           * second to make and to destroy, most of a recording's time) */
    if (!p->ctx_live[ci] && (p->generator < 5 || rnd(p, 8) == 0))
      op_ctx_create(p, ci, (int)rnd(p, (unsigned)p->ndev), rnd(p, 6) == 0 ? 99 : 0);
    break;
  case 5: /* not under the top of the stack: a pop would make it current again */
    if (p->ctx_live[ci] && !any_blocked(p) && !any_capturing(p) && !stacked_below(p, ci))
      op_ctx_destroy(p, ci);
    break;
  case 6: op_push(p, rnd(p, 8) == 0 ? -1 : (int)rnd(p, (unsigned)p->ndev)); break;
  case 7: if (p->depth > 1) op_pop(p, rnd(p, 8) == 0); break;
  case 8: op_release(p); break;
  case 9: {
    int ei = pick_e(p), into = pick_e(p);
    if (p->e[ei].live) {
      const int child = rnd(p, 8) == 0; /* drawn as generator 3 does */
      if (ipc_ok(p, ei)) op_ipc(p, ei, into, child);
    }
    break;
  }
  case 10: { int ui = (int)rnd(p, NU); if (!p->u[ui]) op_uobj_create(p, ui, rnd(p, 4) == 0 ? 5 : 1); break; }
  case 11: {
    int gi = (int)rnd(p, NGR), ui = (int)rnd(p, NU);
    if (p->g[gi] && p->u[ui]) op_graph_retain(p, gi, ui, 0);
    break;
  }
  case 12: op_device(p, (int)rnd(p, 3), (int)rnd(p, 6) - 1); break;
  }
}

void prog_random(struct prog *p, int len) {
  long start = p->calls;
  while (p->calls - start < len) {
    unsigned which = rnd(p, 10);
    int th = rnd(p, 5) == 0;
    if (which < 6) random_stream_op(p, rnd(p, 13), th);
    else if (which < 8) random_capture_op(p, rnd(p, 5), th);
    else random_other_op(p, rnd(p, 13));
  }
}
