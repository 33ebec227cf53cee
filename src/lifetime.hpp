// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//
// The end of a borrow with a release callback (evx/lifetime.h), for
// evx_stream_destroy(): below the stream module, which calls it; the
// public wrap call that starts such a borrow is lifetime.cpp's.
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
inline evx_status_t end_borrow(ThreadRecord *r, const void *h, const Stream *s) {
    void (*const release)(void *) = s->release;
    void *const user = s->release_user;
    retire_waiting(r, h);  // borrowed: frees no driver object, cannot fail
    release(user);
    return EVX_SUCCESS;
}

}  // namespace evx

#endif  // EVX_SRC_LIFETIME_HPP
