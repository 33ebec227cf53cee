/*
 * Copyright 2026 The evx Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/* Interprocess events (evx/ipc.h): export, open, refusals, and a second
 * process (this suite run with --child ipc-peer) that opens the parent's
 * event and provably waits for it, then records it for the parent.
 *
 * The data the two processes exchange lives in a file both map: host
 * functions on the streams write and read it, so the test sees whether a
 * wait really waited, on the emulation and on a GPU alike (evx has no
 * memory calls, and none are needed). */
#define _GNU_SOURCE

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "util.h"

extern char **environ;

#define IPC_FLAGS (EVX_EVENT_INTERPROCESS | EVX_EVENT_DISABLE_TIMING)
#define WORD_PARENT 0x5EED0001u /* written by the parent before its record */
#define WORD_CHILD 0x5EED0002u  /* written by the child before its record */
#define LINE_MAX_IPC 512

/* ---- the shared file and the host functions that use it --------------- */

typedef struct shared_words {
    uint32_t w[4]; /* 0: parent -> child, 1: child -> parent */
} shared_words;

typedef struct word_op {
    uint32_t *word;
    uint32_t value;     /* written by host_write_word */
    uint32_t seen;      /* read by host_read_word */
    int delay_ms;       /* slept first */
} word_op;

static void host_write_word(void *user_data)
{
    word_op *op = (word_op *)user_data;
    if (op->delay_ms > 0)
        sleep_ms(op->delay_ms);
    __atomic_store_n(op->word, op->value, __ATOMIC_SEQ_CST);
}

static void host_read_word(void *user_data)
{
    word_op *op = (word_op *)user_data;
    __atomic_store_n(&op->seen, __atomic_load_n(op->word, __ATOMIC_SEQ_CST),
                     __ATOMIC_SEQ_CST);
}

static shared_words *map_words(const char *path, int create)
{
    void *p;
    int fd = open(path, create ? O_RDWR | O_CREAT | O_TRUNC : O_RDWR, 0600);
    if (fd < 0)
        return NULL;
    if (create && ftruncate(fd, (off_t)sizeof(shared_words)) != 0) {
        close(fd);
        return NULL;
    }
    p = mmap(NULL, sizeof(shared_words), PROT_READ | PROT_WRITE, MAP_SHARED,
             fd, 0);
    close(fd);
    return p == MAP_FAILED ? NULL : (shared_words *)p;
}

static void to_hex(const evx_ipc_event_handle_t *h, char *out)
{
    static const char digits[] = "0123456789abcdef";
    size_t i;
    for (i = 0; i < sizeof h->reserved; i++) {
        out[2 * i] = digits[h->reserved[i] >> 4];
        out[2 * i + 1] = digits[h->reserved[i] & 15];
    }
    out[2 * sizeof h->reserved] = '\0';
}

static int from_hex(const char *s, evx_ipc_event_handle_t *h)
{
    size_t i;
    for (i = 0; i < sizeof h->reserved; i++) {
        unsigned v;
        if (sscanf(s + 2 * i, "%2x", &v) != 1)
            return 0;
        h->reserved[i] = (unsigned char)v;
    }
    return 1;
}

/* ---- single process ---------------------------------------------------- */

