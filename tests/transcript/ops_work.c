/* Work whose completion the program controls (gates, wait values),
 * captures, pinned memory, IPC and user objects. */
#include <string.h>
#include <unistd.h>

#include "ipc_child.h"
#include "ops.h"

static int ok(const struct call *c) { return !c->missing && c->r == CUDA_SUCCESS; }

static void gate_fn(void *arg) {
  int *g = arg;
  while (!__atomic_load_n(g, __ATOMIC_ACQUIRE)) usleep(100);
}
static void uobj_free(void *arg) { (void)arg; }

void op_gate(struct prog *p, int si, int th) {
  if (p->ngates >= NG) return;
  struct call c;
  char a[40], b[24];
  int gi = p->ngates++;
  call_init(p, &c, F_LaunchHostFunc, th);
  c.s = stream_h(p, si), c.op = &p->gates[gi];
  c.fn = gate_fn;
  tx_exec(&c);
  snprintf(a, sizeof a, "%s, gate, g%d", sym_s(p, si, b), gi);
  tx_line(p, &c, a, "");
  if (ok(&c)) note_work(p, si, th);
  if (ok(&c) && si >= 0 && p->s[si].live && p->s[si].cap < 0) p->s[si].blocked = 1, p->s[si].dirty = 1;
}

/* Opens every gate, meets every wait value, and waits for what was
 * queued; afterwards nothing is pending. */
void op_release(struct prog *p) {
  tx_note(p, "open every gate, meet every wait value");
  /* only the gates handed out: a gate handed out later must start closed */
  for (int i = 0; i < p->ngates; i++) __atomic_store_n(&p->gates[i], 1, __ATOMIC_RELEASE);
  for (int i = 0; i < NM; i++)
    if (p->m[i].live) /* GEQ compares (int64_t)(word - value): big, not ~0 */
      __atomic_store_n(&p->m[i].p[0], 1ULL << 40, __ATOMIC_RELEASE);
  sync_default_streams(p);
  for (int i = 0; i < NS; i++) {
    struct sslot *s = &p->s[i];
    if (!s->live) continue;
    s->blocked = 0;
    if (s->cap < 0 && s->dirty) op_stream_sync(p, i, 0);
  }
  for (int i = 0; i < NE; i++)
    if (p->e[i].live && (p->e[i].state == EV_BLOCKED || p->e[i].state == EV_DIRTY)) {
      p->e[i].state = EV_DIRTY;
      op_event_sync(p, i, 0);
    }
}

void op_begin(struct prog *p, int si, int mode, int th) {
  struct call c;
  char a[48], b[24];
  call_init(p, &c, F_StreamBeginCapture, th);
  c.s = stream_h(p, si), c.i = mode;
  tx_exec(&c);
  snprintf(a, sizeof a, "%s, %s", sym_s(p, si, b), mode_name(mode));
  tx_line(p, &c, a, "");
  if (ok(&c) && si >= 0 && p->s[si].live) p->s[si].cap = si, p->cap_mode[si] = mode;
}

/* Ends a capture, then asks each of its streams whether it still captures
 * (the model follows the answers). */
void op_end(struct prog *p, int si, int th) {
  struct call c;
  char b[24], o[16];
  call_init(p, &c, F_StreamEndCapture, th);
  c.s = stream_h(p, si);
  tx_exec(&c);
  int gi = -1;
  if (ok(&c) && c.og)
    for (int i = 0; i < NGR && gi < 0; i++)
      if (!p->g[i]) gi = i;
  if (gi >= 0) p->g[gi] = c.og;
  else if (ok(&c) && c.og && D.GraphDestroy) D.GraphDestroy(c.og); /* no slot: not kept */
  o[0] = 0;
  if (gi >= 0) snprintf(o, sizeof o, "graph gr%d", gi);
  tx_line(p, &c, sym_s(p, si, b), ok(&c) ? (c.og ? o : "graph none") : "");
  int origin = si >= 0 && p->s[si].live ? p->s[si].cap : -1;
  if (origin < 0) return;
  for (int i = 0; i < NS; i++) {
    if (!p->s[i].live || p->s[i].cap != origin) continue;
    struct call q;
    call_init(p, &q, F_StreamIsCapturing, 0);
    q.s = p->s[i].h;
    tx_exec(&q);
    tx_line(p, &q, sym_s(p, i, b), ok(&q) ? capstatus_name(q.ocs) : "");
    if (ok(&q) && q.ocs == CU_STREAM_CAPTURE_STATUS_NONE) p->s[i].cap = -1;
  }
}

