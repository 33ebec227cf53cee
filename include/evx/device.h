/*
 * Copyright 2026 The evx Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * @file evx/device.h
 * @brief The driver evx runs on, and the devices it sees.
 */
#ifndef EVX_DEVICE_H
#define EVX_DEVICE_H

#include "evx/common.h"

EVX_BEGIN_DECLS

/** @defgroup evx_device Driver and devices
 *  @brief Which driver is loaded, how many devices it has, their limits.
 *
 * evx has no link-time dependency on the CUDA driver. The first call that
 * needs a driver opens one, chosen by the environment variable `EVX_DRIVER`:
 *
 * - unset or empty: the real driver, `libcuda.so.1`;
 * - `host`: the host emulation `libevx-host.so`, looked for next to
 *   libevx itself, in its `host/` folder (the build tree) and in the
 *   directory evx was installed to;
 * - anything else: the path of a library that exports the driver API.
 *
 * The driver is opened with `dlopen` and every entry point is looked up
 * through the versioned `cuGetProcAddress`. If it cannot be opened, every
 * call that needs it returns a status (::EVX_ERROR_NOT_INITIALIZED when no
 * library could be opened, or the driver's own code from `cuInit`, such as
 * ::EVX_ERROR_NO_DEVICE) and evx_last_error_message() names each path that
 * was tried. Nothing aborts. The choice is made once per process.
 *
 * Every call works on the primary context of the device it names (or of the
 * handle it is given), whatever context the calling thread has current, and
 * leaves the caller's current context as it found it. evx retains each
 * device's primary context on first use and keeps it for the life of the
 * process.
 *  @{ */

/** @brief Passed as the device of evx_stream_wrap_external(): read the
 *  device from the stream itself, or from the calling thread's current
 *  context. */
enum evx_device_special {
    /** The device is the stream's own. */
    EVX_DEVICE_FROM_STREAM = -1,
    /** The device of the context current on the calling thread, as CUDA's
     *  runtime takes it for a default stream (so CuPy's and PyTorch's
     *  default streams). For a default stream that context must be its
     *  device's primary context. */
    EVX_DEVICE_CURRENT = -2,
    /** Not a value: forces the enum to 32 bits. */
    EVX_DEVICE_SPECIAL_FORCE_32BIT = 0x7FFFFFFF
};

/**
 * @brief Opens the driver now, if it is not open yet.
 *
 * Every other call opens it when first needed; this call lets a program
 * choose when that happens and see the outcome.
 *
 * @return ::EVX_SUCCESS, ::EVX_ERROR_NOT_INITIALIZED (no library could be
 *         opened, or it lacks an entry point evx needs; the message names
 *         what was tried), or the status of the driver's `cuInit`
 *         (such as ::EVX_ERROR_NO_DEVICE). The same status is returned by
 *         every later call: loading is tried once.
 *
 * Thread-safe.
 */
EVX_API evx_status_t evx_driver_open(void);

/**
 * @brief The version of the loaded driver, as `cuDriverGetVersion` gives
 * it (13000 for CUDA 13.0).
 *
 * @param[out] version receives the version.
 * @return ::EVX_SUCCESS; ::EVX_ERROR_INVALID_VALUE if @p version is NULL;
 *         a driver-loading status (see evx_driver_open()).
 *
 * Thread-safe.
 */
EVX_API evx_status_t evx_driver_get_version(int *version);

/**
 * @brief The path of the driver library evx opened, as it was passed to
 * `dlopen` ("libcuda.so.1" for the real driver).
 *
 * @param[out] path receives a static string, valid for the life of the
 *             process.
 * @return ::EVX_SUCCESS; ::EVX_ERROR_INVALID_VALUE if @p path is NULL;
 *         a driver-loading status (see evx_driver_open()).
 *
 * Thread-safe.
 */
EVX_API evx_status_t evx_driver_get_path(const char **path);

