/*
 * Copyright 2026 The evx Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * @file evx/fence.h
 * @brief Fences: 64-bit counters that only grow, signalled and waited for
 * on streams, on the host, between processes and from event loops.
 */
#ifndef EVX_FENCE_H
#define EVX_FENCE_H

#include "evx/common.h"
#include "evx/notify.h"

EVX_BEGIN_DECLS

/** @defgroup evx_fence Fences
 *  @brief A counter of a device that only grows: "wait for step 7".
 *
 * A fence holds a 64-bit value. evx_fence_signal() queues on a stream a
 * write of a larger value; evx_stream_wait_fence() queues on a stream a wait
 * until the value is at least a given one; evx_fence_signal_host() and
 * evx_fence_wait_host() do the same from the host. A wait may be queued
 * before the signal it waits for, on any stream of any device that can map
 * the fence's memory and in any process that opened the fence: this is what an event cannot do
 * (a stream that waits for an event recorded later waits for nothing).
 *
 * **Values grow.** Every signal, queued or from the host, must be above
 * the last value signalled or queued on the fence (in any process that
 * shares it); evx refuses one that is not with ::EVX_ERROR_INVALID_VALUE
 * and a message naming both values. Values are below 2^63
 * (::EVX_FENCE_MAX_VALUE): the GPU compares them cyclically. Signals
 * queued on different streams must also *run* in increasing order: a
 * signal that runs after a larger one sets the counter back (evx checks
 * the order they are queued in, and refuses a host signal while a queued
 * one has not run yet).
 *
 * **On the GPU** a fence is stream memory operations on one 64-bit word:
 * `cuStreamWriteValue64` signals and `cuStreamWaitValue64` (greater or
 * equal) waits. The word is pinned host memory mapped to the device, so
 * that a host read is a plain load and a GPU wait is the GPU front end's
 * memory-semaphore acquire, which occupies no SM (docs/design.md,
 * "Fences"). evx_device_create_fence() checks
 * `CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS` and
 * `CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY` and refuses a device without
 * them with ::EVX_ERROR_NOT_SUPPORTED naming the attribute.
 *
 * **Across devices.** The counter is portable pinned memory mapped to
 * every device (`CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP`; an
 * IPC fence's page is registered `PORTABLE | DEVICEMAP`), so a stream of
 * any device of the process signals and waits on a fence of any other,
 * through that device's address of the counter
 * (`cuMemHostGetDevicePointer` with its context current, looked up once
 * per fence and device). A stream of a device without the attributes
 * above is refused with ::EVX_ERROR_NOT_SUPPORTED naming the device and
 * the attribute. Values grow across devices as across streams.
 *
 * **Destroying a fence** ends its handle at once. Signals and waits already
 * queued on streams still run against its counter, which evx keeps for
 * them (as the driver keeps a destroyed event for work that still needs
 * it): a queued wait whose value nobody can signal any more blocks its
 * stream for good, as it would have with the fence alive. The counter of
 * a fence that was never used on a stream is given back at once; that of
 * one that was, once the streams that queued work on it have run it: evx
 * records an event on each of them (however many; none on a stream taking
 * part in a capture, nor on the legacy stream while a blocking stream of
 * its context captures: such a stream is marked after the capture ends)
 * and a later fence call gives the memory back when they completed.
 * Given back means: a plain fence's word returns to evx's pool of pinned
 * words of its device, for the next fence; an interprocess fence's page is kept until
 * evx_device_trim() of its device unregisters and unmaps it. No fence call
 * waits for the device, and no thread of evx releases in the background:
 * the driver's `cuMemFreeHost` and `cuMemHostUnregister` wait until all
 * the work queued on the context has completed, and hold every other
 * driver call of the process meanwhile, so evx makes them only in
 * evx_device_trim(), which also frees the pool's pages whose words are all
 * free, and may wait. What evx cannot follow is kept for the life of the
 * process and counted (evx_fence_reclaim()): a fence used on a per-thread
 * default stream, or one for which the driver refused such an event. No
 * evx call ever touches freed memory.
 *
 * No context needs to be current: evx makes the device's primary context
 * current around the driver calls and leaves the caller's as it was.
 *  @{ */

/** @brief A fence: a counter of a device that only grows. Opaque; checked
 * on every call (a zero, forged, stale or destroyed handle gets
 * ::EVX_ERROR_INVALID_HANDLE, never a crash). */
typedef struct evx_fence_s *evx_fence_t;

