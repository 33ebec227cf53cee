/* Streams and events: creation, work, queries, and the model of what is
 * pending, so that every answer recorded is free of timing. */
#include <string.h>

#include "ops.h"

int cur_ctx(const struct prog *p) { return p->depth > 0 ? p->stack[p->depth - 1] : -1; }

void call_init(const struct prog *p, struct call *c, int f, int th) {
  memset(c, 0, sizeof *c);
  c->f = f;
  c->th = th;
  int ci = cur_ctx(p);
  c->helper_ctx = ci >= 0 ? p->ctx[ci] : NULL;
}

static const char *ok_sym(const struct call *c, const char *sym) {
  return !c->missing && c->r == CUDA_SUCCESS ? sym : "";
}

/* A default stream: a special operand, or a slot with no stream (NULL). */
int is_default(const struct prog *p, int si) { return si < 0 || (!p->s[si].live && !p->s[si].h); }

void op_stream_create(struct prog *p, int si, unsigned flags, int prio, int null_out) {
  struct call c;
  char a[64], o[16];
  call_init(p, &c, F_StreamCreateWithPriority, 0);
  c.flags = flags, c.i = prio, c.null_out = null_out;
  tx_exec(&c);
  snprintf(a, sizeof a, "%s, flags %u, priority %d", null_out ? "NULL" : "&s", flags, prio);
  snprintf(o, sizeof o, "s%d", si);
  tx_line(p, &c, a, null_out ? "" : ok_sym(&c, o));
  if (!null_out && !c.missing && c.r == CUDA_SUCCESS) {
    struct sslot *s = &p->s[si];
    memset(s, 0, sizeof *s);
    s->h = c.os, s->live = 1, s->ctx = cur_ctx(p), s->nonblock = flags & 1, s->cap = -1;
  }
}

void op_stream_destroy(struct prog *p, int si) {
  struct call c;
  char a[24];
  call_init(p, &c, F_StreamDestroy, 0);
  c.s = p->s[si].h;
  tx_exec(&c);
  tx_line(p, &c, sym_s(p, si, a), "");
  if (!c.missing && c.r == CUDA_SUCCESS) p->s[si].live = 0, p->s[si].h = NULL;
}

void op_event_create(struct prog *p, int ei, unsigned flags, int null_out) {
  struct call c;
  char a[64], o[16];
  call_init(p, &c, F_EventCreate, 0);
  c.flags = flags, c.null_out = null_out;
  tx_exec(&c);
  snprintf(a, sizeof a, "%s, flags %u", null_out ? "NULL" : "&e", flags);
  snprintf(o, sizeof o, "e%d", ei);
  tx_line(p, &c, a, null_out ? "" : ok_sym(&c, o));
  if (!null_out && !c.missing && c.r == CUDA_SUCCESS) {
    struct eslot *e = &p->e[ei];
    memset(e, 0, sizeof *e);
    e->h = c.oe, e->live = 1, e->ctx = cur_ctx(p), e->flags = (int)flags, e->state = EV_NONE;
    e->src = -1;
  }
}

void op_event_destroy(struct prog *p, int ei) {
  struct call c;
  char a[24];
  call_init(p, &c, F_EventDestroy, 0);
  c.e = p->e[ei].h;
  tx_exec(&c);
  tx_line(p, &c, sym_e(p, ei, a), "");
  if (c.missing || c.r != CUDA_SUCCESS) return;
  p->e[ei].live = 0, p->e[ei].h = NULL;
  for (int i = 0; i < NE; i++) /* its IPC-opened events keep its last state */
    if (p->e[i].live && p->e[i].src == ei) p->e[i].src = -1, p->e[i].state = p->e[ei].state;
}

/* The model's view of a stream operand: slots have state, the special
 * streams never wait on a gate (the grammar keeps gates off them). */
static int s_blocked(const struct prog *p, int si) { return si >= 0 && p->s[si].live && p->s[si].blocked; }
static int s_cap(const struct prog *p, int si) { return si >= 0 && p->s[si].live ? p->s[si].cap : -1; }

