/*
 * Copyright 2026 The evx Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * @file evx/stream.h
 * @brief Streams of evx's own, and streams borrowed from anywhere.
 */
#ifndef EVX_STREAM_H
#define EVX_STREAM_H

#include "evx/common.h"

EVX_BEGIN_DECLS

/** @defgroup evx_stream Streams
 *  @brief Make a stream, or borrow one made by PyTorch, CuPy, CV-CUDA or
 *  the CUDA runtime; wait across streams; run host functions in order.
 *
 * A stream handle either owns its driver stream (evx_device_create_stream():
 * evx_stream_destroy() destroys the driver stream) or borrows it
 * (evx_stream_wrap_external(): evx_stream_destroy() ends the handle and
 * never touches the driver stream, which its maker must keep alive while
 * the handle is used). evx_stream_is_owned() tells which.
 *
 * All calls are thread-safe; wait, query and synchronize take no global
 * lock. Handles are checked as for events (see @ref evx_event).
 *  @{ */

/** @brief Flags of evx_device_create_stream(): the `CU_STREAM_*` values. */
enum evx_stream_flags {
    /** Synchronizes with the legacy default stream. */
    EVX_STREAM_DEFAULT = 0x0,
    /** Does not synchronize with the legacy default stream. */
    EVX_STREAM_NON_BLOCKING = 0x1,
    /** Not a flag: forces the enum to 32 bits. */
    EVX_STREAM_FLAGS_FORCE_32BIT = 0x7FFFFFFF
};

/** @brief Flags of evx_stream_wait_event(): the `CU_EVENT_WAIT_*` values. */
enum evx_event_wait_flags {
    /** Default wait. */
    EVX_EVENT_WAIT_DEFAULT = 0x0,
    /** Inside stream capture, wait on an external event node. */
    EVX_EVENT_WAIT_EXTERNAL = 0x1,
    /** Not a flag: forces the enum to 32 bits. */
    EVX_EVENT_WAIT_FLAGS_FORCE_32BIT = 0x7FFFFFFF
};

/** @brief The legacy default stream, as `CU_STREAM_LEGACY`, for
 *  evx_stream_wrap_external(). */
#define EVX_STREAM_LEGACY ((void *)1)
/** @brief The calling thread's default stream, as `CU_STREAM_PER_THREAD`,
 *  for evx_stream_wrap_external(). */
#define EVX_STREAM_PER_THREAD ((void *)2)

/** @brief A host function for evx_stream_launch_host_func(). */
typedef void (*evx_host_fn_t)(void *user_data);

/** @brief A host function that can fail, for
 *  evx_stream_launch_host_func_status(): it returns ::EVX_SUCCESS, or the
 *  status (any other ::evx_status_code) that the waiting call which reports
 *  its failure returns; a value that is not a status code is reported as
 *  ::EVX_ERROR_UNKNOWN, the message giving the value. */
typedef evx_status_t (*evx_host_fn_status_t)(void *user_data);

/** @brief Flags of ::evx_host_func_options_t. */
enum evx_host_func_flags {
    /** The driver's default: its host-function thread blocks until the
     *  function is due (`CU_HOST_TASK_BLOCKING`). */
    EVX_HOST_FUNC_DEFAULT = 0x0,
    /** The driver's host-function thread spin-waits until the function is
     *  due (`CU_HOST_TASK_SPINWAIT` of `cuLaunchHostFunc_v2`): less latency,
     *  one busy core. A driver without `cuLaunchHostFunc_v2` (before CUDA
     *  13.2; evx_driver_has_host_func_sync_mode() tells) runs the function
     *  as ::EVX_HOST_FUNC_DEFAULT. */
    EVX_HOST_FUNC_SPINWAIT = 0x1,
    /** Not a flag: forces the enum to 32 bits. */
    EVX_HOST_FUNC_FLAGS_FORCE_32BIT = 0x7FFFFFFF
};

/** @brief The size of a host function's name with its terminating NUL, in
 *  bytes: a name (::evx_host_func_options_t `name`) is at most
 *  `EVX_HOST_FUNC_NAME_SIZE - 1` bytes long. */
#define EVX_HOST_FUNC_NAME_SIZE 128