void op_graph_destroy(struct prog *p, int gi) {
  struct call c;
  char a[24];
  call_init(p, &c, F_GraphDestroy, 0);
  c.g = p->g[gi];
  tx_exec(&c);
  snprintf(a, sizeof a, "gr%d", gi);
  tx_line(p, &c, a, "");
  p->g[gi] = NULL;
}

void op_exchange(struct prog *p, int mode, int th) {
  struct call c;
  call_init(p, &c, F_ThreadExchangeStreamCaptureMode, th);
  c.mode = (CUstreamCaptureMode)mode;
  tx_exec(&c);
  char a[32], o[32];
  snprintf(a, sizeof a, "%s", mode_name(mode));
  snprintf(o, sizeof o, "was %s", mode_name(c.mode));
  tx_line(p, &c, a, ok(&c) ? o : "");
}

void op_host_alloc(struct prog *p, int mi, unsigned flags) {
  struct call c;
  char a[40], o[8];
  call_init(p, &c, F_MemHostAlloc, 0);
  c.v = 64, c.flags = flags;
  tx_exec(&c);
  snprintf(a, sizeof a, "&p, 64, flags %u", flags);
  snprintf(o, sizeof o, "m%d", mi);
  tx_line(p, &c, a, ok(&c) ? o : "");
  if (!ok(&c)) return;
  p->m[mi].p = c.op, p->m[mi].live = 1, p->m[mi].dp = 0, p->m[mi].ctx = cur_ctx(p);
  memset(c.op, 0, 64);
}

void op_free_host(struct prog *p, int mi) {
  struct call c;
  char a[8];
  call_init(p, &c, F_MemFreeHost, 0);
  c.p = p->m[mi].p;
  tx_exec(&c);
  snprintf(a, sizeof a, "m%d", mi);
  tx_line(p, &c, a, "");
  if (ok(&c)) p->m[mi].live = 0;
}

void op_devptr(struct prog *p, int mi, unsigned flags) {
  struct call c;
  char a[32];
  call_init(p, &c, F_MemHostGetDevicePointer, 0);
  c.p = p->m[mi].live ? (void *)p->m[mi].p : NULL, c.flags = flags;
  tx_exec(&c);
  snprintf(a, sizeof a, "&d, %s, flags %u", p->m[mi].live ? "m" : "NULL", flags);
  tx_line(p, &c, a, ok(&c) ? "valid" : "");
  if (ok(&c) && p->m[mi].live) p->m[mi].dp = c.odp;
}

void op_write_value(struct prog *p, int si, int mi, int th) {
  struct call c;
  char a[40], b[24];
  call_init(p, &c, F_StreamWriteValue64, th);
  c.s = stream_h(p, si), c.dp = p->m[mi].dp ? p->m[mi].dp + 8 : 0, c.v = 7;
  tx_exec(&c);
  snprintf(a, sizeof a, "%s, %s+8, 7, 0", sym_s(p, si, b), p->m[mi].dp ? "m" : "0");
  tx_line(p, &c, a, "");
  if (ok(&c)) note_work(p, si, th);
  if (ok(&c) && si >= 0 && p->s[si].cap < 0) p->s[si].dirty = 1;
}

