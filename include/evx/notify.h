/*
 * Copyright 2026 The evx Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * @file evx/notify.h
 * @brief Completion notifiers: learn that events completed from a pollable
 * file descriptor or a callback, with no thread blocked and none polling.
 */
#ifndef EVX_NOTIFY_H
#define EVX_NOTIFY_H

#include "evx/common.h"

EVX_BEGIN_DECLS

/** @defgroup evx_notify Completion notifiers
 *  @brief Await events from an event loop: a file descriptor that becomes
 *  readable when watched events complete, or a callback per event.
 *
 * A notifier serves events of every device. evx_notifier_watch() watches an
 * event under a 64-bit token of the caller's choosing; when the event
 * completes, the token is queued in the notifier and its file descriptor
 * (an `eventfd` on Linux) becomes readable; evx_notifier_read() takes the
 * queued tokens in batches. evx_notifier_watch_callback() runs a function
 * instead.
 *
 * **What a watch waits for.** A watch captures the event's state when it is
 * made, as `cuStreamWaitEvent` does: it completes when the work the event's
 * last record marked at that moment has completed. Recording the event
 * again later does not change it; destroying the event after watching it is
 * allowed. A never-recorded event completes at once.
 *
 * **How.** Each watch is a `cuStreamWaitEvent` on an internal stream of the
 * event's device, followed by a host function (`cuLaunchHostFunc`) that
 * delivers it: no thread polls and no thread blocks per watch; the driver
 * thread that runs host functions delivers. A watch whose event evx or the
 * driver already knows to be complete (never recorded, or `cuEventQuery`
 * says complete) is delivered by the watch call itself (tokens) or by a host
 * function with nothing to wait for (callbacks).
 *
 * **A watch call never waits for GPU work.** The driver makes
 * `cuLaunchHostFunc` wait for GPU work once a context has a fixed number of
 * items pending that will notify the host (host functions queued behind
 * cross-stream waits on running work, and records of blocking_sync events
 * alike; docs/async.md gives the figure), a budget of each context that the
 * whole process shares. So a watch call
 * makes its `cuStreamWaitEvent` (capturing the event's state then; waits
 * are never held back) and queues the watch; one pump thread per notifier,
 * made at the first watch that needs a host function, launches one host
 * function per internal stream for the watches queued there, with at most
 * as many of a device's in flight as `max_streams_per_device`, from 8 to 32
 * (8 by default: while host functions are in flight the driver slows the
 * program's own launches and records). Watches whose internal stream is
 * idle by then (their waits done: short work) it delivers itself, with no
 * host function (callbacks only while none of the device's is in flight).
 * If the process has used up the driver's budget, the pump waits, and
 * delivery with it, but no watch call does. Watches are delivered in order
 * and exactly once.
 *
 * **Internal streams and head-of-line blocking.** Host functions of one
 * stream run in order, so a watch on a late event would hold back every
 * later watch on its stream. A notifier therefore keeps a pool of internal
 * streams per device: a watch goes to a stream with no pending watch when
 * there is one; otherwise a new stream is made, up to
 * `max_streams_per_device` (::EVX_NOTIFIER_DEFAULT_STREAMS unless set);
 * at that cap a watch goes to the stream with the fewest pending watches,
 * and is then delivered only after the watches queued before it on that
 * stream (never before its own event completes). Streams are made on first
 * need and kept until the notifier is destroyed.
 *
 * **Host functions of one context run one at a time** (on the real driver
 * and in the emulation): while any host function of a device blocks (for
 * example one queued with evx_stream_launch_host_func() that waits for
 * something), no watch of that device is delivered.
 *
 * **Destroying a notifier** with watches pending is allowed and loses no
 * callback: evx_notifier_destroy() waits until every pending watch has been
 * delivered, so every callback has run exactly once before it returns.
 * Tokens queued and not read by then are discarded with the notifier: read
 * them first (evx_notifier_get_counts() says how many are pending and
 * queued).
 *
 * All calls are thread-safe. Handles are checked as for events: a zero,
 * forged, stale or destroyed notifier gets ::EVX_ERROR_INVALID_HANDLE and a
 * message.
 *  @{ */