/** @brief Options of evx_stream_launch_host_func_status(). Initialize with
 *  ::EVX_HOST_FUNC_OPTIONS_INIT (or zero it and set `struct_size` to
 *  `sizeof(evx_host_func_options_t)`), then set the fields.
 *
 *  Later versions may add fields at the end. evx accepts any `struct_size`
 *  from the size first published (16 bytes: the fields up to `name`) up,
 *  reads only the fields it covers and gives the others their defaults
 *  (zero). */
typedef struct evx_host_func_options {
    /** `sizeof(evx_host_func_options_t)` as the caller compiled it. */
    uint32_t struct_size;
    /** ::evx_host_func_flags. */
    uint32_t flags;
    /** The function's name in the message of a failure: shorter than
     *  ::EVX_HOST_FUNC_NAME_SIZE bytes, copied at launch. NULL: the symbol name the dynamic linker gives for
     *  the function's address, else the address. */
    const char *name;
    /** Called once with the function's `user_data` when evx no longer
     *  needs it: after the function ran (outside a capture), or, for a
     *  function captured into a graph, once that graph and every executable
     *  instantiated from it are destroyed and their launches have run. It
     *  runs on a driver thread or inside the driver call that dropped the
     *  last reference (cuGraphDestroy, cuGraphExecDestroy,
     *  cuStreamEndCapture), and must not call evx or CUDA. Not called when
     *  the launch fails: the caller keeps @p user_data then. NULL: nothing is
     *  called. The first published size, 16 bytes, ends before this field. */
    evx_host_fn_t release;
} evx_host_func_options_t;

/** @brief An initializer of ::evx_host_func_options_t: `struct_size` set to
 *  this header's size, every other field zero. A constant expression, valid
 *  in C89 and C++:
 *  `evx_host_func_options_t o = EVX_HOST_FUNC_OPTIONS_INIT;` */
#define EVX_HOST_FUNC_OPTIONS_INIT \
    { (uint32_t)sizeof(evx_host_func_options_t), 0u, 0, 0 }

/**
 * @brief Creates a stream of evx's own on a device.
 *
 * @param device a device ordinal.
 * @param flags ::EVX_STREAM_DEFAULT or ::EVX_STREAM_NON_BLOCKING.
 * @param priority a priority within evx_device_stream_priority_range();
 *        lower numbers are higher priority; 0 is the default.
 * @param[out] stream receives the new stream, which evx owns.
 * @return ::EVX_SUCCESS;
 *         ::EVX_ERROR_INVALID_VALUE if @p stream is NULL, @p flags has an
 *         unknown bit, or @p priority is outside the device's range (never
 *         clamped: the message gives the range);
 *         ::EVX_ERROR_INVALID_DEVICE; ::EVX_ERROR_OUT_OF_MEMORY; a
 *         driver-loading status; a status from `cuStreamCreateWithPriority`.
 *         On failure `*stream` is set to NULL when @p stream is not NULL.
 *
 * Thread-safe.
 */
EVX_API evx_status_t evx_device_create_stream(int device, unsigned flags,
                                              int priority,
                                              evx_stream_t *stream);

/**
 * @brief Borrows a stream made elsewhere: PyTorch, CuPy, CV-CUDA,
 * cuda.core, `cudaStreamCreateWithPriority`, or a default stream.
 *
 * evx never destroys a borrowed stream. The caller keeps it alive for as
 * long as the evx handle is used. evx cannot check a foreign pointer: a
 * @p native_stream that is not a live `CUstream` (or `cudaStream_t`) is
 * undefined behaviour, as in CUDA.
 *
 * @param device the stream's device, ::EVX_DEVICE_FROM_STREAM to read
 *        it from the stream, or ::EVX_DEVICE_CURRENT for the device of the
 *        calling thread's current context. For a default stream (NULL,
 *        ::EVX_STREAM_LEGACY, ::EVX_STREAM_PER_THREAD), which names no
 *        device, it is a device ordinal or ::EVX_DEVICE_CURRENT (whose
 *        current context must then be the device's primary context).
 * @param native_stream the `CUstream`.
 * @param[out] stream receives the borrowed stream.
 * @return ::EVX_SUCCESS;
 *         ::EVX_ERROR_INVALID_VALUE if @p stream is NULL, if a default
 *         stream is given with ::EVX_DEVICE_FROM_STREAM, if
 *         ::EVX_DEVICE_CURRENT is given and no context is current (or, for
 *         a default stream, the current one is not a primary context), or
 *         if @p device is not the device the stream belongs to (the message
 *         names both);
 *         ::EVX_ERROR_INVALID_DEVICE if @p device is out of range;
 *         a driver-loading status; a status from the driver.
 *         On failure `*stream` is set to NULL when @p stream is not NULL.
 *
 * A stream being captured into a graph (`cuStreamBeginCapture`,
 * `torch.cuda.graph`, in any capture mode) may be wrapped, with every form
 * of @p device, and the capture is left as it was: evx asks
 * `cuStreamIsCapturing` first, reads such a stream's device from its
 * context (`cuStreamGetCtx`, `cuCtxGetDevice`) and its priority
 * (`cuStreamGetPriority`), and does not read its flags
 * (`cuStreamGetDevice` and `cuStreamGetFlags` would invalidate the
 * capture): evx_stream_get_flags() reads them once the capture has ended.
 *
 * Thread-safe.
 */
