// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//
// See nvtx.hpp.
#include "nvtx.hpp"

#include "evx/timing.h"

#ifdef EVX_HAVE_NVTX
#include <nvtx3/nvToolsExt.h>
#endif

namespace evx {

#ifdef EVX_HAVE_NVTX

void nvtx_mark_labeled(const char *label, uint32_t kind) {
    switch (kind) {
    case EVX_MARK_BEGIN: nvtxRangePushA(label); break;
    case EVX_MARK_END: nvtxRangePop(); break;
    default:
        if (label[0] != '\0') nvtxMarkA(label);
        break;
    }
}

bool nvtx_built() { return true; }

#else

void nvtx_mark_labeled(const char *, uint32_t) {}

bool nvtx_built() { return false; }

#endif

}  // namespace evx
