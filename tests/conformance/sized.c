/*
 * Copyright 2026 The evx Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/* Structs that carry struct_size (pool options in, pool stats out): any size
 * from the first published one up is accepted, only what it covers is read
 * or written, and a smaller one is refused with both sizes named. */
#define _DEFAULT_SOURCE

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "harness.h"
#include "util.h"

/* The sizes evx/pool.h states as first published. */
#define OPTIONS_FIRST_SIZE 16u
#define STATS_FIRST_SIZE 48u
/* Bytes past today's struct in the "later header" cases. */
#define EXTRA 32u
#define PATTERN 0x5A

/* `size` bytes that end where an inaccessible page begins: reading or
 * writing one byte past them faults. */
typedef struct guarded {
    unsigned char *map;
    size_t page;
    unsigned char *at;
} guarded;

static int guarded_new(guarded *g, size_t size)
{
    g->page = (size_t)sysconf(_SC_PAGESIZE);
    g->map = (unsigned char *)mmap(NULL, 2 * g->page, PROT_READ | PROT_WRITE,
                                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (g->map == (unsigned char *)MAP_FAILED) {
        g->map = NULL;
        return 0;
    }
    if (mprotect(g->map + g->page, g->page, PROT_NONE) != 0) return 0;
    /* Every size used here is a multiple of 8, so the stats' counters stay
     * aligned. */
    g->at = g->map + g->page - size;
    memset(g->map, PATTERN, g->page);
    return 1;
}

static void guarded_free(guarded *g)
{
    if (g->map) munmap(g->map, 2 * g->page);
    g->map = NULL;
}

static int all_pattern(const unsigned char *p, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++)
        if (p[i] != PATTERN) return 0;
    return 1;
}

/* The fields as first published, in the caller's memory. */
static void put_options(unsigned char *at, uint32_t struct_size,
                        uint32_t capacity, uint32_t prewarm)
{
    evx_event_pool_options_t o = EVX_EVENT_POOL_OPTIONS_INIT;
    o.struct_size = struct_size;
    o.capacity = capacity;
    o.prewarm = prewarm;
    memcpy(at, &o, OPTIONS_FIRST_SIZE);
}

static void expect_pool(evx_event_pool_t p, uint32_t capacity, uint32_t idle)
{
    evx_event_pool_stats_t st = EVX_EVENT_POOL_STATS_INIT;
    if (EXPECT_OK(evx_event_pool_get_stats(p, &st)))
        EXPECTF(st.capacity == capacity && st.idle == idle,
                "capacity %u idle %u, expected %u %u", st.capacity, st.idle,
                capacity, idle);
}

static void t_options_first_size(void)
{
    guarded g = {NULL, 0, NULL};
    evx_event_pool_t p = NULL;
    REQUIRE(sizeof(evx_event_pool_options_t) >= OPTIONS_FIRST_SIZE);
    REQUIRE(guarded_new(&g, OPTIONS_FIRST_SIZE));
    put_options(g.at, OPTIONS_FIRST_SIZE, 3, 2);
    REQUIRE_OK(evx_device_create_event_pool(0, 
        (const evx_event_pool_options_t *)(const void *)g.at, &p));
    expect_pool(p, 3, 2);
    EXPECT(all_pattern(g.map, g.page - OPTIONS_FIRST_SIZE));
out:
    drop_pool(&p);
    guarded_free(&g);
}

static void t_options_later_header(void)
{
    const size_t size = sizeof(evx_event_pool_options_t) + EXTRA;
    guarded g = {NULL, 0, NULL};
    evx_event_pool_t p = NULL;
    REQUIRE(guarded_new(&g, size));
    {
        evx_event_pool_options_t o = EVX_EVENT_POOL_OPTIONS_INIT;
        o.struct_size = (uint32_t)size;
        o.capacity = 4;
        o.prewarm = 1;
        memcpy(g.at, &o, sizeof o); /* fields of a later header follow */
    }
    REQUIRE_OK(evx_device_create_event_pool(0, 
        (const evx_event_pool_options_t *)(const void *)g.at, &p));
    expect_pool(p, 4, 1);
    EXPECT(all_pattern(g.at + sizeof(evx_event_pool_options_t), EXTRA));
out:
    drop_pool(&p);
    guarded_free(&g);
}

static void t_options_too_small(void)
{
    evx_event_pool_options_t o = EVX_EVENT_POOL_OPTIONS_INIT;
    evx_event_pool_t p = JUNK(evx_event_pool_t);
    const char *m;
    o.capacity = 4;
    o.struct_size = OPTIONS_FIRST_SIZE - 4;
    EXPECT_FAIL(evx_device_create_event_pool(0, &o, &p), EVX_ERROR_INVALID_VALUE);
    m = evx_last_error_message();
    EXPECTF(msg_has_int(m, OPTIONS_FIRST_SIZE - 4) &&
                msg_has_int(m, OPTIONS_FIRST_SIZE) &&
                str_has(m, "evx_event_pool_options_t"),
            "message \"%s\" should give both sizes and the type", m);
    EXPECT(p == NULL);
    o.struct_size = 0;
    EXPECT_FAIL(evx_device_create_event_pool(0, &o, &p), EVX_ERROR_INVALID_VALUE);
    EXPECT(p == NULL);
}

