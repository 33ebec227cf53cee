/*
 * Copyright 2026 The evx Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/*
 * evx-fence-bench: fences (evx/fence.h) against what they replace, on one
 * device, each figure next to its baseline measured in the same process.
 *
 *   handoff   stream A is released by the host (a word it waits on), hands
 *             off to stream B, which writes a "done" word the host spins on;
 *             the host's time from release to done, median of the trials.
 *             Variants: none (A writes done itself: the baseline), a fence
 *             (evx_fence_signal on A, evx_stream_wait_fence on B), an event
 *             (cuEventRecord on A, cuStreamWaitEvent on B). The hand-off's
 *             cost is a variant's median minus the baseline's.
 *   wakeup    a host thread waits for work that a second thread releases:
 *             evx_fence_wait_host, cuEventSynchronize on a blocking_sync
 *             event, and on a default (spinning) event; the time from the
 *             release to the waiter's return, and the waiter's CPU time
 *             per wall time over waits of about 2 ms.
 *   calls     host cost per call: evx_fence_signal against
 *             cuStreamWriteValue64, evx_stream_wait_fence against
 *             cuStreamWaitValue64 (on a value reached), in batches with a
 *             synchronize between them; each pair's order alternates from
 *             one round to the next.
 *   ipc       as handoff, with stream B in a second process (this program
 *             run with --ipc-consumer): an IPC fence against an IPC event
 *             (evx_event_get_ipc_handle), the "done" word in a shared page
 *             both processes registered.
 *
 * Lines starting with "BENCH" are machine-readable: name, value, unit.
 * --quick: a few trials each (the smoke run on the host emulation, which
 * checks that every row is produced, never a timing).
 */
#define _GNU_SOURCE

#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_common.h"
#include "evx/evx.h"

typedef struct words {
    uint64_t *go, *done, *scratch; /* pinned host words */
    CUdeviceptr d_go, d_done, d_scratch;
} words;

static bench_raw g_raw;
static words g_w;
static int g_quick;

static void sleep_ns(long ns)
{
    struct timespec ts = {ns / 1000000000L, ns % 1000000000L};
    nanosleep(&ts, NULL);
}

static void words_open(void)
{
    void *p = NULL;
    CUdeviceptr d = 0;
    if (!g_raw.MemHostAlloc || !g_raw.MemHostGetDevicePointer || !g_raw.StreamWriteValue64 ||
        !g_raw.StreamWaitValue64) {
        fprintf(stderr, "evx-fence-bench: the driver lacks cuMemHostAlloc or the 64-bit "
                        "stream memory operations\n");
        exit(1);
    }
    CHECK_RAW(&g_raw, g_raw.MemHostAlloc(&p, 256, CU_MEMHOSTALLOC_PORTABLE |
                                                      CU_MEMHOSTALLOC_DEVICEMAP));
    memset(p, 0, 256);
    CHECK_RAW(&g_raw, g_raw.MemHostGetDevicePointer(&d, p, 0));
    /* a cache line each */
    g_w.go = (uint64_t *)p;
    g_w.done = (uint64_t *)((char *)p + 64);
    g_w.scratch = (uint64_t *)((char *)p + 128);
    g_w.d_go = d;
    g_w.d_done = d + 64;
    g_w.d_scratch = d + 128;
}

static void store(uint64_t *w, uint64_t v) { __atomic_store_n(w, v, __ATOMIC_SEQ_CST); }
static uint64_t load(const uint64_t *w) { return __atomic_load_n(w, __ATOMIC_SEQ_CST); }

/* ---- hand-off ------------------------------------------------------------ */

enum { H_NONE, H_FENCE, H_EVENT, H_COUNT };
static const char *const kHandoff[H_COUNT] = {"none", "fence", "event"};

