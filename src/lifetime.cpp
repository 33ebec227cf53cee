// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//
// Borrowed streams with a release callback. See include/evx/lifetime.h.
//
// The callback must run once no evx call uses the stream. A racing call
// holds the stream's slot in its hazard word from its lookup until it
// returns (docs/design.md, "Safe use against a racing destroy"); a plain
// destroy leaves a held slot to the last holder, which frees it as its
// call ends, after the destroy has returned. The callback must have run
// when the destroy returns, so the destroy of such a borrow waits for the
// holders itself (end_borrow() in lifetime.hpp: retire_waiting()), and
// calls the callback last, outside every evx structure, on the destroying
// thread.
#include "error.hpp"
#include "evx/lifetime.h"
#include "handle.hpp"
#include "stream.hpp"

using namespace evx;

extern "C" {

EVX_API evx_status_t evx_stream_wrap_external_with_release(int device, void *native_stream,
                                                           evx_release_fn_t release,
                                                           void *user_data, evx_stream_t *out) {
    static const char fn[] = "evx_stream_wrap_external_with_release";
    if (!release) {
        if (out) *out = nullptr;
        return fail(EVX_ERROR_INVALID_VALUE,
                    "%s: release is NULL (use evx_stream_wrap_external for a borrow without a "
                    "release callback)",
                    fn);
    }
    return wrap_stream(fn, device, native_stream, release, user_data, out);
}

}  // extern "C"