static evx_event_pool_t small_pool(void)
{
    evx_event_pool_options_t o = EVX_EVENT_POOL_OPTIONS_INIT;
    evx_event_pool_t p = NULL;
    o.capacity = 5;
    o.prewarm = 2;
    return EXPECT_OK(evx_device_create_event_pool(0, &o, &p)) ? p : NULL;
}

static void t_stats_first_size(void)
{
    guarded g = {NULL, 0, NULL};
    evx_event_pool_t p = NULL;
    evx_event_pool_stats_t st;
    uint32_t size = STATS_FIRST_SIZE;
    REQUIRE(sizeof(evx_event_pool_stats_t) >= STATS_FIRST_SIZE);
    REQUIRE((p = small_pool()) != NULL);
    REQUIRE(guarded_new(&g, STATS_FIRST_SIZE));
    memcpy(g.at, &size, sizeof size);
    REQUIRE_OK(evx_event_pool_get_stats(
        p, (evx_event_pool_stats_t *)(void *)g.at));
    memset(&st, 0, sizeof st);
    memcpy(&st, g.at, STATS_FIRST_SIZE);
    EXPECTF(st.struct_size == STATS_FIRST_SIZE && st.capacity == 5 &&
                st.idle == 2 && st.in_use == 0 && st.pending == 0 &&
                st.created_total == 2 && st.acquired_total == 0 &&
                st.exhausted_total == 0,
            "struct_size %u capacity %u idle %u created %llu", st.struct_size,
            st.capacity, st.idle, (unsigned long long)st.created_total);
    EXPECT(all_pattern(g.map, g.page - STATS_FIRST_SIZE));
out:
    drop_pool(&p);
    guarded_free(&g);
}

static void t_stats_later_header(void)
{
    const size_t size = sizeof(evx_event_pool_stats_t) + EXTRA;
    guarded g = {NULL, 0, NULL};
    evx_event_pool_t p = NULL;
    evx_event_pool_stats_t st;
    uint32_t size32 = (uint32_t)size;
    REQUIRE((p = small_pool()) != NULL);
    REQUIRE(guarded_new(&g, size));
    memcpy(g.at, &size32, sizeof size32);
    REQUIRE_OK(evx_event_pool_get_stats(
        p, (evx_event_pool_stats_t *)(void *)g.at));
    memcpy(&st, g.at, sizeof st);
    EXPECTF(st.struct_size == size32 && st.capacity == 5 && st.idle == 2 &&
                st.created_total == 2,
            "struct_size %u capacity %u idle %u created %llu", st.struct_size,
            st.capacity, st.idle, (unsigned long long)st.created_total);
    /* Fields of a later header: this library does not know them. */
    EXPECT(all_pattern(g.at + sizeof st, EXTRA));
out:
    drop_pool(&p);
    guarded_free(&g);
}

static void t_stats_too_small(void)
{
    unsigned char buf[sizeof(evx_event_pool_stats_t)];
    evx_event_pool_t p = NULL;
    uint32_t size = STATS_FIRST_SIZE - 8;
    const char *m;
    REQUIRE((p = small_pool()) != NULL);
    memset(buf, PATTERN, sizeof buf);
    memcpy(buf, &size, sizeof size);
    EXPECT_FAIL(evx_event_pool_get_stats(p, (evx_event_pool_stats_t *)(void *)buf),
                EVX_ERROR_INVALID_VALUE);
    m = evx_last_error_message();
    EXPECTF(msg_has_int(m, STATS_FIRST_SIZE - 8) &&
                msg_has_int(m, STATS_FIRST_SIZE) &&
                str_has(m, "evx_event_pool_stats_t"),
            "message \"%s\" should give both sizes and the type", m);
    EXPECT(memcmp(buf, &size, sizeof size) == 0);
    EXPECT(all_pattern(buf + sizeof size, sizeof buf - sizeof size));
out:
    drop_pool(&p);
}

const conf_case conf_sized_cases[] = {
    {"sized.options_first_size", t_options_first_size},
    {"sized.options_later_header", t_options_later_header},
    {"sized.options_too_small", t_options_too_small},
    {"sized.stats_first_size", t_stats_first_size},
    {"sized.stats_later_header", t_stats_later_header},
    {"sized.stats_too_small", t_stats_too_small},
    {NULL, NULL},
};
