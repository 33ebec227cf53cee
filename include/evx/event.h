/*
 * Copyright 2026 The evx Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * @file evx/event.h
 * @brief Events created from a device, recorded later on any of its streams.
 */
#ifndef EVX_EVENT_H
#define EVX_EVENT_H

#include "evx/common.h"

EVX_BEGIN_DECLS

/** @defgroup evx_event Events
 *  @brief Create an event from a device; record, wait for and time it later.
 *
 * An event belongs to a device, not to a stream: it is made before the work
 * it marks and may be recorded on any stream of its device, again and again;
 * each record replaces the last. Events are cheap: evx keeps the driver
 * events of destroyed events and reuses them for new ones of the same
 * device and flags, so that create and destroy rarely reach the driver,
 * also when the work of the destroyed event is still pending (a record
 * overwrites what the driver event held). A reused event behaves exactly
 * as a new one: until it is recorded it is complete and has no time, and
 * evx_event_get_native() and evx_stream_wait_event() give the driver a new
 * driver event instead of one with a former life.
 *
 * Every call checks its handles: a zero, forged, stale, destroyed or
 * wrong-kind handle gets ::EVX_ERROR_INVALID_HANDLE and a message, and a
 * handle value is not handed out again soon after it is destroyed.
 *
 * An event handle either owns its driver event (evx_device_create_event(),
 * an event pool, evx_device_open_ipc_event(): evx_event_destroy() gives the
 * driver event back to evx) or borrows it (evx_event_wrap_external():
 * evx_event_destroy() ends the handle and never touches the driver event,
 * which its maker must keep alive while the handle is used).
 * evx_event_is_owned() tells which.
 *
 * All calls are thread-safe. Record, query, synchronize, elapsed time and
 * stream waits take no global lock. Destroying an event while another
 * thread uses it is safe: the other call either completes on the event or
 * gets ::EVX_ERROR_INVALID_HANDLE.
 *  @{ */

/** @brief Flags of evx_device_create_event(): the `CU_EVENT_*` values. */
enum evx_event_flags {
    /** Default: timing on, spin-wait synchronization. */
    EVX_EVENT_DEFAULT = 0x0,
    /** evx_event_synchronize() blocks the thread instead of spinning. */
    EVX_EVENT_BLOCKING_SYNC = 0x1,
    /** No timing data: cheaper to record and wait for; elapsed time is
     *  refused. */
    EVX_EVENT_DISABLE_TIMING = 0x2,
    /** Usable across processes; needs ::EVX_EVENT_DISABLE_TIMING too. */
    EVX_EVENT_INTERPROCESS = 0x4,
    /** Not a flag: forces the enum to 32 bits. */
    EVX_EVENT_FLAGS_FORCE_32BIT = 0x7FFFFFFF
};

/** @brief Flags of evx_event_record_with_flags(): the
 *  `CU_EVENT_RECORD_*` values. */
enum evx_event_record_flags {
    /** Default record. */
    EVX_EVENT_RECORD_DEFAULT = 0x0,
    /** Inside stream capture, record an external event node; outside
     *  capture the driver refuses it with ::EVX_ERROR_ILLEGAL_STATE. */
    EVX_EVENT_RECORD_EXTERNAL = 0x1,
    /** Not a flag: forces the enum to 32 bits. */
    EVX_EVENT_RECORD_FLAGS_FORCE_32BIT = 0x7FFFFFFF
};