static void t_export_refused(void)
{
    evx_event_t timing = NULL, no_ipc = NULL, ipc = NULL, dead = NULL;
    evx_stream_t s = NULL;
    evx_ipc_event_handle_t h;

    REQUIRE((timing = make_event(0, EVX_EVENT_DEFAULT)) != NULL);
    REQUIRE((no_ipc = make_event(0, EVX_EVENT_DISABLE_TIMING)) != NULL);
    REQUIRE((ipc = make_event(0, IPC_FLAGS)) != NULL);
    if (EXPECT_FAIL(evx_event_get_ipc_handle(timing, &h),
                    EVX_ERROR_INVALID_HANDLE))
        EXPECTF(str_has(evx_last_error_message(), "EVX_EVENT_INTERPROCESS"),
                "message: %s", evx_last_error_message());
    if (EXPECT_FAIL(evx_event_get_ipc_handle(no_ipc, &h),
                    EVX_ERROR_INVALID_HANDLE))
        EXPECTF(str_has(evx_last_error_message(), "EVX_EVENT_INTERPROCESS"),
                "message: %s", evx_last_error_message());
    EXPECT_FAIL(evx_event_get_ipc_handle(ipc, NULL), EVX_ERROR_INVALID_VALUE);
    EXPECT_FAIL(evx_event_get_ipc_handle(NULL, &h), EVX_ERROR_INVALID_HANDLE);
    REQUIRE((s = make_stream(0)) != NULL);
    EXPECT_FAIL(evx_event_get_ipc_handle(AS_EVENT(s), &h), EVX_ERROR_INVALID_HANDLE);
    REQUIRE((dead = make_event(0, IPC_FLAGS)) != NULL);
    EXPECT_OK(evx_event_destroy(dead));
    EXPECT_FAIL(evx_event_get_ipc_handle(dead, &h), EVX_ERROR_INVALID_HANDLE);
out:
    drop_event(&timing);
    drop_event(&no_ipc);
    drop_event(&ipc);
    drop_stream(&s);
}

static void t_export_works_locally(void)
{
    evx_event_t a = NULL, b = NULL;
    evx_stream_t s = NULL;
    evx_ipc_event_handle_t ha, hb;
    conf_gate *g = gate_new();
    unsigned flags = 0;

    REQUIRE((s = make_stream(0)) != NULL);
    REQUIRE((a = make_event(0, IPC_FLAGS)) != NULL);
    REQUIRE((b = make_event(0, IPC_FLAGS | EVX_EVENT_BLOCKING_SYNC)) != NULL);
    REQUIRE_OK(evx_event_get_ipc_handle(a, &ha));
    REQUIRE_OK(evx_event_get_ipc_handle(b, &hb));
    EXPECTF(memcmp(&ha, &hb, sizeof ha) != 0,
            "two live events exported the same handle bytes");
    /* exported and never recorded: complete, as a new event */
    EXPECT_OK(evx_event_query(a));
    EXPECT_OK(evx_event_synchronize(a));
    /* recorded behind a closed gate: pending until it opens */
    REQUIRE_OK(gate_launch(s, g));
    REQUIRE_OK(evx_event_record(a, s));
    EXPECT_STATUS(evx_event_query(a), EVX_ERROR_NOT_READY);
    gate_open(g);
    EXPECT_OK(evx_event_synchronize(a));
    EXPECT_OK(evx_event_query(a));
    EXPECT_OK(evx_event_get_flags(a, &flags));
    EXPECT(flags == IPC_FLAGS);
out:
    gate_open(g);
    if (s != NULL)
        EXPECT_OK(evx_stream_synchronize(s));
    drop_event(&a);
    drop_event(&b);
    drop_stream(&s);
}

static void t_open_refused(void)
{
    evx_event_t a = NULL, out = JUNK(evx_event_t);
    evx_ipc_event_handle_t h;
    int count = 0;

    REQUIRE((a = make_event(0, IPC_FLAGS)) != NULL);
    REQUIRE_OK(evx_event_get_ipc_handle(a, &h));
    REQUIRE_OK(evx_device_count(&count));
    EXPECT_FAIL(evx_device_open_ipc_event(0, &h, NULL), EVX_ERROR_INVALID_VALUE);
    EXPECT_FAIL(evx_device_open_ipc_event(0, NULL, &out), EVX_ERROR_INVALID_VALUE);
    EXPECT(out == NULL);
    out = JUNK(evx_event_t);
    EXPECT_FAIL(evx_device_open_ipc_event(count, &h, &out), EVX_ERROR_INVALID_DEVICE);
    EXPECT(out == NULL);
    out = JUNK(evx_event_t);
    EXPECT_FAIL(evx_device_open_ipc_event(-1, &h, &out), EVX_ERROR_INVALID_DEVICE);
    EXPECT(out == NULL);
    /* The driver opens a handle only in another process. */
    out = JUNK(evx_event_t);
    if (EXPECT_FAIL(evx_device_open_ipc_event(0, &h, &out),
                    EVX_ERROR_INVALID_CONTEXT))
        EXPECTF(str_has(evx_last_error_message(), "cuIpcOpenEventHandle") &&
                    str_has(evx_last_error_message(), "other than the one"),
                "message: %s", evx_last_error_message());
    EXPECT(out == NULL);
    /* the event is untouched by the refusal */
    EXPECT_OK(evx_event_query(a));
out:
    drop_event(&a);
}

