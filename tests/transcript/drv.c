/* Opening the driver under test and looking up its entry points. */
#include "drv.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

struct tx_driver D;

typedef CUresult (*get_proc_v2_t)(const char *, void **, int, cuuint64_t,
                                  CUdriverProcAddressQueryResult *);

static const struct {
  const char *name;
  int maxv, minv;
} k_entries[F_COUNT] = {
#define TX_ROW(id, name, maxv, minv, ...) {name, maxv, minv},
    TX_ENTRIES(TX_ROW)
#undef TX_ROW
};

static void *slot(int f) {
  void **base = (void **)&D;
  return &base[f];
}

const char *tx_entry_name(int f) { return k_entries[f].name; }

int tx_entry_present(int f) {
  void *p;
  memcpy(&p, slot(f), sizeof p);
  return p != NULL;
}

const char *tx_status_name(CUresult r) {
  static __thread char buf[32];
  const char *n = NULL;
  if (D.GetErrorName && D.GetErrorName(r, &n) == CUDA_SUCCESS && n) return n;
  snprintf(buf, sizeof buf, "CUresult(%d)", (int)r);
  return buf;
}

int tx_load(const char *path) {
  void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    fprintf(stderr, "record: cannot open %s: %s\n", path, dlerror());
    return 1;
  }
  get_proc_v2_t gp;
  void *sym = dlsym(lib, "cuGetProcAddress_v2");
  if (!sym) {
    fprintf(stderr, "record: %s exports no cuGetProcAddress_v2\n", path);
    return 1;
  }
  memcpy(&gp, &sym, sizeof gp);
  void *p = NULL;
  CUdriverProcAddressQueryResult q;
  if (gp("cuDriverGetVersion", &p, CUDA_VERSION, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &q) ||
      !p) {
    fprintf(stderr, "record: %s lacks cuDriverGetVersion\n", path);
    return 1;
  }
  memcpy(slot(F_DriverGetVersion), &p, sizeof p);
  if (D.DriverGetVersion(&D.version) != CUDA_SUCCESS) {
    fprintf(stderr, "record: cuDriverGetVersion failed\n");
    return 1;
  }
  for (int f = 0; f < F_COUNT; f++) {
    int v = D.version;
    if (k_entries[f].maxv && k_entries[f].maxv < v) v = k_entries[f].maxv;
    void *fn = NULL;
    if (k_entries[f].minv && k_entries[f].minv > D.version) continue; /* not in this driver */
    if (gp(k_entries[f].name, &fn, v, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &q) != CUDA_SUCCESS ||
        q != CU_GET_PROC_ADDRESS_SUCCESS)
      fn = NULL;
    memcpy(slot(f), &fn, sizeof fn);
  }
  return 0;
}