/* The event whose state an operand's answers follow: an IPC-opened event
 * follows the live event it was opened from. */
static int ev_model(const struct prog *p, int ei) {
  int src = p->e[ei].src;
  return p->e[ei].live && src >= 0 && p->e[src].live ? src : ei;
}

void op_record(struct prog *p, int ei, int si, int th, int with_flags, unsigned flags) {
  struct call c;
  char a[64], b1[24], b2[24];
  call_init(p, &c, with_flags ? F_EventRecordWithFlags : F_EventRecord, th);
  c.e = p->e[ei].h, c.s = stream_h(p, si), c.flags = flags;
  tx_exec(&c);
  if (with_flags)
    snprintf(a, sizeof a, "%s, %s, flags %u", sym_e(p, ei, b1), sym_s(p, si, b2), flags);
  else
    snprintf(a, sizeof a, "%s, %s", sym_e(p, ei, b1), sym_s(p, si, b2));
  tx_line(p, &c, a, "");
  if (c.missing || c.r != CUDA_SUCCESS) return;
  note_work(p, si, th);
  if (!p->e[ei].live) return;
  struct eslot *e = &p->e[ei];
  if (s_cap(p, si) >= 0) {
    e->state = EV_CAPTURED, e->cap = s_cap(p, si);
    return;
  }
  /* the driver orders an INTERPROCESS event's records: this one waits for
   * the one before, so a record behind a closed gate blocks this stream */
  const int held = ev_ipc(p, ei) && ev_state(p, ei) == EV_BLOCKED;
  e->state = s_blocked(p, si) || held ? EV_BLOCKED : EV_DIRTY;
  if (held) p->e[ev_model(p, ei)].state = EV_BLOCKED;
  if (si >= 0) p->s[si].dirty = 1, p->s[si].blocked |= held;
}

int ev_ipc(const struct prog *p, int ei) {
  return (p->e[ei].flags & CU_EVENT_INTERPROCESS) || p->e[ei].src >= 0;
}


int ev_state(const struct prog *p, int ei) { return p->e[ev_model(p, ei)].state; }

void op_event_sync(struct prog *p, int ei, int th) {
  int m = ev_model(p, ei);
  if (m != ei && p->e[m].state == EV_DIRTY) op_event_sync(p, m, th);
  int st = p->e[m].live ? p->e[m].state : EV_NONE;
  if (st == EV_BLOCKED || st == EV_CAPTURED) { /* would wait for ever */
    op_event_query(p, ei, th);
    return;
  }
  struct call c;
  char a[24];
  call_init(p, &c, F_EventSynchronize, th);
  c.e = p->e[ei].h;
  tx_exec(&c);
  tx_line(p, &c, sym_e(p, ei, a), "");
  if (p->e[ei].live && st == EV_DIRTY && !c.missing && c.r == CUDA_SUCCESS) p->e[ei].state = EV_DONE;
}

void op_event_query(struct prog *p, int ei, int th) {
  int m = ev_model(p, ei);
  if (p->e[m].live && p->e[m].state == EV_DIRTY) op_event_sync(p, m, th);
  struct call c;
  char a[24];
  call_init(p, &c, F_EventQuery, th);
  c.e = p->e[ei].h;
  tx_exec(&c);
  tx_line(p, &c, sym_e(p, ei, a), "");
}

void op_elapsed(struct prog *p, int e1, int e2, int null_out) {
  for (int k = 0; k < 2; k++) {
    int ei = k ? e2 : e1;
    if (p->e[ei].live && p->e[ei].state == EV_DIRTY) op_event_sync(p, ei, 0);
  }
  /* a synchronize a capture refused leaves a record pending, whose elapsed
   * time would be NOT_READY or not by the worker's timing: not asked */
  for (int k = 0; k < 2; k++) {
    int ei = k ? e2 : e1;
    if (p->e[ei].live && ev_state(p, ei) == EV_DIRTY) return;
  }
  struct call c;
  char a[48], b1[24], b2[24];
  call_init(p, &c, F_EventElapsedTime, 0);
  c.e = p->e[e1].h, c.e2 = p->e[e2].h, c.null_out = null_out;
  tx_exec(&c);
  snprintf(a, sizeof a, "%s, %s, %s", null_out ? "NULL" : "&ms", sym_e(p, e1, b1), sym_e(p, e2, b2));
  /* the time itself is never recorded: its sign only */
  tx_line(p, &c, a, !null_out && !c.missing && c.r == CUDA_SUCCESS ? (c.of >= 0 ? "ms>=0" : "ms<0") : "");
}

