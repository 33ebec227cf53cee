// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//
// The thread-local last error, and the words messages add for some statuses.
// See docs/design.md, "Errors".
#ifndef EVX_SRC_ERROR_HPP
#define EVX_SRC_ERROR_HPP

#include <cstdarg>

#include "evx/status.h"

namespace evx {

// Formats the message into the calling thread's record and returns status.
// Never called with EVX_SUCCESS or EVX_ERROR_NOT_READY: those leave the last
// error alone.
evx_status_t fail(evx_status_t status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3), cold, noinline));
evx_status_t vfail(evx_status_t status, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0), cold, noinline));

// INVALID_VALUE with "<fn>: <what> flags 0x.. have unknown bits 0x..
// (known: <names>)" if `flags` has bits outside `known`; else 0.
evx_status_t unknown_flags(const char *fn, const char *what, unsigned flags, unsigned known,
                           const char *names) __attribute__((cold, noinline));
inline evx_status_t check_known_flags(const char *fn, const char *what, unsigned flags,
                                      unsigned known, const char *names) {
    if (__builtin_expect((flags & ~known) == 0, 1)) return 0;
    return unknown_flags(fn, what, flags, known, names);
}

// Whether a status says that a stream capture is in progress (a driver
// status, passed through: the codes mirror CUresult's).
inline bool is_capture_status(evx_status_t status) {
    return status >= EVX_ERROR_STREAM_CAPTURE_UNSUPPORTED &&
           status <= EVX_ERROR_STREAM_CAPTURE_WRONG_THREAD;
}

// For a status that says a stream capture is in progress, what it means,
// to append to a message ("; a graph capture is in progress: ..."); "" for
// others.
const char *capture_hint(evx_status_t status);

// The status of a call that could not get a thread record (out of memory):
// no message can be kept then.
inline evx_status_t no_thread_record() { return EVX_ERROR_OUT_OF_MEMORY; }

}  // namespace evx

#endif  // EVX_SRC_ERROR_HPP
