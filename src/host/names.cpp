// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//
// cuGetErrorName and cuGetErrorString for every CUresult of cuda.h.
#include <cctype>
#include <cstring>
#include <string>

#include "api.hpp"

namespace evxh {

namespace {

struct Name {
    CUresult code;
    const char *name;
};

const Name kNames[] = {
#define EVXH_ERR(n) {n, #n},
#include "errors.inc"
#undef EVXH_ERR
};
constexpr std::size_t kCount = sizeof kNames / sizeof kNames[0];

// Descriptions of the codes the emulation returns; the others get one made
// from their name ("CUDA_ERROR_LAUNCH_FAILED" -> "launch failed").
const char *written(CUresult r) {
    switch (r) {
    case CUDA_SUCCESS: return "no error";
    case CUDA_ERROR_INVALID_VALUE: return "invalid argument";
    case CUDA_ERROR_OUT_OF_MEMORY: return "out of memory";
    case CUDA_ERROR_NOT_INITIALIZED: return "initialization error: cuInit has not succeeded";
    case CUDA_ERROR_INVALID_DEVICE: return "invalid device ordinal";
    case CUDA_ERROR_INVALID_CONTEXT: return "invalid device context";
    case CUDA_ERROR_INVALID_HANDLE: return "invalid resource handle";
    case CUDA_ERROR_NOT_FOUND: return "named symbol not found";
    case CUDA_ERROR_NOT_READY: return "device not ready";
    case CUDA_ERROR_NOT_SUPPORTED: return "operation not supported";
    case CUDA_ERROR_ILLEGAL_STATE: return "operation not permitted in the current state";
    default: return nullptr;
    }
}

struct Descriptions {
    std::string text[kCount];
    Descriptions() {
        for (std::size_t i = 0; i < kCount; i++) {
            if (const char *w = written(kNames[i].code)) {
                text[i] = w;
                continue;
            }
            std::string n = kNames[i].name;
            const std::string prefix = "CUDA_ERROR_";
            if (n.compare(0, prefix.size(), prefix) == 0) n.erase(0, prefix.size());
            for (char &c : n)
                c = c == '_' ? ' ' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
            text[i] = n;
        }
    }
};

int index_of(CUresult r) {
    for (std::size_t i = 0; i < kCount; i++)
        if (kNames[i].code == r) return static_cast<int>(i);
    return -1;
}

}  // namespace

CUresult get_error_name(CUresult error, const char **str) {
    if (!str) return CUDA_ERROR_INVALID_VALUE;  // the driver crashes here
    int i = index_of(error);
    if (i < 0) {
        *str = nullptr;
        return CUDA_ERROR_INVALID_VALUE;
    }
    *str = kNames[i].name;
    return CUDA_SUCCESS;
}

CUresult get_error_string(CUresult error, const char **str) {
    if (!str) return CUDA_ERROR_INVALID_VALUE;
    int i = index_of(error);
    if (i < 0) {
        *str = nullptr;
        return CUDA_ERROR_INVALID_VALUE;
    }
    static const Descriptions *d = new Descriptions;  // never freed
    *str = d->text[i].c_str();
    return CUDA_SUCCESS;
}

bool error_from_name(const char *name, CUresult *out) {
    for (const Name &n : kNames) {
        if (std::strcmp(n.name, name) == 0) {
            *out = n.code;
            return true;
        }
    }
    return false;
}

}  // namespace evxh