/** @brief Flags of evx_device_create_fence(). */
enum evx_fence_flags {
    /** None. */
    EVX_FENCE_DEFAULT = 0x0,
    /** The fence may be exported to other processes
     *  (evx_fence_get_ipc_handle()). */
    EVX_FENCE_INTERPROCESS = 0x1,
    /** Not a flag: forces the enum to 32 bits. */
    EVX_FENCE_FLAGS_FORCE_32BIT = 0x7FFFFFFF
};

/** @brief Flags of evx_stream_wait_fence_with_flags(). */
enum evx_fence_wait_flags {
    /** None: as evx_stream_wait_fence(). */
    EVX_FENCE_WAIT_DEFAULT = 0x0,
    /** Before the wait, flush writes that remote peers (GPUDirect RDMA)
     *  made to the device (`CU_STREAM_WAIT_VALUE_FLUSH`). Needs a stream of
     *  a device that reports `CU_DEVICE_ATTRIBUTE_CAN_FLUSH_REMOTE_WRITES`. */
    EVX_FENCE_WAIT_FLUSH = 0x1,
    /** Not a flag: forces the enum to 32 bits. */
    EVX_FENCE_WAIT_FLAGS_FORCE_32BIT = 0x7FFFFFFF
};

/** @brief The largest value a fence may hold: 2^63 - 1 (the GPU's wait
 *  compares cyclically, so values stay below 2^63). */
#define EVX_FENCE_MAX_VALUE 0x7FFFFFFFFFFFFFFFull

/** @brief The size of an IPC fence handle, in bytes. */
#define EVX_IPC_FENCE_HANDLE_SIZE 64

/** @brief An exported fence: plain bytes. Copy it, send it, compare it with
 *  `memcmp`. */
typedef struct evx_ipc_fence_handle {
    /** Opaque bytes, meaningful only to evx on the same machine. */
    unsigned char reserved[EVX_IPC_FENCE_HANDLE_SIZE];
} evx_ipc_fence_handle_t;

/**
 * @brief Makes a fence of a device. Streams of every device of the process
 * that can map its memory may signal it and wait for it (see
 * evx_fence_signal()).
 *
 * @param device the device, 0 to evx_device_count() - 1.
 * @param initial_value the counter's first value, at most
 *        ::EVX_FENCE_MAX_VALUE.
 * @param flags ::EVX_FENCE_DEFAULT or ::EVX_FENCE_INTERPROCESS.
 * @param[out] out receives the fence.
 * @return ::EVX_SUCCESS;
 *         ::EVX_ERROR_INVALID_VALUE if @p out is NULL, @p flags has unknown
 *         bits or @p initial_value is above ::EVX_FENCE_MAX_VALUE;
 *         ::EVX_ERROR_INVALID_DEVICE if @p device is out of range;
 *         ::EVX_ERROR_NOT_SUPPORTED if the driver lacks stream memory
 *         operations or the device lacks an attribute they need (the
 *         message names it); ::EVX_ERROR_OUT_OF_MEMORY; a status from the
 *         driver. On failure `*out` is NULL when @p out is not NULL.
 *
 * Thread-safe.
 */
EVX_API evx_status_t evx_device_create_fence(int device, uint64_t initial_value,
                                             unsigned flags, evx_fence_t *out);

/**
 * @brief Ends a fence's handle. Work already queued on it still runs (see
 * the group's text).
 *
 * @param fence the fence.
 * Never waits for the device, and makes no driver call that frees memory
 * (see the group's text).
 *
 * @return ::EVX_SUCCESS; ::EVX_ERROR_INVALID_HANDLE if @p fence is not a
 *         live fence (a second destroy included).
 *
 * Thread-safe.
 */
EVX_API evx_status_t evx_fence_destroy(evx_fence_t fence);

/**
 * @brief Queues on a stream a signal of the fence: when the stream's work
 * queued before it is done, the counter becomes @p value
 * (`cuStreamWriteValue64`).
 *
 * @param fence the fence.
 * @param stream a stream of any device that can map the fence's memory.
 * @param value above every value signalled or queued before on the fence,
 *        at most ::EVX_FENCE_MAX_VALUE.
 * @return ::EVX_SUCCESS;
 *         ::EVX_ERROR_INVALID_HANDLE if @p fence or @p stream is not live;
 *         ::EVX_ERROR_NOT_SUPPORTED if the stream's device cannot map the
 *         fence's memory (the message names the device and the attribute);
 *         ::EVX_ERROR_INVALID_VALUE if @p value is not above the last value
 *         signalled or queued (the message names both) or above
 *         ::EVX_FENCE_MAX_VALUE; a status from the driver (then nothing is
 *         queued and the value counts as never queued).
 *
 * Thread-safe.
 */
