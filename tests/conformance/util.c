/*
 * Copyright 2026 The evx Authors
 * SPDX-License-Identifier: Apache-2.0
 */
#define _POSIX_C_SOURCE 200809L

#include "util.h"

#include <ctype.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness.h"

/* ---- gates ------------------------------------------------------------- */

struct conf_gate {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int open;
    int entered;
    int passed;
    int delay_ms;
    int has_opener;
    pthread_t opener;
    conf_gate *next;
};

static pthread_mutex_t gates_mu = PTHREAD_MUTEX_INITIALIZER;
static conf_gate *gates_of_case; /* made since the last gate_open_all_for_case */
static conf_gate *gates_done;    /* kept for the run: late work may reach them */

conf_gate *gate_new(void)
{
    conf_gate *g = (conf_gate *)calloc(1, sizeof *g);
    if (g == NULL) {
        fprintf(stderr, "conformance: out of memory\n");
        abort();
    }
    pthread_mutex_init(&g->mu, NULL);
    pthread_cond_init(&g->cv, NULL);
    pthread_mutex_lock(&gates_mu);
    g->next = gates_of_case;
    gates_of_case = g;
    pthread_mutex_unlock(&gates_mu);
    return g;
}

static void gate_wait(void *user_data)
{
    conf_gate *g = (conf_gate *)user_data;
    pthread_mutex_lock(&g->mu);
    g->entered++;
    while (!g->open)
        pthread_cond_wait(&g->cv, &g->mu);
    g->passed++;
    pthread_mutex_unlock(&g->mu);
}

evx_status_t gate_launch(evx_stream_t stream, conf_gate *gate)
{
    return evx_stream_launch_host_func(stream, gate_wait, gate);
}

void gate_open(conf_gate *g)
{
    pthread_mutex_lock(&g->mu);
    g->open = 1;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
}

int gate_entered(conf_gate *g)
{
    int n;
    pthread_mutex_lock(&g->mu);
    n = g->entered;
    pthread_mutex_unlock(&g->mu);
    return n;
}

int gate_passed(conf_gate *g)
{
    int n;
    pthread_mutex_lock(&g->mu);
    n = g->passed;
    pthread_mutex_unlock(&g->mu);
    return n;
}

