/*
 * Copyright 2026 The evx Authors
 * SPDX-License-Identifier: Apache-2.0
 */
#define _POSIX_C_SOURCE 200809L

#include "harness.h"

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hostdebug.h"
#include "util.h"

/* Per-case limit: a case that has not finished by then is reported and the
 * run ends (a hang is a failure, never a pass). EVX_CONF_CASE_SECONDS raises
 * it for a run under a tool that slows every call (compute-sanitizer). */
#define CASE_LIMIT_S 120

static unsigned case_limit_s(void)
{
    const char *env = getenv("EVX_CONF_CASE_SECONDS");
    long v = env ? atol(env) : 0;
    return v > 0 && v <= 86400 ? (unsigned)v : CASE_LIMIT_S;
}

unsigned long conf_bad_input_checks;

static const conf_case *const *all_tables;
static const char *current_case = "";
static int case_failed;
static int case_skipped;
static int verbose;
static char notes[8192];
static size_t notes_len;
static const char *self_path = "";

const char *conf_self_path(void) { return self_path; }

int conf_verbose(void) { return verbose; }

static void case_header_once(void)
{
    /* Failures are printed under the case name, which goes out first. */
    static const char *printed_for = NULL;
    if (printed_for != current_case) {
        printf("---- %s\n", current_case);
        printed_for = current_case;
    }
}

static const char *safe_name(evx_status_t s)
{
    const char *n = evx_status_name(s);
    return n ? n : "(evx_status_name returned NULL)";
}

static const char *safe_message(void)
{
    const char *m = evx_last_error_message();
    return m ? m : "(evx_last_error_message returned NULL)";
}

int conf_expect_status(evx_status_t got, evx_status_t want, const char *text,
                       const char *file, int line)
{
    if (got == want)
        return 1;
    case_failed = 1;
    case_header_once();
    printf("  FAIL %s:%d: %s\n", file, line, text);
    printf("       expected %s (%d), got %s (%d)\n", safe_name(want), want,
           safe_name(got), got);
    printf("       last error message: \"%s\"\n", safe_message());
    return 0;
}

int conf_expect_fail(evx_status_t got, evx_status_t want, const char *text,
                     const char *file, int line)
{
    const char *msg;
    int ok;
    conf_bad_input_checks++;
    if (!conf_expect_status(got, want, text, file, line))
        return 0;
    msg = evx_last_error_message();
    ok = msg != NULL && msg[0] != '\0';
    if (!ok) {
        case_failed = 1;
        case_header_once();
        printf("  FAIL %s:%d: %s\n", file, line, text);
        printf("       returned %s as expected, but evx_last_error_message() "
               "is empty\n", safe_name(want));
        return 0;
    }
    if (evx_last_error() != want) {
        case_failed = 1;
        case_header_once();
        printf("  FAIL %s:%d: %s\n", file, line, text);
        printf("       returned %s, but evx_last_error() is %s (%d)\n",
               safe_name(want), safe_name(evx_last_error()), evx_last_error());
        return 0;
    }
    if (verbose)
        printf("       ok %s -> %s: %s\n", text, safe_name(want), msg);
    return 1;
}

int conf_expect(int ok, const char *text, const char *file, int line,
                const char *fmt, ...)
{
    va_list ap;
    if (ok)
        return 1;
    case_failed = 1;
    case_header_once();
    printf("  FAIL %s:%d: %s\n", file, line, text);
    if (fmt != NULL) {
        printf("       ");
        va_start(ap, fmt);
        vprintf(fmt, ap);
        va_end(ap);
        printf("\n");
    }
    return 0;
}

void conf_skip(const char *fmt, ...)
{
    va_list ap;
    int n;
    case_skipped = 1;
    va_start(ap, fmt);
    n = vsnprintf(notes + notes_len, sizeof notes - notes_len, fmt, ap);
    va_end(ap);
    if (n > 0 && (size_t)n < sizeof notes - notes_len)
        notes_len += (size_t)n;
}

void conf_note(const char *fmt, ...)
{
    va_list ap;
    int n;
    if (notes_len + 8 >= sizeof notes)
        return;
    memcpy(notes + notes_len, "  note: ", 8);
    notes_len += 8;
    va_start(ap, fmt);
    n = vsnprintf(notes + notes_len, sizeof notes - notes_len, fmt, ap);
    va_end(ap);
    if (n > 0 && (size_t)n < sizeof notes - notes_len - 1) {
        notes_len += (size_t)n;
        notes[notes_len++] = '\n';
        notes[notes_len] = '\0';
    }
}

int conf_device_count(void)
{
    static int count = -1;
    if (count < 0) {
        int n = 0;
        if (evx_device_count(&n) != EVX_SUCCESS)
            n = 0;
        count = n;
    }
    return count;
}

static void on_alarm(int sig)
{
    static const char a[] = "\nconformance: case '";
    static const char b[] = "' did not finish within the per-case limit; "
                            "stopping the run\n";
    (void)sig;
    if (write(1, a, sizeof a - 1) < 0 ||
        write(1, current_case, strlen(current_case)) < 0 ||
        write(1, b, sizeof b - 1) < 0) {
        /* nothing more can be done */
    }
    _exit(3);
}

static int selected(const char *name, int argc, char **argv, int first)
{
    int i, any = 0;
    for (i = first; i < argc; i++) {
        if (argv[i][0] == '-')
            continue;
        any = 1;
        if (strstr(name, argv[i]) != NULL)
            return 1;
    }
    return !any;
}

