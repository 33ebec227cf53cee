/*
 * Copyright 2026 The evx Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * @file evx/timing.h
 * @brief Timers (a start and a stop) and timelines (many marks, read in one
 * call).
 */
#ifndef EVX_TIMING_H
#define EVX_TIMING_H

#include "evx/common.h"

EVX_BEGIN_DECLS

/** @defgroup evx_timing Timers and timelines
 *  @brief Time GPU work without managing events.
 *
 * Both are built on evx's reused driver events, so making and dropping them
 * is cheap. The resolution is the driver's (docs/performance.md gives the
 * smallest interval measured).
 *
 * A timer or timeline may be used from several threads, but its marks are
 * ordered by the calls that make them: mark from one thread, or order the
 * calls yourself.
 *
 * A mark made on a stream that is being captured into a CUDA graph is a
 * node of the graph (an external event record node): each launch of the
 * graph records it, and after a launch the reads give that launch's times.
 * A read that needs such a mark before any launch recorded it is
 * ::EVX_ERROR_ILLEGAL_STATE, naming the mark; one while a launch is in
 * flight is ::EVX_ERROR_NOT_READY. Each mark in a capture keeps a driver
 * event of its own until the timer or timeline is destroyed, which must
 * not happen before the graph's last launch (docs/graphs.md).
 *  @{ */

/**
 * @brief Creates a timer on a device.
 *
 * @param device a device ordinal.
 * @param[out] timer receives the timer.
 * @return ::EVX_SUCCESS; ::EVX_ERROR_INVALID_VALUE if @p timer is NULL;
 *         ::EVX_ERROR_INVALID_DEVICE; ::EVX_ERROR_OUT_OF_MEMORY; a status
 *         from the driver.
 *
 * Thread-safe.
 */
EVX_API evx_status_t evx_device_create_timer(int device, evx_timer_t *timer);

/**
 * @brief Destroys a timer; pending work is not waited for. Its driver
 * events go back to evx's cache as this call returns or, when other
 * threads are inside calls on the timer, as the last of those returns.
 * @param timer the timer.
 * @return ::EVX_SUCCESS; ::EVX_ERROR_INVALID_HANDLE.
 * Thread-safe.
 */
EVX_API evx_status_t evx_timer_destroy(evx_timer_t timer);

/**
 * @brief Marks the start on a stream; forgets any earlier start and stop.
 *
 * @param timer the timer.
 * @param stream a stream of the timer's device.
 * @return ::EVX_SUCCESS; ::EVX_ERROR_INVALID_HANDLE (also for a stream of
 *         another device); a status from the driver.
 *
 * Thread-safe.
 */
EVX_API evx_status_t evx_timer_start(evx_timer_t timer, evx_stream_t stream);

/**
 * @brief Marks the stop on a stream: the same as the start's or another of
 * the same device (order the two streams yourself, as with any event).
 *
 * @param timer the timer.
 * @param stream a stream of the timer's device.
 * @return ::EVX_SUCCESS; ::EVX_ERROR_INVALID_HANDLE (also for a stream of
 *         another device); ::EVX_ERROR_ILLEGAL_STATE if the timer was not
 *         started; a status from the driver.
 *
 * Thread-safe.
 */
EVX_API evx_status_t evx_timer_stop(evx_timer_t timer, evx_stream_t stream);

/**
 * @brief The milliseconds from start to stop, without blocking.
 *
 * @param timer the timer.
 * @param[out] ms receives the milliseconds.
 * @return ::EVX_SUCCESS; ::EVX_ERROR_NOT_READY while the marked work is
 *         pending; ::EVX_ERROR_INVALID_VALUE if @p ms is NULL;
 *         ::EVX_ERROR_INVALID_HANDLE; ::EVX_ERROR_ILLEGAL_STATE if the
 *         timer was not started and stopped, or a mark made in a capture
 *         was not recorded by a launch of its graph yet.
 *
 * Thread-safe.
 */
