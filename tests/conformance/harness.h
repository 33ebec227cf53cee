/*
 * Copyright 2026 The evx Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/*
 * A small test harness for the evx conformance suite: named cases, status
 * expectations that print what went wrong, skips that say why.
 *
 * A case is a `void f(void)`. Inside it:
 *   EXPECT_STATUS(call, EVX_ERROR_X)  the call returns exactly that status;
 *   EXPECT_OK(call)                   the call returns EVX_SUCCESS;
 *   EXPECT_FAIL(call, EVX_ERROR_X)    bad input: the status, a non-empty
 *                                     message, and evx_last_error() agreeing;
 *   EXPECT(cond) / EXPECTF(cond, fmt, ...)
 *   REQUIRE_OK(call) / REQUIRE(cond)  as above, then `goto out` on failure
 *                                     (the case must have an `out:` label
 *                                     that cleans up);
 *   NEED_DEVICES(n)                   skips the case (with the reason) when
 *                                     fewer than n devices exist.
 * Every EXPECT macro evaluates to 1 when it held, 0 when it failed.
 */
#ifndef EVX_CONF_HARNESS_H
#define EVX_CONF_HARNESS_H

#include <evx/evx.h>

typedef void (*conf_fn)(void);

typedef struct conf_case {
    const char *name;
    conf_fn fn;
} conf_case;

/* Every case table of the suite's files, NULL-ended: each file defines
 * `const conf_case conf_NAME_cases[]`, ended by {NULL, NULL}, and the build
 * finds it (conformance_tables.c, written by scripts/conformance_cases.py). */
extern const conf_case *const conf_tables[];

/* Child modes run by some cases in a fresh process (argv[1] == "--child"). */
int conf_child_main(const char *mode);
/* The child modes of faults.c ("fault-..."). */
int conf_fault_child(const char *mode);
/* The second process of ipc.two_processes (mode "ipc-peer", ipc.c). */
int conf_ipc_child(void);
/* The second process of fence.ipc_two_processes (mode "fence-peer", fences.c). */
int conf_fence_child(void);
/* The re-exporter of fence.ipc_reexport (mode "fence-reexport", fence_window.c). */
int conf_fence_reexport_child(void);
/* The importer of fence.ipc_private_dev_shm and fence.ipc_no_dev_shm (mode
 * "fence-importer", fences.c). */
int conf_fence_importer_child(void);
/* The exporter without /dev/shm of fence.ipc_no_dev_shm (mode "fence-memfd",
 * fences.c). */
int conf_fence_memfd_child(void);
/* The peer of fence.fd_namespaces (mode "fence-fd-peer", fence_xdev.c). */
int conf_fence_fd_child(void);
/* The child of fence.not_supported (mode "fence-no-memops", fences.c). */
int conf_fence_no_memops_child(void);
/* The emulation as a CUDA 13.2 driver (mode "hostfn-v2", hostfn.c). */
int conf_hostfn_child(void);

int conf_expect_status(evx_status_t got, evx_status_t want, const char *text,
                       const char *file, int line);
int conf_expect_fail(evx_status_t got, evx_status_t want, const char *text,
                     const char *file, int line);
int conf_expect(int ok, const char *text, const char *file, int line,
                const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;
/* Marks the running case skipped, with the reason (the caller returns). */
void conf_skip(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;
/* Prints a note under the running case (shown with -v, and on failure). */
void conf_note(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

/* Whether -v was given. */
int conf_verbose(void);
/* The number of devices, read once (0 if the driver did not open). */
int conf_device_count(void);
/* argv[0] of the running suite, for child processes. */
const char *conf_self_path(void);
/* How many EXPECT_FAIL checks ran (bad-input coverage, printed at the end). */
extern unsigned long conf_bad_input_checks;

#define EXPECT_STATUS(call, want) \
    conf_expect_status((call), (want), #call, __FILE__, __LINE__)
#define EXPECT_OK(call) EXPECT_STATUS(call, EVX_SUCCESS)
#define EXPECT_FAIL(call, want) \
    (evx_clear_last_error(), \
     conf_expect_fail((call), (want), #call, __FILE__, __LINE__))
#define EXPECT(cond) conf_expect((cond) != 0, #cond, __FILE__, __LINE__, NULL)
#define EXPECTF(cond, ...) \
    conf_expect((cond) != 0, #cond, __FILE__, __LINE__, __VA_ARGS__)
#define REQUIRE_OK(call) \
    do { if (!EXPECT_OK(call)) goto out; } while (0)
#define REQUIRE(cond) \
    do { if (!EXPECT(cond)) goto out; } while (0)
#define NEED_DEVICES(n) \
    do { \
        if (conf_device_count() < (n)) { \
            conf_skip("needs %d devices, the driver has %d", (n), \
                      conf_device_count()); \
            return; \
        } \
    } while (0)

#endif /* EVX_CONF_HARNESS_H */
