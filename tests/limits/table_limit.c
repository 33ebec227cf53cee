/*
 * Copyright 2026 The evx Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/* The handle table under an address-space limit (RLIMIT_AS, as `ulimit -v`
 * sets): the library loads (it never aborts), reserves a smaller table, and
 * events are made, used and destroyed on it. The parent runs this program
 * again in a child whose limit is too low for the full table (2 GiB of
 * address space), so that libevx loads under the limit; the child reports
 * the table's size from the message of a handle beyond it. */
#define _POSIX_C_SOURCE 200809L

#include <evx/evx.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#define FULL_SLOTS (1UL << 24)

static int failures = 0;

#define CHECK(cond)                                                      \
    do {                                                                 \
        if (!(cond)) {                                                   \
            fprintf(stderr, "table_limit: %s failed (line %d): %s\n", #cond, \
                    __LINE__, evx_last_error_message());                 \
            if (++failures == 5)                                         \
                exit(1); /* the rest would only repeat it */             \
        }                                                                \
    } while (0)

static int child(void)
{
    enum { N = 1000 };
    static evx_event_t ev[N];
    evx_stream_t s = NULL;
    evx_event_t forged;
    const char *m, *at;
    unsigned long slots = 0;
    int i;

    CHECK(evx_device_create_stream(0, 0, 0, &s) == EVX_SUCCESS);
    for (i = 0; i < N; i++) {
        CHECK(evx_device_create_event(0, 0, &ev[i]) == EVX_SUCCESS);
        CHECK(evx_event_record(ev[i], s) == EVX_SUCCESS);
    }
    for (i = 0; i < N; i++) {
        CHECK(evx_event_synchronize(ev[i]) == EVX_SUCCESS);
        CHECK(evx_event_destroy(ev[i]) == EVX_SUCCESS);
        CHECK(evx_event_query(ev[i]) == EVX_ERROR_INVALID_HANDLE);
    }
    /* An event handle with every index bit set: beyond any table. */
    forged = (evx_event_t)(uintptr_t)((1ULL << 32) | (0xFFFFFFFULL << 4) | 1);
    CHECK(evx_event_query(forged) == EVX_ERROR_INVALID_HANDLE);
    m = evx_last_error_message();
    at = strstr(m, "beyond the handle table's ");
    CHECK(at != NULL);
    if (at)
        slots = strtoul(at + strlen("beyond the handle table's "), NULL, 10);
    printf("table_limit: the handle table has %lu slots (of %lu) under the limit\n", slots,
           FULL_SLOTS);
    CHECK(slots >= 4096 && slots < FULL_SLOTS);
    CHECK(evx_stream_destroy(s) == EVX_SUCCESS);
    return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
    struct rlimit lim;
    pid_t pid;
    int status;

    if (argc > 1 && strcmp(argv[1], "child") == 0)
        return child();
    /* 1 GiB: room for the program, the emulation and its threads, not
     * for the 2 GiB table. */
    pid = fork();
    if (pid < 0)
        return 1;
    if (pid == 0) {
        lim.rlim_cur = lim.rlim_max = 1UL << 30;
        if (setrlimit(RLIMIT_AS, &lim) != 0) {
            perror("setrlimit");
            _exit(1);
        }
        execl(argv[0], argv[0], "child", (char *)NULL);
        perror("execl");
        _exit(1);
    }
    if (waitpid(pid, &status, 0) != pid)
        return 1;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "table_limit: the child under RLIMIT_AS failed (status 0x%x)\n",
                status);
        printf("table_limit: 0 passed, 1 failed\n");
        return 1;
    }
    printf("table_limit: 1 passed, 0 failed\n");
    return 0;
}
