/*
 * Copyright 2026 The evx Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/*
 * evx-depot-memory: what the driver events evx keeps for reuse cost in
 * memory. evx keeps the driver events of destroyed events (a stack per
 * thread, a depot per device and flags of up to 65,536; docs/design.md,
 * "Driver events are reused") until evx_device_trim(). This program makes
 * N events and destroys them, then trims, and reads the process's resident
 * memory (/proc/self/statm) and the device memory in use (cuMemGetInfo)
 * after each step; beside it, the same N events made and destroyed through
 * the raw driver. Each side runs in a process of its own (forked before
 * either touches the driver), so that neither finds memory the other left
 * in the driver's or the allocator's pools.
 *
 *   evx-depot-memory [--n N] [--quick]
 *
 * --n: events per side (default 65,536, the depot's bound); --quick: 2,000
 * (a smoke run). Output: a table, and a BENCH line per figure.
 */
#define _GNU_SOURCE

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_common.h"

typedef struct usage {
    long long rss;    /* resident bytes of the process */
    long long device; /* device bytes in use, or -1 where the driver cannot say */
} usage;

static usage measure(const bench_raw *raw)
{
    usage u = {-1, -1};
    FILE *f = fopen("/proc/self/statm", "r");
    long long pages_total = 0, pages_rss = 0;
    if (f) {
        if (fscanf(f, "%lld %lld", &pages_total, &pages_rss) == 2)
            u.rss = pages_rss * sysconf(_SC_PAGESIZE);
        fclose(f);
    }
    size_t free_b = 0, total_b = 0;
    if (raw->MemGetInfo && raw->MemGetInfo(&free_b, &total_b) == CUDA_SUCCESS)
        u.device = (long long)(total_b - free_b);
    return u;
}

/* Bytes per event of the change from a to b, as text ("n/a" where either
 * could not be read). */
static const char *per_event(char *buf, size_t n, long long a, long long b, long count)
{
    if (a < 0 || b < 0)
        snprintf(buf, n, "n/a");
    else
        snprintf(buf, n, "%+.1f", (double)(b - a) / (double)count);
    return buf;
}

/* step: a key for the BENCH line; label: its words in the table. */
static void report(const char *side, const char *step, const char *label, usage base,
                   usage now, long count)
{
    char rss[32], dev[32];
    printf("  %-4s %-30s %12s %12s\n", side, label,
           per_event(rss, sizeof rss, base.rss, now.rss, count),
           per_event(dev, sizeof dev, base.device, now.device, count));
    printf("BENCH depot_memory side=%s step=%s host_bytes_per_event=%s "
           "device_bytes_per_event=%s n=%ld\n",
           side, step, rss, dev, count);
    fflush(stdout);
}

/* n handles' worth of zeroed memory, its pages touched (so that they are
 * resident before the baseline is read), or exit(1). */
static void *handle_array(long n, size_t size)
{
    void *p = calloc((size_t)n, size);
    if (!p) {
        fprintf(stderr, "depot_memory: out of memory\n");
        exit(1);
    }
    memset(p, 0, (size_t)n * size);
    return p;
}

static void raw_side(const bench_raw *raw, long n)
{
    CUevent *ev = handle_array(n, sizeof *ev);
    const usage base = measure(raw);
    for (long i = 0; i < n; i++)
        CHECK_RAW(raw, raw->EventCreate(&ev[i], CU_EVENT_DEFAULT));
    report("raw", "made", "made", base, measure(raw), n);
    for (long i = 0; i < n; i++)
        CHECK_RAW(raw, raw->EventDestroy(ev[i]));
    report("raw", "destroyed", "destroyed", base, measure(raw), n);
    free(ev);
}

static void evx_side(const bench_raw *raw, long n)
{
    evx_event_t *ev = handle_array(n, sizeof *ev);
    /* evx's own first-use state (the thread's record, the device's
     * context) before the baseline. */
    CHECK_EVX(evx_device_create_event(0, EVX_EVENT_DEFAULT, &ev[0]));
    CHECK_EVX(evx_event_destroy(ev[0]));
    CHECK_EVX(evx_device_trim(0));
    const usage base = measure(raw);
    for (long i = 0; i < n; i++)
        CHECK_EVX(evx_device_create_event(0, EVX_EVENT_DEFAULT, &ev[i]));
    report("evx", "made", "made", base, measure(raw), n);
    for (long i = 0; i < n; i++)
        CHECK_EVX(evx_event_destroy(ev[i]));
    report("evx", "destroyed", "destroyed (kept for reuse)", base, measure(raw), n);
    CHECK_EVX(evx_device_trim(0));
    report("evx", "trimmed", "evx_device_trim", base, measure(raw), n);
    free(ev);
}

/* One side in a child process; the parent has not touched the driver. */
static int run_side(int evx, long n)
{
    fflush(stdout);
    const pid_t pid = fork();
    if (pid < 0) {
        perror("depot_memory: fork");
        return -1;
    }
    if (pid == 0) {
        bench_raw raw;
        if (bench_raw_open(&raw) != 0) _exit(1);
        if (!evx) {
            bench_print_driver(stdout, &raw);
            printf("memory per event, change from each side's baseline, %ld events (bytes)\n", n);
            printf("  %-4s %-30s %12s %12s\n", "side", "after", "host (RSS)", "device");
        }
        if (evx)
            evx_side(&raw, n);
        else
            raw_side(&raw, n);
        bench_raw_close(&raw);
        fflush(stdout);
        _exit(0);
    }
    int st = 0;
    if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, "depot_memory: the %s side failed\n", evx ? "evx" : "raw");
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    long n = 65536;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) {
            n = 2000;
        } else if (!strcmp(argv[i], "--n") && i + 1 < argc) {
            n = bench_parse_long("--n", argv[++i], 1, 1L << 22);
            if (n < 0) return 2;
        } else {
            fprintf(stderr, "usage: %s [--n N] [--quick]\n", argv[0]);
            return 2;
        }
    }
    if (run_side(0, n) != 0 || run_side(1, n) != 0) return 1;
    return 0;
}
