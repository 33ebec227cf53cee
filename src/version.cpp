// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//
// The run-time version of the library.
#include "evx/common.h"

#define EVX_STR2(x) #x
#define EVX_STR(x) EVX_STR2(x)

extern "C" {

EVX_API unsigned evx_version(void) { return EVX_VERSION_NUMBER; }

EVX_API const char *evx_version_string(void) {
    return EVX_STR(EVX_VERSION_MAJOR) "." EVX_STR(EVX_VERSION_MINOR) "." EVX_STR(
        EVX_VERSION_PATCH);
}

}  // extern "C"