EVX_API evx_status_t evx_fence_signal(evx_fence_t fence, evx_stream_t stream,
                                      uint64_t value);

/**
 * @brief Queues on a stream a wait until the fence's counter is at least
 * @p value (`cuStreamWaitValue64`, greater or equal). The signal may be
 * queued later, on any stream, in any process sharing the fence.
 *
 * @param stream a stream of any device that can map the fence's memory.
 * @param fence the fence.
 * @param value the value to wait for, at most ::EVX_FENCE_MAX_VALUE.
 * @return ::EVX_SUCCESS; ::EVX_ERROR_INVALID_HANDLE and
 *         ::EVX_ERROR_NOT_SUPPORTED as for evx_fence_signal(); ::EVX_ERROR_INVALID_VALUE if @p value is
 *         above ::EVX_FENCE_MAX_VALUE; a status from the driver.
 *
 * Thread-safe.
 */
EVX_API evx_status_t evx_stream_wait_fence(evx_stream_t stream, evx_fence_t fence,
                                           uint64_t value);

/**
 * @brief evx_stream_wait_fence() with flags.
 *
 * @param stream a stream of a device that can map the fence's memory.
 * @param fence the fence.
 * @param value the value to wait for, at most ::EVX_FENCE_MAX_VALUE.
 * @param flags ::EVX_FENCE_WAIT_DEFAULT or ::EVX_FENCE_WAIT_FLUSH.
 * @return as evx_stream_wait_fence(); ::EVX_ERROR_INVALID_VALUE for
 *         unknown bits in @p flags; ::EVX_ERROR_NOT_SUPPORTED for
 *         ::EVX_FENCE_WAIT_FLUSH on a stream of a device that reports
 *         `CU_DEVICE_ATTRIBUTE_CAN_FLUSH_REMOTE_WRITES` = 0 (the message
 *         names the device; most systems without GPUDirect RDMA). Nothing is
 *         queued on failure.
 *
 * Thread-safe.
 */
EVX_API evx_status_t evx_stream_wait_fence_with_flags(evx_stream_t stream, evx_fence_t fence,
                                                      uint64_t value, unsigned flags);

/**
 * @brief Sets the counter to @p value from the host, now.
 *
 * @param fence the fence.
 * @param value above every value signalled or queued before on the fence,
 *        at most ::EVX_FENCE_MAX_VALUE.
 * @return ::EVX_SUCCESS; ::EVX_ERROR_INVALID_HANDLE;
 *         ::EVX_ERROR_INVALID_VALUE if @p value is not above the last value
 *         signalled or queued (the message names both) or above
 *         ::EVX_FENCE_MAX_VALUE; ::EVX_ERROR_ILLEGAL_STATE if a signal
 *         queued on a stream has not run yet (it would set the counter
 *         back when it runs; the message names its value).
 *
 * Thread-safe; makes no driver call.
 */
EVX_API evx_status_t evx_fence_signal_host(evx_fence_t fence, uint64_t value);

/**
 * @brief Reads the counter (a plain load: no driver call).
 *
 * @param fence the fence.
 * @param[out] value receives the counter.
 * @return ::EVX_SUCCESS; ::EVX_ERROR_INVALID_HANDLE;
 *         ::EVX_ERROR_INVALID_VALUE if @p value is NULL.
 *
 * Thread-safe.
 */
EVX_API evx_status_t evx_fence_get_value(evx_fence_t fence, uint64_t *value);

/**
 * @brief Waits on the host until the counter is at least @p value, or
 * @p timeout_ns nanoseconds have passed.
 *
 * The calling thread spins for at most a few microseconds, then sleeps:
 * a host signal (in any process) wakes it at once; a signal from a stream
 * is seen within the thread's next wake-up, which comes at most about
 * 100 microseconds apart (the GPU's write raises no interrupt).
 *
 * @param fence the fence.
 * @param value the value to wait for, at most ::EVX_FENCE_MAX_VALUE.
 * @param timeout_ns how long to wait at most; 0 only looks (a query);
 *        `UINT64_MAX` waits without limit.
 * @return ::EVX_SUCCESS when the counter is at least @p value;
 *         ::EVX_ERROR_TIMEOUT when it is not by the timeout (the message
 *         names the value reached);
 *         ::EVX_ERROR_INVALID_HANDLE; ::EVX_ERROR_INVALID_VALUE if @p value
 *         is above ::EVX_FENCE_MAX_VALUE.
 *
 * Thread-safe.
 */