/**
 * @brief Creates an event on a device, not yet recorded on any stream.
 *
 * A never-recorded event counts as complete: evx_event_query() and
 * evx_event_synchronize() return ::EVX_SUCCESS and a stream that waits for
 * it waits for nothing; evx_event_elapsed_time() refuses it.
 *
 * @param device a device ordinal, 0 to evx_device_count() - 1.
 * @param flags a combination of ::evx_event_flags.
 * @param[out] event receives the new event.
 * @return ::EVX_SUCCESS;
 *         ::EVX_ERROR_INVALID_VALUE if @p event is NULL, @p flags has an
 *         unknown bit, or ::EVX_EVENT_INTERPROCESS is given without
 *         ::EVX_EVENT_DISABLE_TIMING;
 *         ::EVX_ERROR_INVALID_DEVICE if @p device is out of range;
 *         ::EVX_ERROR_OUT_OF_MEMORY; a driver-loading status; a status
 *         from the driver's `cuEventCreate`.
 *         On failure `*event` is set to NULL when @p event is not NULL.
 *
 * Thread-safe.
 */
EVX_API evx_status_t evx_device_create_event(int device, unsigned flags,
                                             evx_event_t *event);

/**
 * @brief Borrows an event made elsewhere: PyTorch, CuPy, cuda.core,
 * `cudaEventCreateWithFlags`, `cuEventCreate`.
 *
 * evx never destroys a borrowed event, never keeps its driver event for
 * reuse and never puts it in a pool. The caller keeps it alive for as long
 * as the evx handle is used (or see evx_event_wrap_external_with_release()).
 * evx cannot check a foreign pointer: a @p native_event that is not a live
 * `CUevent` (or `cudaEvent_t`) is undefined behaviour, as in CUDA.
 *
 * The driver has no call that tells the context or the flags of a
 * `CUevent`, so the borrow carries its context, and evx learns the flags
 * from the driver's answers. A borrowed event is recorded on streams of
 * its context only: another context's stream is refused before the driver
 * (evx moves its own events between contexts, docs/engines.md, but never a
 * borrowed one). Its query, synchronize and elapsed time always ask the
 * driver (evx cannot know whether its maker recorded it); when the driver
 * refuses an elapsed time, the message says that a borrowed event may have
 * been made with `CU_EVENT_DISABLE_TIMING` or not recorded. Everything else
 * works as with an event of evx's own: records with flags and under stream
 * capture, stream waits, elapsed time against events of the same context,
 * notifier watches (evx/notify.h). evx_event_get_flags() refuses a borrowed
 * event (evx cannot know them), evx_event_get_ipc_handle() too (export it
 * where it was made), and an event pool never takes one.
 *
 * @param device the event's device: a device ordinal, whose primary
 *        context is then the event's context, or ::EVX_DEVICE_CURRENT: the
 *        context current on the calling thread is the event's context,
 *        a primary one or not (cuCtxCreate's).
 * @param native_event the `CUevent`; not NULL.
 * @param[out] event receives the borrowed event.
 * @return ::EVX_SUCCESS;
 *         ::EVX_ERROR_INVALID_VALUE if @p event or @p native_event is NULL,
 *         or if ::EVX_DEVICE_CURRENT is given and no context is current;
 *         ::EVX_ERROR_INVALID_DEVICE if @p device is out of range (or is
 *         ::EVX_DEVICE_FROM_STREAM: the driver cannot read an event's
 *         device);
 *         ::EVX_ERROR_OUT_OF_MEMORY; a driver-loading status; a status
 *         from the driver.
 *         On failure `*event` is set to NULL when @p event is not NULL.
 *
 * Thread-safe.
 */
EVX_API evx_status_t evx_event_wrap_external(int device, void *native_event,
                                             evx_event_t *event);

/**
 * @brief Whether evx owns the event's driver event (evx_device_create_event(),
 * a pool, evx_device_open_ipc_event()) or borrows it
 * (evx_event_wrap_external(), evx_event_wrap_external_with_release()).
 * @param event the event.
 * @param[out] owned receives 1 when evx owns it, 0 when borrowed.
 * @return ::EVX_SUCCESS; ::EVX_ERROR_INVALID_VALUE if @p owned is NULL;
 *         ::EVX_ERROR_INVALID_HANDLE.
 * Thread-safe.
 */
EVX_API evx_status_t evx_event_is_owned(evx_event_t event, int *owned);