static void handoff(void)
{
    const int trials = g_quick ? 5 : 2000;
    evx_stream_t a, b;
    CUstream ca, cb;
    evx_fence_t f;
    CUevent e;
    double *lat[H_COUNT];
    uint64_t seq = 0, fv = 0;

    CHECK_EVX(evx_device_create_stream(0, EVX_STREAM_NON_BLOCKING, 0, &a));
    CHECK_EVX(evx_device_create_stream(0, EVX_STREAM_NON_BLOCKING, 0, &b));
    CHECK_EVX(evx_stream_get_native(a, (void **)&ca));
    CHECK_EVX(evx_stream_get_native(b, (void **)&cb));
    CHECK_EVX(evx_device_create_fence(0, 0, 0, &f));
    CHECK_RAW(&g_raw, g_raw.EventCreate(&e, CU_EVENT_DISABLE_TIMING));
    for (int v = 0; v < H_COUNT; v++) lat[v] = calloc((size_t)trials, sizeof(double));
    for (int i = 0; i < trials; i++) {
        for (int v = 0; v < H_COUNT; v++) { /* interleaved: drift hits all alike */
            ++seq;
            CHECK_RAW(&g_raw, g_raw.StreamWaitValue64(ca, g_w.d_go, seq, CU_STREAM_WAIT_VALUE_GEQ));
            if (v == H_NONE) {
                CHECK_RAW(&g_raw, g_raw.StreamWriteValue64(ca, g_w.d_done, seq, 0));
            } else if (v == H_FENCE) {
                ++fv;
                CHECK_EVX(evx_fence_signal(f, a, fv));
                CHECK_EVX(evx_stream_wait_fence(b, f, fv));
                CHECK_RAW(&g_raw, g_raw.StreamWriteValue64(cb, g_w.d_done, seq, 0));
            } else {
                CHECK_RAW(&g_raw, g_raw.EventRecord(e, ca));
                CHECK_RAW(&g_raw, g_raw.StreamWaitEvent(cb, e, 0));
                CHECK_RAW(&g_raw, g_raw.StreamWriteValue64(cb, g_w.d_done, seq, 0));
            }
            sleep_ns(200 * 1000); /* the streams reach their waits */
            const double t0 = bench_now_ns();
            store(g_w.go, seq);
            while (load(g_w.done) < seq) {
            }
            lat[v][i] = bench_now_ns() - t0;
        }
    }
    CHECK_EVX(evx_stream_synchronize(a));
    CHECK_EVX(evx_stream_synchronize(b));
    double med[H_COUNT];
    for (int v = 0; v < H_COUNT; v++) med[v] = bench_median(lat[v], trials);
    printf("hand-off A -> B, release to done, median of %d trials:\n", trials);
    for (int v = 0; v < H_COUNT; v++) {
        printf("  %-6s %8.2f us  (hand-off %+.2f us)\n", kHandoff[v], med[v] / 1e3,
               (med[v] - med[H_NONE]) / 1e3);
        printf("BENCH handoff_%s %.1f ns\n", kHandoff[v], med[v]);
    }
    printf("  event hand-off / fence hand-off: %.2f\n",
           (med[H_EVENT] - med[H_NONE]) / (med[H_FENCE] - med[H_NONE]));
    for (int v = 0; v < H_COUNT; v++) free(lat[v]);
    CHECK_RAW(&g_raw, g_raw.EventDestroy(e));
    CHECK_EVX(evx_fence_destroy(f));
    CHECK_EVX(evx_stream_destroy(a));
    CHECK_EVX(evx_stream_destroy(b));
}

/* ---- cross-process hand-off ---------------------------------------------- */

extern char **environ;

typedef struct shared_page {
    uint64_t go;
    char pad0[56];
    uint64_t done;
} shared_page;

static void to_hex(const unsigned char *b, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[b[i] >> 4];
        out[2 * i + 1] = digits[b[i] & 15];
    }
    out[2 * n] = '\0';
}

static void from_hex(const char *s, unsigned char *b, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned v = 0;
        if (sscanf(s + 2 * i, "%2x", &v) != 1) exit(3);
        b[i] = (unsigned char)v;
    }
}

/* The page both processes map (a file under /dev/shm) and register. */
static shared_page *map_page(const char *name, int create, CUdeviceptr *d)
{
    const int fd = shm_open(name, create ? O_CREAT | O_RDWR : O_RDWR, 0600);
    if (fd < 0 || (create && ftruncate(fd, 4096) != 0)) {
        perror("evx-fence-bench: shm_open");
        exit(1);
    }
    void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) {
        perror("evx-fence-bench: mmap");
        exit(1);
    }
    if (!g_raw.MemHostRegister) {
        fprintf(stderr, "evx-fence-bench: the driver lacks cuMemHostRegister\n");
        exit(1);
    }
    CHECK_RAW(&g_raw, g_raw.MemHostRegister(p, 4096, CU_MEMHOSTREGISTER_PORTABLE |
                                                         CU_MEMHOSTREGISTER_DEVICEMAP));
    CHECK_RAW(&g_raw, g_raw.MemHostGetDevicePointer(d, p, 0));
    return (shared_page *)p;
}