EVX_API evx_status_t evx_fence_wait_host(evx_fence_t fence, uint64_t value,
                                         uint64_t timeout_ns);

/**
 * @brief Exports a fence made with ::EVX_FENCE_INTERPROCESS for another
 * process of the same machine.
 *
 * The counter of such a fence is a page of shared memory that each
 * process maps and registers with the driver (`cuMemHostRegister`): a
 * POSIX shared-memory object (`/dev/shm`), or a memfd where the maker has
 * no writable `/dev/shm`. The handle names it two ways, which
 * evx_device_open_ipc_fence() tries in this order: its name in `/dev/shm`
 * (processes that share `/dev/shm`), then the exporting process's
 * descriptor, `/proc/<pid>/fd/<fd>` (processes of one PID namespace and
 * one user). The process that exported the handle must keep its fence
 * alive until every peer has opened it (destroying it removes the name and
 * closes the descriptor; peers that opened it before keep working).
 * Processes in containers need either a shared `/dev/shm` (for example
 * `docker run --ipc=host`, or `--ipc=container:NAME`) or a shared PID
 * namespace (`docker run --pid=host`, `--pid=container:NAME`, a Kubernetes
 * pod with `shareProcessNamespace`). See docs/fences.md.
 *
 * @param fence a fence made with ::EVX_FENCE_INTERPROCESS.
 * @param[out] out receives the handle.
 * @return ::EVX_SUCCESS; ::EVX_ERROR_INVALID_VALUE if @p out is NULL;
 *         ::EVX_ERROR_INVALID_HANDLE if @p fence is not live, or was made
 *         without ::EVX_FENCE_INTERPROCESS.
 *
 * Thread-safe.
 */
EVX_API evx_status_t evx_fence_get_ipc_handle(evx_fence_t fence,
                                              evx_ipc_fence_handle_t *out);

/**
 * @brief Opens a fence exported by another process, as a fence of
 * @p device. Either process may then signal it and wait for it; the rule
 * that values grow holds across the processes.
 *
 * @param device the device to open the fence on, 0 to
 *        evx_device_count() - 1.
 * @param handle the handle, from evx_fence_get_ipc_handle() in another
 *        process.
 * @param[out] out receives the new fence.
 * @return ::EVX_SUCCESS; ::EVX_ERROR_INVALID_VALUE if @p handle or @p out
 *         is NULL, or the handle names no live fence of this machine that
 *         this process can reach (the message names what each way of
 *         opening it gave), or it was made by another version of evx;
 *         ::EVX_ERROR_INVALID_DEVICE; ::EVX_ERROR_INVALID_CONTEXT if the
 *         handle was exported by this same process (as the driver answers
 *         for IPC events); ::EVX_ERROR_NOT_SUPPORTED as for
 *         evx_device_create_fence(); a status from the driver. On failure
 *         `*out` is NULL when @p out is not NULL.
 *
 * Thread-safe.
 */
EVX_API evx_status_t evx_device_open_ipc_fence(int device,
                                               const evx_ipc_fence_handle_t *handle,
                                               evx_fence_t *out);

/**
 * @brief Exports a fence made with ::EVX_FENCE_INTERPROCESS as a file
 * descriptor, for a process that shares neither `/dev/shm` nor the PID
 * namespace with this one: pass it over a Unix socket (`SCM_RIGHTS`).
 *
 * The descriptor is a new one (close-on-exec) of the fence's page of
 * shared memory; the caller owns it and closes it once sent. It keeps the
 * page alive while open, whatever this process does with the fence.
 *
 * @param fence a fence made (or opened) with ::EVX_FENCE_INTERPROCESS.
 * @param[out] fd_out receives the descriptor; -1 on failure.
 * @return ::EVX_SUCCESS; ::EVX_ERROR_INVALID_VALUE if @p fd_out is NULL;
 *         ::EVX_ERROR_INVALID_HANDLE as evx_fence_get_ipc_handle();
 *         ::EVX_ERROR_OPERATING_SYSTEM if no descriptor could be made.
 *
 * Thread-safe.
 */
EVX_API evx_status_t evx_fence_export_fd(evx_fence_t fence, int *fd_out);

