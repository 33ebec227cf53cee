/*
 * Copyright 2026 The evx Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/* Fences across devices and containers (issue 33): a fence of one device
 * signalled and waited by streams of another; an interprocess fence passed
 * as a file descriptor to a process that shares neither /dev/shm nor the
 * PID namespace; waits with EVX_FENCE_WAIT_FLUSH, accepted or refused as
 * the device's CU_DEVICE_ATTRIBUTE_CAN_FLUSH_REMOTE_WRITES says; the
 * memory of destroyed fences freed once their queued operations ran,
 * counted with evx_fence_reclaim() and, on the emulation, its pinned
 * ranges. */
#define _GNU_SOURCE

#include <cuda.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "hostdebug.h"
#include "util.h"

static evx_fence_t xmake(int device, uint64_t initial, unsigned flags)
{
    evx_fence_t f = NULL;
    if (!EXPECT_OK(evx_device_create_fence(device, initial, flags, &f)))
        return NULL;
    return f;
}

static void xdrop(evx_fence_t *f)
{
    if (*f != NULL)
        EXPECT_OK(evx_fence_destroy(*f));
    *f = NULL;
}

static uint64_t xvalue(evx_fence_t f)
{
    uint64_t v = UINT64_MAX;
    EXPECT_OK(evx_fence_get_value(f, &v));
    return v;
}

/* ---- two devices ---------------------------------------------------------- */

/* One fence of each kind (of one process, interprocess) made on device 0
 * and used by streams of devices 0 and 1: a wait of device 1 queued before
 * device 0's signal is released by it, and the other way round; the values
 * grow across the devices. */
static void one_fence_two_devices(unsigned flags)
{
    evx_fence_t f = NULL;
    evx_stream_t s0 = NULL, s1 = NULL;
    int done1 = 0, done0 = 0;
    REQUIRE((f = xmake(0, 0, flags)) != NULL);
    REQUIRE((s0 = make_stream(0)) != NULL);
    REQUIRE((s1 = make_stream(1)) != NULL);
    REQUIRE_OK(evx_stream_wait_fence(s1, f, 1));
    REQUIRE_OK(evx_stream_launch_host_func(s1, host_set_flag, &done1));
    sleep_ms(20);
    EXPECT(!flag_get(&done1));
    REQUIRE_OK(evx_fence_signal(f, s0, 1));
    EXPECT(poll_flag(&done1, 20000));
    /* device 1 signals, device 0 waits */
    REQUIRE_OK(evx_stream_wait_fence(s0, f, 2));
    REQUIRE_OK(evx_stream_launch_host_func(s0, host_set_flag, &done0));
    REQUIRE_OK(evx_fence_signal(f, s1, 2));
    EXPECT(poll_flag(&done0, 20000));
    EXPECT_OK(evx_fence_wait_host(f, 2, 20ull * 1000000000ull));
    /* values grow across devices: 2 was claimed on device 1 */
    if (EXPECT_FAIL(evx_fence_signal(f, s0, 2), EVX_ERROR_INVALID_VALUE))
        EXPECTF(str_has(evx_last_error_message(), "not above 2"), "message: %s",
                evx_last_error_message());
    EXPECT_OK(evx_stream_synchronize(s0));
    EXPECT_OK(evx_stream_synchronize(s1));
    EXPECT_OK(evx_fence_signal_host(f, 3));
    EXPECT(xvalue(f) == 3);
out:
    if (s0 != NULL)
        EXPECT_OK(evx_stream_synchronize(s0));
    if (s1 != NULL)
        EXPECT_OK(evx_stream_synchronize(s1));
    xdrop(&f);
    drop_stream(&s0);
    drop_stream(&s1);
}

static void t_two_devices(void)
{
    NEED_DEVICES(2);
    one_fence_two_devices(EVX_FENCE_DEFAULT);
    one_fence_two_devices(EVX_FENCE_INTERPROCESS);
}

/* ---- waits with flags ----------------------------------------------------- */