static void print_driver(void)
{
    evx_status_t s = evx_driver_open();
    const char *path = NULL;
    int version = 0, emu = -1, count = 0;
    printf("evx %s (headers %d.%d.%d)\n", evx_version_string(),
           EVX_VERSION_MAJOR, EVX_VERSION_MINOR, EVX_VERSION_PATCH);
    if (s != EVX_SUCCESS) {
        printf("driver: evx_driver_open() -> %s: %s\n", safe_name(s),
               safe_message());
        printf("driver: every case that needs a driver will fail\n");
        return;
    }
    (void)evx_driver_get_path(&path);
    (void)evx_driver_get_version(&version);
    (void)evx_driver_is_emulation(&emu);
    (void)evx_device_count(&count);
    printf("driver: %s, version %d, %s, %d device(s)\n",
           path ? path : "(null)", version,
           emu == 1 ? "the host emulation" : (emu == 0 ? "a GPU driver"
                                                        : "emulation unknown"),
           count);
}

static void run_case(const conf_case *c, unsigned *passed, unsigned *failed,
                     unsigned *skipped)
{
    double t0;
    int left_closed;
    current_case = c->name;
    case_failed = 0;
    case_skipped = 0;
    notes_len = 0;
    notes[0] = '\0';
    alarm(case_limit_s());
    t0 = now_ms();
    c->fn();
    left_closed = gate_open_all_for_case();
    alarm(0);
    if (left_closed > 0) {
        case_failed = 1;
        case_header_once();
        printf("  FAIL the case left %d gate(s) closed (a test bug)\n",
               left_closed);
    }
    if (case_failed) {
        (*failed)++;
        if (notes_len)
            fputs(notes, stdout);
        printf("FAIL %s\n", c->name);
    } else if (case_skipped) {
        (*skipped)++;
        printf("SKIP %s: %s\n", c->name, notes);
    } else {
        (*passed)++;
        if (verbose && notes_len)
            fputs(notes, stdout);
        printf("PASS %s (%.1f ms)\n", c->name, now_ms() - t0);
    }
}

/* Ends every run: after the cases' teardown and evx_device_trim, the
 * emulation's live driver objects are back to what they were before the
 * first case. A real driver cannot count them: skipped there. */
static evx_host_live suite_start;
static int counting;

static void t_teardown_live_counts(void)
{
    /* the memory of every fence destroyed, once its queued work ran (the
     * cases synchronize what they queued): none pending, none kept, so
     * that a leak check (compute-sanitizer) finds none */
    uint64_t pending = 0, kept = 0;
    double until = now_ms() + 20000;
    while (EXPECT_OK(evx_fence_reclaim(&pending, &kept)) && pending != 0 &&
           now_ms() < until)
        sleep_ms(1);
    EXPECTF(pending == 0 && kept == 0,
            "destroyed fences' memory: %llu pending, %llu kept (evx_fence_reclaim)",
            (unsigned long long)pending, (unsigned long long)kept);
    /* the pages of evx's fence word pools are freed by a trim, on either
     * driver (compute-sanitizer's leak check runs on the GPU) */
    {
        int n = 0, d;
        if (EXPECT_OK(evx_device_count(&n)))
            for (d = 0; d < n; d++)
                EXPECT_OK(evx_device_trim(d));
    }
    if (!counting) {
        conf_skip("the driver is not the host emulation: its live driver "
                  "objects cannot be counted");
        return;
    }
    if (live_expect_back(&suite_start, "after every case")) {
        /* pinned ranges: fence pages and words, all given back */
        const host_debug *h = host_debug_get();
        evx_host_live now;
        h->get_live(&now);
        EXPECTF(now.pinned == suite_start.pinned,
                "pinned host ranges %lld, before the first case %lld (fence word pools "
                "and interprocess fence pages not freed)",
                now.pinned, suite_start.pinned);
    }
}

static const conf_case teardown_case = {"teardown.live_counts_back",
                                        t_teardown_live_counts};

int main(int argc, char **argv)
{
    int i, t, first = 1, list = 0;
    unsigned passed = 0, failed = 0, skipped = 0;
    struct sigaction sa;

    setvbuf(stdout, NULL, _IOLBF, 0);
    self_path = argv[0];
    if (argc >= 3 && strcmp(argv[1], "--child") == 0)
        return conf_child_main(argv[2]);
    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-v") == 0)
            verbose = 1;
        else if (strcmp(argv[i], "--list") == 0)
            list = 1;
        else if (argv[i][0] == '-') {
            fprintf(stderr, "usage: %s [-v] [--list] [NAME-SUBSTRING...]\n",
                    argv[0]);
            return 2;
        }
    }
    all_tables = conf_tables;
    if (list) {
        for (t = 0; all_tables[t] != NULL; t++)
            for (i = 0; all_tables[t][i].name != NULL; i++)
                printf("%s\n", all_tables[t][i].name);
        return 0;
    }

    print_driver();

    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGALRM, &sa, NULL);

    /* The baseline of the leak check that ends the run. */
    counting = host_live_start(&suite_start);

    for (t = 0; all_tables[t] != NULL; t++)
        for (i = 0; all_tables[t][i].name != NULL; i++)
            if (selected(all_tables[t][i].name, argc, argv, first))
                run_case(&all_tables[t][i], &passed, &failed, &skipped);
    run_case(&teardown_case, &passed, &failed, &skipped);
    printf("bad-input checks run: %lu\n", conf_bad_input_checks);
    printf("conformance: %u passed, %u failed, %u skipped\n", passed, failed,
           skipped);
    return failed ? 1 : 0;
}
