// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//
// NVTX ranges and marks for labeled timeline marks, so that they show in
// Nsight Systems. Through NVTX 3's header, which loads the tool's library at
// run time (NVTX_INJECTION64_PATH, set by the profiler) and is a no-op
// without one: libevx links no NVTX library. Built only where the CUDA
// toolkit has nvtx3/nvToolsExt.h (EVX_HAVE_NVTX); a no-op elsewhere.
#ifndef EVX_SRC_NVTX_HPP
#define EVX_SRC_NVTX_HPP

#include <cstdint>

#include "evx/timing.h"

namespace evx {

// What nvtx_mark() does when there is something to do.
void nvtx_mark_labeled(const char *label, uint32_t kind);

// A mark of kind `kind` (evx_mark_kind) with `label` ("" for an unlabeled
// mark, which gets none): a marker, the push of a range on the calling
// thread, or its pop. An unlabeled point, the hot case, costs no call.
inline void nvtx_mark(const char *label, uint32_t kind) {
    if (kind != EVX_MARK_POINT || label[0] != '\0') nvtx_mark_labeled(label, kind);
}

// Whether NVTX support was built in.
bool nvtx_built();

}  // namespace evx

#endif  // EVX_SRC_NVTX_HPP