static int can_flush(int device, int *value)
{
    const char *path = NULL;
    void *lib;
    CUresult (*get_attr)(int *, CUdevice_attribute, CUdevice);
    CUresult (*get_dev)(CUdevice *, int);
    CUdevice dev = 0;
    if (evx_driver_get_path(&path) != EVX_SUCCESS || path == NULL)
        return 0;
    lib = dlopen(path, RTLD_NOLOAD | RTLD_LAZY);
    if (lib == NULL)
        return 0;
    *(void **)(&get_attr) = dlsym(lib, "cuDeviceGetAttribute");
    *(void **)(&get_dev) = dlsym(lib, "cuDeviceGet");
    int ok = get_attr != NULL && get_dev != NULL && get_dev(&dev, device) == CUDA_SUCCESS &&
             get_attr(value, CU_DEVICE_ATTRIBUTE_CAN_FLUSH_REMOTE_WRITES, dev) == CUDA_SUCCESS;
    dlclose(lib);
    return ok;
}

/* EVX_FENCE_WAIT_FLUSH is queued where the device can flush remote writes
 * and refused, naming the device and the attribute, where it cannot (the
 * emulation answers 0, as an H100 without GPUDirect RDMA). */
static void t_wait_flags(void)
{
    evx_fence_t f = NULL;
    evx_stream_t s = NULL;
    int flush = -1, d, n = 0;
    REQUIRE_OK(evx_device_count(&n));
    for (d = 0; d < n && d < 2; d++) {
        REQUIRE((f = xmake(d, 0, 0)) != NULL);
        REQUIRE((s = make_stream(d)) != NULL);
        REQUIRE(can_flush(d, &flush));
        if (host_debug_get() != NULL)
            EXPECT(flush == 0);
        EXPECT_FAIL(evx_stream_wait_fence_with_flags(s, f, 1, 0x2), EVX_ERROR_INVALID_VALUE);
        EXPECT_OK(evx_stream_wait_fence_with_flags(s, f, 0, EVX_FENCE_WAIT_DEFAULT));
        if (flush) {
            EXPECT_OK(evx_stream_wait_fence_with_flags(s, f, 1, EVX_FENCE_WAIT_FLUSH));
            EXPECT_OK(evx_fence_signal_host(f, 1));
        } else if (EXPECT_FAIL(evx_stream_wait_fence_with_flags(s, f, 1, EVX_FENCE_WAIT_FLUSH),
                               EVX_ERROR_NOT_SUPPORTED)) {
            EXPECTF(msg_names_device(evx_last_error_message(), d) &&
                        str_has(evx_last_error_message(), "CAN_FLUSH_REMOTE_WRITES"),
                    "message: %s", evx_last_error_message());
        }
        EXPECT_OK(poll_stream(s, 20000));
        xdrop(&f);
        drop_stream(&s);
    }
out:
    xdrop(&f);
    drop_stream(&s);
}

/* ---- descriptors ---------------------------------------------------------- */