EVX_API evx_status_t evx_stream_wrap_external(int device, void *native_stream,
                                              evx_stream_t *stream);

/**
 * @brief Ends a stream handle; destroys the driver stream only if evx owns
 * it.
 *
 * Work queued on an owned stream still completes: the call does not wait.
 * When other threads are inside calls on the stream, the driver stream is
 * destroyed as the last of those calls returns, with no later call of any
 * thread (a borrowed stream with a release callback: evx_stream_destroy()
 * waits for them, see evx_stream_wrap_external_with_release()).
 *
 * @param stream the stream.
 * @return ::EVX_SUCCESS; ::EVX_ERROR_INVALID_HANDLE if @p stream is not a
 *         live stream; a status from `cuStreamDestroy` (the handle is dead
 *         all the same).
 *
 * Thread-safe, also while other threads use the stream.
 */
EVX_API evx_status_t evx_stream_destroy(evx_stream_t stream);

/**
 * @brief Makes all future work on the stream wait until the event
 * completes. Does not block the calling thread.
 *
 * Waiting for a never-recorded event waits for nothing. If evx reused the
 * event's driver event (see evx_device_create_event()) and the event has
 * not been recorded since, a new driver event replaces it first, so the
 * driver sees a new event (under stream capture too).
 *
 * @param stream the stream that waits.
 * @param event an event of the stream's device.
 * @param flags ::EVX_EVENT_WAIT_DEFAULT or ::EVX_EVENT_WAIT_EXTERNAL.
 * @return ::EVX_SUCCESS; ::EVX_ERROR_INVALID_HANDLE if either handle is not
 *         live, or the event belongs to another device than the stream
 *         (refused before the driver; the message names both devices);
 *         ::EVX_ERROR_INVALID_VALUE for an unknown flag bit; a status from
 *         the driver (also from `cuEventCreate` or `cuEventDestroy`, when
 *         the driver event is replaced).
 *
 * Thread-safe; takes no global lock.
 */
EVX_API evx_status_t evx_stream_wait_event(evx_stream_t stream,
                                           evx_event_t event, unsigned flags);

/**
 * @brief Whether all work queued on the stream has completed. Never blocks.
 *
 * @param stream the stream.
 * @return ::EVX_SUCCESS when idle; ::EVX_ERROR_NOT_READY while busy (an
 *         answer, not a failure); ::EVX_ERROR_INVALID_HANDLE; a status from
 *         the driver.
 *
 * Thread-safe; takes no global lock.
 */
EVX_API evx_status_t evx_stream_query(evx_stream_t stream);

/**
 * @brief Waits until all work queued on the stream has completed.
 *
 * @param stream the stream.
 * @return ::EVX_SUCCESS; ::EVX_ERROR_INVALID_HANDLE; a status from the
 *         driver.
 *
 * Thread-safe; takes no global lock.
 */
EVX_API evx_status_t evx_stream_synchronize(evx_stream_t stream);

/**
 * @brief Queues a host function: it runs on a driver thread once the work
 * queued before it has completed, and work queued after it waits for it.
 *
 * The function must not call evx or CUDA (as with `cuLaunchHostFunc`).
 *
 * @param stream the stream.
 * @param fn the function; not NULL.
 * @param user_data passed to @p fn.
 * @return ::EVX_SUCCESS; ::EVX_ERROR_INVALID_VALUE if @p fn is NULL;
 *         ::EVX_ERROR_INVALID_HANDLE; a status from the driver.
 *
 * Thread-safe.
 */
EVX_API evx_status_t evx_stream_launch_host_func(evx_stream_t stream,
                                                 evx_host_fn_t fn,
                                                 void *user_data);

