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
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

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
    ok &= lookup(gp, "cuCtxPopCurrent", &cu.ctx_pop_current, 1);
    ok &= lookup(gp, "cuDevicePrimaryCtxRetain", &cu.primary_retain, 1);
    ok &= lookup(gp, "cuDevicePrimaryCtxRelease", &cu.primary_release, 1);
    ok &= lookup(gp, "cuStreamCreateWithPriority",
                 &cu.stream_create_with_priority, 1);
    ok &= lookup(gp, "cuStreamDestroy", &cu.stream_destroy, 1);
    ok &= lookup(gp, "cuEventDestroy", &cu.event_destroy, 1);
    ok &= lookup(gp, "cuStreamQuery", &cu.stream_query, 1);
    ok &= lookup(gp, "cuEventQuery", &cu.event_query, 1);
    ok &= lookup(gp, "cuEventElapsedTime", &cu.event_elapsed_time, 1);
    ok &= lookup(gp, "cuStreamWaitEvent", &cu.stream_wait_event, 1);
    (void)lookup(gp, "cuDeviceGet", &cu.device_get, 0);
    (void)lookup(gp, "cuStreamGetPriority", &cu.stream_get_priority, 0);
    (void)lookup(gp, "cuStreamGetFlags", &cu.stream_get_flags, 0);
    (void)lookup(gp, "cuStreamGetDevice", &cu.stream_get_device, 0);
    (void)lookup(gp, "cuCtxGetStreamPriorityRange",
                 &cu.ctx_get_stream_priority_range, 0);
    (void)lookup(gp, "cuStreamBeginCapture", &cu.stream_begin_capture, 0);
    (void)lookup(gp, "cuStreamEndCapture", &cu.stream_end_capture, 0);
    (void)lookup(gp, "cuGraphDestroy", &cu.graph_destroy, 0);
    (void)lookup(gp, "cuStreamIsCapturing", &cu.stream_is_capturing, 0);
    (void)lookup(gp, "cuGraphInstantiateWithFlags", &cu.graph_instantiate, 0);
    (void)lookup(gp, "cuGraphLaunch", &cu.graph_launch, 0);
    (void)lookup(gp, "cuGraphExecDestroy", &cu.graph_exec_destroy, 0);
    (void)lookup(gp, "cuThreadExchangeStreamCaptureMode",
                 &cu.thread_exchange_capture_mode, 0);
    (void)lookup(gp, "cuStreamGetCaptureInfo", &cu.stream_get_capture_info, 0);
    (void)lookup(gp, "cuLaunchHostFunc", &cu.launch_host_func, 0);
    (void)lookup(gp, "cuStreamSynchronize", &cu.stream_synchronize, 0);
    (void)lookup(gp, "cuEventRecordWithFlags", &cu.event_record_with_flags, 0);
    (void)lookup(gp, "cuEventSynchronize", &cu.event_synchronize, 0);
    {
        /* the CUDA 12 form, with no argument (13.0's takes a context) */
        void *p = NULL;
        CUdriverProcAddressQueryResult q = CU_GET_PROC_ADDRESS_SUCCESS;
        if (gp("cuCtxSynchronize", &p, 12080, 0, &q) == CUDA_SUCCESS &&
            q == CU_GET_PROC_ADDRESS_SUCCESS && p != NULL)
            memcpy(&cu.ctx_synchronize, &p, sizeof p);
    }
    (void)lookup(gp, "cuCtxCreate", &cu.ctx_create, 0);
    (void)lookup(gp, "cuCtxDestroy", &cu.ctx_destroy, 0);
    (void)lookup(gp, "cuCtxPushCurrent", &cu.ctx_push_current, 0);
    (void)lookup(gp, "cuEventCreate", &cu.event_create, 0);
    (void)lookup(gp, "cuEventRecord", &cu.event_record, 0);
    (void)lookup(gp, "cuStreamGetCtx", &cu.stream_get_ctx, 0);
    (void)lookup(gp, "cuDeviceGetDevResource", &cu.device_get_dev_resource, 0);
    (void)lookup(gp, "cuDevSmResourceSplitByCount",
                 &cu.dev_sm_resource_split_by_count, 0);
    (void)lookup(gp, "cuDevResourceGenerateDesc",
                 &cu.dev_resource_generate_desc, 0);
    (void)lookup(gp, "cuGreenCtxCreate", &cu.green_ctx_create, 0);
    (void)lookup(gp, "cuGreenCtxDestroy", &cu.green_ctx_destroy, 0);
    (void)lookup(gp, "cuGreenCtxStreamCreate", &cu.green_ctx_stream_create, 0);
    (void)lookup(gp, "cuModuleLoadData", &cu.module_load_data, 0);
    (void)lookup(gp, "cuModuleUnload", &cu.module_unload, 0);
    (void)lookup(gp, "cuModuleGetFunction", &cu.module_get_function, 0);
    (void)lookup(gp, "cuLaunchKernel", &cu.launch_kernel, 0);
    (void)lookup(gp, "cuMemHostAlloc", &cu.mem_host_alloc, 0);
    (void)lookup(gp, "cuMemHostGetDevicePointer", &cu.mem_host_get_device_pointer, 0);
    (void)lookup(gp, "cuMemFreeHost", &cu.mem_free_host, 0);
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

