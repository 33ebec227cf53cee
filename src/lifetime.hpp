// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//
// The end of a borrow with a release callback (evx/lifetime.h), for
// evx_stream_destroy() and evx_event_destroy(): below the modules that call
// it; the public wrap calls that start such a borrow are lifetime.cpp's and
// event_wrap.cpp's.
#ifndef EVX_SRC_LIFETIME_HPP
#define EVX_SRC_LIFETIME_HPP

#include "evx/common.h"
#include "reclaim.hpp"
#include "stream_object.hpp"
#include "thread.hpp"

namespace evx {

// evx_stream_destroy() of a borrow with a release callback: waits until no
// racing call holds the stream, frees it, then calls the callback.
// The handle is already unpublished.
// Events borrowed with a release callback end the same way (event_wrap.cpp).
inline evx_status_t end_borrow(ThreadRecord *r, const void *h, void (*release)(void *),
                               void *user) {
    retire_waiting(r, h);  // borrowed: frees no driver object, cannot fail
    release(user);
    return EVX_SUCCESS;
}

inline evx_status_t end_borrow(ThreadRecord *r, const void *h, const Stream *s) {
    return end_borrow(r, h, s->release, s->release_user);
}

}  // namespace evx

#endif  // EVX_SRC_LIFETIME_HPP