/** @brief A completion notifier: made by evx_notifier_create(), ended by
 *  evx_notifier_destroy(). */
typedef struct evx_notifier_ *evx_notifier_t;

/** @brief Flags of ::evx_notifier_options_t. */
enum evx_notifier_flags {
    /** Default: the only value this version accepts. */
    EVX_NOTIFIER_DEFAULT = 0x0,
    /** Not a flag: forces the enum to 32 bits. */
    EVX_NOTIFIER_FLAGS_FORCE_32BIT = 0x7FFFFFFF
};

/** @brief Internal streams per device when `max_streams_per_device` is 0. */
#define EVX_NOTIFIER_DEFAULT_STREAMS 8
/** @brief The largest `max_streams_per_device` accepted. */
#define EVX_NOTIFIER_MAX_STREAMS 64

/** @brief Options of evx_notifier_create(). Zero-initialize, then set
 *  `struct_size` to `sizeof(evx_notifier_options_t)`; the smallest size
 *  accepted is that of the fields below, as first published (12 bytes). */
typedef struct evx_notifier_options {
    /** `sizeof(evx_notifier_options_t)` as the caller compiled it. */
    uint32_t struct_size;
    /** ::evx_notifier_flags; ::EVX_NOTIFIER_DEFAULT. */
    uint32_t flags;
    /** Most internal streams per device, 1 to ::EVX_NOTIFIER_MAX_STREAMS;
     *  0 for ::EVX_NOTIFIER_DEFAULT_STREAMS. */
    uint32_t max_streams_per_device;
} evx_notifier_options_t;

/** @brief A function run when a watched event completes (see
 *  evx_notifier_watch_callback()). */
typedef void (*evx_notify_fn_t)(void *user_data);

/**
 * @brief Creates a notifier and its file descriptor.
 *
 * @param options NULL for the defaults, or the options.
 * @param[out] notifier receives the notifier.
 * @return ::EVX_SUCCESS;
 *         ::EVX_ERROR_INVALID_VALUE if @p notifier is NULL, `struct_size` is
 *         too small, `flags` has an unknown bit, or
 *         `max_streams_per_device` exceeds ::EVX_NOTIFIER_MAX_STREAMS;
 *         ::EVX_ERROR_OUT_OF_MEMORY (also when no `eventfd` can be made: the
 *         message gives the system's reason); a driver-loading status.
 *         On failure `*notifier` is set to NULL when @p notifier is not
 *         NULL.
 *
 * Thread-safe.
 */
EVX_API evx_status_t evx_notifier_create(const evx_notifier_options_t *options,
                                         evx_notifier_t *notifier);

/**
 * @brief Destroys a notifier, once every pending watch is delivered.
 *
 * The handle is dead at once: calls that start after this one get
 * ::EVX_ERROR_INVALID_HANDLE. The call then waits until every pending
 * watch has been delivered (each callback has run and returned); tokens not
 * read by then are discarded. Finally it destroys the internal streams and
 * closes the file descriptor: at once, or, when another thread is inside a
 * call on this notifier at that moment, as the last such call returns (as
 * for other handles, see docs/design.md). Remove the descriptor from any
 * poll set or event loop before calling.
 *
 * Waits as long as the watched work takes. Must not be called from a
 * notifier callback (it would wait for itself): that is refused with
 * ::EVX_ERROR_NOT_PERMITTED, the notifier left alive.
 *
 * @param notifier the notifier.
 * @return ::EVX_SUCCESS; ::EVX_ERROR_INVALID_HANDLE (a second destroy
 *         included); ::EVX_ERROR_NOT_PERMITTED from a notifier callback.
 *
 * Thread-safe, also while other threads use the notifier.
 */
EVX_API evx_status_t evx_notifier_destroy(evx_notifier_t notifier);

