/*
 * Copyright 2026 The evx Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/**
 * @file evx/status.h
 * @brief Status codes (the values of `CUresult`) and the thread-local message.
 */
#ifndef EVX_STATUS_H
#define EVX_STATUS_H

#include "evx/common.h"

EVX_BEGIN_DECLS

/** @defgroup evx_status Status codes and messages
 *  @brief What every call returns, and what went wrong in words.
 *
 * Every evx call that can fail returns an ::evx_status_t. Its values are the
 * values of `CUresult` in the CUDA 13 `cuda.h`, one ::evx_status_code
 * constant for each `CUDA_ERROR_X`, with the same number: evx defines no code
 * of its own, and when evx itself refuses a call it uses the code the driver
 * would use. A code that a newer driver returns and this header does not
 * name is passed through unchanged.
 *
 * These values are pinned: they never change within a major version, and the
 * build checks them against `cuda.h`.
 *  @{ */

/** @brief The named status codes: `CUresult`, value for value. */
enum evx_status_code {
    EVX_SUCCESS                                          = 0, /**< `CUDA_SUCCESS` */
    EVX_ERROR_INVALID_VALUE                              = 1, /**< `CUDA_ERROR_INVALID_VALUE` */
    EVX_ERROR_OUT_OF_MEMORY                              = 2, /**< `CUDA_ERROR_OUT_OF_MEMORY` */
    EVX_ERROR_NOT_INITIALIZED                            = 3, /**< `CUDA_ERROR_NOT_INITIALIZED` */
    EVX_ERROR_DEINITIALIZED                              = 4, /**< `CUDA_ERROR_DEINITIALIZED` */
    EVX_ERROR_PROFILER_DISABLED                          = 5, /**< `CUDA_ERROR_PROFILER_DISABLED` */
    EVX_ERROR_PROFILER_NOT_INITIALIZED                   = 6, /**< `CUDA_ERROR_PROFILER_NOT_INITIALIZED` */
    EVX_ERROR_PROFILER_ALREADY_STARTED                   = 7, /**< `CUDA_ERROR_PROFILER_ALREADY_STARTED` */
    EVX_ERROR_PROFILER_ALREADY_STOPPED                   = 8, /**< `CUDA_ERROR_PROFILER_ALREADY_STOPPED` */
    EVX_ERROR_STUB_LIBRARY                               = 34, /**< `CUDA_ERROR_STUB_LIBRARY` */
    EVX_ERROR_CALL_REQUIRES_NEWER_DRIVER                 = 36, /**< `CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER` */
    EVX_ERROR_DEVICE_UNAVAILABLE                         = 46, /**< `CUDA_ERROR_DEVICE_UNAVAILABLE` */
    EVX_ERROR_NO_DEVICE                                  = 100, /**< `CUDA_ERROR_NO_DEVICE` */
    EVX_ERROR_INVALID_DEVICE                             = 101, /**< `CUDA_ERROR_INVALID_DEVICE` */
    EVX_ERROR_DEVICE_NOT_LICENSED                        = 102, /**< `CUDA_ERROR_DEVICE_NOT_LICENSED` */
    EVX_ERROR_INVALID_IMAGE                              = 200, /**< `CUDA_ERROR_INVALID_IMAGE` */
    EVX_ERROR_INVALID_CONTEXT                            = 201, /**< `CUDA_ERROR_INVALID_CONTEXT` */
    EVX_ERROR_CONTEXT_ALREADY_CURRENT                    = 202, /**< `CUDA_ERROR_CONTEXT_ALREADY_CURRENT` */
    EVX_ERROR_MAP_FAILED                                 = 205, /**< `CUDA_ERROR_MAP_FAILED` */
    EVX_ERROR_UNMAP_FAILED                               = 206, /**< `CUDA_ERROR_UNMAP_FAILED` */
    EVX_ERROR_ARRAY_IS_MAPPED                            = 207, /**< `CUDA_ERROR_ARRAY_IS_MAPPED` */
    EVX_ERROR_ALREADY_MAPPED                             = 208, /**< `CUDA_ERROR_ALREADY_MAPPED` */
    EVX_ERROR_NO_BINARY_FOR_GPU                          = 209, /**< `CUDA_ERROR_NO_BINARY_FOR_GPU` */
    EVX_ERROR_ALREADY_ACQUIRED                           = 210, /**< `CUDA_ERROR_ALREADY_ACQUIRED` */
    EVX_ERROR_NOT_MAPPED                                 = 211, /**< `CUDA_ERROR_NOT_MAPPED` */
    EVX_ERROR_NOT_MAPPED_AS_ARRAY                        = 212, /**< `CUDA_ERROR_NOT_MAPPED_AS_ARRAY` */
    EVX_ERROR_NOT_MAPPED_AS_POINTER                      = 213, /**< `CUDA_ERROR_NOT_MAPPED_AS_POINTER` */
    EVX_ERROR_ECC_UNCORRECTABLE                          = 214, /**< `CUDA_ERROR_ECC_UNCORRECTABLE` */
    EVX_ERROR_UNSUPPORTED_LIMIT                          = 215, /**< `CUDA_ERROR_UNSUPPORTED_LIMIT` */
    EVX_ERROR_CONTEXT_ALREADY_IN_USE                     = 216, /**< `CUDA_ERROR_CONTEXT_ALREADY_IN_USE` */
    EVX_ERROR_PEER_ACCESS_UNSUPPORTED                    = 217, /**< `CUDA_ERROR_PEER_ACCESS_UNSUPPORTED` */
    EVX_ERROR_INVALID_PTX                                = 218, /**< `CUDA_ERROR_INVALID_PTX` */
    EVX_ERROR_INVALID_GRAPHICS_CONTEXT                   = 219, /**< `CUDA_ERROR_INVALID_GRAPHICS_CONTEXT` */
    EVX_ERROR_NVLINK_UNCORRECTABLE                       = 220, /**< `CUDA_ERROR_NVLINK_UNCORRECTABLE` */
    EVX_ERROR_JIT_COMPILER_NOT_FOUND                     = 221, /**< `CUDA_ERROR_JIT_COMPILER_NOT_FOUND` */
    EVX_ERROR_UNSUPPORTED_PTX_VERSION                    = 222, /**< `CUDA_ERROR_UNSUPPORTED_PTX_VERSION` */
    EVX_ERROR_JIT_COMPILATION_DISABLED                   = 223, /**< `CUDA_ERROR_JIT_COMPILATION_DISABLED` */
    EVX_ERROR_UNSUPPORTED_EXEC_AFFINITY                  = 224, /**< `CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY` */
    EVX_ERROR_UNSUPPORTED_DEVSIDE_SYNC                   = 225, /**< `CUDA_ERROR_UNSUPPORTED_DEVSIDE_SYNC` */
    EVX_ERROR_CONTAINED                                  = 226, /**< `CUDA_ERROR_CONTAINED` */
    EVX_ERROR_INVALID_SOURCE                             = 300, /**< `CUDA_ERROR_INVALID_SOURCE` */
    EVX_ERROR_FILE_NOT_FOUND                             = 301, /**< `CUDA_ERROR_FILE_NOT_FOUND` */
    EVX_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND             = 302, /**< `CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND` */
    EVX_ERROR_SHARED_OBJECT_INIT_FAILED                  = 303, /**< `CUDA_ERROR_SHARED_OBJECT_INIT_FAILED` */
    EVX_ERROR_OPERATING_SYSTEM                           = 304, /**< `CUDA_ERROR_OPERATING_SYSTEM` */
    EVX_ERROR_INVALID_HANDLE                             = 400, /**< `CUDA_ERROR_INVALID_HANDLE` */
    EVX_ERROR_ILLEGAL_STATE                              = 401, /**< `CUDA_ERROR_ILLEGAL_STATE` */
    EVX_ERROR_LOSSY_QUERY                                = 402, /**< `CUDA_ERROR_LOSSY_QUERY` */
    EVX_ERROR_NOT_FOUND                                  = 500, /**< `CUDA_ERROR_NOT_FOUND` */
    EVX_ERROR_NOT_READY                                  = 600, /**< `CUDA_ERROR_NOT_READY` */
    EVX_ERROR_ILLEGAL_ADDRESS                            = 700, /**< `CUDA_ERROR_ILLEGAL_ADDRESS` */
    EVX_ERROR_LAUNCH_OUT_OF_RESOURCES                    = 701, /**< `CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES` */
    EVX_ERROR_LAUNCH_TIMEOUT                             = 702, /**< `CUDA_ERROR_LAUNCH_TIMEOUT` */
    EVX_ERROR_LAUNCH_INCOMPATIBLE_TEXTURING              = 703, /**< `CUDA_ERROR_LAUNCH_INCOMPATIBLE_TEXTURING` */
    EVX_ERROR_PEER_ACCESS_ALREADY_ENABLED                = 704, /**< `CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED` */
    EVX_ERROR_PEER_ACCESS_NOT_ENABLED                    = 705, /**< `CUDA_ERROR_PEER_ACCESS_NOT_ENABLED` */
    EVX_ERROR_PRIMARY_CONTEXT_ACTIVE                     = 708, /**< `CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE` */
    EVX_ERROR_CONTEXT_IS_DESTROYED                       = 709, /**< `CUDA_ERROR_CONTEXT_IS_DESTROYED` */
    EVX_ERROR_ASSERT                                     = 710, /**< `CUDA_ERROR_ASSERT` */
    EVX_ERROR_TOO_MANY_PEERS                             = 711, /**< `CUDA_ERROR_TOO_MANY_PEERS` */
    EVX_ERROR_HOST_MEMORY_ALREADY_REGISTERED             = 712, /**< `CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED` */
    EVX_ERROR_HOST_MEMORY_NOT_REGISTERED                 = 713, /**< `CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED` */
    EVX_ERROR_HARDWARE_STACK_ERROR                       = 714, /**< `CUDA_ERROR_HARDWARE_STACK_ERROR` */
    EVX_ERROR_ILLEGAL_INSTRUCTION                        = 715, /**< `CUDA_ERROR_ILLEGAL_INSTRUCTION` */
    EVX_ERROR_MISALIGNED_ADDRESS                         = 716, /**< `CUDA_ERROR_MISALIGNED_ADDRESS` */
    EVX_ERROR_INVALID_ADDRESS_SPACE                      = 717, /**< `CUDA_ERROR_INVALID_ADDRESS_SPACE` */
    EVX_ERROR_INVALID_PC                                 = 718, /**< `CUDA_ERROR_INVALID_PC` */
    EVX_ERROR_LAUNCH_FAILED                              = 719, /**< `CUDA_ERROR_LAUNCH_FAILED` */
    EVX_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE               = 720, /**< `CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE` */
    EVX_ERROR_TENSOR_MEMORY_LEAK                         = 721, /**< `CUDA_ERROR_TENSOR_MEMORY_LEAK` */
    EVX_ERROR_NOT_PERMITTED                              = 800, /**< `CUDA_ERROR_NOT_PERMITTED` */
    EVX_ERROR_NOT_SUPPORTED                              = 801, /**< `CUDA_ERROR_NOT_SUPPORTED` */
    EVX_ERROR_SYSTEM_NOT_READY                           = 802, /**< `CUDA_ERROR_SYSTEM_NOT_READY` */
    EVX_ERROR_SYSTEM_DRIVER_MISMATCH                     = 803, /**< `CUDA_ERROR_SYSTEM_DRIVER_MISMATCH` */
    EVX_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE             = 804, /**< `CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE` */
    EVX_ERROR_MPS_CONNECTION_FAILED                      = 805, /**< `CUDA_ERROR_MPS_CONNECTION_FAILED` */
    EVX_ERROR_MPS_RPC_FAILURE                            = 806, /**< `CUDA_ERROR_MPS_RPC_FAILURE` */
    EVX_ERROR_MPS_SERVER_NOT_READY                       = 807, /**< `CUDA_ERROR_MPS_SERVER_NOT_READY` */
    EVX_ERROR_MPS_MAX_CLIENTS_REACHED                    = 808, /**< `CUDA_ERROR_MPS_MAX_CLIENTS_REACHED` */
    EVX_ERROR_MPS_MAX_CONNECTIONS_REACHED                = 809, /**< `CUDA_ERROR_MPS_MAX_CONNECTIONS_REACHED` */
    EVX_ERROR_MPS_CLIENT_TERMINATED                      = 810, /**< `CUDA_ERROR_MPS_CLIENT_TERMINATED` */
    EVX_ERROR_CDP_NOT_SUPPORTED                          = 811, /**< `CUDA_ERROR_CDP_NOT_SUPPORTED` */
    EVX_ERROR_CDP_VERSION_MISMATCH                       = 812, /**< `CUDA_ERROR_CDP_VERSION_MISMATCH` */
    EVX_ERROR_STREAM_CAPTURE_UNSUPPORTED                 = 900, /**< `CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED` */
    EVX_ERROR_STREAM_CAPTURE_INVALIDATED                 = 901, /**< `CUDA_ERROR_STREAM_CAPTURE_INVALIDATED` */
    EVX_ERROR_STREAM_CAPTURE_MERGE                       = 902, /**< `CUDA_ERROR_STREAM_CAPTURE_MERGE` */
    EVX_ERROR_STREAM_CAPTURE_UNMATCHED                   = 903, /**< `CUDA_ERROR_STREAM_CAPTURE_UNMATCHED` */
    EVX_ERROR_STREAM_CAPTURE_UNJOINED                    = 904, /**< `CUDA_ERROR_STREAM_CAPTURE_UNJOINED` */
    EVX_ERROR_STREAM_CAPTURE_ISOLATION                   = 905, /**< `CUDA_ERROR_STREAM_CAPTURE_ISOLATION` */
    EVX_ERROR_STREAM_CAPTURE_IMPLICIT                    = 906, /**< `CUDA_ERROR_STREAM_CAPTURE_IMPLICIT` */
    EVX_ERROR_CAPTURED_EVENT                             = 907, /**< `CUDA_ERROR_CAPTURED_EVENT` */
    EVX_ERROR_STREAM_CAPTURE_WRONG_THREAD                = 908, /**< `CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD` */
    EVX_ERROR_TIMEOUT                                    = 909, /**< `CUDA_ERROR_TIMEOUT` */
    EVX_ERROR_GRAPH_EXEC_UPDATE_FAILURE                  = 910, /**< `CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE` */
    EVX_ERROR_EXTERNAL_DEVICE                            = 911, /**< `CUDA_ERROR_EXTERNAL_DEVICE` */
    EVX_ERROR_INVALID_CLUSTER_SIZE                       = 912, /**< `CUDA_ERROR_INVALID_CLUSTER_SIZE` */
    EVX_ERROR_FUNCTION_NOT_LOADED                        = 913, /**< `CUDA_ERROR_FUNCTION_NOT_LOADED` */
    EVX_ERROR_INVALID_RESOURCE_TYPE                      = 914, /**< `CUDA_ERROR_INVALID_RESOURCE_TYPE` */
    EVX_ERROR_INVALID_RESOURCE_CONFIGURATION             = 915, /**< `CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION` */
    EVX_ERROR_KEY_ROTATION                               = 916, /**< `CUDA_ERROR_KEY_ROTATION` */
    EVX_ERROR_UNKNOWN                                    = 999, /**< `CUDA_ERROR_UNKNOWN` */
    /** Not a status: forces the enum to 32 bits. */
    EVX_STATUS_FORCE_32BIT                               = 0x7FFFFFFF
};