int conf_have_graphs(const conf_cu *cu)
{
    if (cu->stream_begin_capture != NULL && cu->stream_end_capture != NULL &&
        cu->graph_destroy != NULL && cu->graph_instantiate != NULL &&
        cu->graph_launch != NULL && cu->graph_exec_destroy != NULL &&
        cu->stream_is_capturing != NULL)
        return 1;
    /* the host emulation models them: there a missing one is a failure */
    if (!EXPECTF(host_debug_get() == NULL, "the host emulation lacks a capture or graph call"))
        return 0;
    conf_skip("the driver has no stream capture or graphs (cuStreamBeginCapture, "
              "cuGraphInstantiateWithFlags, cuGraphLaunch ...)");
    return 0;
}

int conf_primary_push(const conf_cu *cu)
{
    CUcontext ctx = NULL;
    if (cu->primary_retain(&ctx, 0) != CUDA_SUCCESS)
        return 0;
    if (cu->ctx_push_current == NULL || cu->ctx_push_current(ctx) != CUDA_SUCCESS) {
        cu->primary_release(0);
        return 0;
    }
    return 1;
}

void conf_primary_pop(const conf_cu *cu)
{
    CUcontext ctx = NULL;
    cu->ctx_pop_current(&ctx);
    cu->primary_release(0);
}

void conf_on_release(void *user_data)
{
    conf_release *r = (conf_release *)user_data;
    __atomic_add_fetch(&r->calls, 1, __ATOMIC_SEQ_CST);
    __atomic_store_n(&r->gate_passed_then, r->gate ? gate_passed(r->gate) : -1,
                     __ATOMIC_SEQ_CST);
    if (r->stream != NULL) {
        r->destroy_result = conf_cu_get()->stream_destroy(r->stream);
        r->stream = NULL;
    }
    if (r->event != NULL) {
        r->destroy_result = conf_cu_get()->event_destroy(r->event);
        r->event = NULL;
    }
}

int conf_release_calls(conf_release *r) { return __atomic_load_n(&r->calls, __ATOMIC_SEQ_CST); }

typedef struct race_arg {
    void *h;
    evx_status_t (*fn)(void *);
    int started, returned;
    evx_status_t result;
} race_arg;

static void *race_thread(void *p)
{
    race_arg *a = (race_arg *)p;
    flag_set(&a->started, 1);
    a->result = a->fn(a->h);
    flag_set(&a->returned, 1);
    return NULL;
}