/* Waits (GEQ) on word 0 of m, which only op_release sets. */
void op_wait_value(struct prog *p, int si, int mi, unsigned long long v, int th) {
  struct call c;
  char a[48], b[24];
  call_init(p, &c, F_StreamWaitValue64, th);
  c.s = stream_h(p, si), c.dp = p->m[mi].dp, c.v = v, c.flags = CU_STREAM_WAIT_VALUE_GEQ;
  tx_exec(&c);
  snprintf(a, sizeof a, "%s, %s, %llu, GEQ", sym_s(p, si, b), p->m[mi].dp ? "m" : "0", v);
  tx_line(p, &c, a, "");
  if (ok(&c)) note_work(p, si, th);
  if (ok(&c) && si >= 0 && p->s[si].live && p->s[si].cap < 0) {
    p->s[si].dirty = 1;
    if (v > __atomic_load_n(&p->m[mi].p[0], __ATOMIC_ACQUIRE)) p->s[si].blocked = 1;
  }
}

/* The IPC handle of event ei, opened in this process into slot `into`,
 * or (child) by a child process, which queries it: the event is complete
 * or behind a gate, so the answer is free of timing. */
void op_ipc(struct prog *p, int ei, int into, int child) {
  struct call c;
  if (child && p->e[ei].live && p->e[ei].state == EV_DIRTY) op_event_sync(p, ei, 0);
  char a[40], b[24], o[16];
  call_init(p, &c, F_IpcGetEventHandle, 0);
  c.e = p->e[ei].h;
  tx_exec(&c);
  snprintf(a, sizeof a, "&h, %s", sym_e(p, ei, b));
  tx_line(p, &c, a, "");
  if (ok(&c) && child) {
    char got[160];
    ipc_child_run(p->driver, &c.ipc, got, sizeof got);
    fprintf(p->out, "  child(handle of %s) -> %s\n", sym_e(p, ei, b), got);
    p->calls++;
    return;
  }
  if (!ok(&c) || p->e[into].live) return;
  CUipcEventHandle h = c.ipc;
  call_init(p, &c, F_IpcOpenEventHandle, 0);
  c.ipc = h;
  tx_exec(&c);
  snprintf(a, sizeof a, "&e, handle of %s", sym_e(p, ei, b));
  snprintf(o, sizeof o, "e%d", into);
  tx_line(p, &c, a, ok(&c) ? o : "");
  if (ok(&c)) {
    p->e[into] = p->e[ei];
    p->e[into].h = c.oe, p->e[into].src = ei;
  }
}

void op_uobj_create(struct prog *p, int ui, unsigned flags) {
  struct call c;
  char a[40], o[8];
  call_init(p, &c, F_UserObjectCreate, 0);
  c.fn = uobj_free;
  c.i = 1, c.flags = flags, c.op = p;
  tx_exec(&c);
  snprintf(a, sizeof a, "&u, fn, 1, flags %u", flags);
  snprintf(o, sizeof o, "u%d", ui);
  tx_line(p, &c, a, ok(&c) ? o : "");
  if (ok(&c)) p->u[ui] = c.ouo;
}

void op_uobj_release(struct prog *p, int ui, int n) {
  struct call c;
  char a[24];
  call_init(p, &c, F_UserObjectRelease, 0);
  c.u = p->u[ui], c.i = n;
  tx_exec(&c);
  snprintf(a, sizeof a, "u%d, %d", ui, n);
  tx_line(p, &c, a, "");
  if (ok(&c)) p->u[ui] = NULL;
}

void op_graph_retain(struct prog *p, int gi, int ui, unsigned flags) {
  struct call c;
  char a[40];
  call_init(p, &c, F_GraphRetainUserObject, 0);
  c.g = p->g[gi], c.u = p->u[ui], c.i = 1, c.flags = flags;
  tx_exec(&c);
  snprintf(a, sizeof a, "gr%d, u%d, 1, flags %u", gi, ui, flags);
  tx_line(p, &c, a, "");
}