/* Export with no context current: evx's guard makes one current around the
 * driver call and leaves none current after. */
static void t_export_without_context(void)
{
    const conf_cu *cu = conf_cu_get();
    CUcontext before = NULL, after = (CUcontext)1;
    evx_event_t a = NULL;
    evx_ipc_event_handle_t h;

    REQUIRE(cu != NULL);
    REQUIRE((a = make_event(0, IPC_FLAGS)) != NULL);
    REQUIRE(cu->ctx_get_current(&before) == CUDA_SUCCESS);
    REQUIRE(cu->ctx_set_current(NULL) == CUDA_SUCCESS);
    EXPECT_OK(evx_event_get_ipc_handle(a, &h));
    EXPECT(cu->ctx_get_current(&after) == CUDA_SUCCESS);
    EXPECTF(after == NULL, "the current context is %p after the call",
            (void *)after);
    EXPECT(cu->ctx_set_current(before) == CUDA_SUCCESS);
out:
    drop_event(&a);
}

/* ---- two processes ----------------------------------------------------- */

typedef struct peer {
    pid_t pid;
    int to;   /* the child's stdin */
    int from; /* the child's stdout */
    char buf[4096];
    size_t len;
} peer;

static int peer_start(peer *p)
{
    int in[2], outp[2];
    posix_spawn_file_actions_t fa;
    const char *self = conf_self_path();
    char *argv[4];
    int rc;

    p->pid = -1;
    p->len = 0;
    if (pipe(in) != 0 || pipe(outp) != 0)
        return 0;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, in[0], 0);
    posix_spawn_file_actions_adddup2(&fa, outp[1], 1);
    posix_spawn_file_actions_addclose(&fa, in[1]);
    posix_spawn_file_actions_addclose(&fa, outp[0]);
    argv[0] = (char *)self;
    argv[1] = (char *)"--child";
    argv[2] = (char *)"ipc-peer";
    argv[3] = NULL;
    fflush(stdout);
    /* argv[0] when it is a path, else the running executable */
    rc = posix_spawn(&p->pid, strchr(self, '/') ? self : "/proc/self/exe",
                     &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(in[0]);
    close(outp[1]);
    p->to = in[1];
    p->from = outp[0];
    if (rc != 0) {
        p->pid = -1;
        EXPECTF(0, "posix_spawn(%s): %s", self, strerror(rc));
        return 0;
    }
    return 1;
}

/* The next line from the child (without the newline) within timeout_ms;
 * 0 on timeout or end of file. */
static int peer_line(peer *p, char *line, size_t cap, int timeout_ms)
{
    double end = now_ms() + timeout_ms;
    for (;;) {
        char *nl = memchr(p->buf, '\n', p->len);
        struct pollfd pfd;
        ssize_t n;
        int left;
        if (nl != NULL) {
            size_t k = (size_t)(nl - p->buf);
            if (k >= cap)
                k = cap - 1;
            memcpy(line, p->buf, k);
            line[k] = '\0';
            p->len -= (size_t)(nl - p->buf) + 1;
            memmove(p->buf, nl + 1, p->len);
            return 1;
        }
        left = (int)(end - now_ms());
        if (left <= 0 || p->len == sizeof p->buf)
            return 0;
        pfd.fd = p->from;
        pfd.events = POLLIN;
        if (poll(&pfd, 1, left) <= 0)
            continue;
        n = read(p->from, p->buf + p->len, sizeof p->buf - p->len);
        if (n <= 0)
            return 0;
        p->len += (size_t)n;
    }
}

/* Whether the child has written anything (a line or part of one). */
static int peer_said_something(peer *p)
{
    struct pollfd pfd;
    pfd.fd = p->from;
    pfd.events = POLLIN;
    return p->len > 0 || poll(&pfd, 1, 0) > 0;
}

