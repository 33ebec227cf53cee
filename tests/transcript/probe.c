/* The probe program: the cases of tests/gpu/probe_semantics.c that a
 * transcript can express, in one fixed program, so that CI checks them. */
#include "gen.h"
#include "ops.h"

static void probe_flags(struct prog *p) {
  static const unsigned ev[] = {7, 3, 5, 6, 8, 0x10};
  for (int i = 0; i < 6; i++) {
    op_event_create(p, 0, ev[i], 0);
    if (p->e[0].live) op_event_destroy(p, 0);
  }
  op_event_create(p, 0, 0, 1); /* NULL out-pointer */
  static const unsigned sf[] = {2, 3, 4};
  for (int i = 0; i < 3; i++) {
    op_stream_create(p, 0, sf[i], 0, 0);
    if (p->s[0].live) op_stream_destroy(p, 0);
  }
  op_stream_create(p, 0, 0, 0, 1);
  static const int prio[] = {-100, 7, -3};
  for (int i = 0; i < 3; i++) {
    op_stream_create(p, 0, 1, prio[i], 0);
    op_getter(p, F_StreamGetPriority, 0, 0, 0);
    if (p->s[0].live) op_stream_destroy(p, 0);
  }
  op_stream_create(p, 0, 1, 0, 0); /* non-blocking */
  op_stream_create(p, 1, 0, 0, 0); /* blocking */
  static const int specials[] = {0, 1, S_LEGACY, S_NULL, S_PTDS};
  for (int i = 0; i < 5; i++) {
    op_getter(p, F_StreamGetFlags, specials[i], 0, 0);
    op_getter(p, F_StreamGetPriority, specials[i], 0, 0);
  }
  op_getter(p, F_StreamGetPriority, 1, 0, 1);
  op_getter(p, F_StreamGetFlags, 1, 0, 1);
}

static void probe_contexts(struct prog *p) {
  op_pop(p, 0); /* ctx0, made current by the setup */
  op_pop(p, 0); /* an empty stack */
  op_ctx_call(p, F_CtxGetDevice, 0, 0);
  op_push(p, -1);
  op_push(p, 0);
  op_push(p, 0);
  op_set_current(p, -1); /* pops the top one */
  op_ctx_call(p, F_CtxGetCurrent, 0, 0);
  op_ctx_call(p, F_CtxGetStreamPriorityRange, 0, 0);
  op_ctx_call(p, F_CtxGetStreamPriorityRange, 0, 1);
  op_device(p, 0, p->ndev);
  op_device(p, 0, -1);
  op_device(p, 1, 1);
  op_device(p, 1, 4);
}

/* e7 is never made: its handle is NULL. */
static void probe_events(struct prog *p) {
  op_event_query(p, 7, 0);
  op_event_sync(p, 7, 0);
  op_record(p, 7, 0, 0, 0, 0);
  op_elapsed(p, 7, 7, 0);
  op_event_destroy(p, 7);
  op_wait(p, 0, 7, 0, 0);
  op_wait(p, 0, 7, 0x10, 0);
  op_wait(p, 0, 7, 1, 0);
  op_event_create(p, 1, 0, 0);
  op_event_query(p, 1, 0); /* never recorded */
  op_event_sync(p, 1, 0);
  static const unsigned wf[] = {1, 2, 3};
  for (int i = 0; i < 3; i++) op_wait(p, 0, 1, wf[i], 0);
  static const unsigned rf[] = {0, 1, 2, 3, 0x40};
  for (int i = 0; i < 5; i++) op_record(p, 1, 0, 0, 1, rf[i]);
  op_record(p, 1, S_NULL, 0, 1, 1);
  op_record(p, 7, 0, 0, 1, 0x40);
  op_record(p, 7, 0, 0, 1, 1);
  op_elapsed(p, 1, 1, 1);
}

/* IPC: an interprocess event opened in this process and in a child, done
 * and then behind a gate. */
static void probe_ipc(struct prog *p) {
  op_event_create(p, 2, 6, 0);
  op_record(p, 2, 0, 0, 0, 0);
  op_event_sync(p, 2, 0);
  op_ipc(p, 2, 3, 0);
  op_ipc(p, 2, 3, 1);
  op_gate(p, 0, 0);
  op_record(p, 2, 0, 0, 0, 0);
  op_event_query(p, 2, 0);
  op_event_query(p, 3, 0);
  op_ipc(p, 2, 4, 1);
  op_release(p);
  op_event_query(p, 3, 0);
  op_ipc(p, 0, 4, 1); /* a destroyed handle slot: NULL */
}

void prog_probe(struct prog *p) {
  probe_flags(p);
  probe_events(p);
  probe_ipc(p);
  probe_contexts(p);
}
