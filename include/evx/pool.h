/*
 * Copyright 2026 The evx Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * @file evx/pool.h
 * @brief Bounded pools of pre-made events, for engines that want fixed
 * resources.
 */
#ifndef EVX_POOL_H
#define EVX_POOL_H

#include "evx/common.h"

EVX_BEGIN_DECLS

/** @defgroup evx_pool Event pools
 *  @brief Pre-made events of one device and flag set, handed out and taken
 *  back without reaching the driver.
 *
 * evx_device_create_event() already reuses driver events. A pool adds a
 * bound and a warm-up: it never holds more than its capacity, it can make
 * its events ahead of time, and when every event is handed out it says so
 * with a status instead of blocking or growing.
 *
 * An event acquired from a pool is an ordinary ::evx_event_t: every event
 * call accepts it. Each acquire gives a new handle value, so a handle kept
 * after release stays dead. Releasing an event whose recorded work is still
 * pending is allowed: the pool hands its driver event out again only once
 * that work has completed; until then it counts as pending. An event
 * released (or destroyed) while another thread is inside a call on it
 * comes back as that call returns: nothing waits for a later call of any
 * thread, and acquire fails only when the whole capacity is handed out or
 * pending.
 *
 * All calls are thread-safe.
 *  @{ */

/** @brief Options of evx_device_create_event_pool(). Initialize with
 *  ::EVX_EVENT_POOL_OPTIONS_INIT (or zero it and set `struct_size` to
 *  `sizeof(evx_event_pool_options_t)`), then set the fields.
 *
 *  Later versions may add fields at the end. evx accepts any `struct_size`
 *  from the size first published (16 bytes: the fields below) up, reads
 *  only the fields it covers and gives the others their defaults (zero),
 *  so a program built against this header keeps working with a later
 *  library, and one built against a later header with this library. */
typedef struct evx_event_pool_options {
    /** `sizeof(evx_event_pool_options_t)` as the caller compiled it. */
    uint32_t struct_size;
    /** ::evx_event_flags of every event in the pool.
     *  ::EVX_EVENT_INTERPROCESS is refused. */
    uint32_t event_flags;
    /** Most events the pool holds, handed out or not; 1 or more. */
    uint32_t capacity;
    /** Events to make now, up to @c capacity. */
    uint32_t prewarm;
} evx_event_pool_options_t;

/** @brief An initializer of ::evx_event_pool_options_t: `struct_size` set
 *  to this header's size, every other field zero. A constant expression,
 *  valid in C89 and C++:
 *  `evx_event_pool_options_t o = EVX_EVENT_POOL_OPTIONS_INIT;` */
#define EVX_EVENT_POOL_OPTIONS_INIT \
    { (uint32_t)sizeof(evx_event_pool_options_t), 0u, 0u, 0u }

/** @brief What a pool holds, from evx_event_pool_get_stats(). Initialize
 *  with ::EVX_EVENT_POOL_STATS_INIT (or set `struct_size` to
 *  `sizeof(evx_event_pool_stats_t)`).
 *
 *  evx accepts any `struct_size` from the size first published (48 bytes:
 *  the fields below) up, and writes only the bytes it covers: never past
 *  the caller's struct, and never the fields it does not know. */
typedef struct evx_event_pool_stats {
    /** `sizeof(evx_event_pool_stats_t)` as the caller compiled it; set by
     *  the caller before the call. */
    uint32_t struct_size;
    /** The pool's capacity. */
    uint32_t capacity;
    /** Driver events ready to hand out now. */
    uint32_t idle;
    /** Events handed out and not yet released (or destroyed). A released
     *  event leaves this count once the release and every call other
     *  threads were making on it have returned. */
    uint32_t in_use;
    /** Released events whose recorded work had not completed when last
     *  looked at; they become idle once it has. */
    uint32_t pending;
    /** Driver events the pool has made in its life, counting the new driver
     *  event that replaces a reused one before evx_event_get_native() or
     *  evx_stream_wait_event() hands it out (see evx_event_get_native()). */
    uint64_t created_total;
    /** Successful acquires in the pool's life. */
    uint64_t acquired_total;
    /** Acquires refused because the pool was exhausted. */
    uint64_t exhausted_total;
} evx_event_pool_stats_t;

/** @brief An initializer of ::evx_event_pool_stats_t: `struct_size` set to
 *  this header's size, every other field zero. A constant expression, valid
 *  in C89 and C++. */
#define EVX_EVENT_POOL_STATS_INIT \
    { (uint32_t)sizeof(evx_event_pool_stats_t), 0u, 0u, 0u, 0u, 0u, 0u, 0u }

