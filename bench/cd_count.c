/*
 * Copyright 2026 The evx Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/*
 * evx-cd-count: evx_device_create_event + evx_event_destroy on the main
 * thread while other threads are registered with evx (each made and
 * destroyed one event) and parked, for counting under callgrind how many
 * instructions evx executes per pair and how that grows with the number of
 * registered threads. bench/callgrind_cd.sh runs it and reads the counts;
 * run alone, it only makes the calls (its smoke test).
 *
 *   evx-cd-count THREADS PAIRS [BULK]
 *
 * With BULK = 0 (the default) it makes PAIRS pairs of create then destroy
 * (the cache serves each create); else PAIRS rounds of BULK creates
 * followed by BULK destroys. Device 0, flags 0. Instrumentation (when
 * callgrind runs it with --instr-atstart=no) covers only these calls, after
 * 200 warm-up pairs.
 */
#define _POSIX_C_SOURCE 200809L /* pthread_barrier_t */

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "evx/evx.h"

#include "callgrind_marks.h"

#define MAX_THREADS 256

static pthread_barrier_t g_ready, g_leave;
static int g_failed;

static void check(evx_status_t st, const char *call)
{
    if (st != EVX_SUCCESS && !__atomic_exchange_n(&g_failed, 1, __ATOMIC_SEQ_CST))
        fprintf(stderr, "evx-cd-count: %s -> %s: %s\n", call, evx_status_name(st),
                evx_last_error_message());
}

static void *parked(void *arg)
{
    evx_event_t e = NULL;
    (void)arg;
    check(evx_device_create_event(0, 0, &e), "evx_device_create_event");
    if (e != NULL)
        check(evx_event_destroy(e), "evx_event_destroy");
    pthread_barrier_wait(&g_ready);
    pthread_barrier_wait(&g_leave);
    return NULL;
}

int main(int argc, char **argv)
{
    pthread_t tid[MAX_THREADS];
    evx_event_t one = NULL, *ev;
    long threads, pairs, bulk, i, k;
    if (argc < 3 || (threads = atol(argv[1])) < 1 || threads > MAX_THREADS ||
        (pairs = atol(argv[2])) < 1 || (bulk = argc > 3 ? atol(argv[3]) : 0) < 0) {
        fprintf(stderr, "usage: evx-cd-count THREADS(1-%d) PAIRS [BULK]\n", MAX_THREADS);
        return 2;
    }
    if ((ev = calloc((size_t)(bulk > 0 ? bulk : 1), sizeof *ev)) == NULL)
        return 1;
    pthread_barrier_init(&g_ready, NULL, (unsigned)threads);
    pthread_barrier_init(&g_leave, NULL, (unsigned)threads);
    for (i = 1; i < threads; i++)
        if (pthread_create(&tid[i], NULL, parked, NULL) != 0)
            return 1;
    pthread_barrier_wait(&g_ready);
    for (i = 0; i < 200 && !g_failed; i++) {
        check(evx_device_create_event(0, 0, &one), "evx_device_create_event");
        check(evx_event_destroy(one), "evx_event_destroy");
    }
    CALLGRIND_START_INSTRUMENTATION;
    for (k = 0; k < pairs && !g_failed; k++) {
        if (bulk == 0) {
            check(evx_device_create_event(0, 0, &one), "evx_device_create_event");
            check(evx_event_destroy(one), "evx_event_destroy");
            continue;
        }
        for (i = 0; i < bulk; i++)
            check(evx_device_create_event(0, 0, &ev[i]), "evx_device_create_event");
        for (i = 0; i < bulk; i++)
            check(evx_event_destroy(ev[i]), "evx_event_destroy");
    }
    CALLGRIND_STOP_INSTRUMENTATION;
    pthread_barrier_wait(&g_leave);
    for (i = 1; i < threads; i++)
        pthread_join(tid[i], NULL);
    free(ev);
    return g_failed;
}