static void *opener_main(void *arg)
{
    conf_gate *g = (conf_gate *)arg;
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += g->delay_ms / 1000;
    until.tv_nsec += (long)(g->delay_ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    /* Opens the gate at the deadline, or leaves early when the test opened
     * it already. */
    pthread_mutex_lock(&g->mu);
    while (!g->open) {
        if (pthread_cond_timedwait(&g->cv, &g->mu, &until) == ETIMEDOUT)
            break;
    }
    g->open = 1;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
    return NULL;
}

void gate_open_later(conf_gate *g, int delay_ms)
{
    g->delay_ms = delay_ms;
    if (pthread_create(&g->opener, NULL, opener_main, g) != 0) {
        gate_open(g);
        return;
    }
    g->has_opener = 1;
}

void gate_join_opener(conf_gate *g)
{
    if (g->has_opener) {
        pthread_join(g->opener, NULL);
        g->has_opener = 0;
    }
}

int gate_open_all_for_case(void)
{
    int closed = 0;
    conf_gate *g, *next;
    pthread_mutex_lock(&gates_mu);
    g = gates_of_case;
    gates_of_case = NULL;
    pthread_mutex_unlock(&gates_mu);
    for (; g != NULL; g = next) {
        next = g->next;
        gate_join_opener(g);
        pthread_mutex_lock(&g->mu);
        if (!g->open)
            closed++;
        g->open = 1;
        pthread_cond_broadcast(&g->cv);
        pthread_mutex_unlock(&g->mu);
        pthread_mutex_lock(&gates_mu);
        g->next = gates_done;
        gates_done = g;
        pthread_mutex_unlock(&gates_mu);
    }
    return closed;
}

/* ---- host functions ---------------------------------------------------- */

void host_sleep_ms(void *user_data) { sleep_ms((int)(intptr_t)user_data); }

int flag_get(const int *flag) { return __atomic_load_n(flag, __ATOMIC_SEQ_CST); }

void flag_set(int *flag, int value)
{
    __atomic_store_n(flag, value, __ATOMIC_SEQ_CST);
}

void host_set_flag(void *user_data) { flag_set((int *)user_data, 1); }

void host_log(void *user_data)
{
    conf_log_entry *e = (conf_log_entry *)user_data;
    int n = __atomic_load_n(&e->log->count, __ATOMIC_SEQ_CST);
    if (n < (int)(sizeof e->log->values / sizeof e->log->values[0]))
        e->log->values[n] = e->value;
    __atomic_store_n(&e->log->count, n + 1, __ATOMIC_SEQ_CST);
}

void host_observe(void *user_data)
{
    int **pair = (int **)user_data;
    flag_set(pair[1], flag_get(pair[0]));
}

/* ---- time -------------------------------------------------------------- */

double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

void sleep_ms(int ms)
{
    struct timespec ts;
    ts.tv_sec = ms / 1000;
    ts.tv_nsec = (long)(ms % 1000) * 1000000L;
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static void sleep_us(int us)
{
    struct timespec ts;
    ts.tv_sec = 0;
    ts.tv_nsec = (long)us * 1000L;
    nanosleep(&ts, NULL);
}

evx_status_t poll_event(evx_event_t event, int timeout_ms)
{
    double end = now_ms() + timeout_ms;
    evx_status_t s;
    while ((s = evx_event_query(event)) == EVX_ERROR_NOT_READY &&
           now_ms() < end)
        sleep_us(200);
    return s;
}

evx_status_t poll_stream(evx_stream_t stream, int timeout_ms)
{
    double end = now_ms() + timeout_ms;
    evx_status_t s;
    while ((s = evx_stream_query(stream)) == EVX_ERROR_NOT_READY &&
           now_ms() < end)
        sleep_us(200);
    return s;
}

int poll_flag(const int *flag, int timeout_ms)
{
    double end = now_ms() + timeout_ms;
    while (!flag_get(flag)) {
        if (now_ms() >= end)
            return 0;
        sleep_us(200);
    }
    return 1;
}

/* ---- messages ---------------------------------------------------------- */

int str_has(const char *h, const char *n)
{
    size_t i, j, hn, nn;
    if (h == NULL || n == NULL)
        return 0;
    hn = strlen(h);
    nn = strlen(n);
    for (i = 0; i + nn <= hn; i++) {
        for (j = 0; j < nn; j++)
            if (tolower((unsigned char)h[i + j]) !=
                tolower((unsigned char)n[j]))
                break;
        if (j == nn)
            return 1;
    }
    return 0;
}

/* Whether s starts with prefix, ignoring case. */
static int str_has_at(const char *s, const char *prefix)
{
    size_t i;
    for (i = 0; prefix[i] != '\0'; i++)
        if (tolower((unsigned char)s[i]) != tolower((unsigned char)prefix[i]))
            return 0;
    return 1;
}

/* Reads an optionally signed decimal number at *p (no leading space). */
static int read_int(const char **p, long *out)
{
    const char *s = *p;
    char *end;
    long v;
    if (!(isdigit((unsigned char)s[0]) ||
          (s[0] == '-' && isdigit((unsigned char)s[1]))))
        return 0;
    errno = 0;
    v = strtol(s, &end, 10);
    if (errno != 0)
        return 0;
    /* "0x1f" is a hex handle, not the number 0. */
    if (*end == 'x' || *end == 'X' || isalnum((unsigned char)*end))
        return 0;
    *out = v;
    *p = end;
    return 1;
}

int msg_names_device(const char *msg, int device)
{
    const char *p = msg;
    if (msg == NULL)
        return 0;
    while (*p != '\0') {
        const char *q;
        int k;
        if (!(tolower((unsigned char)p[0]) == 'd' && str_has_at(p, "device"))) {
            p++;
            continue;
        }
        q = p + 6;
        p = q;
        if (*q == 's')
            q++;
        /* separators: " ", ": ", "=", " #", "(", " ordinal " */
        for (k = 0; k < 4; k++) {
            while (*q == ' ' || *q == ':' || *q == '=' || *q == '#' ||
                   *q == '(')
                q++;
            if (str_has_at(q, "ordinal"))
                q += 7;
        }
        for (;;) {
            long v;
            if (!read_int(&q, &v))
                break;
            if (v == device)
                return 1;
            /* "devices 0 and 1", "devices 0, 1", "device 0 vs 1" */
            while (*q == ' ' || *q == ',')
                q++;
            if (str_has_at(q, "and "))
                q += 4;
            else if (str_has_at(q, "vs "))
                q += 3;
        }
    }
    return 0;
}

int msg_has_int(const char *msg, long n)
{
    const char *p;
    if (msg == NULL)
        return 0;
    for (p = msg; *p != '\0'; p++) {
        long v;
        const char *q = p;
        /* only at the start of a number */
        if (p != msg && (isalnum((unsigned char)p[-1]) || p[-1] == '-'))
            continue;
        if (read_int(&q, &v) && v == n)
            return 1;
    }
    return 0;
}

/* ---- handles ----------------------------------------------------------- */

void drop_event(evx_event_t *e)
{
    if (*e != NULL)
        EXPECT_OK(evx_event_destroy(*e));
    *e = NULL;
}

void drop_stream(evx_stream_t *s)
{
    if (*s != NULL)
        EXPECT_OK(evx_stream_destroy(*s));
    *s = NULL;
}

void drop_pool(evx_event_pool_t *p)
{
    if (*p != NULL)
        EXPECT_OK(evx_event_pool_destroy(*p));
    *p = NULL;
}

void drop_timer(evx_timer_t *t)
{
    if (*t != NULL)
        EXPECT_OK(evx_timer_destroy(*t));
    *t = NULL;
}

void drop_timeline(evx_timeline_t *t)
{
    if (*t != NULL)
        EXPECT_OK(evx_timeline_destroy(*t));
    *t = NULL;
}

evx_stream_t make_stream(int device)
{
    evx_stream_t s = NULL;
    if (!EXPECT_OK(evx_device_create_stream(device, EVX_STREAM_NON_BLOCKING, 0,
                                            &s)))
        return NULL;
    return s;
}

evx_event_t make_event(int device, unsigned flags)
{
    evx_event_t e = NULL;
    if (!EXPECT_OK(evx_device_create_event(device, flags, &e)))
        return NULL;
    return e;
}

/* ---- the raw driver ---------------------------------------------------- */

typedef CUresult (*get_proc_fn)(const char *, void **, int, cuuint64_t,
                                CUdriverProcAddressQueryResult *);

static int lookup(get_proc_fn gp, const char *name, void *fn_out,
                  int required)
{
    void *p = NULL;
    CUdriverProcAddressQueryResult q = CU_GET_PROC_ADDRESS_SUCCESS;
    CUresult r = gp(name, &p, 13000, 0, &q);
    if (r != CUDA_SUCCESS || q != CU_GET_PROC_ADDRESS_SUCCESS || p == NULL) {
        if (required)
            EXPECTF(0, "cuGetProcAddress_v2(\"%s\", 13000, 0) -> %d, "
                       "symbol status %d", name, (int)r, (int)q);
        return 0;
    }
    memcpy(fn_out, &p, sizeof p);
    return 1;
}

const conf_cu *conf_cu_get(void)
{
    static conf_cu cu;
    static int state; /* 0 untried, 1 loaded, -1 failed */
    const char *path = NULL;
    void *lib, *sym;
    get_proc_fn gp;
    int ok = 1;

    if (state == 1)
        return &cu;
    if (state == -1) {
        EXPECTF(0, "the raw driver API could not be loaded (see above)");
        return NULL;
    }
    if (!EXPECT_OK(evx_driver_get_path(&path)) || !EXPECT(path != NULL)) {
        state = -1;
        return NULL;
    }
    lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!EXPECTF(lib != NULL, "dlopen(\"%s\"): %s", path, dlerror())) {
        state = -1;
        return NULL;
    }
    sym = dlsym(lib, "cuGetProcAddress_v2");
    if (!EXPECTF(sym != NULL, "%s has no cuGetProcAddress_v2", path)) {
        state = -1;
        return NULL;
    }
    memcpy(&gp, &sym, sizeof gp);
    ok &= lookup(gp, "cuCtxGetCurrent", &cu.ctx_get_current, 1);
    ok &= lookup(gp, "cuCtxSetCurrent", &cu.ctx_set_current, 1);
    ok &= lookup(gp, "cuDevicePrimaryCtxRetain", &cu.primary_retain, 1);
    ok &= lookup(gp, "cuDevicePrimaryCtxRelease", &cu.primary_release, 1);
    ok &= lookup(gp, "cuStreamCreateWithPriority",
                 &cu.stream_create_with_priority, 1);
    ok &= lookup(gp, "cuStreamDestroy", &cu.stream_destroy, 1);
    ok &= lookup(gp, "cuStreamQuery", &cu.stream_query, 1);
    ok &= lookup(gp, "cuEventQuery", &cu.event_query, 1);
    ok &= lookup(gp, "cuEventElapsedTime", &cu.event_elapsed_time, 1);
    (void)lookup(gp, "cuDeviceGet", &cu.device_get, 0);
    (void)lookup(gp, "cuStreamGetPriority", &cu.stream_get_priority, 0);
    (void)lookup(gp, "cuCtxGetStreamPriorityRange",
                 &cu.ctx_get_stream_priority_range, 0);
    /* The library stays open for the run (evx holds it open too). */
    state = ok ? 1 : -1;
    return ok ? &cu : NULL;
}

CUdevice conf_cu_device(int ordinal)
{
    const conf_cu *cu = conf_cu_get();
    CUdevice d = (CUdevice)ordinal;
    if (cu != NULL && cu->device_get != NULL)
        EXPECTF(cu->device_get(&d, ordinal) == CUDA_SUCCESS,
                "cuDeviceGet(%d) failed", ordinal);
    return d;
}

static int with_primary(int device, CUcontext *old, CUcontext *primary)
{
    const conf_cu *cu = conf_cu_get();
    CUdevice d;
    if (cu == NULL)
        return 0;
    d = conf_cu_device(device);
    if (!EXPECTF(cu->ctx_get_current(old) == CUDA_SUCCESS, "cuCtxGetCurrent"))
        return 0;
    if (!EXPECTF(cu->primary_retain(primary, d) == CUDA_SUCCESS,
                 "cuDevicePrimaryCtxRetain(%d)", device))
        return 0;
    if (!EXPECTF(cu->ctx_set_current(*primary) == CUDA_SUCCESS,
                 "cuCtxSetCurrent(primary of %d)", device)) {
        cu->primary_release(d);
        return 0;
    }
    return 1;
}

static void end_primary(int device, CUcontext old)
{
    const conf_cu *cu = conf_cu_get();
    EXPECTF(cu->ctx_set_current(old) == CUDA_SUCCESS, "cuCtxSetCurrent(old)");
    EXPECTF(cu->primary_release(conf_cu_device(device)) == CUDA_SUCCESS,
            "cuDevicePrimaryCtxRelease(%d)", device);
}

int raw_stream_create(int device, unsigned flags, int priority,
                      CUstream *stream)
{
    CUcontext old = NULL, primary = NULL;
    CUresult r;
    *stream = NULL;
    if (!with_primary(device, &old, &primary))
        return 0;
    r = conf_cu_get()->stream_create_with_priority(stream, flags, priority);
    end_primary(device, old);
    return EXPECTF(r == CUDA_SUCCESS && *stream != NULL,
                   "cuStreamCreateWithPriority(0x%x, %d) -> %d", flags,
                   priority, (int)r);
}

int raw_stream_destroy(int device, CUstream stream)
{
    CUcontext old = NULL, primary = NULL;
    CUresult r;
    if (!with_primary(device, &old, &primary))
        return 0;
    r = conf_cu_get()->stream_destroy(stream);
    end_primary(device, old);
    return EXPECTF(r == CUDA_SUCCESS, "cuStreamDestroy -> %d", (int)r);
}

/* ---- leak accounting ---------------------------------------------------- */

int live_expect_back(const evx_host_live *start, const char *where)
{
    evx_host_live now;
    if (host_live_settle(start, &now, 2000))
        return 1;
    return EXPECTF(0, "%s: live driver objects not back to the start "
                      "(after evx_device_trim): events %lld (start %lld), "
                      "streams %lld (%lld), context retains %lld (%lld), "
                      "host functions pending %lld (%lld)",
                   where, now.events, start->events, now.streams,
                   start->streams, now.contexts, start->contexts,
                   now.host_funcs, start->host_funcs);
}