/* The consumer: opens the fence and the event, then for each line
 * "fence V SEQ" or "event SEQ" on stdin queues the wait and the write of
 * SEQ to done on its stream, and answers "q". */
static int ipc_consumer(const char *fence_hex, const char *event_hex, const char *page)
{
    evx_ipc_fence_handle_t fh;
    evx_ipc_event_handle_t eh;
    evx_fence_t f;
    evx_event_t e;
    evx_stream_t b;
    CUstream cb;
    CUdeviceptr d_page;
    char line[128];

    from_hex(fence_hex, fh.reserved, sizeof fh.reserved);
    from_hex(event_hex, eh.reserved, sizeof eh.reserved);
    CHECK_EVX(evx_device_open_ipc_fence(0, &fh, &f));
    CHECK_EVX(evx_device_open_ipc_event(0, &eh, &e));
    CHECK_EVX(evx_device_create_stream(0, EVX_STREAM_NON_BLOCKING, 0, &b));
    CHECK_EVX(evx_stream_get_native(b, (void **)&cb));
    (void)map_page(page, 0, &d_page);
    printf("ready\n");
    fflush(stdout);
    while (fgets(line, sizeof line, stdin)) {
        unsigned long long v = 0, seq = 0;
        if (sscanf(line, "fence %llu %llu", &v, &seq) == 2) {
            CHECK_EVX(evx_stream_wait_fence(b, f, v));
        } else if (sscanf(line, "event %llu", &seq) == 1) {
            CHECK_EVX(evx_stream_wait_event(b, e, 0));
        } else {
            break;
        }
        CHECK_RAW(&g_raw, g_raw.StreamWriteValue64(cb, d_page + offsetof(shared_page, done),
                                                   seq, 0));
        printf("q\n");
        fflush(stdout);
    }
    CHECK_EVX(evx_stream_synchronize(b));
    CHECK_EVX(evx_stream_destroy(b));
    CHECK_EVX(evx_event_destroy(e));
    CHECK_EVX(evx_fence_destroy(f));
    return 0;
}