/**
 * @brief Creates a pool of events of a device.
 *
 * Named like every call that makes an object of a device
 * (evx_device_create_event(), evx_device_create_stream(),
 * evx_device_create_timer(), evx_device_create_timeline()): the device
 * first, as a plain argument, and the pool's settings in @p options.
 *
 * @param device the device the pool's events belong to.
 * @param options the pool's event flags, capacity and warm-up.
 * @param[out] pool receives the pool.
 * @return ::EVX_SUCCESS;
 *         ::EVX_ERROR_INVALID_VALUE if @p options or @p pool is NULL,
 *         `struct_size` is below the first published size (the message
 *         gives both), the flags are invalid for an event
 *         or include ::EVX_EVENT_INTERPROCESS, the capacity is 0, or
 *         `prewarm` exceeds it;
 *         ::EVX_ERROR_INVALID_DEVICE; ::EVX_ERROR_OUT_OF_MEMORY; a status
 *         from the driver while warming up (nothing is kept then).
 *
 * Thread-safe.
 */
EVX_API evx_status_t evx_device_create_event_pool(
    int device, const evx_event_pool_options_t *options, evx_event_pool_t *pool);

/**
 * @brief Destroys a pool and its idle driver events.
 *
 * Events still handed out stay valid; destroying them later frees their
 * driver events.
 *
 * @param pool the pool.
 * @return ::EVX_SUCCESS; ::EVX_ERROR_INVALID_HANDLE; the status of the
 *         first `cuEventDestroy` of the pool's idle or pending events that the
 *         driver refused (the handle is dead all the same, and the other
 *         events are destroyed).
 *
 * Thread-safe.
 */
EVX_API evx_status_t evx_event_pool_destroy(evx_event_pool_t pool);

/**
 * @brief Makes driver events now until the pool holds @p count idle ones
 * or is full.
 *
 * @param pool the pool.
 * @param count idle events wanted.
 * @return ::EVX_SUCCESS; ::EVX_ERROR_INVALID_HANDLE;
 *         ::EVX_ERROR_INVALID_VALUE if @p count exceeds the capacity;
 *         a status from the driver.
 *
 * Thread-safe.
 */
EVX_API evx_status_t evx_event_pool_prewarm(evx_event_pool_t pool,
                                            uint32_t count);

/**
 * @brief Hands out an event from the pool, never recorded.
 *
 * Takes an idle event, or makes one if the pool holds fewer than its
 * capacity. Never blocks.
 *
 * @param pool the pool.
 * @param[out] event receives the event.
 * @return ::EVX_SUCCESS; ::EVX_ERROR_INVALID_VALUE if @p event is NULL;
 *         ::EVX_ERROR_INVALID_HANDLE;
 *         ::EVX_ERROR_OUT_OF_MEMORY when the pool is exhausted: all of its
 *         capacity is handed out or pending (the message gives the counts);
 *         a status from the driver.
 *
 * Thread-safe.
 */
EVX_API evx_status_t evx_event_pool_acquire(evx_event_pool_t pool,
                                            evx_event_t *event);

/**
 * @brief Gives an event back to the pool it came from; its handle is dead
 * from now on. The same as evx_event_destroy(), but checks that the event
 * came from @p pool.
 *
 * The event counts as idle or pending (not in use) once this call and
 * every call another thread was making on the event have returned: when
 * one is inside a call on it (a synchronize, say), the event comes back as
 * that call returns, with no later call of any thread.
 *
 * @param pool the pool.
 * @param event an event acquired from @p pool.
 * @return ::EVX_SUCCESS; ::EVX_ERROR_INVALID_HANDLE if either handle is not
 *         live; ::EVX_ERROR_INVALID_VALUE if @p event came from elsewhere
 *         (it stays live).
 *
 * Thread-safe.
 */
EVX_API evx_status_t evx_event_pool_release(evx_event_pool_t pool,
                                            evx_event_t event);

/**
 * @brief What the pool holds and has done.
 *
 * @param pool the pool.
 * @param[in,out] stats its `struct_size` set by the caller; filled up to
 *        that size (or up to this library's size, if larger), nothing past
 *        it written; `struct_size` itself is left as set.
 * @return ::EVX_SUCCESS; ::EVX_ERROR_INVALID_VALUE if @p stats is NULL or
 *         its `struct_size` is below the first published size (the message
 *         gives both); ::EVX_ERROR_INVALID_HANDLE.
 *
 * Thread-safe.
 */
EVX_API evx_status_t evx_event_pool_get_stats(evx_event_pool_t pool,
                                              evx_event_pool_stats_t *stats);

/** @} */

EVX_END_DECLS

#endif /* EVX_POOL_H */
