/*
 * Copyright 2026 The evx Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * @file evx/common.h
 * @brief Visibility macros, version numbers and the opaque handle types.
 *
 * Every other evx header includes this one. It compiles as strict C99 and
 * as C++11 and later.
 */
#ifndef EVX_COMMON_H
#define EVX_COMMON_H

#include <stddef.h>
#include <stdint.h>

/** @cond EVX_INTERNAL */
#if defined(EVX_BUILDING_LIBRARY) && defined(__GNUC__)
#define EVX_API __attribute__((visibility("default")))
#else
#define EVX_API
#endif

#ifdef __cplusplus
#define EVX_BEGIN_DECLS extern "C" {
#define EVX_END_DECLS }
#else
#define EVX_BEGIN_DECLS
#define EVX_END_DECLS
#endif
/** @endcond */

/** @defgroup evx_version Version
 *  @brief Compile-time and run-time version of the library.
 *
 *  evx follows semantic versioning, and its ABI is what the version speaks
 *  of. Every 1.x library runs every program built against the headers of
 *  1.0.0 or of an older 1.x: CI compares each build's exported ABI with
 *  the one recorded for 1.0.0 (`scripts/abi.sh`, libabigail's abidiff) and
 *  fails on any incompatible change.
 *
 *  A minor version may add, and nothing else:
 *  - new functions;
 *  - new values of an enum, below its `_FORCE_32BIT` sentinel (a program
 *    built against an older header never passes them, and must expect
 *    statuses it does not know by name);
 *  - new fields at the end of a struct that carries `struct_size` (the
 *    option and stats structs); the library reads and writes only the
 *    bytes a caller's `struct_size` covers;
 *  - new flag bits, which older libraries refuse with
 *    ::EVX_ERROR_INVALID_VALUE.
 *
 *  Within 1.x these never change: the name, parameters and return type of
 *  a function; the value of an enumerator (statuses mirror `CUresult`
 *  value for value) and of the macros that stand for values passed through
 *  the ABI (`EVX_STREAM_LEGACY`, `EVX_STREAM_PER_THREAD`,
 *  `EVX_IPC_HANDLE_SIZE`); the layout of a public struct up to its last
 *  published field; the soname `libevx.so.0`; the meaning of a handle, a
 *  status or a flag. A patch version changes no header but to fix its
 *  documentation.
 *  @{ */

/** Major version: changes when the ABI breaks. */
#define EVX_VERSION_MAJOR 1
/** Minor version: changes when the ABI grows compatibly. */
#define EVX_VERSION_MINOR 0
/** Patch version: changes for fixes that leave the ABI alone. */
#define EVX_VERSION_PATCH 0
/** The version as one number: major * 10000 + minor * 100 + patch. */
#define EVX_VERSION_NUMBER \
    (EVX_VERSION_MAJOR * 10000 + EVX_VERSION_MINOR * 100 + EVX_VERSION_PATCH)

/** @} */

EVX_BEGIN_DECLS

/**
 * @brief A status code. Its values are those of `CUresult` in the CUDA 13
 * `cuda.h`, value for value; see ::evx_status_code.
 */
typedef int evx_status_t;

/** @ingroup evx_version
 * @brief The version of the library loaded at run time, as
 * major * 10000 + minor * 100 + patch (compare with ::EVX_VERSION_NUMBER).
 *
 * @return the run-time version number.
 *
 * Needs no driver. Thread-safe.
 */
EVX_API unsigned evx_version(void);

/** @ingroup evx_version
 * @brief The version of the library loaded at run time as "MAJOR.MINOR.PATCH".
 *
 * @return a static string, never NULL.
 *
 * Needs no driver. Thread-safe.
 */
EVX_API const char *evx_version_string(void);

/**
 * @brief An event: a point in a stream's work that can be waited for and timed.
 *
 * Opaque; made by evx_device_create_event() or evx_event_pool_acquire(),
 * ended by evx_event_destroy(). Checked on every call: a zero, forged, stale
 * or destroyed handle gets ::EVX_ERROR_INVALID_HANDLE, never a crash.
 */
typedef struct evx_event_ *evx_event_t;

/**
 * @brief A stream: an ordered queue of GPU work, owned by evx or borrowed.
 *
 * Opaque; made by evx_device_create_stream() (owned: destroying the handle
 * destroys the driver stream) or evx_stream_wrap_external() (borrowed:
 * destroying the handle never touches the driver stream).
 */
typedef struct evx_stream_ *evx_stream_t;

/** @brief A bounded pool of pre-made events of one device and flag set. */
typedef struct evx_event_pool_ *evx_event_pool_t;

/** @brief A timer: a start and a stop mark on streams of one device. */
typedef struct evx_timer_ *evx_timer_t;

/** @brief A timeline: many marks recorded in order, read back in one call. */
typedef struct evx_timeline_ *evx_timeline_t;

EVX_END_DECLS

#endif /* EVX_COMMON_H */