/**
 * @brief Queues a host function that can fail: it runs as one of
 * evx_stream_launch_host_func(), and a status other than ::EVX_SUCCESS that
 * it returns is recorded against the stream handle and reported by a later
 * call that waits for work queued after it.
 *
 * Which calls report a failure, exactly:
 * - evx_stream_synchronize() on the same stream handle, and
 *   evx_stream_query() there when it finds the stream idle (it would return
 *   ::EVX_SUCCESS), for host functions launched before the call;
 * - evx_event_synchronize(), and evx_event_query() when it finds the event
 *   complete, for an event whose last record was made on the same stream
 *   handle after the host function was launched (ordered by the calls: a
 *   record made after this call returned, from the same thread or ordered
 *   after it by the caller);
 * - evx_timer_synchronize() for its stop and start marks, and
 *   evx_timeline_synchronize() and evx_timeline_write_trace() for the
 *   timeline's last mark, made on that stream handle after the launch.
 *
 * Such a call returns the host function's status, and its message (see
 * evx_last_error_message()) names the function (@p options `name`), the
 * stream and the status; evx_last_error_host_func() gives its @p user_data.
 * Each failure is reported once, by the first of those calls to end its
 * wait, and then forgotten; a call reports at most one failure, the
 * earliest launched, and later ones wait for the next such call. Failures
 * of host functions on other streams, or on this stream after the awaited
 * point, are not reported by it. Other calls (evx_timer_elapsed(),
 * evx_timeline_intervals(), the notifier's plain deliveries; its checked
 * ones, evx_notifier_read_checked() and
 * evx_notifier_watch_callback_status(), report as evx_event_synchronize()
 * of the watched event) and other stream handles of the same driver stream
 * do not report failures.
 * evx keeps at most 4096 unreported failures in the process; beyond that
 * the oldest is dropped.
 *
 * On a stream being captured (cuStreamBeginCapture) the function becomes a
 * host node of the capture's graph and runs at every launch of an
 * executable instantiated from it, wherever it is launched. evx keeps its
 * record (the function, @p user_data, the name) in a driver user object
 * (cuUserObjectCreate) that the graph holds: it is freed, and @p options
 * `release` called, once the graph and its executables are destroyed. A
 * failure in a launch is recorded against the device and reported once, by
 * the first of the calls above on any stream, event, timer or timeline of
 * that device, or delivery of a checked notifier watch of an event of that
 * device (evx_notifier_read_checked(), evx_notifier_watch_callback_status()),
 * to end its wait after the failure was recorded; its message says the
 * function ran in a graph launch. A driver without cuStreamGetCaptureInfo
 * (CUDA 12.3), cuUserObjectCreate or cuGraphRetainUserObject refuses such a
 * launch into a capture with ::EVX_ERROR_NOT_SUPPORTED.
 *
 * The call is evx's own host function around @p fn: through
 * `cuLaunchHostFunc_v2` with the sync mode of the flags where the driver
 * has it (CUDA 13.2 and later), through `cuLaunchHostFunc` elsewhere, with
 * the same semantics. @p fn must not call evx or CUDA.
 *
 * @param stream the stream.
 * @param fn the function; not NULL.
 * @param user_data passed to @p fn.
 * @param options flags and name; NULL for the defaults.
 * @return ::EVX_SUCCESS; ::EVX_ERROR_INVALID_VALUE if @p fn is NULL, the
 *         options' `struct_size` is below the first published size, a flag
 *         is unknown or the name is not shorter than
 *         ::EVX_HOST_FUNC_NAME_SIZE bytes;
 *         ::EVX_ERROR_INVALID_HANDLE; ::EVX_ERROR_OUT_OF_MEMORY; a status
 *         from the driver (then @p fn never runs).
 *
 * Thread-safe.
 */
EVX_API evx_status_t evx_stream_launch_host_func_status(
    evx_stream_t stream, evx_host_fn_status_t fn, void *user_data,
    const evx_host_func_options_t *options);

/**
 * @brief The `user_data` of the host function whose failure the calling
 * thread's last failed evx call reported (see
 * evx_stream_launch_host_func_status()).
 *
 * @param[out] user_data receives it.
 * @return ::EVX_SUCCESS; ::EVX_ERROR_INVALID_VALUE if @p user_data is NULL;
 *         ::EVX_ERROR_NOT_FOUND (nothing set) if the thread's last failure
 *         was not a host function's, or was cleared.
 *
 * Thread-safe: each thread has its own.
 */