/* Export and import in one process: the refusals. */
static void t_fd_local(void)
{
    evx_fence_t f = NULL, plain = NULL, g = JUNK(evx_fence_t);
    int fd = -1, p[2] = {-1, -1}, other = -1;
    char path[] = "/tmp/evx-conf-fenceXXXXXX";
    REQUIRE((f = xmake(0, 4, EVX_FENCE_INTERPROCESS)) != NULL);
    REQUIRE((plain = xmake(0, 0, 0)) != NULL);
    EXPECT_FAIL(evx_fence_export_fd(f, NULL), EVX_ERROR_INVALID_VALUE);
    EXPECT_FAIL(evx_fence_export_fd(plain, &fd), EVX_ERROR_INVALID_HANDLE);
    EXPECT(fd == -1);
    REQUIRE_OK(evx_fence_export_fd(f, &fd));
    EXPECT(fd >= 0 && (fcntl(fd, F_GETFD) & FD_CLOEXEC));
    /* this process made it */
    EXPECT_FAIL(evx_device_import_fence_fd(0, fd, &g), EVX_ERROR_INVALID_CONTEXT);
    EXPECT(g == NULL);
    EXPECT_FAIL(evx_device_import_fence_fd(0, fd, NULL), EVX_ERROR_INVALID_VALUE);
    EXPECT_FAIL(evx_device_import_fence_fd(0, -1, &g), EVX_ERROR_INVALID_VALUE);
    EXPECT_FAIL(evx_device_import_fence_fd(-1, fd, &g), EVX_ERROR_INVALID_DEVICE);
    /* not a fence's page: a pipe, a file of another size, a closed number */
    REQUIRE(pipe(p) == 0);
    if (EXPECT_FAIL(evx_device_import_fence_fd(0, p[0], &g), EVX_ERROR_INVALID_VALUE))
        EXPECTF(str_has(evx_last_error_message(), "not a fence's page"), "message: %s",
                evx_last_error_message());
    REQUIRE((other = mkstemp(path)) >= 0);
    unlink(path);
    EXPECT_FAIL(evx_device_import_fence_fd(0, other, &g), EVX_ERROR_INVALID_VALUE);
    close(other);
    EXPECT_FAIL(evx_device_import_fence_fd(0, other, &g), EVX_ERROR_INVALID_VALUE);
    /* a page-sized memfd without a fence's mark */
    other = memfd_create("evx-conf-not-a-fence", MFD_CLOEXEC);
    if (other >= 0 && ftruncate(other, 4096) == 0)
        EXPECT_FAIL(evx_device_import_fence_fd(0, other, &g), EVX_ERROR_INVALID_VALUE);
    EXPECT(g == NULL);
out:
    if (other >= 0)
        close(other);
    if (p[0] >= 0)
        close(p[0]);
    if (p[1] >= 0)
        close(p[1]);
    if (fd >= 0)
        close(fd);
    xdrop(&f);
    xdrop(&plain);
}

/* Sends the fence's descriptor and its 64-byte handle over the socket. */
static int send_fence(int sock, int fd, const evx_ipc_fence_handle_t *h)
{
    char cbuf[CMSG_SPACE(sizeof(int))];
    struct iovec iov = {(void *)h->reserved, sizeof h->reserved};
    struct msghdr m;
    struct cmsghdr *c;
    memset(&m, 0, sizeof m);
    memset(cbuf, 0, sizeof cbuf);
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    m.msg_control = cbuf;
    m.msg_controllen = sizeof cbuf;
    c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &fd, sizeof fd);
    return sendmsg(sock, &m, 0) == (ssize_t)sizeof h->reserved;
}

static int recv_fence(int sock, int *fd, evx_ipc_fence_handle_t *h)
{
    char cbuf[CMSG_SPACE(sizeof(int))];
    struct iovec iov = {h->reserved, sizeof h->reserved};
    struct msghdr m;
    struct cmsghdr *c;
    memset(&m, 0, sizeof m);
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    m.msg_control = cbuf;
    m.msg_controllen = sizeof cbuf;
    if (recvmsg(sock, &m, MSG_CMSG_CLOEXEC) != (ssize_t)sizeof h->reserved)
        return 0;
    c = CMSG_FIRSTHDR(&m);
    if (c == NULL || c->cmsg_type != SCM_RIGHTS)
        return 0;
    memcpy(fd, CMSG_DATA(c), sizeof *fd);
    return 1;
}

/* The child of fence.fd_namespaces (mode "fence-fd-peer"), in its own PID,
 * IPC and mount namespaces with a /dev/shm of its own: the handle opens
 * neither by name nor by /proc; the descriptor does. */
