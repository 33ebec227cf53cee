/*
 * Copyright 2026 The evx Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/* evx/evx.h compiles as strict C89 and C99 (-pedantic -Werror), its
 * constants have their documented values (checked at compile time), and
 * every function it declares links. */
#include <evx/evx.h>

#include <stdio.h>

/* A negative array size stops the build when a check is false. */
#define EVX_STATIC_CHECK(name, cond) typedef char name[(cond) ? 1 : -1]

EVX_STATIC_CHECK(success_is_0, EVX_SUCCESS == 0);
EVX_STATIC_CHECK(invalid_value_is_1, EVX_ERROR_INVALID_VALUE == 1);
EVX_STATIC_CHECK(out_of_memory_is_2, EVX_ERROR_OUT_OF_MEMORY == 2);
EVX_STATIC_CHECK(not_initialized_is_3, EVX_ERROR_NOT_INITIALIZED == 3);
EVX_STATIC_CHECK(invalid_device_is_101, EVX_ERROR_INVALID_DEVICE == 101);
EVX_STATIC_CHECK(invalid_handle_is_400, EVX_ERROR_INVALID_HANDLE == 400);
EVX_STATIC_CHECK(illegal_state_is_401, EVX_ERROR_ILLEGAL_STATE == 401);
EVX_STATIC_CHECK(not_ready_is_600, EVX_ERROR_NOT_READY == 600);
EVX_STATIC_CHECK(unknown_is_999, EVX_ERROR_UNKNOWN == 999);
EVX_STATIC_CHECK(status_is_int, sizeof(evx_status_t) == sizeof(int));
EVX_STATIC_CHECK(status_enum_32bit, sizeof(enum evx_status_code) == 4);
EVX_STATIC_CHECK(event_flags_match_cuda,
                 EVX_EVENT_DEFAULT == 0 && EVX_EVENT_BLOCKING_SYNC == 1 &&
                     EVX_EVENT_DISABLE_TIMING == 2 &&
                     EVX_EVENT_INTERPROCESS == 4);
EVX_STATIC_CHECK(record_flags_match_cuda,
                 EVX_EVENT_RECORD_DEFAULT == 0 &&
                     EVX_EVENT_RECORD_EXTERNAL == 1);
EVX_STATIC_CHECK(stream_flags_match_cuda,
                 EVX_STREAM_DEFAULT == 0 && EVX_STREAM_NON_BLOCKING == 1);
EVX_STATIC_CHECK(wait_flags_match_cuda,
                 EVX_EVENT_WAIT_DEFAULT == 0 && EVX_EVENT_WAIT_EXTERNAL == 1);
EVX_STATIC_CHECK(device_from_stream_is_minus_1, EVX_DEVICE_FROM_STREAM == -1);
EVX_STATIC_CHECK(version_number,
                 EVX_VERSION_NUMBER == EVX_VERSION_MAJOR * 10000 +
                                           EVX_VERSION_MINOR * 100 +
                                           EVX_VERSION_PATCH);
EVX_STATIC_CHECK(pool_options_size,
                 sizeof(evx_event_pool_options_t) == 4 * sizeof(uint32_t));
EVX_STATIC_CHECK(pool_options_struct_size_first,
                 offsetof(evx_event_pool_options_t, struct_size) == 0);
EVX_STATIC_CHECK(pool_stats_struct_size_first,
                 offsetof(evx_event_pool_stats_t, struct_size) == 0);
EVX_STATIC_CHECK(pool_stats_counters_aligned,
                 offsetof(evx_event_pool_stats_t, created_total) % 8 == 0);
EVX_STATIC_CHECK(handles_are_pointers, sizeof(evx_event_t) == sizeof(void *));
EVX_STATIC_CHECK(ipc_handle_is_64_bytes,
                 EVX_IPC_HANDLE_SIZE == 64 && sizeof(evx_ipc_event_handle_t) == 64);
EVX_STATIC_CHECK(capture_status_matches_cuda,
                 EVX_CAPTURE_STATUS_NONE == 0 && EVX_CAPTURE_STATUS_ACTIVE == 1 &&
                     EVX_CAPTURE_STATUS_INVALIDATED == 2);
EVX_STATIC_CHECK(capture_status_32bit, sizeof(evx_capture_status_t) == 4);

/* The _INIT macros are constant initializers (file scope needs that). */
static const evx_event_pool_options_t pool_options_init =
    EVX_EVENT_POOL_OPTIONS_INIT;