EVX_API evx_status_t evx_last_error_host_func(void **user_data);

/**
 * @brief Whether the driver has `cuLaunchHostFunc_v2` (CUDA 13.2), which
 * evx_stream_launch_host_func_status() then uses, with its sync mode.
 *
 * @param[out] has receives 1 if it has, else 0.
 * @return ::EVX_SUCCESS; ::EVX_ERROR_INVALID_VALUE if @p has is NULL; a
 *         driver-loading status.
 *
 * Thread-safe.
 */
EVX_API evx_status_t evx_driver_has_host_func_sync_mode(int *has);

/**
 * @brief The stream's priority (as the driver reports it), read when the
 * stream was made or wrapped: answered during a capture too, as are
 * evx_stream_get_device(), evx_stream_get_native() and
 * evx_stream_is_owned() (no driver call).
 * @param stream the stream.
 * @param[out] priority receives the priority.
 * @return ::EVX_SUCCESS; ::EVX_ERROR_INVALID_VALUE if @p priority is NULL;
 *         ::EVX_ERROR_INVALID_HANDLE.
 * Thread-safe.
 */
EVX_API evx_status_t evx_stream_get_priority(evx_stream_t stream,
                                             int *priority);

/**
 * @brief The stream's flags (::evx_stream_flags, as the driver reports
 * them; 0 for a borrowed default stream).
 *
 * Read when the stream was made or wrapped, except for a stream wrapped
 * while it was being captured: its flags are read on the first call after
 * the capture has ended (`cuStreamIsCapturing`, then `cuStreamGetFlags`);
 * during the capture the call returns
 * ::EVX_ERROR_STREAM_CAPTURE_UNSUPPORTED and leaves the capture as it was
 * (the driver refuses `cuStreamGetFlags` on a capturing stream and
 * invalidates its capture).
 * @param stream the stream.
 * @param[out] flags receives the flags (untouched on failure).
 * @return ::EVX_SUCCESS; ::EVX_ERROR_INVALID_VALUE if @p flags is NULL;
 *         ::EVX_ERROR_INVALID_HANDLE;
 *         ::EVX_ERROR_STREAM_CAPTURE_UNSUPPORTED as above; a status from
 *         the driver when the flags are read late.
 * Thread-safe.
 */
EVX_API evx_status_t evx_stream_get_flags(evx_stream_t stream,
                                          unsigned *flags);

/**
 * @brief The device the stream belongs to.
 * @param stream the stream.
 * @param[out] device receives the device ordinal.
 * @return ::EVX_SUCCESS; ::EVX_ERROR_INVALID_VALUE if @p device is NULL;
 *         ::EVX_ERROR_INVALID_HANDLE.
 * Thread-safe.
 */
EVX_API evx_status_t evx_stream_get_device(evx_stream_t stream, int *device);

/**
 * @brief The driver's `CUstream` behind the handle (for a borrowed default
 * stream: NULL, ::EVX_STREAM_LEGACY or ::EVX_STREAM_PER_THREAD, as given).
 *
 * Usable as a `cudaStream_t` and by any framework that accepts a stream
 * address. Ownership does not move: the caller must not destroy it.
 *
 * @param stream the stream.
 * @param[out] cu_stream receives the `CUstream`.
 * @return ::EVX_SUCCESS; ::EVX_ERROR_INVALID_VALUE if @p cu_stream is
 *         NULL; ::EVX_ERROR_INVALID_HANDLE.
 * Thread-safe.
 */
EVX_API evx_status_t evx_stream_get_native(evx_stream_t stream,
                                           void **cu_stream);

/**
 * @brief Whether evx owns the driver stream (made by
 * evx_device_create_stream()) or borrows it (evx_stream_wrap_external()).
 * @param stream the stream.
 * @param[out] owned receives 1 when evx owns it, 0 when borrowed.
 * @return ::EVX_SUCCESS; ::EVX_ERROR_INVALID_VALUE if @p owned is NULL;
 *         ::EVX_ERROR_INVALID_HANDLE.
 * Thread-safe.
 */
EVX_API evx_status_t evx_stream_is_owned(evx_stream_t stream, int *owned);

/** @} */

EVX_END_DECLS

#endif /* EVX_STREAM_H */