EVX_API evx_status_t evx_timer_elapsed(evx_timer_t timer, float *ms);

/**
 * @brief Waits for the stop mark, then gives the milliseconds from start to
 * stop.
 *
 * Waits for the stop mark and, if the start mark (which may be on another
 * stream) is still pending then, for the start mark too. Then reports the
 * failure of a host function that can fail (see
 * evx_stream_launch_host_func_status()) launched on a mark's stream handle
 * before that mark, the stop mark's first, as evx_event_synchronize() does
 * for an event (with @p ms written).
 *
 * @param timer the timer.
 * @param[out] ms receives the milliseconds.
 * @return as evx_timer_elapsed(), never ::EVX_ERROR_NOT_READY unless another
 *         thread starts the timer again while this call waits (the marks it
 *         waited for are then replaced by pending ones; a timer that several
 *         threads start needs the caller's own ordering).
 *
 * Thread-safe.
 */
EVX_API evx_status_t evx_timer_synchronize(evx_timer_t timer, float *ms);

/**
 * @brief Creates a timeline on a device.
 *
 * @param device a device ordinal.
 * @param capacity the most marks it holds until evx_timeline_reset(); 2 or
 *        more.
 * @param[out] timeline receives the timeline.
 * @return ::EVX_SUCCESS; ::EVX_ERROR_INVALID_VALUE if @p timeline is NULL
 *         or @p capacity is less than 2; ::EVX_ERROR_INVALID_DEVICE;
 *         ::EVX_ERROR_OUT_OF_MEMORY.
 *
 * Thread-safe.
 */
EVX_API evx_status_t evx_device_create_timeline(int device, uint32_t capacity,
                                                evx_timeline_t *timeline);

/**
 * @brief Destroys a timeline; pending work is not waited for. Its driver
 * events go back to evx's cache as this call returns or, when other
 * threads are inside calls on the timeline, as the last of those returns.
 * @param timeline the timeline.
 * @return ::EVX_SUCCESS; ::EVX_ERROR_INVALID_HANDLE.
 * Thread-safe.
 */
EVX_API evx_status_t evx_timeline_destroy(evx_timeline_t timeline);

/**
 * @brief Records the next mark on a stream of the timeline's device.
 *
 * Marks may go on several streams; interval i is the time from mark i to
 * mark i + 1, so order the streams as the intervals should read.
 *
 * @param timeline the timeline.
 * @param stream a stream of the timeline's device.
 * @param[out] index receives the mark's index (0 for the first); may be
 *        NULL.
 * @return ::EVX_SUCCESS; ::EVX_ERROR_INVALID_HANDLE (also for a stream of
 *         another device); ::EVX_ERROR_OUT_OF_MEMORY when the timeline
 *         holds its capacity of marks (nothing is recorded); a status from
 *         the driver.
 *
 * Thread-safe.
 */
EVX_API evx_status_t evx_timeline_mark(evx_timeline_t timeline,
                                       evx_stream_t stream, uint32_t *index);

/** @brief What a labeled mark is, for evx_timeline_mark_labeled(). */
enum evx_mark_kind {
    /** A point: interval i (mark i to mark i + 1) is named by mark i. */
    EVX_MARK_POINT = 0,
    /** Opens a range on its stream, closed by the next ::EVX_MARK_END on
     *  that stream not taken by a range opened later (ranges nest). */
    EVX_MARK_BEGIN = 1,
    /** Closes the innermost open range of its stream. */
    EVX_MARK_END = 2,
    /** A point tied to the host's clock, made by evx_timeline_anchor()
     *  only (evx_timeline_mark_labeled() refuses it). */
    EVX_MARK_ANCHOR = 3,
    /** Not a kind: forces the enum to 32 bits. */
    EVX_MARK_KIND_FORCE_32BIT = 0x7FFFFFFF
};

/** @brief Room for a mark's label, its terminating NUL included. */
#define EVX_MARK_LABEL_SIZE 64