/**
 * @brief The notifier's file descriptor: readable while tokens are queued.
 *
 * It is an `eventfd`, non-blocking and close-on-exec, owned by the
 * notifier: do not read, write or close it; poll it (`poll`, `epoll`, an
 * event loop) and call evx_notifier_read() when it is readable. It stays
 * readable until evx_notifier_read() has taken every queued token.
 *
 * @param notifier the notifier.
 * @param[out] fd receives the file descriptor.
 * @return ::EVX_SUCCESS; ::EVX_ERROR_INVALID_VALUE if @p fd is NULL;
 *         ::EVX_ERROR_INVALID_HANDLE.
 *
 * Thread-safe.
 */
EVX_API evx_status_t evx_notifier_get_fd(evx_notifier_t notifier, int *fd);

/**
 * @brief Watches an event: when the work its last record marks now has
 * completed, @p token is queued and the file descriptor becomes readable.
 *
 * Each watch delivers its token exactly once; the same token may be used
 * by several watches. The event may be re-recorded or destroyed afterwards
 * without changing the watch. A never-recorded event, or one already
 * complete, has its token queued before the call returns.
 *
 * @param notifier the notifier.
 * @param event the event (of any device).
 * @param token any value; handed back by evx_notifier_read().
 * @return ::EVX_SUCCESS; ::EVX_ERROR_INVALID_HANDLE if either handle is not
 *         live; ::EVX_ERROR_OUT_OF_MEMORY; a status from the driver
 *         (`cuEventQuery`, `cuStreamCreateWithPriority`,
 *         `cuStreamWaitEvent`, `cuLaunchHostFunc`). On failure nothing is
 *         watched.
 *
 * Thread-safe; never blocks on GPU work.
 */
EVX_API evx_status_t evx_notifier_watch(evx_notifier_t notifier,
                                        evx_event_t event, uint64_t token);

/**
 * @brief Watches an event and runs a function when it completes.
 *
 * What is waited for is as for evx_notifier_watch(). @p fn runs exactly
 * once, never inside this call (also when the event is already complete):
 * in a host function on the driver's thread, or on the notifier's pump
 * thread when the watch's work had completed before the pump came to it.
 * Either way it must be short, and must not call evx or CUDA, as for
 * evx_stream_launch_host_func(). The callbacks of one device (and
 * notifier) run one at a time.
 *
 * @param notifier the notifier.
 * @param event the event (of any device).
 * @param fn the function; not NULL.
 * @param user_data passed to @p fn.
 * @return as evx_notifier_watch(), and ::EVX_ERROR_INVALID_VALUE if @p fn
 *         is NULL. On failure @p fn never runs.
 *
 * Thread-safe; never blocks on GPU work.
 */
EVX_API evx_status_t evx_notifier_watch_callback(evx_notifier_t notifier,
                                                 evx_event_t event,
                                                 evx_notify_fn_t fn,
                                                 void *user_data);

/** @brief A function run when a watched event completes, given whether a
 *  host function failed before it (see
 *  evx_notifier_watch_callback_status()). */
typedef void (*evx_notify_status_fn_t)(evx_status_t status, void *user_data);

/**
 * @brief Watches an event and runs a function when it completes, with the
 * status of a host function that failed before it.
 *
 * As evx_notifier_watch_callback(), and the watch covers what
 * evx_event_synchronize() of the event would have covered when the watch
 * was made: the host functions launched with
 * evx_stream_launch_host_func_status() on the stream handle of the event's
 * last record, before that record (docs/host-functions.md). @p fn gets
 * ::EVX_SUCCESS, or the status of the earliest such function whose failure
 * no call has reported yet (::EVX_ERROR_UNKNOWN for a value that is no
 * status code), which is then reported (once, as by any waiting call).
 * While @p fn runs, and only then, evx_last_error_message() gives that
 * failure's message (naming this call, the function and its stream) and
 * evx_last_error_host_func() the function's `user_data`: those two are the
 * evx calls a notifier callback may make. Fence watches cover no host
 * function.
 *
 * @param notifier the notifier.
 * @param event the event (of any device).
 * @param fn the function; not NULL.
 * @param user_data passed to @p fn.
 * @return as evx_notifier_watch_callback().
 *
 * Thread-safe; never blocks on GPU work.
 */
