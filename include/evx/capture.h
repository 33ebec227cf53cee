/*
 * Copyright 2026 The evx Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * @file evx/capture.h
 * @brief Whether a stream is being captured into a CUDA graph.
 */
#ifndef EVX_CAPTURE_H
#define EVX_CAPTURE_H

#include "evx/common.h"

EVX_BEGIN_DECLS

/** @defgroup evx_capture Stream capture
 *  @brief Ask whether a stream is capturing, as engines that build CUDA
 *  graphs (`cuStreamBeginCapture`, `torch.cuda.graph`) need to.
 *
 * evx does not begin or end capture itself: that stays with the code that
 * owns the graph. Records and waits with ::EVX_EVENT_RECORD_EXTERNAL and
 * ::EVX_EVENT_WAIT_EXTERNAL make external event nodes inside a capture.
 *
 * evx never breaks a caller's capture by itself: on a stream being captured
 * (in global, thread-local or relaxed mode) evx_stream_wrap_external(),
 * the stream getters, records, waits, host functions, timer and timeline
 * marks and evx_stream_get_capture_status() work, and make no driver call
 * that would invalidate the capture (the driver refuses `cuStreamGetDevice`
 * and `cuStreamGetFlags` on a capturing stream and invalidates its capture,
 * in every mode; evx asks `cuStreamIsCapturing` first and avoids them).
 * The one getter a capturing stream cannot answer is evx_stream_get_flags()
 * of a stream wrapped during its capture: ::EVX_ERROR_STREAM_CAPTURE_UNSUPPORTED
 * until the capture ends, the capture left as it was. What the driver
 * itself forbids during a capture stays forbidden, with the driver's
 * status, and invalidates the capture as the driver does:
 * evx_stream_query() and evx_stream_synchronize() of a capturing stream
 * (::EVX_ERROR_STREAM_CAPTURE_UNSUPPORTED), a plain wait for an event
 * recorded outside the capture (::EVX_ERROR_STREAM_CAPTURE_ISOLATION), and
 * the rules of the capture mode for queries of other streams and events
 * (docs/graphs.md).
 *  @{ */

/** @brief The capture status of a stream: the `CUstreamCaptureStatus`
 *  values. */
typedef enum evx_capture_status {
    /** Not capturing. */
    EVX_CAPTURE_STATUS_NONE = 0,
    /** Capturing: work queued now goes into a graph, not to the device. */
    EVX_CAPTURE_STATUS_ACTIVE = 1,
    /** The capture was invalidated by an error and must be ended. */
    EVX_CAPTURE_STATUS_INVALIDATED = 2,
    /** Not a value: forces the enum to 32 bits. */
    EVX_CAPTURE_STATUS_FORCE_32BIT = 0x7FFFFFFF
} evx_capture_status_t;

/**
 * @brief Whether the stream is being captured (`cuStreamIsCapturing`).
 *
 * Works for owned and borrowed streams; for a borrowed default stream
 * (NULL, ::EVX_STREAM_LEGACY, ::EVX_STREAM_PER_THREAD) it asks about that
 * stream of the handle's device.
 *
 * @param stream the stream.
 * @param[out] out receives the ::evx_capture_status_t.
 * @return ::EVX_SUCCESS;
 *         ::EVX_ERROR_INVALID_VALUE if @p out is NULL;
 *         ::EVX_ERROR_INVALID_HANDLE if @p stream is not a live stream;
 *         ::EVX_ERROR_NOT_SUPPORTED if the driver lacks
 *         `cuStreamIsCapturing`; a status from the driver (for the legacy
 *         default stream while another stream captures in global mode,
 *         the driver answers ::EVX_ERROR_STREAM_CAPTURE_IMPLICIT).
 *
 * Thread-safe; takes no global lock.
 */
EVX_API evx_status_t evx_stream_get_capture_status(evx_stream_t stream,
                                                   evx_capture_status_t *out);

/** @} */

EVX_END_DECLS

#endif /* EVX_CAPTURE_H */