/**
 * @brief Records the next mark, as evx_timeline_mark(), with a label and a
 * kind: a point, or the begin or end of a range.
 *
 * The label and kind name the mark in evx_timeline_get_mark() and in the
 * trace of evx_timeline_write_trace(); the intervals are the same as for
 * unlabeled marks. Where libevx was built with NVTX (the CUDA toolkit's
 * `nvtx3` headers; no library is linked: the profiler's is loaded at run
 * time), a point is also an NVTX marker and a range an NVTX range pushed
 * and popped on the calling thread (mark both ends of a range from one
 * thread), so that they show in Nsight Systems, at the host time of the
 * call.
 *
 * @param timeline the timeline.
 * @param stream a stream of the timeline's device.
 * @param label the label, at most ::EVX_MARK_LABEL_SIZE - 1 bytes; copied.
 * @param kind an ::evx_mark_kind.
 * @param[out] index receives the mark's index; may be NULL.
 * @return as evx_timeline_mark(); ::EVX_ERROR_INVALID_VALUE if @p label is
 *         NULL or too long, or @p kind is not a mark kind (nothing is
 *         recorded).
 *
 * Thread-safe.
 */
EVX_API evx_status_t evx_timeline_mark_labeled(evx_timeline_t timeline,
                                               evx_stream_t stream,
                                               const char *label,
                                               unsigned kind,
                                               uint32_t *index);

/** @brief One mark of a timeline, from evx_timeline_get_mark(). Set
 *  `struct_size` to `sizeof(evx_timeline_mark_info_t)` first.
 *
 *  evx accepts any `struct_size` from the size first published (88 bytes:
 *  the fields below) up, and writes only the bytes it covers. */
typedef struct evx_timeline_mark_info {
    /** `sizeof(evx_timeline_mark_info_t)` as the caller compiled it. */
    uint32_t struct_size;
    /** Its ::evx_mark_kind (::EVX_MARK_POINT for evx_timeline_mark()). */
    uint32_t kind;
    /** The stream it was recorded on (the handle, which may since have been
     *  destroyed: a name, never used by evx). */
    evx_stream_t stream;
    /** Milliseconds from mark 0 to this mark (negative when it completed
     *  before mark 0, on another stream). */
    float ms;
    /** Its index. */
    uint32_t index;
    /** Its label, NUL-terminated ("" for evx_timeline_mark()). */
    char label[EVX_MARK_LABEL_SIZE];
} evx_timeline_mark_info_t;

/**
 * @brief One mark: its label, kind, stream and time from mark 0, without
 * blocking.
 *
 * @param timeline the timeline.
 * @param index a mark index below evx_timeline_count().
 * @param[in,out] info its `struct_size` set by the caller; filled.
 * @return ::EVX_SUCCESS; ::EVX_ERROR_NOT_READY if mark 0's or this mark's
 *         work is pending (nothing is written); ::EVX_ERROR_INVALID_VALUE if
 *         @p info is NULL, its `struct_size` is below the first published
 *         size, or there is no mark @p index; ::EVX_ERROR_INVALID_HANDLE.
 *
 * Thread-safe.
 */
EVX_API evx_status_t evx_timeline_get_mark(evx_timeline_t timeline,
                                           uint32_t index,
                                           evx_timeline_mark_info_t *info);

/** @brief A mark whose time on the host's clocks is known, from
 *  evx_timeline_anchor() and evx_timeline_get_anchor(). Set `struct_size`
 *  to `sizeof(evx_timeline_anchor_info_t)` first.
 *
 *  The mark's GPU time lies between `monotonic_before_ns` and
 *  `monotonic_after_ns` (`CLOCK_MONOTONIC`, the clock every process of the
 *  machine shares): the midpoint maps the timeline's times (milliseconds
 *  from mark 0) onto the host's clock, to within half the window. evx
 *  accepts any `struct_size` from the size first published (32 bytes) up. */
