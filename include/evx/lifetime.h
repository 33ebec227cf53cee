/*
 * Copyright 2026 The evx Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * @file evx/lifetime.h
 * @brief Borrowed streams and events whose owner is told when evx's borrow
 * ends.
 */
#ifndef EVX_LIFETIME_H
#define EVX_LIFETIME_H

#include "evx/common.h"

EVX_BEGIN_DECLS

/** @defgroup evx_lifetime Borrowed lifetimes
 *  @brief Tie a stream's or an event's lifetime to evx's borrow of it.
 *
 * evx_stream_wrap_external() borrows a stream and leaves its owner to keep
 * it alive for as long as the evx handle is used, which, with several
 * threads, is hard to know. evx_stream_wrap_external_with_release() takes a
 * release callback instead: evx calls it exactly once, when the borrow
 * ends, so the owner may free its stream (or drop a reference to it) in the
 * callback. evx_event_wrap_external_with_release() does the same for a
 * borrowed event (evx_event_wrap_external()).
 *  @{ */

/** @brief The release callback of
 *  evx_stream_wrap_external_with_release() and
 *  evx_event_wrap_external_with_release(). */
typedef void (*evx_release_fn_t)(void *user_data);

/**
 * @brief Borrows a stream made elsewhere, as evx_stream_wrap_external(),
 * and calls @p release once the borrow has ended.
 *
 * The borrow ends at evx_stream_destroy() of the returned handle. A call
 * that other threads are making on the handle at that moment (a record, a
 * wait, a synchronize) either completes on the stream or fails with
 * ::EVX_ERROR_INVALID_HANDLE; evx_stream_destroy() waits until every call
 * that got the stream has returned, then calls @p release(@p user_data) on
 * the destroying thread, then returns. So when evx_stream_destroy()
 * returns, the callback has run, exactly once, and no evx call uses the
 * stream any more. Work queued on the stream before may still be running
 * on the device: the callback owns the stream from then on, as its maker
 * did before the wrap.
 *
 * The callback may call evx (it runs outside evx's locks), but not
 * evx_stream_destroy() of the handle it is releasing, which is already
 * dead. It is never called if this call fails, and never called for a
 * handle that is not destroyed (at process exit, for instance).
 *
 * Because evx_stream_destroy() waits for racing calls, a destroy that
 * races with an evx_stream_synchronize() of the same handle returns once
 * that synchronize has returned.
 *
 * @param device the stream's device, ::EVX_DEVICE_FROM_STREAM or ::EVX_DEVICE_CURRENT (as for
 *        evx_stream_wrap_external()).
 * @param native_stream the `CUstream` (a default stream is allowed).
 * @param release the callback; not NULL (use evx_stream_wrap_external()
 *        for a borrow without one).
 * @param user_data passed to @p release.
 * @param[out] out receives the borrowed stream.
 * @return as evx_stream_wrap_external(), and ::EVX_ERROR_INVALID_VALUE if
 *         @p release is NULL. On failure `*out` is set to NULL when @p out
 *         is not NULL, and @p release is not called.
 *
 * Thread-safe.
 */
EVX_API evx_status_t evx_stream_wrap_external_with_release(int device, void *native_stream,
                                                           evx_release_fn_t release,
                                                           void *user_data,
                                                           evx_stream_t *out);

/**
 * @brief Borrows an event made elsewhere, as evx_event_wrap_external(),
 * and calls @p release once the borrow has ended.
 *
 * The borrow ends at evx_event_destroy() of the returned handle. A call
 * that other threads are making on the handle at that moment (a record, a
 * wait, a query, a synchronize, an elapsed time, a notifier watch) either
 * completes on the event or fails with ::EVX_ERROR_INVALID_HANDLE;
 * evx_event_destroy() waits until every call that got the event has
 * returned, then calls @p release(@p user_data) on the destroying thread,
 * then returns. So when evx_event_destroy() returns, the callback has run,
 * exactly once, and no evx call uses the event any more. Work that records
 * it may still be pending on the device, and a notifier watch made before
 * waits for it on the driver's side: the callback owns the event from then
 * on, as its maker did before the wrap (the driver allows destroying an
 * event with pending work).
 *
 * The callback may call evx (it runs outside evx's locks), but not
 * evx_event_destroy() of the handle it is releasing, which is already
 * dead. It is never called if this call fails, and never called for a
 * handle that is not destroyed (at process exit, for instance). An event
 * pool never takes a borrowed event, so evx_event_pool_release() does not
 * end the borrow.
 *
 * Because evx_event_destroy() waits for racing calls, a destroy that
 * races with an evx_event_synchronize() of the same handle returns once
 * that synchronize has returned.
 *
 * @param device the event's device: a device ordinal or
 *        ::EVX_DEVICE_CURRENT (as for evx_event_wrap_external()).
 * @param native_event the `CUevent`; not NULL.
 * @param release the callback; not NULL (use evx_event_wrap_external()
 *        for a borrow without one).
 * @param user_data passed to @p release.
 * @param[out] out receives the borrowed event.
 * @return as evx_event_wrap_external(), and ::EVX_ERROR_INVALID_VALUE if
 *         @p release is NULL. On failure `*out` is set to NULL when @p out
 *         is not NULL, and @p release is not called.
 *
 * Thread-safe.
 */
EVX_API evx_status_t evx_event_wrap_external_with_release(int device, void *native_event,
                                                          evx_release_fn_t release,
                                                          void *user_data,
                                                          evx_event_t *out);

/** @} */

EVX_END_DECLS

#endif /* EVX_LIFETIME_H */