static const evx_event_pool_stats_t pool_stats_init = EVX_EVENT_POOL_STATS_INIT;

/* Taking each function's address makes the link fail for a declaration
 * the library does not define. */
typedef void (*any_fn)(void);
#define FN(f) (any_fn)(f)
static const any_fn all_functions[] = {
    FN(evx_version), FN(evx_version_string), FN(evx_status_name),
    FN(evx_status_string), FN(evx_last_error_message), FN(evx_last_error),
    FN(evx_clear_last_error), FN(evx_driver_open), FN(evx_driver_get_version),
    FN(evx_driver_get_path), FN(evx_driver_is_emulation), FN(evx_device_count),
    FN(evx_device_stream_priority_range), FN(evx_device_trim),
    FN(evx_device_create_event), FN(evx_event_destroy), FN(evx_event_record),
    FN(evx_event_record_with_flags), FN(evx_event_query),
    FN(evx_event_synchronize), FN(evx_event_elapsed_time),
    FN(evx_event_get_flags), FN(evx_event_get_device),
    FN(evx_event_get_native), FN(evx_device_create_stream),
    FN(evx_stream_wrap_external), FN(evx_stream_destroy),
    FN(evx_stream_wait_event), FN(evx_stream_query),
    FN(evx_stream_synchronize), FN(evx_stream_launch_host_func),
    FN(evx_stream_get_priority), FN(evx_stream_get_flags),
    FN(evx_stream_get_device), FN(evx_stream_get_native),
    FN(evx_stream_is_owned), FN(evx_device_create_event_pool),
    FN(evx_event_pool_destroy), FN(evx_event_pool_prewarm),
    FN(evx_event_pool_acquire), FN(evx_event_pool_release),
    FN(evx_event_pool_get_stats), FN(evx_device_create_timer), FN(evx_timer_destroy),
    FN(evx_timer_start), FN(evx_timer_stop), FN(evx_timer_elapsed),
    FN(evx_timer_synchronize), FN(evx_device_create_timeline),
    FN(evx_timeline_destroy), FN(evx_timeline_mark), FN(evx_timeline_count),
    FN(evx_timeline_intervals), FN(evx_timeline_synchronize),
    FN(evx_notifier_create), FN(evx_notifier_destroy), FN(evx_notifier_get_fd),
    FN(evx_notifier_watch), FN(evx_notifier_watch_callback), FN(evx_notifier_read), FN(evx_notifier_read_checked), FN(evx_notifier_watch_callback_status),
    FN(evx_notifier_get_counts),
    FN(evx_timeline_reset),
};

/* evx/ipc.h, evx/capture.h, evx/lifetime.h, evx/fence.h */
static const any_fn engine_functions[] = {
    FN(evx_event_get_ipc_handle), FN(evx_device_open_ipc_event),
    FN(evx_stream_get_capture_status), FN(evx_stream_wrap_external_with_release),
    /* evx/fence.h */
    FN(evx_device_create_fence), FN(evx_fence_destroy), FN(evx_fence_signal),
    FN(evx_stream_wait_fence), FN(evx_fence_signal_host), FN(evx_fence_get_value),
    FN(evx_fence_wait_host), FN(evx_fence_get_ipc_handle), FN(evx_device_open_ipc_fence),
    FN(evx_notifier_watch_fence), FN(evx_notifier_watch_fence_callback),
};

int main(void)
{
    size_t i, n = sizeof all_functions / sizeof all_functions[0];
    for (i = 0; i < n; i++)
        if (all_functions[i] == NULL)
            return 1;
    if (pool_options_init.struct_size != sizeof(evx_event_pool_options_t) ||
        pool_options_init.capacity != 0 ||
        pool_stats_init.struct_size != sizeof(evx_event_pool_stats_t) ||
        pool_stats_init.exhausted_total != 0)
        return 1;
    for (i = 0; i < sizeof engine_functions / sizeof engine_functions[0]; i++)
        if (engine_functions[i] == NULL)
            return 1;
    n += sizeof engine_functions / sizeof engine_functions[0];
    if (evx_version() != EVX_VERSION_NUMBER) {
        printf("headertest (C): library %u, header %d\n", evx_version(),
               EVX_VERSION_NUMBER);
        return 1;
    }
    printf("headertest (C): %lu functions, version %s\n", (unsigned long)n,
           evx_version_string());
    return 0;
}
