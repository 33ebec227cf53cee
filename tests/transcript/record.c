/* evx-transcript-record: runs generated call programs against a driver
 * library and writes their canonical transcript (docs/host-emulation.md,
 * "Transcripts").
 *
 *   record --seed S --programs N --devices D --driver PATH -o FILE
 *          [--no-stale] [--no-legality] [--only K] [--jobs N] [--timing]
 *
 * --jobs N: N processes record contiguous ranges of the programs at once,
 * each with its own driver context; the transcript is the same for any N.
 * --timing: each worker prints to stderr where its time went (the costliest
 * entry points, and programs per second). A worker that a signal kills (a
 * crash, or a program past its time) says in which entry point each of its
 * threads was.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gen.h"
#include "ipc_child.h"
#include "ops.h"

/* A program takes well under a second alone; with several jobs the
 * driver serialises context creation and destruction, so a program may wait
 * on the others' for seconds. One past this hangs. */
enum { PROGRAM_SECONDS = 30, MAX_JOBS = 64 };

struct opts {
  unsigned long long seed;
  long programs, only;
  int devices, stale, legality, jobs, generator;
  const char *driver, *out;
};

static int parse(int argc, char **argv, struct opts *o) {
  *o = (struct opts){.seed = 1, .programs = 100, .only = -1, .devices = 1, .stale = 1,
                     .legality = 1, .jobs = 1, .generator = TX_GENERATOR, .out = "-"};
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--no-stale")) o->stale = 0;
    else if (!strcmp(a, "--timing")) tx_timing = 1;
    else if (!strcmp(a, "--no-legality")) o->legality = 0;
    else if (!v) return fprintf(stderr, "record: %s needs a value\n", a), 2;
    else if (!strcmp(a, "--seed")) o->seed = strtoull(v, NULL, 0), i++;
    else if (!strcmp(a, "--programs")) o->programs = strtol(v, NULL, 0), i++;
    else if (!strcmp(a, "--devices")) o->devices = atoi(v), i++;
    else if (!strcmp(a, "--driver")) o->driver = v, i++;
    else if (!strcmp(a, "--only")) o->only = strtol(v, NULL, 0), i++;
    else if (!strcmp(a, "--jobs")) o->jobs = atoi(v), i++;
    else if (!strcmp(a, "--generator")) o->generator = atoi(v), i++;
    else if (!strcmp(a, "-o")) o->out = v, i++;
    else return fprintf(stderr, "record: unknown option %s\n", a), 2;
  }
  if (!o->driver) return fprintf(stderr, "record: --driver PATH is required\n"), 2;
  if (o->devices < 1 || o->devices > 2) return fprintf(stderr, "record: --devices is 1 or 2\n"), 2;
  if (o->generator < TX_GENERATOR_OLDEST || o->generator > TX_GENERATOR)
    return fprintf(stderr, "record: --generator is %d to %d\n", TX_GENERATOR_OLDEST, TX_GENERATOR), 2;
  if (o->jobs < 1 || o->jobs > MAX_JOBS) return fprintf(stderr, "record: --jobs is 1 to %d\n", MAX_JOBS), 2;
  return 0;
}

static int device_count; /* the machine's: cuDeviceGetCount answers it */

static int init_devices(struct prog *p, int want, char *name, int len) {
  int n = 0;
  if (D.Init(0) != CUDA_SUCCESS || D.DeviceGetCount(&n) != CUDA_SUCCESS || n < want) {
    fprintf(stderr, "record: the driver has %d device(s), %d asked for\n", n, want);
    return 1;
  }
  device_count = n;
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
  fprintf(f, "generator %s %d\ndriver %s\ndriver_version %d\ngpu %s\ndevices %d\ndevice_count %d\ndate %s\n",
          TX_GENERATOR_NAME, o->generator, base ? base + 1 : o->driver, D.version, gpu, o->devices, device_count,
          date);
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
  /* Up to generator 4 program k+1 drew program k's numbers shifted by one
   * (rnd adds the same constant per draw), so neighbouring programs were
   * near copies; from 5, each program's start is mixed from (seed, k). */
  if (o->generator >= 5) p->rng = tx_mix(tx_mix(o->seed) ^ (unsigned long long)k);
  const char *kind = k < nrand ? "random" : k == nrand ? "probe" : "legality";
  fprintf(p->out, "program %ld %s\n", k, kind);
  prog_setup(p);
  if (k < nrand) prog_random(p, 20 + (int)rnd(p, 61));
  else if (k == nrand) prog_probe(p);
  else prog_legality(p, (int)(k - nrand - 1));
  prog_cleanup(p);
  fprintf(p->out, "end %ld\n", k);
}

