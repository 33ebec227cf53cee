// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//
// Structs that carry their size: see sized.hpp.
#include "sized.hpp"

#include <cstring>

#include "error.hpp"

namespace evx {

evx_status_t sized_check(const char *fn, const SizedType &type, const void *caller,
                         uint32_t *size) {
    uint32_t s;
    std::memcpy(&s, caller, sizeof s);  // struct_size is the first field
    if (s < type.first_size)
        return fail(EVX_ERROR_INVALID_VALUE,
                    "%s: %s->struct_size is %u, less than the %u bytes %s had when first "
                    "published (set it to sizeof(%s)%s)",
                    fn, type.arg, s, type.first_size, type.name, type.name,
                    type.has_init_macro ? ", or use its _INIT macro" : "");
    *size = s;
    return 0;
}

void sized_read(const void *caller, uint32_t size, void *full, size_t full_size) {
    std::memcpy(full, caller, size < full_size ? size : full_size);
}

void sized_write(void *caller, uint32_t size, const void *full, size_t full_size) {
    const size_t skip = sizeof(uint32_t);  // the caller's struct_size stays
    const size_t n = size < full_size ? size : full_size;
    if (n > skip)
        std::memcpy(static_cast<char *>(caller) + skip, static_cast<const char *>(full) + skip,
                    n - skip);
}

}  // namespace evx