/**
 * @brief Opens a fence from a descriptor that evx_fence_export_fd() gave
 * in another process, as a fence of @p device (as
 * evx_device_open_ipc_fence()).
 *
 * evx keeps its own duplicate of @p fd: the caller still owns @p fd and
 * may close it at once. The descriptor must be a page-sized file of the
 * kernel's shared memory holding a fence's page (a memfd or a `/dev/shm`
 * object); anything else is refused before it is mapped.
 *
 * @param device the device to open the fence on.
 * @param fd the descriptor.
 * @param[out] out receives the new fence.
 * @return ::EVX_SUCCESS; ::EVX_ERROR_INVALID_VALUE if @p out is NULL,
 *         @p fd is negative or not a fence's page (the message says why);
 *         ::EVX_ERROR_INVALID_CONTEXT if the fence was made by this same
 *         process; ::EVX_ERROR_INVALID_DEVICE; ::EVX_ERROR_NOT_SUPPORTED as
 *         for evx_device_create_fence(); ::EVX_ERROR_OPERATING_SYSTEM; a
 *         status from the driver. On failure `*out` is NULL when @p out is
 *         not NULL.
 *
 * Thread-safe.
 */
EVX_API evx_status_t evx_device_import_fence_fd(int device, int fd, evx_fence_t *out);

/**
 * @brief Gives back the memory of destroyed fences whose queued
 * operations have all run, and counts what is left.
 *
 * Fence calls do the same on the way; none of them, this one included,
 * waits for the GPU. A plain fence's word goes back to evx's pool (whose
 * pages evx_device_trim() frees); an interprocess fence's page is kept
 * until evx_device_trim() of its device unregisters it: the driver's
 * unregister waits for the context's queued work and holds every other
 * driver call of the process meanwhile, so evx never makes it on its own.
 * This call lets a program (or a leak check) see the state.
 *
 * @param[out] pending receives how many destroyed fences' memory still
 *        waits for operations queued on it, or for a capture on one of its
 *        streams to end (a queued wait for a value that never comes keeps
 *        its fence's memory here for good); may be NULL.
 * @param[out] kept receives how many destroyed fences' memory is kept for
 *        the life of the process because evx could not follow the
 *        operations queued on it (see the group's text), plus the
 *        interprocess pages and the pages whose release the driver
 *        refused, kept until an evx_device_trim() of their device releases
 *        them; may be NULL.
 * @return ::EVX_SUCCESS.
 *
 * Thread-safe.
 */
EVX_API evx_status_t evx_fence_reclaim(uint64_t *pending, uint64_t *kept);

/**
 * @brief Watches a fence: queues @p token in the notifier when the counter
 * reaches @p value (see evx/notify.h).
 *
 * The watch is a `cuStreamWaitValue64` on an internal stream of the
 * notifier followed by the same delivery as an event's watch: no thread
 * polls, none blocks per watch. A value reached already is delivered by
 * the call itself. A watch holds its internal stream until the value is
 * reached, and evx_notifier_destroy() waits for every pending watch: reach
 * the values watched (or leave no watch pending) before destroying the
 * notifier.
 *
 * @param notifier the notifier.
 * @param fence the fence (of any device).
 * @param value the value to wait for, at most ::EVX_FENCE_MAX_VALUE.
 * @param token queued when the counter is at least @p value.
 * @return ::EVX_SUCCESS; ::EVX_ERROR_INVALID_HANDLE for a notifier or fence
 *         that is not live; ::EVX_ERROR_INVALID_VALUE if @p value is above
 *         ::EVX_FENCE_MAX_VALUE; ::EVX_ERROR_OUT_OF_MEMORY; a status from
 *         the driver.
 *
 * Thread-safe; never blocks on GPU work.
 */
EVX_API evx_status_t evx_notifier_watch_fence(evx_notifier_t notifier, evx_fence_t fence,
                                              uint64_t value, uint64_t token);

/**
 * @brief Watches a fence and runs a function when the counter reaches
 * @p value.
 *
 * As evx_notifier_watch_fence(), with the delivery of
 * evx_notifier_watch_callback(): @p fn runs exactly once, never inside
 * this call, on the driver's host-function thread or the notifier's pump
 * thread; it must be short and must not call evx or CUDA.
 *
 * @param notifier the notifier.
 * @param fence the fence (of any device).
 * @param value the value to wait for, at most ::EVX_FENCE_MAX_VALUE.
 * @param fn the function; not NULL.
 * @param user_data passed to @p fn.
 * @return as evx_notifier_watch_fence(), and ::EVX_ERROR_INVALID_VALUE if
 *         @p fn is NULL. On failure @p fn never runs.
 *
 * Thread-safe; never blocks on GPU work.
 */
EVX_API evx_status_t evx_notifier_watch_fence_callback(evx_notifier_t notifier,
                                                       evx_fence_t fence, uint64_t value,
                                                       evx_notify_fn_t fn, void *user_data);

/** @} */

EVX_END_DECLS

#endif /* EVX_FENCE_H */
