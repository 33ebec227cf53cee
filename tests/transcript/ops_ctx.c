/* Getters, contexts and devices: calls whose answers are symbols. */
#include <string.h>

#include "ops.h"

static int ok(const struct call *c) { return !c->missing && c->r == CUDA_SUCCESS; }

void op_getter(struct prog *p, int f, int si, int th, int null_out) {
  struct call c;
  char a[40], o[48] = "", b[24], b2[24];
  call_init(p, &c, f, th);
  c.s = stream_h(p, si), c.null_out = null_out;
  tx_exec(&c);
  snprintf(a, sizeof a, "%s%s", sym_s(p, si, b), null_out ? ", NULL" : "");
  if (ok(&c) && !null_out) {
    switch (f) {
    case F_StreamGetPriority: snprintf(o, sizeof o, "priority %d", c.oi); break;
    case F_StreamGetFlags: snprintf(o, sizeof o, "flags %u", c.ou); break;
    case F_StreamGetDevice: snprintf(o, sizeof o, "%s", sym_dev(p, c.od, b2)); break;
    case F_StreamGetCtx: snprintf(o, sizeof o, "%s", sym_ctx(p, c.oc, b2)); break;
    case F_StreamGetCtx_v2:
      snprintf(o, sizeof o, "%s green %s", sym_ctx(p, c.oc, b2), c.ogc ? "set" : "none");
      break;
    case F_StreamGetId: snprintf(o, sizeof o, "id valid"); break;
    case F_StreamIsCapturing:
    case F_StreamGetCaptureInfo: snprintf(o, sizeof o, "%s", capstatus_name(c.ocs)); break;
    }
  }
  tx_line(p, &c, a, o);
}

/* Context calls without arguments but an out-pointer. */
void op_ctx_call(struct prog *p, int f, int th, int null_out) {
  struct call c;
  char o[48] = "", b[24];
  call_init(p, &c, f, th);
  c.null_out = null_out;
  tx_exec(&c);
  if (ok(&c) && !null_out) {
    if (f == F_CtxGetCurrent) snprintf(o, sizeof o, "%s", sym_ctx(p, c.oc, b));
    if (f == F_CtxGetDevice) snprintf(o, sizeof o, "%s", sym_dev(p, c.od, b));
    if (f == F_CtxGetStreamPriorityRange) snprintf(o, sizeof o, "least %d greatest %d", c.oi, c.oi2);
    if (f == F_DeviceGetCount) snprintf(o, sizeof o, "%d", c.oi);
  }
  tx_line(p, &c, null_out ? "NULL" : "&out", o);
}

void op_push(struct prog *p, int ci) {
  struct call c;
  char b[24];
  call_init(p, &c, F_CtxPushCurrent, 0);
  c.c = ci >= 0 ? p->ctx[ci] : NULL;
  tx_exec(&c);
  tx_line(p, &c, ci >= 0 ? (snprintf(b, sizeof b, "ctx%d", ci), b) : "none", "");
  if (ok(&c) && p->depth < 16) p->stack[p->depth++] = ci;
}

void op_pop(struct prog *p, int null_out) {
  struct call c;
  char b[24];
  call_init(p, &c, F_CtxPopCurrent, 0);
  c.null_out = null_out;
  tx_exec(&c);
  tx_line(p, &c, null_out ? "NULL" : "&out", ok(&c) && !null_out ? sym_ctx(p, c.oc, b) : "");
  if (ok(&c) && p->depth > 0) p->depth--;
}

void op_set_current(struct prog *p, int ci) {
  struct call c;
  char b[24];
  call_init(p, &c, F_CtxSetCurrent, 0);
  c.c = ci >= 0 ? p->ctx[ci] : NULL;
  tx_exec(&c);
  tx_line(p, &c, ci >= 0 ? (snprintf(b, sizeof b, "ctx%d", ci), b) : "none", "");
  if (!ok(&c)) return;
  if (ci < 0 && p->depth > 0) p->depth--;
  else if (ci >= 0 && p->depth > 0) p->stack[p->depth - 1] = ci;
  else if (ci >= 0) p->stack[p->depth++] = ci;
}