static volatile long *g_cur; /* the worker's program, for on_fatal */

static void say(const char *s) {
  for (size_t n = strlen(s); n;) {
    ssize_t w = write(2, s, n);
    if (w <= 0) return;
    s += w, n -= (size_t)w;
  }
}

/* Async-signal-safe: names the program and the entry points the worker's
 * threads are in, then dies of the same signal, as the supervisor expects. */
static void on_fatal(int sig) {
  char num[24];
  int i = (int)sizeof num - 1;
  long k = g_cur ? *g_cur : -1;
  num[i] = 0;
  do num[--i] = (char)('0' + (k < 0 ? 0 : k % 10)), k /= 10; while (k > 0 && i > 0);
  say(sig == SIGALRM ? "record: program " : "record: a signal in program ");
  say(num + i);
  for (int t = 0; t < 2; t++) {
    const int f = tx_in_call[t];
    say(t ? ", helper thread in " : ": main thread in ");
    say(f >= 0 && f < F_COUNT ? tx_entry_name(f) : "no driver call");
  }
  say(sig == SIGALRM ? " (out of time)\n" : "\n");
  signal(sig, SIG_DFL);
  raise(sig);
}

/* A worker: loads and initialises the driver (never before the fork: a
 * CUDA driver is unusable in a child forked after cuInit), then runs the
 * programs from `from` on, telling the parent through *cur which one runs. */
static int worker(const struct opts *o, int fd, long from, long to, long total, volatile long *cur) {
  static struct prog p;
  char gpu[128];
  if (tx_load(o->driver) || init_devices(&p, o->devices, gpu, sizeof gpu)) return 1;
  p.out = fdopen(fd, "w");
  if (!p.out) return perror("record: output"), 1;
  setvbuf(p.out, NULL, _IOLBF, 0); /* what ran before a crash is kept */
  p.stale_ok = o->stale;
  p.generator = o->generator;
  p.driver = o->driver;
  if (from == 0) header(p.out, o, gpu, total);
  g_cur = cur;
  const int fatal[] = {SIGALRM, SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL};
  for (size_t i = 0; i < sizeof fatal / sizeof fatal[0]; i++) signal(fatal[i], on_fatal);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  tx_helper_start();
  for (long k = from; k < to; k++) {
    if (o->only >= 0 && o->only != k) continue;
    *cur = k;
    alarm(PROGRAM_SECONDS);
    run_one(&p, o, k);
    alarm(0);
  }
  *cur = -1;
  tx_helper_stop();
  clock_gettime(CLOCK_MONOTONIC, &t1);
  const double secs = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
  fprintf(stderr, "record: %ld programs from %ld, %ld calls, %.1f s\n", o->only < 0 ? to - from : 1,
          from, p.calls, secs);
  if (tx_timing) tx_timing_report(stderr);
  return fclose(p.out) ? 1 : 0;
}

static void sig_name(int sig, char *buf, size_t len) {
  static const struct { int n; const char *name; } names[] = {
      {SIGSEGV, "SIGSEGV"}, {SIGBUS, "SIGBUS"}, {SIGABRT, "SIGABRT"}, {SIGFPE, "SIGFPE"},
      {SIGILL, "SIGILL"},   {SIGALRM, "SIGALRM"}, {SIGKILL, "SIGKILL"}, {SIGTERM, "SIGTERM"}};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (names[i].n == sig) {
      snprintf(buf, len, "%s", names[i].name);
      return;
    }
  snprintf(buf, len, "signal %d", sig);
}

/* Runs workers until every program ran: a worker killed by a signal (a
 * crash in the driver, or a program past PROGRAM_SECONDS) leaves its
 * program's lines so far, then "CRASH <signal>" and its end line; the next
 * worker starts at the program after it. */