static void ipc_handoff(const char *self)
{
    const int trials = g_quick ? 5 : 1000;
    char page[64], fhex[2 * EVX_IPC_FENCE_HANDLE_SIZE + 1], ehex[2 * EVX_IPC_HANDLE_SIZE + 1];
    char line[64];
    evx_fence_t f;
    evx_event_t e;
    evx_stream_t a;
    CUstream ca;
    CUdeviceptr d_page;
    evx_ipc_fence_handle_t fh;
    evx_ipc_event_handle_t eh;
    int to[2], from[2];
    pid_t pid;
    posix_spawn_file_actions_t fa;
    double *lat[H_COUNT];
    uint64_t seq = 0, fv = 0;

    snprintf(page, sizeof page, "/evx-fence-bench-%d", (int)getpid());
    shared_page *sp = map_page(page, 1, &d_page);
    CHECK_EVX(evx_device_create_fence(0, 0, EVX_FENCE_INTERPROCESS, &f));
    CHECK_EVX(evx_device_create_event(0, EVX_EVENT_INTERPROCESS | EVX_EVENT_DISABLE_TIMING, &e));
    CHECK_EVX(evx_fence_get_ipc_handle(f, &fh));
    CHECK_EVX(evx_event_get_ipc_handle(e, &eh));
    CHECK_EVX(evx_device_create_stream(0, EVX_STREAM_NON_BLOCKING, 0, &a));
    CHECK_EVX(evx_stream_get_native(a, (void **)&ca));
    to_hex(fh.reserved, sizeof fh.reserved, fhex);
    to_hex(eh.reserved, sizeof eh.reserved, ehex);
    if (pipe(to) != 0 || pipe(from) != 0) exit(1);
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, to[0], 0);
    posix_spawn_file_actions_adddup2(&fa, from[1], 1);
    posix_spawn_file_actions_addclose(&fa, to[1]);
    posix_spawn_file_actions_addclose(&fa, from[0]);
    char *argv[] = {(char *)self, (char *)"--ipc-consumer", fhex, ehex, page, NULL};
    if (posix_spawn(&pid, "/proc/self/exe", &fa, NULL, argv, environ) != 0) {
        perror("evx-fence-bench: posix_spawn");
        exit(1);
    }
    posix_spawn_file_actions_destroy(&fa);
    close(to[0]);
    close(from[1]);
    FILE *out = fdopen(to[1], "w"), *in = fdopen(from[0], "r");
    if (!fgets(line, sizeof line, in) || strcmp(line, "ready\n") != 0) {
        fprintf(stderr, "evx-fence-bench: the consumer did not start\n");
        exit(1);
    }
    for (int v = 0; v < H_COUNT; v++) lat[v] = calloc((size_t)trials, sizeof(double));
    for (int i = 0; i < trials; i++) {
        for (int v = 0; v < H_COUNT; v++) {
            ++seq;
            CHECK_RAW(&g_raw, g_raw.StreamWaitValue64(ca, d_page + offsetof(shared_page, go), seq,
                                                     CU_STREAM_WAIT_VALUE_GEQ));
            if (v == H_NONE) {
                CHECK_RAW(&g_raw, g_raw.StreamWriteValue64(
                                      ca, d_page + offsetof(shared_page, done), seq, 0));
            } else {
                if (v == H_FENCE) {
                    CHECK_EVX(evx_fence_signal(f, a, ++fv));
                    fprintf(out, "fence %llu %llu\n", (unsigned long long)fv,
                            (unsigned long long)seq);
                } else {
                    CHECK_EVX(evx_event_record(e, a));
                    fprintf(out, "event %llu\n", (unsigned long long)seq);
                }
                fflush(out);
                if (!fgets(line, sizeof line, in)) {
                    fprintf(stderr, "evx-fence-bench: the consumer ended\n");
                    exit(1);
                }
            }
            sleep_ns(200 * 1000);
            const double t0 = bench_now_ns();
            store(&sp->go, seq);
            while (load(&sp->done) < seq) {
            }
            lat[v][i] = bench_now_ns() - t0;
        }
    }
    fclose(out);
    int status = 0;
    waitpid(pid, &status, 0);
    fclose(in);
    CHECK_EVX(evx_stream_synchronize(a));
    double med[H_COUNT];
    for (int v = 0; v < H_COUNT; v++) med[v] = bench_median(lat[v], trials);
    printf("cross-process hand-off A -> B (B in a second process), release to done, median of "
           "%d trials:\n", trials);
    for (int v = 0; v < H_COUNT; v++) {
        printf("  %-6s %8.2f us  (hand-off %+.2f us)\n", v == H_EVENT ? "ipc-ev" : kHandoff[v],
               med[v] / 1e3, (med[v] - med[H_NONE]) / 1e3);
        printf("BENCH ipc_handoff_%s %.1f ns\n", kHandoff[v], med[v]);
        free(lat[v]);
    }
    printf("  IPC event hand-off / IPC fence hand-off: %.2f\n",
           (med[H_EVENT] - med[H_NONE]) / (med[H_FENCE] - med[H_NONE]));
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "evx-fence-bench: the consumer exited with status %d\n", status);
        exit(1);
    }
    CHECK_EVX(evx_stream_destroy(a));
    CHECK_EVX(evx_event_destroy(e));
    CHECK_EVX(evx_fence_destroy(f));
    shm_unlink(page);
}

/* ---- host wake-up ------------------------------------------------------- */

enum { W_FENCE, W_BLOCKING, W_SPIN, W_COUNT };
static const char *const kWake[W_COUNT] = {"fence_wait_host", "event_blocking_sync",
                                           "event_spin"};

typedef struct releaser {
    sem_t go;
    long delay_ns;
    uint64_t value;
    int64_t t0; /* ns, written before the release */
    int stop;
} releaser;

