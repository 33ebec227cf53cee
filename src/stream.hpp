// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//
// What stream.cpp offers the modules above it: the wrap of a borrowed stream.
#ifndef EVX_SRC_STREAM_HPP
#define EVX_SRC_STREAM_HPP

#include "evx/common.h"
#include "evx/stream.h"

namespace evx {

// evx_stream_wrap_external() and its variant with a release callback
// (release may be nullptr; lifetime.cpp); fn names the public call.
evx_status_t wrap_stream(const char *fn, int device, void *native_stream,
                         void (*release)(void *), void *release_user, evx_stream_t *out);

}  // namespace evx

#endif  // EVX_SRC_STREAM_HPP