/**
 * @brief Whether the loaded driver is evx's host emulation rather than a
 * GPU driver.
 *
 * @param[out] is_emulation receives 1 for the host emulation, else 0.
 * @return ::EVX_SUCCESS; ::EVX_ERROR_INVALID_VALUE if @p is_emulation is
 *         NULL; a driver-loading status (see evx_driver_open()).
 *
 * Thread-safe.
 */
EVX_API evx_status_t evx_driver_is_emulation(int *is_emulation);

/**
 * @brief The number of devices the driver sees.
 *
 * @param[out] count receives the number of devices.
 * @return ::EVX_SUCCESS; ::EVX_ERROR_INVALID_VALUE if @p count is NULL;
 *         a driver-loading status (see evx_driver_open()).
 *
 * Thread-safe.
 */
EVX_API evx_status_t evx_device_count(int *count);

/**
 * @brief The range of stream priorities the device accepts.
 *
 * Lower numbers mean higher priority, so @p greatest is numerically less
 * than or equal to @p least.
 *
 * @param device a device ordinal, 0 to evx_device_count() - 1.
 * @param[out] least receives the lowest priority (the default). May be NULL
 *             if @p greatest is not.
 * @param[out] greatest receives the highest priority. May be NULL if
 *             @p least is not.
 * @return ::EVX_SUCCESS; ::EVX_ERROR_INVALID_VALUE if both are NULL;
 *         ::EVX_ERROR_INVALID_DEVICE if @p device is out of range;
 *         a driver-loading status; a status from the driver.
 *
 * Thread-safe.
 */
EVX_API evx_status_t evx_device_stream_priority_range(int device, int *least,
                                                      int *greatest);

/**
 * @brief Releases the driver events evx keeps for reuse on a device.
 *
 * evx keeps the driver events of destroyed evx events and reuses them
 * for new ones (see evx_device_create_event()). This call destroys the ones
 * kept for @p device, whichever thread destroyed their events and whichever
 * thread keeps them, with no call of those threads; events in use or in
 * pools are left alone, as is one a call of another thread still holds
 * (it is kept as that call returns). So are the events of the timers
 * another thread keeps for its next evx_device_create_timer(): that
 * thread's trim or exit destroys them (the calling thread's go now). A
 * kept event whose former work is still pending is destroyed too: the
 * driver frees it once that work completes. Only needed to give memory
 * back.
 *
 * It also frees the pinned pages of the device's pool of fence words
 * whose words are all free (see evx/fence.h), after giving back the words
 * of destroyed fences whose work has run, unregisters the pages of
 * destroyed interprocess fences whose work has run, and releases again the
 * fence memory the driver refused to release before. The driver's
 * `cuMemFreeHost` and `cuMemHostUnregister` wait until the work queued on
 * the context has completed: **this call may wait for the device's queued
 * work** when it has such memory to free (behind a queued wait for a
 * value nothing will signal, for good), and while it waits every other
 * driver call of the process waits too: call it where no other thread
 * queues work that waits on a later call (at shutdown, between phases).
 * It is the one evx call that frees pinned memory. With nothing to free it
 * does not wait.
 *
 * Other threads' kept events are reached through a barrier on every
 * thread of the process (membarrier(2), else a page-protection change);
 * where the system offers neither, only the calling thread's are
 * destroyed, and those of the cache all threads share (where a thread's
 * go when it exits).
 *
 * @param device a device ordinal.
 * @return ::EVX_SUCCESS; ::EVX_ERROR_INVALID_DEVICE; a driver-loading
 *         status; a status from the driver (its context calls, or the first
 *         `cuEventDestroy` it refused: the other kept events are destroyed
 *         all the same, and none is kept; else the first `cuMemFreeHost` or
 *         `cuMemHostUnregister` of fence memory it refused: that memory is
 *         kept, and a later trim tries again).
 *
 * Thread-safe. An event create or destroy (or a timer's or timeline's) on
 * another thread may wait while this call destroys what that thread keeps.
 */
EVX_API evx_status_t evx_device_trim(int device);

/** @} */

EVX_END_DECLS

#endif /* EVX_DEVICE_H */