static void *release_main(void *arg)
{
    releaser *rl = (releaser *)arg;
    for (;;) {
        sem_wait(&rl->go);
        if (rl->stop) return NULL;
        if (rl->delay_ns > 0) {
            const double until = bench_now_ns() + (double)rl->delay_ns;
            sleep_ns(rl->delay_ns > 100000 ? rl->delay_ns - 50000 : 0);
            while (bench_now_ns() < until) {
            }
        }
        __atomic_store_n(&rl->t0, (int64_t)bench_now_ns(), __ATOMIC_SEQ_CST);
        store(g_w.go, rl->value);
    }
}

/* The calling thread's CPU time (CLOCK_THREAD_CPUTIME_ID: exact, where
 * getrusage counts in scheduler ticks). */
static double thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void wakeup(void)
{
    const int trials = g_quick ? 5 : 500, cpu_trials = g_quick ? 3 : 100;
    evx_stream_t a;
    CUstream ca;
    evx_fence_t f;
    CUevent eb, es;
    releaser rl;
    pthread_t th;
    double *lat[W_COUNT], cpu[W_COUNT] = {0}, wall[W_COUNT] = {0};
    uint64_t fv = 0;

    CHECK_EVX(evx_device_create_stream(0, EVX_STREAM_NON_BLOCKING, 0, &a));
    CHECK_EVX(evx_stream_get_native(a, (void **)&ca));
    CHECK_EVX(evx_device_create_fence(0, 0, 0, &f));
    CHECK_RAW(&g_raw, g_raw.EventCreate(&eb, CU_EVENT_DISABLE_TIMING | CU_EVENT_BLOCKING_SYNC));
    CHECK_RAW(&g_raw, g_raw.EventCreate(&es, CU_EVENT_DISABLE_TIMING));
    memset(&rl, 0, sizeof rl);
    sem_init(&rl.go, 0, 0);
    pthread_create(&th, NULL, release_main, &rl);
    for (int v = 0; v < W_COUNT; v++) lat[v] = calloc((size_t)trials, sizeof(double));
    uint64_t seq = load(g_w.go);
    for (int pass = 0; pass < 2; pass++) { /* 0: latency, 1: CPU over ~2 ms waits */
        const int n = pass ? cpu_trials : trials;
        rl.delay_ns = pass ? 2000000 : 50000;
        for (int i = 0; i < n; i++) {
            for (int v = 0; v < W_COUNT; v++) {
                ++seq;
                CHECK_RAW(&g_raw, g_raw.StreamWaitValue64(ca, g_w.d_go, seq, CU_STREAM_WAIT_VALUE_GEQ));
                if (v == W_FENCE) CHECK_EVX(evx_fence_signal(f, a, ++fv));
                else CHECK_RAW(&g_raw, g_raw.EventRecord(v == W_BLOCKING ? eb : es, ca));
                rl.value = seq;
                const double c0 = thread_cpu_ns(), w0 = bench_now_ns();
                sem_post(&rl.go);
                if (v == W_FENCE) CHECK_EVX(evx_fence_wait_host(f, fv, UINT64_MAX));
                else CHECK_RAW(&g_raw, g_raw.EventSynchronize(v == W_BLOCKING ? eb : es));
                const double t1 = bench_now_ns();
                if (pass) {
                    cpu[v] += thread_cpu_ns() - c0;
                    wall[v] += t1 - w0;
                } else {
                    lat[v][i] = t1 - (double)__atomic_load_n(&rl.t0, __ATOMIC_SEQ_CST);
                }
                CHECK_EVX(evx_stream_synchronize(a));
            }
        }
    }
    rl.stop = 1;
    sem_post(&rl.go);
    pthread_join(th, NULL);
    printf("host wake-up, release to the waiter's return, median of %d trials; the waiter's "
           "CPU time per wall time over %d waits of about 2 ms:\n", trials, cpu_trials);
    for (int v = 0; v < W_COUNT; v++) {
        const double med = bench_median(lat[v], trials);
        printf("  %-20s %8.2f us   CPU %5.1f %%\n", kWake[v], med / 1e3,
               wall[v] > 0 ? 100.0 * cpu[v] / wall[v] : 0.0);
        printf("BENCH wakeup_%s %.1f ns\n", kWake[v], med);
        printf("BENCH wakeup_cpu_%s %.1f percent\n", kWake[v],
               wall[v] > 0 ? 100.0 * cpu[v] / wall[v] : 0.0);
        free(lat[v]);
    }
    CHECK_RAW(&g_raw, g_raw.EventDestroy(eb));
    CHECK_RAW(&g_raw, g_raw.EventDestroy(es));
    CHECK_EVX(evx_fence_destroy(f));
    CHECK_EVX(evx_stream_destroy(a));
}