EVX_API evx_status_t evx_notifier_watch_callback_status(evx_notifier_t notifier,
                                                        evx_event_t event,
                                                        evx_notify_status_fn_t fn,
                                                        void *user_data);

/**
 * @brief Takes queued tokens, oldest first. Never blocks.
 *
 * When the call takes the last queued token the file descriptor stops being
 * readable (until another watch is delivered). Read until @p count comes
 * back less than @p capacity to empty the queue.
 *
 * @param notifier the notifier.
 * @param[out] tokens receives up to @p capacity tokens.
 * @param capacity room in @p tokens; 1 or more.
 * @param[out] count receives how many were written (0 when none is
 *        queued).
 * @return ::EVX_SUCCESS; ::EVX_ERROR_INVALID_VALUE if @p tokens or
 *         @p count is NULL or @p capacity is 0; ::EVX_ERROR_INVALID_HANDLE.
 *
 * Thread-safe: concurrent readers each get distinct tokens.
 */
EVX_API evx_status_t evx_notifier_read(evx_notifier_t notifier,
                                       uint64_t *tokens, uint32_t capacity,
                                       uint32_t *count);

/**
 * @brief Takes queued tokens as evx_notifier_read() does, and reports a
 * failed host function that a token's watch covers.
 *
 * A token watch of an event (evx_notifier_watch()) covers what
 * evx_event_synchronize() of that event would have covered when the watch
 * was made: the host functions launched with
 * evx_stream_launch_host_func_status() on the stream handle of the event's
 * last record, before that record (docs/host-functions.md). This call takes
 * tokens oldest first and stops after the first token whose watch covers a
 * failure that no call has reported yet: that token is the last one written
 * (`tokens[*count - 1]`), and the call returns the function's status, with
 * a message naming this call, the function and its stream;
 * evx_last_error_host_func() then gives the function's `user_data`. The
 * failure is reported once: to this call, or to whichever waiting call
 * (a stream or event synchronize, ...) came first. Tokens of fence watches
 * cover no host function. evx_notifier_read() takes tokens without looking
 * for failures, which stay for the next waiting call.
 *
 * @param notifier the notifier.
 * @param[out] tokens receives up to @p capacity tokens.
 * @param capacity room in @p tokens; 1 or more.
 * @param[out] count receives how many were written, also when the call
 *        reports a failure (0 when none is queued).
 * @return ::EVX_SUCCESS; the status the failed host function returned
 *         (::EVX_ERROR_UNKNOWN for a value that is no status code);
 *         ::EVX_ERROR_INVALID_VALUE if @p tokens or @p count is NULL or
 *         @p capacity is 0; ::EVX_ERROR_INVALID_HANDLE.
 *
 * Thread-safe: concurrent readers each get distinct tokens.
 */
EVX_API evx_status_t evx_notifier_read_checked(evx_notifier_t notifier,
                                               uint64_t *tokens,
                                               uint32_t capacity,
                                               uint32_t *count);

/**
 * @brief How many watches are pending and how many tokens are queued.
 *
 * @param notifier the notifier.
 * @param[out] pending receives the watches not yet delivered (tokens and
 *        callbacks); may be NULL.
 * @param[out] queued receives the tokens delivered and not yet read; may
 *        be NULL.
 * @return ::EVX_SUCCESS; ::EVX_ERROR_INVALID_VALUE if both are NULL;
 *         ::EVX_ERROR_INVALID_HANDLE.
 *
 * Thread-safe; the counts may change as soon as the call returns.
 */
EVX_API evx_status_t evx_notifier_get_counts(evx_notifier_t notifier,
                                             uint64_t *pending,
                                             uint64_t *queued);

/** @} */

EVX_END_DECLS

#endif /* EVX_NOTIFY_H */
