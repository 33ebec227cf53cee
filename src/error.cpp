// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//
// The thread-local last error.
#include "error.hpp"

#include <cstdio>

#include "thread.hpp"

namespace evx {

evx_status_t vfail(evx_status_t status, const char *fmt, va_list ap) {
    ThreadRecord *r = self();
    if (!r) return status;
    std::vsnprintf(r->message, sizeof r->message, fmt, ap);
    r->last_status = status;
    r->host_set = false;  // hostfn.cpp sets it again after its own fail()
    return status;
}

evx_status_t fail(evx_status_t status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vfail(status, fmt, ap);
    va_end(ap);
    return status;
}

const char *capture_hint(evx_status_t status) {
    switch (status) {
    case EVX_ERROR_CAPTURED_EVENT:
        return "; the event was last recorded in a stream that is being captured into a "
               "graph: the driver forbids querying or synchronizing it until the capture "
               "ends (the captured record happens when the graph is launched)";
    case EVX_ERROR_STREAM_CAPTURE_UNSUPPORTED:
        return "; a graph capture is in progress: the driver forbids this call on a "
               "capturing stream, and in global capture mode calls that could "
               "synchronize with one, until cuStreamEndCapture";
    case EVX_ERROR_STREAM_CAPTURE_INVALIDATED:
        return "; a graph capture is in progress and was invalidated by an earlier call "
               "the driver forbids during capture: end it with cuStreamEndCapture";
    case EVX_ERROR_STREAM_CAPTURE_IMPLICIT:
        return "; a graph capture is in progress on a stream this call would implicitly "
               "synchronize with (the legacy default stream)";
    default:
        return is_capture_status(status) ? "; a graph capture is in progress" : "";
    }
}

evx_status_t unknown_flags(const char *fn, const char *what, unsigned flags, unsigned known,
                           const char *names) {
    return fail(EVX_ERROR_INVALID_VALUE, "%s: %s flags 0x%x have unknown bits 0x%x (known: %s)",
                fn, what, flags, flags & ~known, names);
}

}  // namespace evx

extern "C" {

EVX_API const char *evx_last_error_message(void) {
    evx::ThreadRecord *r = evx::self();
    return r ? r->message : "";
}

EVX_API evx_status_t evx_last_error(void) {
    evx::ThreadRecord *r = evx::self();
    return r ? r->last_status : EVX_SUCCESS;
}

EVX_API void evx_clear_last_error(void) {
    evx::ThreadRecord *r = evx::self();
    if (r) {
        r->last_status = EVX_SUCCESS;
        r->message[0] = '\0';
        r->host_set = false;
    }
}

}  // extern "C"
