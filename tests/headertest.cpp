/*
 * Copyright 2026 The evx Authors
 * SPDX-License-Identifier: Apache-2.0
 */
// evx/evx.h compiles as C++11 (-std=c++11 -pedantic), declares its
// functions with C linkage, and its constants are usable in constant
// expressions.
#include <evx/evx.h>

#include <cstdio>
#include <type_traits>

static_assert(EVX_ERROR_INVALID_HANDLE == 400, "INVALID_HANDLE is 400");
static_assert(EVX_ERROR_NOT_READY == 600, "NOT_READY is 600");
static_assert(sizeof(evx_status_t) == 4, "evx_status_t is 32 bits");
static_assert(std::is_same<evx_status_t, int>::value, "evx_status_t is int");
static_assert(EVX_VERSION_NUMBER ==
                  EVX_VERSION_MAJOR * 10000 + EVX_VERSION_MINOR * 100 +
                      EVX_VERSION_PATCH,
              "version number");
static_assert(std::is_standard_layout<evx_event_pool_options_t>::value,
              "pool options are a C struct");
static_assert(std::is_standard_layout<evx_event_pool_stats_t>::value,
              "pool stats are a C struct");
static_assert(!std::is_same<evx_event_t, evx_stream_t>::value,
              "handle types are distinct");

// C linkage: the names are not mangled, so taking their addresses links
// against libevx's exported symbols.
extern "C" typedef evx_status_t create_event_fn(int, unsigned, evx_event_t *);

int main()
{
    create_event_fn *create = &evx_device_create_event;
    evx_status_t (*query)(evx_event_t) = &evx_event_query;
    if (create == nullptr || query == nullptr)
        return 1;
    evx_event_pool_options_t options{};
    options.struct_size = sizeof options;
    if (options.capacity != 0)
        return 1;
    const evx_event_pool_options_t init = EVX_EVENT_POOL_OPTIONS_INIT;
    evx_event_pool_stats_t stats = EVX_EVENT_POOL_STATS_INIT;
    if (init.struct_size != sizeof init || init.capacity != 0 ||
        stats.struct_size != sizeof stats || stats.idle != 0)
        return 1;
    if (evx_version() != EVX_VERSION_NUMBER) {
        std::printf("headertest (C++11): library %u, header %d\n",
                    evx_version(), EVX_VERSION_NUMBER);
        return 1;
    }
    std::printf("headertest (C++11): version %s\n", evx_version_string());
    return 0;
}
