/*
 * Copyright 2026 The evx Authors
 * SPDX-License-Identifier: Apache-2.0
 *
 * The enums of the public headers, made reachable for abidw. No call of
 * libevx takes or returns one of them (statuses are evx_status_t, an int;
 * flags are unsigned), so abidw of libevx alone, which records what its
 * exported calls reach, would not record their values. This module exports
 * one function that takes each of them, built from the same headers in the
 * same build as libevx; scripts/abi.sh records and compares it beside
 * libevx. Every public enum must be a parameter here (scripts/abi.sh checks
 * that the record names each enum the headers declare). Enums added in 1.x
 * go to a function of their own: a new function is an addition, where a
 * changed one would break the recorded ABI.
 */
#include "evx/evx.h"

EVX_API void evx_abi_enums(enum evx_status_code status, enum evx_capture_status capture,
                           enum evx_device_special device, enum evx_event_flags event,
                           enum evx_event_record_flags record, enum evx_stream_flags stream,
                           enum evx_event_wait_flags wait, enum evx_notifier_flags notifier);

EVX_API void evx_abi_enums(enum evx_status_code status, enum evx_capture_status capture,
                           enum evx_device_special device, enum evx_event_flags event,
                           enum evx_event_record_flags record, enum evx_stream_flags stream,
                           enum evx_event_wait_flags wait, enum evx_notifier_flags notifier)
{
    (void)status; (void)capture; (void)device; (void)event;
    (void)record; (void)stream; (void)wait; (void)notifier;
}

/* Added in 1.x: host functions that can fail, labeled timeline marks. */
EVX_API void evx_abi_enums_hostfn_trace(enum evx_host_func_flags host_func,
                                        enum evx_mark_kind mark);

EVX_API void evx_abi_enums_hostfn_trace(enum evx_host_func_flags host_func,
                                        enum evx_mark_kind mark)
{
    (void)host_func; (void)mark;
}

/* Added in 1.x: the fence flags, macros before they became an enum. */
EVX_API void evx_abi_enums_fence(enum evx_fence_flags fence);

EVX_API void evx_abi_enums_fence(enum evx_fence_flags fence)
{
    (void)fence;
}

/* Added after 1.0.0: the flags of evx_stream_wait_fence_with_flags. */
EVX_API void evx_abi_enums_fence_wait(enum evx_fence_wait_flags wait);

/* Stores its argument, so that its body differs from the others': GCC
 * folds identical functions (-fipa-icf) into one, and abidw then records
 * no parameters for the folded one. */
static volatile int abi_sink;

EVX_API void evx_abi_enums_fence_wait(enum evx_fence_wait_flags wait)
{
    abi_sink = (int)wait;
}
