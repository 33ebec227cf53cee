# Copyright 2026 The evx Authors
# SPDX-License-Identifier: Apache-2.0
#
# The part of the C API (include/evx/*.h) that the compiled core evx._core
# calls. Cython emits #include "evx/evx.h" and calls these by name, so the C
# compiler checks every call against the header's own prototype; a
# declaration here that drifts from the header fails the build (warnings are
# errors).

from libc.stdint cimport uint32_t, uint64_t

cdef extern from "evx/evx.h" nogil:
    ctypedef int evx_status_t
    ctypedef struct evx_event_:
        pass
    ctypedef struct evx_stream_:
        pass
    ctypedef evx_event_ *evx_event_t
    ctypedef evx_stream_ *evx_stream_t
    ctypedef struct evx_timer_:
        pass
    ctypedef evx_timer_ *evx_timer_t

    int EVX_VERSION_MAJOR
    int EVX_VERSION_MINOR

    evx_status_t EVX_SUCCESS
    evx_status_t EVX_ERROR_NOT_READY
    evx_status_t EVX_ERROR_INVALID_HANDLE
    evx_status_t EVX_ERROR_ILLEGAL_STATE

    unsigned EVX_EVENT_DEFAULT
    unsigned EVX_EVENT_DISABLE_TIMING
    unsigned EVX_EVENT_BLOCKING_SYNC
    unsigned EVX_EVENT_INTERPROCESS
    unsigned EVX_EVENT_RECORD_DEFAULT
    unsigned EVX_EVENT_RECORD_EXTERNAL
    unsigned EVX_EVENT_WAIT_DEFAULT
    unsigned EVX_EVENT_WAIT_EXTERNAL

    unsigned evx_version()

    evx_status_t evx_device_create_event(int device, unsigned flags, evx_event_t *event)
    evx_status_t evx_event_destroy(evx_event_t event)
    evx_status_t evx_event_record(evx_event_t event, evx_stream_t stream)
    evx_status_t evx_device_create_timer(int device, evx_timer_t *timer)
    evx_status_t evx_timer_destroy(evx_timer_t timer)
    evx_status_t evx_timer_start(evx_timer_t timer, evx_stream_t stream)
    evx_status_t evx_timer_stop(evx_timer_t timer, evx_stream_t stream)
    evx_status_t evx_timer_synchronize(evx_timer_t timer, float *ms)
    ctypedef int evx_capture_status_t
    evx_status_t evx_stream_get_capture_status(evx_stream_t stream, evx_capture_status_t *out)
    evx_status_t evx_event_record_with_flags(evx_event_t event, evx_stream_t stream,
                                             unsigned flags)
    evx_status_t evx_event_query(evx_event_t event)
    evx_status_t evx_event_synchronize(evx_event_t event)
    evx_status_t evx_event_elapsed_time(float *ms, evx_event_t start, evx_event_t end)

    evx_status_t evx_stream_wait_event(evx_stream_t stream, evx_event_t event,
                                       unsigned flags)
    evx_status_t evx_stream_synchronize(evx_stream_t stream)
    evx_status_t evx_stream_query(evx_stream_t stream)
    evx_status_t evx_stream_destroy(evx_stream_t stream)


    ctypedef struct evx_notifier_:
        pass
    ctypedef evx_notifier_ *evx_notifier_t
    evx_status_t evx_notifier_watch(evx_notifier_t notifier, evx_event_t event,
                                    uint64_t token)
    ctypedef struct evx_fence_:
        pass
    ctypedef evx_fence_ *evx_fence_t
    evx_status_t evx_notifier_watch_fence(evx_notifier_t notifier, evx_fence_t fence,
                                          uint64_t value, uint64_t token)
    evx_status_t evx_notifier_read(evx_notifier_t notifier, uint64_t *tokens,
                                   uint32_t capacity, uint32_t *count)
    evx_status_t evx_notifier_read_checked(evx_notifier_t notifier, uint64_t *tokens,
                                           uint32_t capacity, uint32_t *count)
