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
    return status;
}

evx_status_t fail(evx_status_t status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vfail(status, fmt, ap);
    va_end(ap);
    return status;
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
    }
}

}  // extern "C"