void op_wait(struct prog *p, int si, int ei, unsigned flags, int th) {
  struct call c;
  char a[64], b1[24], b2[24];
  call_init(p, &c, F_StreamWaitEvent, th);
  c.s = stream_h(p, si), c.e = p->e[ei].h, c.flags = flags;
  tx_exec(&c);
  snprintf(a, sizeof a, "%s, %s, flags %u", sym_s(p, si, b1), sym_e(p, ei, b2), flags);
  tx_line(p, &c, a, "");
  if (!c.missing && c.r == CUDA_SUCCESS) note_work(p, si, th);
  if (c.missing || c.r != CUDA_SUCCESS || si < 0 || !p->s[si].live || !p->e[ei].live) return;
  struct sslot *s = &p->s[si];
  const struct eslot *e = &p->e[ei];
  if (e->state == EV_CAPTURED && s->cap < 0) s->cap = e->cap; /* a fork joins the capture */
  else if (s->cap < 0 && ev_state(p, ei) == EV_BLOCKED) s->blocked = 1;
  if (s->cap < 0) s->dirty = 1;
}

int op_stream_sync(struct prog *p, int si, int th) {
  if (s_blocked(p, si) && s_cap(p, si) < 0) { /* would wait for ever */
    op_stream_query(p, si, th);
    return 0;
  }
  struct call c;
  char a[40];
  call_init(p, &c, F_StreamSynchronize, th);
  c.s = stream_h(p, si);
  tx_exec(&c);
  tx_line(p, &c, sym_s(p, si, a), "");
  const int done = !c.missing && c.r == CUDA_SUCCESS;
  if (si >= 0 && p->s[si].live && p->s[si].cap < 0 && done) p->s[si].dirty = 0;
  return done;
}

void op_stream_query(struct prog *p, int si, int th) {
  /* work that may still be finishing is waited for first (a synchronize
   * line of its own), so that the answer does not depend on timing */
  int racy = is_default(p, si) || (p->s[si].live && p->s[si].dirty && !p->s[si].blocked);
  if (racy && s_cap(p, si) < 0) op_stream_sync(p, si, th);
  struct call c;
  char a[40];
  call_init(p, &c, F_StreamQuery, th);
  c.s = stream_h(p, si);
  tx_exec(&c);
  tx_line(p, &c, sym_s(p, si, a), "");
}

/* Work queued on a default stream (legacy, per-thread) of the current
 * context is waited for by op_release, before memory it may write is
 * freed. */
void note_work(struct prog *p, int si, int th) {
  int ci = cur_ctx(p);
  if (is_default(p, si) && ci >= 0) p->special_dirty[th][ci] = 1;
}

void sync_default_streams(struct prog *p) {
  for (int th = 0; th < 2; th++)
    for (int ci = 0; ci < NC; ci++) {
      if (!p->special_dirty[th][ci] || !p->ctx_live[ci]) continue;
      op_push(p, ci);
      /* kept dirty if a capture refused the synchronize: the next release,
       * after the program's captures end, tries again */
      const int legacy = op_stream_sync(p, S_LEGACY, th);
      if (op_stream_sync(p, S_PTDS, th) && legacy) p->special_dirty[th][ci] = 0;
      op_pop(p, 0);
    }
}

int any_blocked(const struct prog *p) {
  for (int i = 0; i < NS; i++)
    if (p->s[i].live && p->s[i].blocked) return 1;
  for (int i = 0; i < NE; i++)
    if (p->e[i].live && p->e[i].state == EV_BLOCKED) return 1;
  return 0;
}
