// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//
// Names and one-line descriptions of the status codes, and a compile-time
// check of every value against cuda.h: EVX_X must equal CUDA_X.
#include <cuda.h>

#include "evx/status.h"

// X(suffix, description): EVX_<suffix> and CUDA_<suffix> for every code.
// clang-format off
#define EVX_STATUS_LIST(X) \
    X(SUCCESS, "The call succeeded.") \
    X(ERROR_INVALID_VALUE, "An argument is out of range, NULL where a pointer is required, or has unknown flag bits.") \
    X(ERROR_OUT_OF_MEMORY, "Memory could not be allocated, or a bounded resource (such as an event pool) is used up.") \
    X(ERROR_NOT_INITIALIZED, "The driver has not been initialized, or could not be opened.") \
    X(ERROR_DEINITIALIZED, "The driver is shutting down and takes no more work.") \
    X(ERROR_PROFILER_DISABLED, "Profiling is turned off for this process.") \
    X(ERROR_PROFILER_NOT_INITIALIZED, "The profiler was not initialized (an obsolete code).") \
    X(ERROR_PROFILER_ALREADY_STARTED, "Profiling had already been started (an obsolete code).") \
    X(ERROR_PROFILER_ALREADY_STOPPED, "Profiling had already been stopped (an obsolete code).") \
    X(ERROR_STUB_LIBRARY, "The driver library that was loaded is a stub with no real driver behind it.") \
    X(ERROR_CALL_REQUIRES_NEWER_DRIVER, "The call needs a newer driver than the one installed.") \
    X(ERROR_DEVICE_UNAVAILABLE, "The device cannot be used now: it is busy, or its compute mode forbids this use.") \
    X(ERROR_NO_DEVICE, "The driver found no usable CUDA device.") \
    X(ERROR_INVALID_DEVICE, "The device ordinal names no device the driver sees, or the device does not suit the call.") \
    X(ERROR_DEVICE_NOT_LICENSED, "The device has no license for this feature.") \
    X(ERROR_INVALID_IMAGE, "A module image is not valid for the device.") \
    X(ERROR_INVALID_CONTEXT, "No valid context is current, or the context given is not valid.") \
    X(ERROR_CONTEXT_ALREADY_CURRENT, "The context is already current to this thread (an obsolete code).") \
    X(ERROR_MAP_FAILED, "Mapping or registering a resource failed.") \
    X(ERROR_UNMAP_FAILED, "Unmapping or unregistering a resource failed.") \
    X(ERROR_ARRAY_IS_MAPPED, "The array is mapped, so it cannot be destroyed now.") \
    X(ERROR_ALREADY_MAPPED, "The resource is mapped already.") \
    X(ERROR_NO_BINARY_FOR_GPU, "The module holds no kernel image this device can run.") \
    X(ERROR_ALREADY_ACQUIRED, "The resource has been acquired already.") \
    X(ERROR_NOT_MAPPED, "The resource is not mapped.") \
    X(ERROR_NOT_MAPPED_AS_ARRAY, "The mapped resource cannot be used as an array.") \
    X(ERROR_NOT_MAPPED_AS_POINTER, "The mapped resource cannot be used as a pointer.") \
    X(ERROR_ECC_UNCORRECTABLE, "Device memory reported an error that ECC could not correct.") \
    X(ERROR_UNSUPPORTED_LIMIT, "The device does not support this limit.") \
    X(ERROR_CONTEXT_ALREADY_IN_USE, "The context is in use by another thread already.") \
    X(ERROR_PEER_ACCESS_UNSUPPORTED, "These two devices cannot access each other's memory.") \
    X(ERROR_INVALID_PTX, "PTX code failed to compile.") \
    X(ERROR_INVALID_GRAPHICS_CONTEXT, "The graphics interoperability context is not valid.") \
    X(ERROR_NVLINK_UNCORRECTABLE, "An NVLink link reported an error that could not be corrected.") \
    X(ERROR_JIT_COMPILER_NOT_FOUND, "The library of the PTX just-in-time compiler was not found.") \
    X(ERROR_UNSUPPORTED_PTX_VERSION, "The PTX was written for a version this driver's compiler does not support.") \
    X(ERROR_JIT_COMPILATION_DISABLED, "Just-in-time compilation of PTX is turned off.") \
    X(ERROR_UNSUPPORTED_EXEC_AFFINITY, "The device does not support the execution affinity asked for.") \
    X(ERROR_UNSUPPORTED_DEVSIDE_SYNC, "The code synchronizes on the device side, which this device cannot do.") \
    X(ERROR_CONTAINED, "A fault on the device was contained to this process's work; the context cannot be used any more.") \
    X(ERROR_INVALID_SOURCE, "The source given to a compiler is not valid.") \
    X(ERROR_FILE_NOT_FOUND, "A file named in the call does not exist.") \
    X(ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND, "A symbol of a shared object could not be resolved.") \
    X(ERROR_SHARED_OBJECT_INIT_FAILED, "A shared object failed to initialize.") \
    X(ERROR_OPERATING_SYSTEM, "A call to the operating system failed.") \
    X(ERROR_INVALID_HANDLE, "A handle is not a live object of the kind the call expects, or cannot be used in this call.") \
    X(ERROR_ILLEGAL_STATE, "The object is not in a state that allows this call.") \
    X(ERROR_LOSSY_QUERY, "Answering the query would lose information.") \
    X(ERROR_NOT_FOUND, "A named symbol or object does not exist.") \
    X(ERROR_NOT_READY, "The work is still pending: an answer, not a failure.") \
    X(ERROR_ILLEGAL_ADDRESS, "A kernel touched an invalid memory address; the context cannot be used any more.") \
    X(ERROR_LAUNCH_OUT_OF_RESOURCES, "A launch asks for more resources (such as registers) than the device has.") \
    X(ERROR_LAUNCH_TIMEOUT, "A kernel ran past the time limit and was stopped.") \
    X(ERROR_LAUNCH_INCOMPATIBLE_TEXTURING, "A launch used a texturing mode that does not fit the kernel.") \
    X(ERROR_PEER_ACCESS_ALREADY_ENABLED, "Access to the peer device is enabled already.") \
    X(ERROR_PEER_ACCESS_NOT_ENABLED, "Access to the peer device has not been enabled.") \
    X(ERROR_PRIMARY_CONTEXT_ACTIVE, "The device's primary context is active already.") \
    X(ERROR_CONTEXT_IS_DESTROYED, "The context was destroyed, or can no longer be used.") \
    X(ERROR_ASSERT, "An assertion in device code failed.") \
    X(ERROR_TOO_MANY_PEERS, "The device cannot enable access to any more peers.") \
    X(ERROR_HOST_MEMORY_ALREADY_REGISTERED, "The host memory range is registered already.") \
    X(ERROR_HOST_MEMORY_NOT_REGISTERED, "The host memory range is not registered.") \
    X(ERROR_HARDWARE_STACK_ERROR, "A kernel hit an error of the hardware call stack.") \
    X(ERROR_ILLEGAL_INSTRUCTION, "A kernel ran an instruction that is not allowed.") \
    X(ERROR_MISALIGNED_ADDRESS, "A kernel used a memory address that is not suitably aligned.") \
    X(ERROR_INVALID_ADDRESS_SPACE, "A kernel used an address of the wrong address space.") \
    X(ERROR_INVALID_PC, "A kernel's program counter went to an invalid place.") \
    X(ERROR_LAUNCH_FAILED, "A kernel failed while it ran.") \
    X(ERROR_COOPERATIVE_LAUNCH_TOO_LARGE, "A cooperative launch has more blocks than the device can run at once.") \
    X(ERROR_TENSOR_MEMORY_LEAK, "A kernel ended without giving back its tensor memory.") \
    X(ERROR_NOT_PERMITTED, "The operation is not allowed.") \
    X(ERROR_NOT_SUPPORTED, "The operation is not supported on this system or device.") \
    X(ERROR_SYSTEM_NOT_READY, "The system is not ready to run CUDA work.") \
    X(ERROR_SYSTEM_DRIVER_MISMATCH, "The versions of the display driver and the CUDA driver do not match.") \
    X(ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE, "The forward-compatible driver does not support this device.") \
    X(ERROR_MPS_CONNECTION_FAILED, "Connecting to the MPS server failed.") \
    X(ERROR_MPS_RPC_FAILURE, "A remote call to the MPS server failed.") \
    X(ERROR_MPS_SERVER_NOT_READY, "The MPS server is not ready to take requests.") \
    X(ERROR_MPS_MAX_CLIENTS_REACHED, "The MPS server has as many clients as it allows.") \
    X(ERROR_MPS_MAX_CONNECTIONS_REACHED, "The MPS server has as many connections as it allows.") \
    X(ERROR_MPS_CLIENT_TERMINATED, "The MPS server ended this client.") \
    X(ERROR_CDP_NOT_SUPPORTED, "Dynamic parallelism is not supported for this code.") \
    X(ERROR_CDP_VERSION_MISMATCH, "The code and the driver use different versions of dynamic parallelism.") \
    X(ERROR_STREAM_CAPTURE_UNSUPPORTED, "The operation is not allowed while its stream is being captured.") \
    X(ERROR_STREAM_CAPTURE_INVALIDATED, "An earlier error invalidated the stream capture.") \
    X(ERROR_STREAM_CAPTURE_MERGE, "The operation would join two separate stream captures.") \
    X(ERROR_STREAM_CAPTURE_UNMATCHED, "The capture was not begun on this stream.") \
    X(ERROR_STREAM_CAPTURE_UNJOINED, "The capture forked into a stream that was never joined back.") \
    X(ERROR_STREAM_CAPTURE_ISOLATION, "The operation would make the capture depend on work outside it.") \
    X(ERROR_STREAM_CAPTURE_IMPLICIT, "The operation would synchronize with the legacy default stream during a capture.") \
    X(ERROR_CAPTURED_EVENT, "The event was recorded inside a stream capture and cannot be used this way.") \
    X(ERROR_STREAM_CAPTURE_WRONG_THREAD, "A thread-local stream capture was used from another thread.") \
    X(ERROR_TIMEOUT, "A wait ran out of time.") \
    X(ERROR_GRAPH_EXEC_UPDATE_FAILURE, "The executable graph could not be updated from the graph given.") \
    X(ERROR_EXTERNAL_DEVICE, "An error on an external device (through interoperability) stopped the work.") \
    X(ERROR_INVALID_CLUSTER_SIZE, "The thread block cluster size is not valid.") \
    X(ERROR_FUNCTION_NOT_LOADED, "The function is not loaded yet.") \
    X(ERROR_INVALID_RESOURCE_TYPE, "The resource is of a type the call cannot use.") \
    X(ERROR_INVALID_RESOURCE_CONFIGURATION, "The resource is configured in a way the call cannot use.") \
    X(ERROR_KEY_ROTATION, "Work was interrupted by a rotation of encryption keys.") \
    X(ERROR_UNKNOWN, "An error the driver could not classify.") \
    /* end of list */
// clang-format on

#define EVX_CHECK(suffix, text)                                                 \
    static_assert(static_cast<int>(EVX_##suffix) == static_cast<int>(CUDA_##suffix), \
                  "EVX_" #suffix " differs from CUDA_" #suffix " in cuda.h");
EVX_STATUS_LIST(EVX_CHECK)
#undef EVX_CHECK

extern "C" {

EVX_API const char *evx_status_name(evx_status_t status) {
    switch (status) {
#define EVX_NAME(suffix, text) \
    case EVX_##suffix: return "EVX_" #suffix;
        EVX_STATUS_LIST(EVX_NAME)
#undef EVX_NAME
    default: return "EVX_STATUS_UNRECOGNIZED";
    }
}

EVX_API const char *evx_status_string(evx_status_t status) {
    switch (status) {
#define EVX_TEXT(suffix, text) \
    case EVX_##suffix: return text;
        EVX_STATUS_LIST(EVX_TEXT)
#undef EVX_TEXT
    default:
        return "Not a status code this version of evx knows (a newer driver may "
               "return it).";
    }
}

}  // extern "C"