int conf_race_release(void *h, evx_status_t (*held)(void *), evx_status_t (*destroy)(void *),
                      conf_release *rs, int attempt)
{
    race_arg ha, da;
    pthread_t th, td;
    int early_calls, early_return;

    memset(&ha, 0, sizeof ha);
    memset(&da, 0, sizeof da);
    ha.h = da.h = h;
    ha.fn = held;
    da.fn = destroy;
    rs->gate_passed_then = -1;
    if (!EXPECT(pthread_create(&th, NULL, race_thread, &ha) == 0)) {
        gate_open(rs->gate);
        EXPECT_OK(destroy(h));
        return -1;
    }
    while (!flag_get(&ha.started))
        sleep_ms(1);
    sleep_ms(50); /* inside the held call, held by the gate */
    if (!EXPECT(pthread_create(&td, NULL, race_thread, &da) == 0)) {
        gate_open(rs->gate);
        pthread_join(th, NULL);
        EXPECT_OK(destroy(h));
        return -1;
    }
    sleep_ms(100);
    early_calls = conf_release_calls(rs);
    early_return = flag_get(&da.returned);
    gate_open(rs->gate);
    pthread_join(th, NULL);
    pthread_join(td, NULL);
    EXPECT_OK(da.result);
    EXPECTF(conf_release_calls(rs) == 1, "released %d times", conf_release_calls(rs));
    if (ha.result != EVX_SUCCESS) {
        /* the destroy came first: the held call saw a dead handle */
        EXPECT(ha.result == EVX_ERROR_INVALID_HANDLE);
        conf_note("attempt %d: the held call did not get in before the destroy; trying again",
                  attempt + 1);
        return 0;
    }
    EXPECTF(early_calls == 0, "released while another thread's call was inside evx");
    EXPECTF(early_return == 0, "the destroy returned while another thread's call was inside evx");
    EXPECTF(rs->gate_passed_then == 1,
            "the release ran before the racing call could return (gate passed: %d)",
            rs->gate_passed_then);
    return 1;
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

int raw_event_create(int device, unsigned flags, CUevent *event)
{
    CUcontext old = NULL, primary = NULL;
    CUresult r;
    *event = NULL;
    if (!with_primary(device, &old, &primary))
        return 0;
    r = conf_cu_get()->event_create(event, flags);
    end_primary(device, old);
    return EXPECTF(r == CUDA_SUCCESS && *event != NULL, "cuEventCreate(0x%x) -> %d", flags,
                   (int)r);
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

void conf_check_ctx(CUcontext want, const char *after, const char *file,
                    int line)
{
    CUcontext cur = (CUcontext)(uintptr_t)1;
    const conf_cu *cu = conf_cu_get();
    if (cu == NULL)
        return;
    if (cu->ctx_get_current(&cur) != CUDA_SUCCESS) {
        conf_expect(0, "cuCtxGetCurrent", file, line, "failed after %s",
                    after);
        return;
    }
    conf_expect(cur == want, "current context unchanged", file, line,
                "after %s the current context is %p, it was %p", after,
                (void *)cur, (void *)want);
}

/* Makes a context on device `dev` (cuCtxCreate pushes it) and a
 * non-blocking stream in it, then pops it, so the caller's current context
 * is back. Returns 1 on success. */
int conf_ctx_make(int dev, CUcontext *ctx, CUstream *cs)
{
    const conf_cu *cu = conf_cu_get();
    CUcontext popped = NULL, got = NULL;
    CUgreenCtx green = (CUgreenCtx)(uintptr_t)1;
    CUresult r;

    *ctx = NULL;
    *cs = NULL;
    if (!EXPECTF(cu->ctx_create != NULL && cu->ctx_destroy != NULL &&
                     cu->ctx_push_current != NULL && cu->stream_get_ctx != NULL,
                 "the driver lacks cuCtxCreate, cuCtxDestroy, cuCtxPushCurrent "
                 "or cuStreamGetCtx"))
        return 0;
    r = cu->ctx_create(ctx, NULL, 0, conf_cu_device(dev));
    if (!EXPECTF(r == CUDA_SUCCESS && *ctx != NULL, "cuCtxCreate -> %d",
                 (int)r))
        return 0;
    r = cu->stream_create_with_priority(cs, CU_STREAM_NON_BLOCKING, 0);
    EXPECTF(r == CUDA_SUCCESS, "cuStreamCreateWithPriority in the created "
                               "context -> %d", (int)r);
    EXPECT(cu->ctx_pop_current(&popped) == CUDA_SUCCESS && popped == *ctx);
    if (r != CUDA_SUCCESS)
        return 0;
    /* the stream belongs to the context current when it was made */
    EXPECT(cu->stream_get_ctx(*cs, &got, &green) == CUDA_SUCCESS);
    EXPECTF(got == *ctx && green == NULL, "cuStreamGetCtx: %p (green %p), "
            "want %p", (void *)got, (void *)green, (void *)*ctx);
    return 1;
}

/* Destroys the stream and the context made by conf_ctx_make(). */
void conf_ctx_drop(CUcontext *ctx, CUstream *cs)
{
    const conf_cu *cu = conf_cu_get();
    CUcontext popped = NULL;
    if (*cs != NULL) {
        EXPECT(cu->ctx_push_current(*ctx) == CUDA_SUCCESS);
        EXPECT(cu->stream_destroy(*cs) == CUDA_SUCCESS);
        EXPECT(cu->ctx_pop_current(&popped) == CUDA_SUCCESS);
        *cs = NULL;
    }
    if (*ctx != NULL) {
        EXPECT(cu->ctx_destroy(*ctx) == CUDA_SUCCESS);
        *ctx = NULL;
    }
}

/* ---- child processes ----------------------------------------------------- */

extern char **environ;

int run_child_env(const char *mode, const char *const *vars)
{
    char **env;
    char *argv[4];
    size_t n = 0, nv = 0, i, j, k = 0;
    pid_t pid;
    int st = 0;

    while (environ[n] != NULL)
        n++;
    while (vars[nv] != NULL)
        nv++;
    env = (char **)calloc(n + nv + 1, sizeof *env);
    if (env == NULL)
        return -1;
    for (i = 0; i < n; i++) {
        int replaced = 0;
        for (j = 0; j < nv && !replaced; j++) {
            size_t len = strcspn(vars[j], "=") + 1;
            replaced = strncmp(environ[i], vars[j], len) == 0;
        }
        if (!replaced)
            env[k++] = environ[i];
    }
    for (j = 0; j < nv; j++)
        env[k++] = (char *)vars[j];
    env[k] = NULL;
    argv[0] = (char *)conf_self_path();
    argv[1] = (char *)"--child";
    argv[2] = (char *)mode;
    argv[3] = NULL;
    fflush(stdout);
    pid = fork();
    if (pid == 0) {
        /* argv[0] when it is a path (it is under valgrind, where
         * /proc/self/exe is the tool), else the running executable */
        if (strchr(argv[0], '/') != NULL)
            execve(argv[0], argv, env);
        execve("/proc/self/exe", argv, env);
        _exit(127);
    }
    free(env);
    if (pid < 0)
        return -1;
    if (waitpid(pid, &st, 0) != pid)
        return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
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