static int peer_end(peer *p)
{
    int st = 0;
    if (p->pid <= 0)
        return -1;
    close(p->to);
    close(p->from);
    if (waitpid(p->pid, &st, 0) != p->pid)
        return -1;
    p->pid = -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void t_two_processes(void)
{
    char path[] = "/tmp/evx-conformance-ipc-XXXXXX";
    char hex[2 * EVX_IPC_HANDLE_SIZE + 1], line[LINE_MAX_IPC], msg[LINE_MAX_IPC + 200];
    shared_words *words = NULL;
    evx_event_t ev = NULL;
    evx_stream_t s = NULL;
    evx_ipc_event_handle_t h;
    conf_gate *g = gate_new();
    word_op parent_write;
    peer p;
    int fd, q_event = -1, q_stream = -1, rc, started = 0;
    unsigned seen = 0;

    p.pid = -1;
    fd = mkstemp(path);
    REQUIRE(fd >= 0);
    close(fd);
    REQUIRE((words = map_words(path, 1)) != NULL);
    REQUIRE((s = make_stream(0)) != NULL);
    REQUIRE((ev = make_event(0, IPC_FLAGS)) != NULL);
    REQUIRE_OK(evx_event_get_ipc_handle(ev, &h));

    /* The record completes only after the gate opens and the word is
     * written. */
    parent_write.word = &words->w[0];
    parent_write.value = WORD_PARENT;
    parent_write.delay_ms = 0;
    REQUIRE_OK(gate_launch(s, g));
    REQUIRE_OK(evx_stream_launch_host_func(s, host_write_word, &parent_write));
    REQUIRE_OK(evx_event_record(ev, s));

    REQUIRE(peer_start(&p));
    started = 1;
    to_hex(&h, hex);
    snprintf(msg, sizeof msg, "%s %s\n", hex, path);
    REQUIRE(write(p.to, msg, strlen(msg)) == (ssize_t)strlen(msg));

    /* 1. The child opened the event, queued a wait and a read behind it. */
    REQUIRE(EXPECTF(peer_line(&p, line, sizeof line, 20000),
                    "no 'waiting' line from the child"));
    REQUIRE(EXPECTF(sscanf(line, "waiting event=%d stream=%d", &q_event,
                           &q_stream) == 2,
                    "child said: %s", line));
    EXPECTF(q_event == EVX_ERROR_NOT_READY,
            "the child's query of the opened event gave %d, want NOT_READY "
            "(the parent's record is held by a gate)", q_event);
    EXPECTF(q_stream == EVX_ERROR_NOT_READY,
            "the child's stream that waits for the event is idle (%d)",
            q_stream);
    /* While the gate is closed, the child's synchronize does not return. */
    sleep_ms(150);
    EXPECTF(!peer_said_something(&p),
            "the child went on while the parent's record was held");
    EXPECT(__atomic_load_n(&words->w[0], __ATOMIC_SEQ_CST) == 0);
    gate_open(g);
    REQUIRE(EXPECTF(peer_line(&p, line, sizeof line, 20000),
                    "no 'seen' line from the child"));
    REQUIRE(EXPECTF(sscanf(line, "seen %x", &seen) == 1, "child said: %s", line));
    EXPECTF(seen == WORD_PARENT,
            "the child's host function, queued behind its wait for the "
            "parent's event, read 0x%x, not 0x%x", seen, WORD_PARENT);

    /* 2. The child records the opened event behind a host function that
     * sleeps, then writes; the parent's synchronize must wait for it. */
    REQUIRE(EXPECTF(peer_line(&p, line, sizeof line, 20000),
                    "no 'recorded' line from the child"));
    EXPECTF(strcmp(line, "recorded") == 0, "child said: %s", line);
    EXPECT_OK(evx_event_synchronize(ev));
    EXPECTF(__atomic_load_n(&words->w[1], __ATOMIC_SEQ_CST) == WORD_CHILD,
            "after synchronizing on the event the child recorded, its word "
            "is 0x%x, not 0x%x",
            __atomic_load_n(&words->w[1], __ATOMIC_SEQ_CST), WORD_CHILD);
    EXPECT_OK(evx_event_query(ev));

    /* 3. The child closed its event and checked the rest itself. */
    REQUIRE(EXPECTF(peer_line(&p, line, sizeof line, 20000),
                    "no 'done' line from the child"));
    EXPECTF(strcmp(line, "done 0") == 0, "child said: %s", line);
    /* The parent's event outlives the child's: still usable here. */
    EXPECT_OK(evx_event_record(ev, s));
    EXPECT_OK(evx_event_synchronize(ev));
out:
    gate_open(g);
    if (started) {
        rc = peer_end(&p);
        EXPECTF(rc == 0, "the child exited %d", rc);
    }
    if (s != NULL)
        EXPECT_OK(evx_stream_synchronize(s));
    drop_event(&ev);
    drop_stream(&s);
    if (words != NULL)
        munmap(words, sizeof *words);
    unlink(path);
}

/* The child: opens the parent's event, waits for it on a stream, reports
 * what a host function behind the wait read, then records the event for the
 * parent. Failures go to stderr; the exit code and the 'done' line count
 * them. */
int conf_ipc_child(void)
{
    char line[LINE_MAX_IPC], path[LINE_MAX_IPC], hex[LINE_MAX_IPC];
    evx_ipc_event_handle_t h;
    evx_event_t oe = NULL;
    evx_stream_t s = NULL;
    shared_words *words;
    word_op read_op, write_op;
    unsigned flags = 0;
    float ms = 0;
    int fails = 0;
    evx_status_t st;

#define PEER_CHECK(cond) \
    do { \
        if (!(cond)) { \
            fprintf(stderr, "    ipc child: %s:%d: %s failed (last message: %s)\n", \
                    __FILE__, __LINE__, #cond, evx_last_error_message()); \
            fails++; \
        } \
    } while (0)

    if (!fgets(line, sizeof line, stdin) ||
        sscanf(line, "%s %s", hex, path) != 2 || !from_hex(hex, &h)) {
        fprintf(stderr, "ipc child: bad input line\n");
        return 2;
    }
    words = map_words(path, 0);
    if (words == NULL) {
        fprintf(stderr, "ipc child: cannot map %s: %s\n", path, strerror(errno));
        return 2;
    }
    st = evx_device_open_ipc_event(0, &h, &oe);
    if (st != EVX_SUCCESS) {
        fprintf(stderr, "ipc child: evx_device_open_ipc_event -> %s: %s\n",
                evx_status_name(st), evx_last_error_message());
        return 3;
    }
    PEER_CHECK(evx_event_get_flags(oe, &flags) == EVX_SUCCESS &&
               flags == (EVX_EVENT_DISABLE_TIMING | EVX_EVENT_INTERPROCESS));
    /* timing is off for an opened event */
    PEER_CHECK(evx_event_elapsed_time(&ms, oe, oe) == EVX_ERROR_INVALID_HANDLE);
    PEER_CHECK(str_has(evx_last_error_message(), "DISABLE_TIMING"));
    PEER_CHECK(evx_device_create_stream(0, EVX_STREAM_NON_BLOCKING, 0, &s) ==
               EVX_SUCCESS);

    read_op.word = &words->w[0];
    read_op.seen = 0;
    PEER_CHECK(evx_stream_wait_event(s, oe, 0) == EVX_SUCCESS);
    PEER_CHECK(evx_stream_launch_host_func(s, host_read_word, &read_op) ==
               EVX_SUCCESS);
    printf("waiting event=%d stream=%d\n", (int)evx_event_query(oe),
           (int)evx_stream_query(s));
    fflush(stdout);
    PEER_CHECK(evx_stream_synchronize(s) == EVX_SUCCESS);
    PEER_CHECK(evx_event_synchronize(oe) == EVX_SUCCESS);
    PEER_CHECK(evx_event_query(oe) == EVX_SUCCESS);
    printf("seen %x\n", __atomic_load_n(&read_op.seen, __ATOMIC_SEQ_CST));
    fflush(stdout);

    write_op.word = &words->w[1];
    write_op.value = WORD_CHILD;
    write_op.delay_ms = 200;
    PEER_CHECK(evx_stream_launch_host_func(s, host_write_word, &write_op) ==
               EVX_SUCCESS);
    PEER_CHECK(evx_event_record(oe, s) == EVX_SUCCESS);
    printf("recorded\n");
    fflush(stdout);
    PEER_CHECK(evx_event_synchronize(oe) == EVX_SUCCESS);
    PEER_CHECK(__atomic_load_n(&words->w[1], __ATOMIC_SEQ_CST) == WORD_CHILD);
    PEER_CHECK(evx_stream_synchronize(s) == EVX_SUCCESS);

    /* destroy closes it; the handle is dead after */
    PEER_CHECK(evx_event_destroy(oe) == EVX_SUCCESS);
    PEER_CHECK(evx_event_query(oe) == EVX_ERROR_INVALID_HANDLE);
    PEER_CHECK(evx_event_destroy(oe) == EVX_ERROR_INVALID_HANDLE);
    PEER_CHECK(evx_stream_destroy(s) == EVX_SUCCESS);
    munmap(words, sizeof *words);
    printf("done %d\n", fails);
    fflush(stdout);
#undef PEER_CHECK
    return fails == 0 ? 0 : 1;
}

/* Threads record an interprocess event on two streams while others make
   those streams wait for it and synchronize it. The driver takes each record
   and each wait whole, in some order, so every call returns and the streams
   drain. (The emulation once gave a record its number before queueing it,
   so a wait on the same stream could be queued ahead of the record it
   waited for, and the run hung: the harness's per-case limit turns such a
   hang into a failure.) */
typedef struct {
    evx_event_t e;
    evx_stream_t s[2];
    int id;
    int fails;
} ipc_race_arg;

static void *ipc_race_main(void *p)
{
    ipc_race_arg *a = (ipc_race_arg *)p;
    int i;
    for (i = 0; i < 300; i++) {
        evx_stream_t mine = a->s[(a->id + i) & 1], other = a->s[(a->id + i + 1) & 1];
        if (evx_event_record(a->e, mine) != EVX_SUCCESS)
            a->fails++;
        if (evx_stream_wait_event(other, a->e, 0) != EVX_SUCCESS)
            a->fails++;
        if (evx_event_synchronize(a->e) != EVX_SUCCESS)
            a->fails++;
    }
    return NULL;
}

static void t_record_wait_race(void)
{
    enum { NT = 4 };
    ipc_race_arg args[NT];
    pthread_t th[NT];
    evx_event_t e = NULL;
    evx_stream_t s[2] = {NULL, NULL};
    int i, started = 0;

    REQUIRE((s[0] = make_stream(0)) != NULL);
    REQUIRE((s[1] = make_stream(0)) != NULL);
    REQUIRE((e = make_event(0, IPC_FLAGS)) != NULL);
    for (i = 0; i < NT; i++) {
        args[i].e = e;
        args[i].s[0] = s[0];
        args[i].s[1] = s[1];
        args[i].id = i;
        args[i].fails = 0;
        if (!EXPECT(pthread_create(&th[i], NULL, ipc_race_main, &args[i]) == 0))
            break;
        started++;
    }
    for (i = 0; i < started; i++) {
        pthread_join(th[i], NULL);
        EXPECTF(args[i].fails == 0, "thread %d: %d calls failed", i, args[i].fails);
    }
    EXPECT_OK(evx_stream_synchronize(s[0]));
    EXPECT_OK(evx_stream_synchronize(s[1]));
    EXPECT_OK(evx_event_query(e));
out:
    drop_event(&e);
    drop_stream(&s[0]);
    drop_stream(&s[1]);
}

const conf_case conf_ipc_cases[] = {
    {"ipc.export_refused", t_export_refused},
    {"ipc.export_works_locally", t_export_works_locally},
    {"ipc.open_refused", t_open_refused},
    {"ipc.export_without_context", t_export_without_context},
    {"ipc.two_processes", t_two_processes},
    {"ipc.record_wait_race", t_record_wait_race},
    {NULL, NULL},
};