/**
 * @brief Destroys an event. Its handle is dead from now on.
 *
 * Work it was recorded on may still be pending: the call does not wait, and
 * the driver event is reused or freed only once that work is done. An
 * event acquired from a pool goes back to its pool.
 *
 * Once every call on the event (of this thread or others) has returned, the
 * event is reclaimed, with no later call of any thread and no thread's
 * exit: an event from a pool is back in its pool (idle or pending, not in
 * use), the driver event of an interprocess event or of one recorded in
 * another context is destroyed, and that of any other event is among
 * those evx keeps for reuse, where evx_device_trim() on any thread
 * destroys it. (Its reuse by this thread's creates may wait for more
 * destroys on this thread: such destroys are collected in batches, to look
 * at other threads' calls once per batch.)
 *
 * A borrowed event's driver event (evx_event_wrap_external()) is never
 * destroyed, kept or pooled: the destroy only ends evx's borrow (and, for
 * evx_event_wrap_external_with_release(), waits for racing calls, then
 * calls the release callback).
 *
 * @param event the event.
 * @return ::EVX_SUCCESS; ::EVX_ERROR_INVALID_HANDLE if @p event is not a
 *         live event (a second destroy of the same handle included).
 *
 * Thread-safe, also while other threads use the event.
 */
EVX_API evx_status_t evx_event_destroy(evx_event_t event);

/**
 * @brief Records the event on a stream: it completes when all work queued on
 * the stream before it has completed.
 *
 * Usually returns at once, but the driver can make it wait for GPU work:
 * when the stream's queue is full, and, for an ::EVX_EVENT_BLOCKING_SYNC
 * event, once the context has a fixed number of items pending that will
 * notify the host (such records, and host functions queued behind waits on
 * running work; docs/async.md gives the figure). So
 * the Python binding releases the GIL around it.
 *
 * @param event the event.
 * @param stream a stream of the event's device.
 * @return ::EVX_SUCCESS; ::EVX_ERROR_INVALID_HANDLE if either handle is not
 *         live, or the stream belongs to another device than the event
 *         (refused before the driver; the message names both devices);
 *         a status from the driver's `cuEventRecord`.
 *
 * Thread-safe; takes no global lock.
 */
EVX_API evx_status_t evx_event_record(evx_event_t event, evx_stream_t stream);

/**
 * @brief Records the event on a stream with ::evx_event_record_flags.
 *
 * @param event the event.
 * @param stream a stream of the event's device.
 * @param flags ::EVX_EVENT_RECORD_DEFAULT or ::EVX_EVENT_RECORD_EXTERNAL.
 * @return as evx_event_record(), and ::EVX_ERROR_INVALID_VALUE for an
 *         unknown flag bit; ::EVX_ERROR_ILLEGAL_STATE for
 *         ::EVX_EVENT_RECORD_EXTERNAL outside stream capture.
 *
 * Thread-safe; takes no global lock.
 */
EVX_API evx_status_t evx_event_record_with_flags(evx_event_t event,
                                                 evx_stream_t stream,
                                                 unsigned flags);

/**
 * @brief Whether the work the event marks has completed. Never blocks.
 *
 * @param event the event.
 * @return ::EVX_SUCCESS when complete or never recorded;
 *         ::EVX_ERROR_NOT_READY while pending (an answer, not a failure:
 *         the thread's last error is left alone);
 *         ::EVX_ERROR_INVALID_HANDLE; a status from the driver.
 *
 * Thread-safe; takes no global lock.
 */
EVX_API evx_status_t evx_event_query(evx_event_t event);

/**
 * @brief Waits until the work the event marks has completed.
 *
 * @param event the event.
 * @return ::EVX_SUCCESS (also for a never-recorded event);
 *         ::EVX_ERROR_INVALID_HANDLE; a status from the driver.
 *
 * Thread-safe; takes no global lock.
 */
EVX_API evx_status_t evx_event_synchronize(evx_event_t event);

