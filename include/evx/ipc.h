/*
 * Copyright 2026 The evx Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * @file evx/ipc.h
 * @brief Events shared between processes (CUDA IPC event handles).
 */
#ifndef EVX_IPC_H
#define EVX_IPC_H

#include "evx/common.h"

EVX_BEGIN_DECLS

/** @defgroup evx_ipc Interprocess events
 *  @brief Export an event to another process and open it there.
 *
 * An event made with ::EVX_EVENT_INTERPROCESS (and, as the driver requires,
 * ::EVX_EVENT_DISABLE_TIMING) can be exported as an
 * ::evx_ipc_event_handle_t: 64 opaque bytes, those of the driver's
 * `CUipcEventHandle`, which the caller sends to another process by any
 * means (a pipe, a socket, shared memory). That process opens it with
 * evx_device_open_ipc_event() and gets an ::evx_event_t of its own for the
 * same driver event: either process may record it, query it, synchronize
 * on it, and make its streams wait for it; a record in one is seen by the
 * other. An opened event has no timing: evx_event_elapsed_time() refuses
 * it.
 *
 * The driver opens a handle only in a process other than the one that
 * exported it: in the exporting process it answers
 * ::EVX_ERROR_INVALID_CONTEXT. Using an opened event after the exporting
 * process destroyed its event is undefined (as in CUDA): keep the exported
 * event alive while peers use it.
 *
 * evx never reuses the driver event of an ::EVX_EVENT_INTERPROCESS event:
 * evx_event_destroy() destroys it, so a handle that left the process never
 * names a driver event that another evx event owns later. Pools refuse
 * ::EVX_EVENT_INTERPROCESS. Opened events are not reused either: destroying
 * one closes it (`cuEventDestroy`).
 *
 * No context needs to be current: evx makes the device's primary context
 * current around the driver calls and leaves the caller's as it was.
 *  @{ */

/** @brief The size of an IPC event handle, in bytes (`CU_IPC_HANDLE_SIZE`). */
#define EVX_IPC_HANDLE_SIZE 64

/** @brief An exported event: the bytes of the driver's `CUipcEventHandle`.
 *  Plain data: copy it, send it, compare it with `memcmp`. */
typedef struct evx_ipc_event_handle {
    /** Opaque bytes, meaningful only to the driver that made them. */
    unsigned char reserved[EVX_IPC_HANDLE_SIZE];
} evx_ipc_event_handle_t;

/**
 * @brief Exports an event for other processes (`cuIpcGetEventHandle`).
 *
 * Once an event is exported, other processes may record it, so evx asks
 * the driver about it from then on (a never-recorded event is otherwise
 * answered by evx itself).
 *
 * @param event an event made with ::EVX_EVENT_INTERPROCESS |
 *        ::EVX_EVENT_DISABLE_TIMING.
 * @param[out] out receives the handle.
 * @return ::EVX_SUCCESS;
 *         ::EVX_ERROR_INVALID_VALUE if @p out is NULL;
 *         ::EVX_ERROR_INVALID_HANDLE if @p event is not a live event, or
 *         was made without ::EVX_EVENT_INTERPROCESS (refused before the
 *         driver, with a message that says so);
 *         ::EVX_ERROR_NOT_SUPPORTED if the driver lacks
 *         `cuIpcGetEventHandle`; a status from the driver.
 *
 * Thread-safe.
 */
EVX_API evx_status_t evx_event_get_ipc_handle(evx_event_t event,
                                              evx_ipc_event_handle_t *out);

/**
 * @brief Opens an event exported by another process
 * (`cuIpcOpenEventHandle`), as a new evx event of a device.
 *
 * The new event reads ::EVX_EVENT_DISABLE_TIMING | ::EVX_EVENT_INTERPROCESS
 * from evx_event_get_flags(). It can be recorded on streams of @p device,
 * waited for, queried and synchronized; evx_event_elapsed_time() refuses
 * it (timing is off); evx_event_destroy() closes it. Opening the same
 * handle twice gives two evx events.
 *
 * @param device the device to open the event on, 0 to
 *        evx_device_count() - 1.
 * @param handle the handle, from evx_event_get_ipc_handle() in another
 *        process.
 * @param[out] out receives the new event.
 * @return ::EVX_SUCCESS;
 *         ::EVX_ERROR_INVALID_VALUE if @p handle or @p out is NULL;
 *         ::EVX_ERROR_INVALID_DEVICE if @p device is out of range;
 *         ::EVX_ERROR_INVALID_CONTEXT when the handle was exported by this
 *         same process (the driver's answer; the message says so);
 *         ::EVX_ERROR_NOT_SUPPORTED if the driver lacks
 *         `cuIpcOpenEventHandle`; ::EVX_ERROR_OUT_OF_MEMORY; a
 *         driver-loading status; another status from the driver (a handle
 *         that names no live event, for instance).
 *         On failure `*out` is set to NULL when @p out is not NULL.
 *
 * Thread-safe.
 */
EVX_API evx_status_t evx_device_open_ipc_event(int device,
                                               const evx_ipc_event_handle_t *handle,
                                               evx_event_t *out);

/** @} */

EVX_END_DECLS

#endif /* EVX_IPC_H */