void op_ctx_create(struct prog *p, int ci, int di, unsigned flags) {
  struct call c;
  char a[48], o[16];
  call_init(p, &c, F_CtxCreate, 0);
  c.d = p->dev[di], c.flags = flags;
  tx_exec(&c);
  snprintf(a, sizeof a, "&c, flags %u, dev%d", flags, di);
  snprintf(o, sizeof o, "ctx%d", ci);
  tx_line(p, &c, a, ok(&c) ? o : "");
  if (!ok(&c)) return;
  p->ctx[ci] = c.oc, p->ctx_live[ci] = 1, p->ctx_dev[ci] = di;
  if (p->depth < 16) p->stack[p->depth++] = ci; /* made current, as pushed */
}

void op_ctx_destroy(struct prog *p, int ci) {
  struct call c;
  char b[24];
  call_init(p, &c, F_CtxDestroy, 0);
  c.c = p->ctx[ci];
  tx_exec(&c);
  snprintf(b, sizeof b, "ctx%d", ci);
  tx_line(p, &c, b, "");
  if (!ok(&c)) return;
  p->ctx_live[ci] = 0;
  int w = 0; /* the driver pops it off this thread's stack */
  for (int i = 0; i < p->depth; i++)
    if (p->stack[i] != ci || i != p->depth - 1) p->stack[w++] = p->stack[i];
  p->depth = w;
  for (int i = 0; i < NS; i++)
    if (p->s[i].ctx == ci) p->s[i].live = 0, p->s[i].h = NULL;
  for (int i = 0; i < NE; i++)
    if (p->e[i].ctx == ci) p->e[i].live = 0, p->e[i].h = NULL;
  for (int i = 0; i < NM; i++) /* its allocations are freed with it */
    if (p->m[i].ctx == ci) p->m[i].live = 0, p->m[i].p = NULL, p->m[i].dp = 0;
}

void op_retain_primary(struct prog *p, int di) {
  struct call c;
  char a[16], o[16];
  call_init(p, &c, F_DevicePrimaryCtxRetain, 0);
  c.d = p->dev[di];
  tx_exec(&c);
  snprintf(a, sizeof a, "&c, dev%d", di);
  if (ok(&c)) p->ctx[di] = c.oc, p->ctx_live[di] = 1, p->ctx_dev[di] = di;
  tx_line(p, &c, a, ok(&c) ? (snprintf(o, sizeof o, "ctx%d", di), o) : "");
}

void op_release_primary(struct prog *p, int di) {
  struct call c;
  char a[24];
  call_init(p, &c, F_DevicePrimaryCtxRelease, 0);
  c.d = p->dev[di];
  tx_exec(&c);
  snprintf(a, sizeof a, "dev%d", di);
  tx_line(p, &c, a, "");
}

/* kind 0: cuDeviceGet(arg); 1: an attribute (status only: values are the
 * hardware's); 2: cuDeviceGetCount. */
void op_device(struct prog *p, int kind, int arg) {
  struct call c;
  char a[48], o[24] = "", b[24];
  if (kind == 2) {
    op_ctx_call(p, F_DeviceGetCount, 0, 0);
    return;
  }
  call_init(p, &c, kind ? F_DeviceGetAttribute : F_DeviceGet, 0);
  if (kind == 0) {
    c.i = arg;
    tx_exec(&c);
    snprintf(a, sizeof a, "&d, %d", arg);
    if (ok(&c)) snprintf(o, sizeof o, "%s", sym_dev(p, c.od, b));
  } else {
    static const int attrs[] = {CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM,
                                CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS, 9999};
    const unsigned k = (unsigned)(arg + 1); /* arg: -1 .. 4 */
    c.i = attrs[k % 3], c.d = k >= 4 ? 99 : p->dev[0];
    tx_exec(&c);
    snprintf(a, sizeof a, "&v, attr %d, %s", c.i, k >= 4 ? "bad device" : "dev0");
  }
  tx_line(p, &c, a, o);
}
