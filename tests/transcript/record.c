/* evx-transcript-record: runs generated call programs against a driver
 * library and writes their canonical transcript (docs/host-emulation.md,
 * "Transcripts").
 *
 *   record --seed S --programs N --devices D --driver PATH -o FILE
 *          [--no-stale] [--no-legality] [--only K]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gen.h"
#include "ipc_child.h"
#include "ops.h"

struct opts {
  unsigned long long seed;
  long programs, only;
  int devices, stale, legality;
  const char *driver, *out;
};

static int parse(int argc, char **argv, struct opts *o) {
  *o = (struct opts){.seed = 1, .programs = 100, .only = -1, .devices = 1, .stale = 1,
                     .legality = 1, .out = "-"};
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--no-stale")) o->stale = 0;
    else if (!strcmp(a, "--no-legality")) o->legality = 0;
    else if (!v) return fprintf(stderr, "record: %s needs a value\n", a), 2;
    else if (!strcmp(a, "--seed")) o->seed = strtoull(v, NULL, 0), i++;
    else if (!strcmp(a, "--programs")) o->programs = strtol(v, NULL, 0), i++;
    else if (!strcmp(a, "--devices")) o->devices = atoi(v), i++;
    else if (!strcmp(a, "--driver")) o->driver = v, i++;
    else if (!strcmp(a, "--only")) o->only = strtol(v, NULL, 0), i++;
    else if (!strcmp(a, "-o")) o->out = v, i++;
    else return fprintf(stderr, "record: unknown option %s\n", a), 2;
  }
  if (!o->driver) return fprintf(stderr, "record: --driver PATH is required\n"), 2;
  if (o->devices < 1 || o->devices > 2) return fprintf(stderr, "record: --devices is 1 or 2\n"), 2;
  return 0;
}

static int init_devices(struct prog *p, int want, char *name, int len) {
  int n = 0;
  if (D.Init(0) != CUDA_SUCCESS || D.DeviceGetCount(&n) != CUDA_SUCCESS || n < want) {
    fprintf(stderr, "record: the driver has %d device(s), %d asked for\n", n, want);
    return 1;
  }
  for (int d = 0; d < want; d++) {
    /* held for the whole run, so that a program's release does not tear
     * the primary context down (making one costs far more than a program) */
    CUcontext keep;
    if (D.DeviceGet(&p->dev[d], d) != CUDA_SUCCESS ||
        D.DevicePrimaryCtxRetain(&keep, p->dev[d]) != CUDA_SUCCESS) {
      fprintf(stderr, "record: device %d: no primary context\n", d);
      return 1;
    }
  }
  if (!D.DeviceGetName || D.DeviceGetName(name, len, p->dev[0]) != CUDA_SUCCESS)
    snprintf(name, (size_t)len, "unknown");
  p->ndev = want;
  return 0;
}

static void header(FILE *f, const struct opts *o, const char *gpu, long total) {
  char date[32];
  time_t t = time(NULL);
  strftime(date, sizeof date, "%Y-%m-%d", gmtime(&t));
  const char *base = strrchr(o->driver, '/');
  fprintf(f, "# evx driver transcript: docs/host-emulation.md, \"Transcripts\"\n");
  fprintf(f, "generator %s\ndriver %s\ndriver_version %d\ngpu %s\ndevices %d\ndate %s\n",
          TX_GENERATOR, base ? base + 1 : o->driver, D.version, gpu, o->devices, date);
  fprintf(f, "seed %llu\nprograms %ld\nstale %d\nlegality %d\n", o->seed, o->programs, o->stale,
          o->legality);
  fprintf(f, "entries");
  for (int e = 0; e < F_COUNT; e++)
    if (!tx_entry_present(e)) fprintf(f, " missing:%s%s", tx_entry_name(e), e < TX_EVX_ENTRIES ? "" : "(extra)");
  fprintf(f, "\ntotal_programs %ld\n", total);
}

static void run_one(struct prog *p, const struct opts *o, long k) {
  long nrand = o->programs;
  p->index = k;
  p->rng = o->seed * 0x100000001b3ULL + (unsigned long long)k * 0x9e3779b97f4a7c15ULL;
  const char *kind = k < nrand ? "random" : k == nrand ? "probe" : "legality";
  fprintf(p->out, "program %ld %s\n", k, kind);
  prog_setup(p);
  if (k < nrand) prog_random(p, 20 + (int)rnd(p, 61));
  else if (k == nrand) prog_probe(p);
  else prog_legality(p, (int)(k - nrand - 1));
  prog_cleanup(p);
  fprintf(p->out, "end %ld\n", k);
}

int main(int argc, char **argv) {
  struct opts o;
  static struct prog p;
  char gpu[128];
  if (argc == 5 && !strcmp(argv[1], "--ipc-child") && !strcmp(argv[3], "--driver"))
    return ipc_child_main(argv[4], argv[2]);
  int rc = parse(argc, argv, &o);
  if (rc) return rc;
  if (tx_load(o.driver) || init_devices(&p, o.devices, gpu, sizeof gpu)) return 1;
  p.out = strcmp(o.out, "-") ? fopen(o.out, "w") : stdout;
  if (!p.out) return perror(o.out), 1;
  setvbuf(p.out, NULL, _IOLBF, 0); /* what ran before a crash is kept */
  p.stale_ok = o.stale;
  p.driver = o.driver;
  long total = o.programs + 1 + (o.legality ? legality_count() : 0); /* + the probe */
  header(p.out, &o, gpu, total);
  tx_helper_start();
  for (long k = 0; k < total; k++)
    if (o.only < 0 || o.only == k) run_one(&p, &o, k);
  tx_helper_stop();
  fprintf(stderr, "record: %ld programs, %ld calls\n", o.only < 0 ? total : 1, p.calls);
  return fclose(p.out) ? 1 : 0;
}