typedef struct evx_timeline_anchor_info {
    /** `sizeof(evx_timeline_anchor_info_t)` as the caller compiled it. */
    uint32_t struct_size;
    /** The anchor's mark index (an ::EVX_MARK_ANCHOR mark, label "anchor"). */
    uint32_t index;
    /** `CLOCK_MONOTONIC` in nanoseconds, read just before the mark was
     *  recorded. */
    uint64_t monotonic_before_ns;
    /** `CLOCK_MONOTONIC` in nanoseconds, read once the mark had completed. */
    uint64_t monotonic_after_ns;
    /** `CLOCK_REALTIME` in nanoseconds, read with `monotonic_before_ns`
     *  (wall-clock time, for the reader). */
    uint64_t realtime_ns;
} evx_timeline_anchor_info_t;

/**
 * @brief Records an anchor: a mark (::EVX_MARK_ANCHOR, label "anchor") on a
 * stream, with the host's clocks read before it is recorded and after it
 * has completed, so that the timeline's times can be put on the host's
 * clock and the traces of several processes and devices merged (Python's
 * `evx.trace.merge`).
 *
 * Blocks until the mark completes: give it a stream with no work pending,
 * or the window (`monotonic_after_ns - monotonic_before_ns`) covers that
 * work too. The timeline keeps every anchor until evx_timeline_reset();
 * evx_timeline_write_trace() writes them into the trace.
 *
 * @param timeline the timeline.
 * @param stream a stream of the timeline's device, not being captured.
 * @param[out] anchor its `struct_size` set; receives the anchor; may be
 *        NULL.
 * @return as evx_timeline_mark(); ::EVX_ERROR_INVALID_VALUE if @p anchor's
 *         `struct_size` is below the first published size (nothing is
 *         recorded); ::EVX_ERROR_ILLEGAL_STATE if @p stream is being
 *         captured (nothing is recorded); the status of the wait, as
 *         evx_timeline_synchronize() (the mark stays, with no anchor).
 *
 * Thread-safe; anchor from the thread that makes the marks.
 */
EVX_API evx_status_t evx_timeline_anchor(evx_timeline_t timeline,
                                         evx_stream_t stream,
                                         evx_timeline_anchor_info_t *anchor);

/**
 * @brief The anchor of mark @p index, as evx_timeline_anchor() gave it.
 *
 * @param timeline the timeline.
 * @param index the index of a mark made by evx_timeline_anchor().
 * @param[in,out] anchor its `struct_size` set by the caller; filled.
 * @return ::EVX_SUCCESS; ::EVX_ERROR_INVALID_VALUE if @p anchor is NULL or
 *         its `struct_size` is below the first published size, or mark
 *         @p index is not an anchor; ::EVX_ERROR_INVALID_HANDLE.
 *
 * Thread-safe.
 */
EVX_API evx_status_t evx_timeline_get_anchor(evx_timeline_t timeline,
                                             uint32_t index,
                                             evx_timeline_anchor_info_t *anchor);

/**
 * @brief Writes the timeline as a Chrome trace (JSON trace event format),
 * which Perfetto (ui.perfetto.dev) and chrome://tracing open.
 *
 * Waits for the last mark (as evx_timeline_synchronize()), then writes one
 * track (`tid`) per stream, named after its handle, in one process (`pid`
 * 1) named @p title. Times are microseconds from mark 0. Each mark becomes:
 * - ::EVX_MARK_BEGIN / ::EVX_MARK_END: a `B` / `E` event (nested ranges),
 *   named by the begin mark's label;
 * - ::EVX_MARK_POINT: an `X` event of interval i (to the next mark), named
 *   by its label (or "interval i"), on its stream's track; the last mark,
 *   and a mark whose next one completed earlier (on another stream), an
 *   instant `i` event;
 * - ::EVX_MARK_ANCHOR: an instant `i` event named "anchor".
 * Each event carries the mark's index in `args`. A timeline with anchors
 * (evx_timeline_anchor()) gets a top-level `"evx"` object after
 * `traceEvents`: `{"clock":"CLOCK_MONOTONIC","anchors":[...]}`, each anchor
 * its `index`, `ts` (microseconds from mark 0) and the fields of
 * ::evx_timeline_anchor_info_t; trace viewers ignore it.
 *
 * @param timeline the timeline; with at least one mark.
 * @param path the file to write (replaced).
 * @param title the process's name in the trace; NULL: "evx timeline".
 * @return ::EVX_SUCCESS; ::EVX_ERROR_INVALID_VALUE if @p path is NULL, the
 *         timeline has no marks, or a range is not closed or closed without
 *         one open (the message names the mark); ::EVX_ERROR_OPERATING_SYSTEM
 *         if the file cannot be written (the message gives the system's
 *         reason); ::EVX_ERROR_INVALID_HANDLE; a status from the driver, or
 *         a host function's failure that the wait reports (see
 *         evx_timeline_synchronize()).
 *
 * Thread-safe; marks made while it runs may be left out.
 */