/**
 * @brief The code's name, such as "EVX_ERROR_INVALID_HANDLE".
 *
 * @param status any value, also one that no driver returns.
 * @return a static string, never NULL: "EVX_STATUS_UNRECOGNIZED" for a code
 *         this version does not name.
 *
 * Needs no driver. Thread-safe.
 */
EVX_API const char *evx_status_name(evx_status_t status);

/**
 * @brief A one-line description of the code, in words.
 *
 * @param status any value, also one that no driver returns.
 * @return a static string, never NULL; for a code this version does not
 *         name, a sentence saying so.
 *
 * Needs no driver. Thread-safe.
 */
EVX_API const char *evx_status_string(evx_status_t status);

/**
 * @brief What the last failing evx call on this thread did wrong, in words.
 *
 * The message names the call, the handle, argument or device at fault and,
 * for driver loading, each path that was tried. It is kept per thread and
 * describes the most recent call on this thread that returned a status
 * other than ::EVX_SUCCESS (or ::EVX_ERROR_NOT_READY, which is an answer,
 * not a failure); successful calls leave it unchanged.
 *
 * @return a string owned by the calling thread, valid until its next evx
 *         call; "" when no call on this thread has failed. Never NULL.
 *
 * Needs no driver. Thread-safe (each thread sees its own message).
 */
EVX_API const char *evx_last_error_message(void);

/**
 * @brief The status of the last failing evx call on this thread.
 *
 * @return that status, or ::EVX_SUCCESS when none has failed or the message
 *         was cleared.
 *
 * Needs no driver. Thread-safe (per thread).
 */
EVX_API evx_status_t evx_last_error(void);

/**
 * @brief Forgets this thread's last error: evx_last_error() then returns
 * ::EVX_SUCCESS and evx_last_error_message() "".
 *
 * Needs no driver. Thread-safe (per thread).
 */
EVX_API void evx_clear_last_error(void);

/** @} */

EVX_END_DECLS

#endif /* EVX_STATUS_H */
