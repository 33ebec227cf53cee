/* Symbols for handles: what a transcript shows instead of an address. */
#include <stdio.h>

#include "prog.h"

const char *sym_s(const struct prog *p, int si, char *buf) {
  if (si == S_NULL) return "null";
  if (si == S_LEGACY) return "legacy";
  if (si == S_PTDS) return "per_thread";
  if (!p->s[si].live && !p->s[si].h) return "null";
  snprintf(buf, 24, "s%d%s", si, p->s[si].live ? "" : "(destroyed)");
  return buf;
}

const char *sym_e(const struct prog *p, int ei, char *buf) {
  if (ei < 0) return "null";
  if (!p->e[ei].live && !p->e[ei].h) return "null";
  snprintf(buf, 24, "e%d%s", ei, p->e[ei].live ? "" : "(destroyed)");
  return buf;
}

const char *sym_ctx(const struct prog *p, CUcontext c, char *buf) {
  if (!c) return "none";
  for (int i = 0; i < NC; i++)
    if (p->ctx_live[i] && p->ctx[i] == c) {
      snprintf(buf, 24, "ctx%d", i);
      return buf;
    }
  return "unknown-ctx";
}

const char *sym_dev(const struct prog *p, CUdevice d, char *buf) {
  for (int i = 0; i < p->ndev; i++)
    if (p->dev[i] == d) {
      snprintf(buf, 24, "dev%d", i);
      return buf;
    }
  return "unknown-dev";
}

CUstream stream_h(const struct prog *p, int si) {
  if (si == S_NULL) return NULL;
  if (si == S_LEGACY) return CU_STREAM_LEGACY;
  if (si == S_PTDS) return CU_STREAM_PER_THREAD;
  return p->s[si].h;
}

const char *capstatus_name(CUstreamCaptureStatus st) {
  switch (st) {
  case CU_STREAM_CAPTURE_STATUS_NONE: return "NONE";
  case CU_STREAM_CAPTURE_STATUS_ACTIVE: return "ACTIVE";
  case CU_STREAM_CAPTURE_STATUS_INVALIDATED: return "INVALIDATED";
  }
  return "?";
}

const char *mode_name(int mode) {
  switch (mode) {
  case CU_STREAM_CAPTURE_MODE_GLOBAL: return "GLOBAL";
  case CU_STREAM_CAPTURE_MODE_THREAD_LOCAL: return "THREAD_LOCAL";
  case CU_STREAM_CAPTURE_MODE_RELAXED: return "RELAXED";
  }
  return "BAD_MODE";
}

unsigned long long tx_mix(unsigned long long z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

unsigned rnd(struct prog *p, unsigned n) {
  /* splitmix64: the same programs from the same seed everywhere */
  unsigned long long z = (p->rng += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  z ^= z >> 31;
  return n ? (unsigned)(z % n) : 0;
}