EVX_API evx_status_t evx_timeline_write_trace(evx_timeline_t timeline,
                                              const char *path,
                                              const char *title);

/**
 * @brief The number of marks recorded since creation or the last reset.
 * @param timeline the timeline.
 * @param[out] count receives the count.
 * @return ::EVX_SUCCESS; ::EVX_ERROR_INVALID_VALUE if @p count is NULL;
 *         ::EVX_ERROR_INVALID_HANDLE.
 * Thread-safe.
 */
EVX_API evx_status_t evx_timeline_count(evx_timeline_t timeline,
                                        uint32_t *count);

/**
 * @brief Every interval between consecutive marks, in one call, without
 * blocking.
 *
 * With n marks there are n - 1 intervals; interval i is mark i to
 * mark i + 1 in milliseconds. Their sum equals the time from the first mark
 * to the last, up to rounding.
 *
 * @param timeline the timeline.
 * @param[out] ms receives up to @p max intervals; may be NULL when @p max
 *        is 0 (to learn the count).
 * @param max room in @p ms.
 * @param[out] written receives how many intervals were written, or, when
 *        @p ms is NULL, how many there are; may be NULL.
 * @return ::EVX_SUCCESS; ::EVX_ERROR_NOT_READY if any mark's work is
 *         pending (nothing is written); ::EVX_ERROR_INVALID_VALUE if @p ms
 *         is NULL and @p max is not 0; ::EVX_ERROR_INVALID_HANDLE;
 *         ::EVX_ERROR_ILLEGAL_STATE if a mark made in a capture was not
 *         recorded by a launch of its graph yet (nothing is written).
 *
 * Thread-safe.
 */
EVX_API evx_status_t evx_timeline_intervals(evx_timeline_t timeline,
                                            float *ms, uint32_t max,
                                            uint32_t *written);

/**
 * @brief Waits for the last mark's work to complete.
 *
 * Reports the failure of a host function that can fail (see
 * evx_stream_launch_host_func_status()) launched on the last mark's stream
 * handle before that mark, as evx_event_synchronize() does for an event.
 *
 * @param timeline the timeline.
 * @return ::EVX_SUCCESS (also with no marks); ::EVX_ERROR_INVALID_HANDLE;
 *         ::EVX_ERROR_ILLEGAL_STATE if a mark made in a capture was not
 *         recorded by a launch of its graph yet (nothing to wait for); a
 *         status from the driver; a host function's status.
 * Thread-safe.
 */
EVX_API evx_status_t evx_timeline_synchronize(evx_timeline_t timeline);

/**
 * @brief Forgets every mark, keeping the timeline's events for reuse.
 * @param timeline the timeline.
 * @return ::EVX_SUCCESS; ::EVX_ERROR_INVALID_HANDLE.
 * Thread-safe.
 */
EVX_API evx_status_t evx_timeline_reset(evx_timeline_t timeline);

/** @} */

EVX_END_DECLS

#endif /* EVX_TIMING_H */
