/* The calls a program is made of; each writes its transcript line and
 * keeps the model (prog.h) true. */
#ifndef EVX_TRANSCRIPT_OPS_H
#define EVX_TRANSCRIPT_OPS_H
#include "prog.h"

int cur_ctx(const struct prog *p);
int is_default(const struct prog *p, int si);
/* An event's state as the model knows it (an IPC-opened one: its source's). */
int ev_state(const struct prog *p, int ei);
int ev_ipc(const struct prog *p, int ei); /* an INTERPROCESS event, or one opened from a handle */
void call_init(const struct prog *p, struct call *c, int f, int th);
void op_stream_create(struct prog *p, int si, unsigned flags, int prio, int null_out);
void op_stream_destroy(struct prog *p, int si);
void op_event_create(struct prog *p, int ei, unsigned flags, int null_out);
void op_event_destroy(struct prog *p, int ei);
void op_record(struct prog *p, int ei, int si, int th, int with_flags, unsigned flags);
void op_event_query(struct prog *p, int ei, int th);
void op_event_sync(struct prog *p, int ei, int th);
void op_elapsed(struct prog *p, int e1, int e2, int null_out);
void op_wait(struct prog *p, int si, int ei, unsigned flags, int th);
void op_stream_query(struct prog *p, int si, int th);
/* Returns 1 if the stream is known to have nothing queued afterwards. */
int op_stream_sync(struct prog *p, int si, int th);
void op_getter(struct prog *p, int f, int si, int th, int null_out);
void op_ctx_call(struct prog *p, int f, int th, int null_out);
void op_push(struct prog *p, int ci);
void op_pop(struct prog *p, int null_out);
void op_set_current(struct prog *p, int ci);
void op_ctx_create(struct prog *p, int ci, int di, unsigned flags);
void op_ctx_destroy(struct prog *p, int ci);
void op_retain_primary(struct prog *p, int di);
void op_release_primary(struct prog *p, int di);
void op_gate(struct prog *p, int si, int th);
void op_release(struct prog *p);
void op_begin(struct prog *p, int si, int mode, int th);
void op_end(struct prog *p, int si, int th);
void op_exchange(struct prog *p, int mode, int th);
void op_host_alloc(struct prog *p, int mi, unsigned flags);
void op_free_host(struct prog *p, int mi);
void op_devptr(struct prog *p, int mi, unsigned flags);
void op_register(struct prog *p, unsigned flags);
void op_write_value(struct prog *p, int si, int mi, int th);
void op_wait_value(struct prog *p, int si, int mi, unsigned long long v, int th);
void op_ipc(struct prog *p, int ei, int into, int child);
void op_uobj_create(struct prog *p, int ui, unsigned flags);
void op_uobj_release(struct prog *p, int ui, int n);
void op_graph_retain(struct prog *p, int gi, int ui, unsigned flags);
void op_graph_destroy(struct prog *p, int gi);
void op_device(struct prog *p, int kind, int arg);
int any_blocked(const struct prog *p);
void note_work(struct prog *p, int si, int th);
void sync_default_streams(struct prog *p);
#endif