static int supervise(const struct opts *o, int fd, long from, long to, long total) {
  volatile long *cur = mmap(NULL, sizeof *cur, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (cur == MAP_FAILED) return perror("record: mmap"), 1;
  long crashes = 0;
  if (from >= to) return 0;
  for (;;) {
    *cur = -1;
    pid_t pid = fork();
    if (pid < 0) return perror("record: fork"), 1;
    if (pid == 0) _exit(worker(o, fd, from, to, total, cur));
    int st;
    while (waitpid(pid, &st, 0) < 0)
      if (errno != EINTR) return perror("record: waitpid"), 1;
    if (WIFEXITED(st)) {
      if (crashes) fprintf(stderr, "record: %ld program(s) crashed\n", crashes);
      return WEXITSTATUS(st);
    }
    long k = *cur;
    char sig[16];
    sig_name(WTERMSIG(st), sig, sizeof sig);
    fprintf(stderr, "record: the worker died of %s in program %ld\n", sig, k);
    if (k < 0) return 1; /* not in a program: nothing to go on with */
    dprintf(fd, "  CRASH %s\nend %ld\n", sig, k);
    crashes++;
    from = k + 1;
    if (from >= to) return 0;
  }
}

static volatile sig_atomic_t stopped;
static void on_stop(int sig) { stopped = sig; }

/* Copies what a job wrote, from its start, to the transcript; of a job cut
 * short, only up to its last complete program (a program's lines must not
 * run into the next job's). */
static int append(int to, int from, int whole) {
  off_t len = lseek(from, 0, SEEK_END);
  char *buf = len > 0 ? mmap(NULL, (size_t)len, PROT_READ, MAP_PRIVATE, from, 0) : NULL;
  if (len <= 0) return len < 0 ? (perror("record: lseek"), 1) : 0;
  if (buf == MAP_FAILED) return perror("record: mmap"), 1;
  size_t n = (size_t)len;
  if (!whole) { /* up to the last end line, or the header only */
    size_t keep = 0, first = 0;
    for (size_t l = 0, e; l < n; l = e) {
      const char *nl = memchr(buf + l, '\n', n - l);
      e = nl ? (size_t)(nl - buf) + 1 : n;
      if (nl && !memcmp(buf + l, "end ", 4 < e - l ? 4 : e - l)) keep = e;
      if (!first && !keep && !memcmp(buf + l, "program ", 8 < e - l ? 8 : e - l)) first = l;
    }
    n = keep ? keep : first;
  }
  int rc = 0;
  for (size_t w = 0; w < n && !rc;) {
    ssize_t m = write(to, buf + w, n - w);
    if (m < 0 && errno != EINTR) rc = (perror("record: write"), 1);
    w += m > 0 ? (size_t)m : 0;
  }
  munmap(buf, (size_t)len);
  return rc;
}

/* --jobs N: job j supervises programs [j*total/N, (j+1)*total/N) into a
 * file of its own; the parent writes the files in order. Stopped (SIGTERM,
 * SIGINT: a time limit), it writes the complete programs the jobs have. */
static int run_jobs(const struct opts *o, int fd, long total) {
  int n = o->jobs < total ? o->jobs : (int)total, files[MAX_JOBS], rc = 0; /* job 0 writes the header */
  pid_t pids[MAX_JOBS];
  for (int j = 0; j < n; j++) {
    FILE *t = tmpfile();
    files[j] = t ? dup(fileno(t)) : -1;
    if (t) fclose(t);
    if (files[j] < 0) return perror("record: tmpfile"), 1;
    pids[j] = fork();
    if (pids[j] < 0) return perror("record: fork"), 1;
    if (pids[j] == 0) _exit(supervise(o, files[j], total * j / n, total * (j + 1) / n, total));
  }
  struct sigaction sa = {.sa_handler = on_stop};
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
  for (int j = 0; j < n; j++) {
    int st;
    while (waitpid(pids[j], &st, 0) < 0) {
      if (errno != EINTR) return perror("record: waitpid"), 1;
      for (int i = j; i < n; i++) kill(pids[i], SIGTERM);
    }
    const int whole = WIFEXITED(st) && !WEXITSTATUS(st);
    if (append(fd, files[j], whole) || !whole) rc = 1;
    close(files[j]);
  }
  if (stopped) fprintf(stderr, "record: stopped by signal %d: the complete programs are kept\n", (int)stopped);
  return rc || stopped;
}

int main(int argc, char **argv) {
  struct opts o;
  if (argc == 5 && !strcmp(argv[1], "--ipc-child") && !strcmp(argv[3], "--driver"))
    return ipc_child_main(argv[4], argv[2]);
  int rc = parse(argc, argv, &o);
  if (rc) return rc;
  int fd = strcmp(o.out, "-") ? open(o.out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644) : 1;
  if (fd < 0) return perror(o.out), 1;
  long total = o.programs + 1 + (o.legality ? legality_count(o.generator) : 0); /* + the probe */
  rc = o.jobs > 1 ? run_jobs(&o, fd, total) : supervise(&o, fd, 0, total, total);
  if (fd != 1 && close(fd)) return perror(o.out), 1;
  return rc;
}