int conf_fence_fd_child(void)
{
    const char *e = getenv("EVX_CONF_FENCE_SOCK");
    int sock = e ? atoi(e) : -1, fd = -1, fails = 0;
    evx_ipc_fence_handle_t h;
    evx_fence_t g = NULL, byname = NULL;
    evx_stream_t s = NULL;
    char b = 0;
#define CHILD_CHECK(c) \
    do { \
        if (!(c)) { \
            fprintf(stderr, "fence-fd-peer: %s failed (%s)\n", #c, evx_last_error_message()); \
            fails++; \
            goto done; \
        } \
    } while (0)
    CHILD_CHECK(sock >= 0 && recv_fence(sock, &fd, &h));
    CHILD_CHECK(getpid() == 1); /* a PID namespace of its own */
    /* neither the name nor /proc/<pid>/fd reaches the exporter */
    CHILD_CHECK(evx_device_open_ipc_fence(0, &h, &byname) == EVX_ERROR_INVALID_VALUE);
    CHILD_CHECK(str_has(evx_last_error_message(), "by name"));
    CHILD_CHECK(evx_device_import_fence_fd(0, fd, &g) == EVX_SUCCESS);
    close(fd);
    CHILD_CHECK(evx_device_create_stream(0, 0, 0, &s) == EVX_SUCCESS);
    CHILD_CHECK(evx_fence_signal_host(g, 5) == EVX_SUCCESS);
    CHILD_CHECK(evx_stream_wait_fence(s, g, 6) == EVX_SUCCESS);
    CHILD_CHECK(send(sock, "1", 1, MSG_NOSIGNAL) == 1);
    /* the parent's stream signals 6, which releases this stream's wait */
    CHILD_CHECK(evx_fence_wait_host(g, 6, 20ull * 1000000000ull) == EVX_SUCCESS);
    CHILD_CHECK(evx_stream_synchronize(s) == EVX_SUCCESS);
    CHILD_CHECK(evx_fence_signal(g, s, 7) == EVX_SUCCESS);
    CHILD_CHECK(evx_stream_synchronize(s) == EVX_SUCCESS);
    CHILD_CHECK(read(sock, &b, 1) == 1);
done:
    if (s != NULL)
        evx_stream_destroy(s);
    if (g != NULL)
        evx_fence_destroy(g);
#undef CHILD_CHECK
    return fails ? 1 : 0;
}

/* Runs argv (NULL-ended) with `keep` left open; its exit status, or -1. */
static int spawn_wait(char *const *argv, int keep)
{
    int st = 0;
    pid_t pid = fork();
    if (pid == 0) {
        int fl = fcntl(keep, F_GETFD);
        if (keep >= 0 && fl >= 0)
            fcntl(keep, F_SETFD, fl & ~FD_CLOEXEC);
        execvp(argv[0], argv);
        _exit(127);
    }
    if (pid < 0 || waitpid(pid, &st, 0) != pid)
        return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* The unshare(1) command line: user namespace too when not root. */
static int unshare_argv(char **argv, const char *script, const char *arg0)
{
    int n = 0;
    argv[n++] = (char *)"unshare";
    if (geteuid() != 0) {
        argv[n++] = (char *)"--user";
        argv[n++] = (char *)"--map-root-user";
    }
    argv[n++] = (char *)"--pid";
    argv[n++] = (char *)"--ipc";
    argv[n++] = (char *)"--mount";
    argv[n++] = (char *)"--fork";
    argv[n++] = (char *)"--mount-proc";
    argv[n++] = (char *)"sh";
    argv[n++] = (char *)"-c";
    argv[n++] = (char *)script;
    argv[n++] = (char *)arg0;
    argv[n] = NULL;
    return n;
}

/* An interprocess fence shared with a process of other PID, IPC and mount
 * namespaces (a private /dev/shm): only the descriptor, over a Unix
 * socket, reaches it. Both sides signal and wait. */
static void t_fd_namespaces(void)
{
    static const char probe[] = "mount -t tmpfs evxshm /dev/shm";
    static const char script[] =
        "mount -t tmpfs evxshm /dev/shm && exec \"$0\" --child fence-fd-peer";
    evx_fence_t f = NULL;
    evx_stream_t s = NULL;
    evx_ipc_fence_handle_t h;
    char *argv[16], env[64], b = 0;
    int sv[2] = {-1, -1}, fd = -1, rc;
    pid_t pid = -1;
    unshare_argv(argv, probe, "probe");
    rc = spawn_wait(argv, -1);
    if (rc != 0) {
        conf_skip("cannot make PID, IPC and mount namespaces with a private /dev/shm here "
                  "(unshare%s --pid --ipc --mount --fork --mount-proc, then mount -t tmpfs: "
                  "exit %d)",
                  geteuid() != 0 ? " --user --map-root-user" : "", rc);
        return;
    }
    REQUIRE((f = xmake(0, 0, EVX_FENCE_INTERPROCESS)) != NULL);
    REQUIRE((s = make_stream(0)) != NULL);
    REQUIRE_OK(evx_fence_get_ipc_handle(f, &h));
    REQUIRE_OK(evx_fence_export_fd(f, &fd));
    REQUIRE(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
    snprintf(env, sizeof env, "%d", sv[1]);
    setenv("EVX_CONF_FENCE_SOCK", env, 1);
    unshare_argv(argv, script, conf_self_path());
    pid = fork();
    if (pid == 0) {
        int fl = fcntl(sv[1], F_GETFD);
        fcntl(sv[1], F_SETFD, fl & ~FD_CLOEXEC);
        execvp(argv[0], argv);
        _exit(127);
    }
    unsetenv("EVX_CONF_FENCE_SOCK");
    REQUIRE(pid > 0);
    close(sv[1]);
    sv[1] = -1;
    REQUIRE(send_fence(sv[0], fd, &h));
    close(fd);
    fd = -1;
    /* the child signalled 5 from the host and queued a wait for 6; its
     * stream then signals 7 */
    if (EXPECT(read(sv[0], &b, 1) == 1)) {
        EXPECT(xvalue(f) == 5);
        EXPECT_OK(evx_fence_signal(f, s, 6));
        EXPECT_OK(evx_fence_wait_host(f, 7, 20ull * 1000000000ull));
    }
    EXPECT(send(sv[0], "1", 1, MSG_NOSIGNAL) == 1);
out:
    if (pid > 0) {
        int st = 0;
        EXPECT(waitpid(pid, &st, 0) == pid);
        EXPECTF(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the child ended with status 0x%x", st);
    }
    if (s != NULL)
        EXPECT_OK(evx_stream_synchronize(s));
    if (fd >= 0)
        close(fd);
    if (sv[0] >= 0)
        close(sv[0]);
    if (sv[1] >= 0)
        close(sv[1]);
    xdrop(&f);
    drop_stream(&s);
}

/* ---- reclamation ---------------------------------------------------------- */

static long long pinned_now(void)
{
    const host_debug *hd = host_debug_get();
    evx_host_live l;
    if (hd == NULL)
        return -1;
    hd->get_live(&l);
    return l.pinned;
}

/* Waits (up to 20 s) until no destroyed fence's memory is pending. */
static uint64_t settle_pending(uint64_t *kept)
{
    uint64_t pending = 0;
    double until = now_ms() + 20000;
    for (;;) {
        EXPECT_OK(evx_fence_reclaim(&pending, kept));
        if (pending == 0 || now_ms() > until)
            return pending;
        sleep_ms(1);
    }
}

/* Sanitizer builds, ten times slower or more, run a fifth of the cycles
 * (the same check; EVX_CONF_FENCE_CYCLES sets any count). */
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define RECLAIM_CYCLES 20000
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
#define RECLAIM_CYCLES 20000
#endif
#endif
#ifndef RECLAIM_CYCLES
#define RECLAIM_CYCLES 100000
#endif

/* On the real driver each cycle once pinned and unpinned a page
 * (cuMemHostAlloc and cuMemFreeHost take far longer than the emulation's),
 * and 100,000 cycles outlasted the per-case limit; fences now reuse the
 * words of a pool, but the count stays until a GPU run times it. The pinned
 * count is the emulation's alone, so there the loop checks only that
 * nothing stays pending or kept. */
#define RECLAIM_CYCLES_REAL_DRIVER 500

/* A server's loop: create, signal, wait, destroy, 100,000 times. It ends
 * with as much pinned memory as it started with, and nothing pending. */
static void t_reclaim_loop(void)
{
    evx_stream_t a = NULL, b = NULL;
    uint64_t kept0 = 0, kept = 0;
    long long pinned0;
    const char *env = getenv("EVX_CONF_FENCE_CYCLES");
    long i, cycles = env                       ? atol(env)
                     : host_debug_get() == NULL ? RECLAIM_CYCLES_REAL_DRIVER
                                                : RECLAIM_CYCLES;
    REQUIRE((a = make_stream(0)) != NULL);
    REQUIRE((b = make_stream(0)) != NULL);
    EXPECT(settle_pending(&kept0) == 0);
    EXPECT_OK(evx_device_trim(0)); /* no idle page in the word pool */
    pinned0 = pinned_now();
    for (i = 0; i < cycles; i++) {
        evx_fence_t f = NULL;
        if (!EXPECT_OK(evx_device_create_fence(0, 0, 0, &f)))
            break;
        EXPECT_OK(evx_fence_signal(f, a, 1));
        EXPECT_OK(evx_stream_wait_fence(b, f, 1));
        if (!EXPECT_OK(evx_fence_destroy(f)))
            break;
    }
    EXPECT_OK(evx_stream_synchronize(a));
    EXPECT_OK(evx_stream_synchronize(b));
    EXPECT(settle_pending(&kept) == 0);
    EXPECTF(kept == kept0, "kept %" PRIu64 ", at the start %" PRIu64, kept, kept0);
    /* The words went back to the word pool; the trim frees its pages. */
    EXPECT_OK(evx_device_trim(0));
    EXPECTF(pinned_now() == pinned0, "pinned ranges %lld, at the start %lld", pinned_now(),
            pinned0);
out:
    drop_stream(&a);
    drop_stream(&b);
}

/* A destroyed fence whose queued signal has not run is pending, its memory
 * kept, until the signal ran; the same for an interprocess fence's page,
 * which is then kept for a trim. */
static void one_pending(unsigned flags)
{
    evx_fence_t f = NULL;
    evx_stream_t a = NULL;
    conf_gate *g = gate_new();
    uint64_t pending = 0, kept0 = 0, kept = 0;
    long long pinned0;
    REQUIRE((a = make_stream(0)) != NULL);
    EXPECT(settle_pending(&kept0) == 0);
    EXPECT_OK(evx_device_trim(0)); /* no idle page in the word pool, no kept page */
    EXPECT_OK(evx_fence_reclaim(NULL, &kept0));
    pinned0 = pinned_now();
    REQUIRE((f = xmake(0, 0, flags)) != NULL);
    REQUIRE_OK(gate_launch(a, g));
    REQUIRE_OK(evx_fence_signal(f, a, 1));
    REQUIRE_OK(evx_fence_destroy(f));
    f = NULL;
    EXPECT_OK(evx_fence_reclaim(&pending, &kept));
    EXPECTF(pending == 1 && kept == kept0, "pending %" PRIu64 ", kept %" PRIu64, pending, kept);
    if (pinned0 >= 0) {
        /* a trim frees no page with a word still pending (nor waits: it
         * has no page to free) */
        EXPECT_OK(evx_device_trim(0));
        EXPECT(pinned_now() == pinned0 + 1);
    }
    gate_open(g);
    EXPECT_OK(evx_stream_synchronize(a));
    EXPECT(settle_pending(&kept) == 0);
    /* an interprocess page is kept for a trim, whose unregister may wait */
    EXPECTF(kept == kept0 + (flags == EVX_FENCE_INTERPROCESS), "kept %" PRIu64 ", at the start %"
            PRIu64, kept, kept0);
    EXPECT_OK(evx_device_trim(0));
    EXPECT_OK(evx_fence_reclaim(NULL, &kept));
    EXPECT(kept == kept0);
    EXPECT(pinned_now() == pinned0);
out:
    gate_open(g);
    xdrop(&f);
    drop_stream(&a);
}

/* A fence used on 20 streams (more than a fence tracks inline) is
 * reclaimed like one used on a few: destroyed while a wait queued on the
 * 15th stream is held behind a gate, it stays pending (its memory kept for
 * that wait) until the gate opens, and is then freed, nothing kept. */
#define MANY_STREAMS 20
#define MANY_GATED 14

static void many_streams(unsigned flags)
{
    evx_stream_t s[MANY_STREAMS] = {0};
    evx_fence_t f = NULL;
    conf_gate *g = gate_new();
    uint64_t pending = 0, kept0 = 0, kept = 0;
    long long pinned0;
    int i;
    for (i = 0; i < MANY_STREAMS; i++)
        REQUIRE((s[i] = make_stream(0)) != NULL);
    EXPECT(settle_pending(&kept0) == 0);
    EXPECT_OK(evx_device_trim(0)); /* no idle page in the word pool, no kept page */
    EXPECT_OK(evx_fence_reclaim(NULL, &kept0));
    pinned0 = pinned_now();
    REQUIRE((f = xmake(0, 0, flags)) != NULL);
    REQUIRE_OK(gate_launch(s[MANY_GATED], g));
    REQUIRE_OK(evx_fence_signal(f, s[0], 1));
    for (i = 1; i < MANY_STREAMS; i++) {
        REQUIRE_OK(evx_stream_wait_fence(s[i], f, 1));
        REQUIRE_OK(evx_stream_wait_fence(s[i], f, 1)); /* the stream tracked already */
    }
    for (i = 0; i < MANY_STREAMS; i++)
        if (i != MANY_GATED)
            EXPECT_OK(evx_stream_synchronize(s[i]));
    REQUIRE_OK(evx_fence_destroy(f));
    f = NULL;
    /* Every stream but the gated one ran its work: only that one's wait
     * keeps the memory. */
    sleep_ms(20);
    EXPECT_OK(evx_fence_reclaim(&pending, &kept));
    EXPECTF(pending == 1 && kept == kept0, "pending %" PRIu64 ", kept %" PRIu64, pending, kept);
    if (pinned0 >= 0) {
        EXPECT_OK(evx_device_trim(0)); /* the page of the pending word stays */
        EXPECT(pinned_now() == pinned0 + 1);
    }
    gate_open(g);
    EXPECT_OK(evx_stream_synchronize(s[MANY_GATED]));
    EXPECT(settle_pending(&kept) == 0);
    EXPECTF(kept == kept0 + (flags == EVX_FENCE_INTERPROCESS), "kept %" PRIu64 ", at the start %"
            PRIu64, kept, kept0);
    EXPECT_OK(evx_device_trim(0));
    EXPECT_OK(evx_fence_reclaim(NULL, &kept));
    EXPECT(kept == kept0);
    EXPECT(pinned_now() == pinned0);
out:
    gate_open(g);
    xdrop(&f);
    for (i = 0; i < MANY_STREAMS; i++)
        drop_stream(&s[i]);
}

static void t_reclaim_many_streams(void)
{
    many_streams(EVX_FENCE_DEFAULT);
    many_streams(EVX_FENCE_INTERPROCESS);
}

static void t_reclaim_pending(void)
{
    one_pending(EVX_FENCE_DEFAULT);
    one_pending(EVX_FENCE_INTERPROCESS);
}

const conf_case conf_fence_xdev_cases[] = {
    {"fence.two_devices", t_two_devices},
    {"fence.wait_flags", t_wait_flags},
    {"fence.fd_local", t_fd_local},
    {"fence.fd_namespaces", t_fd_namespaces},
    {"fence.reclaim_pending", t_reclaim_pending},
    {"fence.reclaim_many_streams", t_reclaim_many_streams},
    {"fence.reclaim_loop", t_reclaim_loop},
    {NULL, NULL},
};