/**
 * @brief The time between two recorded, completed events, in milliseconds.
 *
 * The end may have been recorded before the start: the result is then
 * negative. The same event twice gives 0. The resolution is the driver's
 * (docs/performance.md gives the smallest interval measured).
 *
 * The out-pointer comes first, against evx's rule of trailing outputs:
 * the order is that of `cuEventElapsedTime(float *pMilliseconds, CUevent
 * hStart, CUevent hEnd)` and `cudaEventElapsedTime(float *ms, start,
 * end)`, so code moved between the driver, the runtime and evx keeps its
 * arguments where they were, and the start and end cannot be swapped by a
 * reader who knows either API.
 *
 * @param[out] ms receives the milliseconds from @p start to @p end.
 * @param start the start event.
 * @param end the end event.
 * @return ::EVX_SUCCESS;
 *         ::EVX_ERROR_INVALID_VALUE if @p ms is NULL;
 *         ::EVX_ERROR_INVALID_HANDLE if either handle is not live, either
 *         event was never recorded, either was created with
 *         ::EVX_EVENT_DISABLE_TIMING, or the two belong to different
 *         devices (the message says which);
 *         ::EVX_ERROR_NOT_READY if either event's work is pending;
 *         for a borrowed event (evx_event_wrap_external()), which evx
 *         cannot know to be recorded or timed, the driver's status (such
 *         as ::EVX_ERROR_INVALID_HANDLE), the message saying so.
 *
 * Thread-safe; takes no global lock.
 */
EVX_API evx_status_t evx_event_elapsed_time(float *ms, evx_event_t start,
                                            evx_event_t end);

/**
 * @brief The flags the event was created with (::evx_event_flags).
 * @param event the event.
 * @param[out] flags receives the flags.
 * @return ::EVX_SUCCESS; ::EVX_ERROR_INVALID_VALUE if @p flags is NULL;
 *         ::EVX_ERROR_INVALID_HANDLE; ::EVX_ERROR_NOT_SUPPORTED for a
 *         borrowed event (evx_event_wrap_external()): the driver has no
 *         call that tells a `CUevent`'s flags.
 * Thread-safe.
 */
EVX_API evx_status_t evx_event_get_flags(evx_event_t event, unsigned *flags);

/**
 * @brief The device the event was created on.
 * @param event the event.
 * @param[out] device receives the device ordinal.
 * @return ::EVX_SUCCESS; ::EVX_ERROR_INVALID_VALUE if @p device is NULL;
 *         ::EVX_ERROR_INVALID_HANDLE.
 * Thread-safe.
 */
EVX_API evx_status_t evx_event_get_device(evx_event_t event, int *device);

/**
 * @brief The driver's `CUevent` behind the event, for use with other CUDA
 * code.
 *
 * The `CUevent` stays owned by evx: it is valid while the evx event is
 * live, must not be destroyed by the caller, and after evx_event_destroy()
 * may be reused for another evx event. For a borrowed event
 * (evx_event_wrap_external()) it is the `CUevent` borrowed, its maker's.
 *
 * Other code sees the event's own state: if evx reused the driver event
 * (see evx_device_create_event()) and the event has not been recorded
 * since, a new driver event replaces it before it is returned, so that no
 * record of its former life (pending work, a timestamp) shows through. The
 * `CUevent` returned does not change after that.
 *
 * @param event the event.
 * @param[out] cu_event receives the `CUevent`.
 * @return ::EVX_SUCCESS; ::EVX_ERROR_INVALID_VALUE if @p cu_event is NULL;
 *         ::EVX_ERROR_INVALID_HANDLE; a status from `cuEventCreate` or
 *         `cuEventDestroy` when the driver event is replaced.
 * Thread-safe.
 */
EVX_API evx_status_t evx_event_get_native(evx_event_t event, void **cu_event);

/** @} */

EVX_END_DECLS

#endif /* EVX_EVENT_H */