/* ---- call cost ---------------------------------------------------------- */

enum { C_SIGNAL, C_WRITE, C_WAIT, C_WAITVAL, C_COUNT };
static const char *const kCalls[C_COUNT] = {"evx_fence_signal", "cuStreamWriteValue64",
                                            "evx_stream_wait_fence", "cuStreamWaitValue64"};

static void calls(void)
{
    /* Short batches with a synchronize between them: a long run of queued
     * memory operations fills the stream's queue, and the calls then wait
     * for the GPU to drain it instead of showing their own cost. */
    const int batch = g_quick ? 10 : 128, batches = g_quick ? 2 : 401;
    evx_stream_t s;
    CUstream cs;
    evx_fence_t f;
    double *per[C_COUNT];
    uint64_t fv = 0, wv = 0;

    CHECK_EVX(evx_device_create_stream(0, EVX_STREAM_NON_BLOCKING, 0, &s));
    CHECK_EVX(evx_stream_get_native(s, (void **)&cs));
    CHECK_EVX(evx_device_create_fence(0, 0, 0, &f));
    for (int c = 0; c < C_COUNT; c++) per[c] = calloc((size_t)batches, sizeof(double));
    for (int k = 0; k < batches; k++) {
        for (int o = 0; o < C_COUNT; o++) {
            /* Every other round measures each raw call before its evx call,
             * so that what the position in a round costs falls on both. */
            const int c = (k & 1) ? (o ^ 1) : o;
            const double t0 = bench_now_ns();
            for (int i = 0; i < batch; i++) {
                switch (c) {
                case C_SIGNAL: CHECK_EVX(evx_fence_signal(f, s, ++fv)); break;
                case C_WRITE: CHECK_RAW(&g_raw, g_raw.StreamWriteValue64(cs, g_w.d_scratch, ++wv, 0)); break;
                case C_WAIT: CHECK_EVX(evx_stream_wait_fence(s, f, 1)); break;
                default:
                    CHECK_RAW(&g_raw, g_raw.StreamWaitValue64(cs, g_w.d_scratch, 1,
                                                             CU_STREAM_WAIT_VALUE_GEQ));
                    break;
                }
            }
            per[c][k] = (bench_now_ns() - t0) / batch;
            CHECK_EVX(evx_stream_synchronize(s));
        }
    }
    printf("host cost per call, median of %d batches of %d:\n", batches, batch);
    double med[C_COUNT];
    for (int c = 0; c < C_COUNT; c++) {
        med[c] = bench_median(per[c], batches);
        printf("  %-22s %8.1f ns\n", kCalls[c], med[c]);
        printf("BENCH call_%s %.1f ns\n", kCalls[c], med[c]);
        free(per[c]);
    }
    printf("  evx_fence_signal - cuStreamWriteValue64: %+.1f ns; "
           "evx_stream_wait_fence - cuStreamWaitValue64: %+.1f ns\n",
           med[C_SIGNAL] - med[C_WRITE], med[C_WAIT] - med[C_WAITVAL]);
    CHECK_EVX(evx_fence_destroy(f));
    CHECK_EVX(evx_stream_destroy(s));
}

int main(int argc, char **argv)
{
    int consumer = argc == 5 && !strcmp(argv[1], "--ipc-consumer");
    for (int i = 1; i < argc && !consumer; i++) {
        if (!strcmp(argv[i], "--quick")) {
            g_quick = 1;
        } else {
            fprintf(stderr, "usage: %s [--quick]\n", argv[0]);
            return 2;
        }
    }
    if (bench_raw_open(&g_raw) != 0) return 1;
    if (consumer) return ipc_consumer(argv[2], argv[3], argv[4]);
    bench_print_driver(stdout, &g_raw);
    words_open();
    calls();
    handoff();
    ipc_handoff(argv[0]);
    wakeup();
    if (g_raw.MemFreeHost) g_raw.MemFreeHost(g_w.go);
    bench_raw_close(&g_raw);
    return 0;
}
