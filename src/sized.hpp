// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//
// Structs that carry their size (option structs in, stats structs out). A
// caller compiled against any published header passes `struct_size` as its
// header had it: from the first published size of the struct up to any
// larger one (a newer header's). evx reads and writes only the bytes that
// size covers, so a newer library never reads or writes past an older
// caller's struct, and an older library never past its own fields in a newer
// caller's. Each version only adds whole fields at the end, so a published
// size always ends on a field boundary.
#ifndef EVX_SRC_SIZED_HPP
#define EVX_SRC_SIZED_HPP

#include <cstddef>
#include <cstdint>

#include "evx/common.h"

namespace evx {

// A struct type as the caller sees it: its C name and its first published
// size. arg names the argument ("options", "stats") for messages;
// has_init_macro: whether the header has an _INIT macro for it, which the
// message then suggests.
struct SizedType {
    const char *name;
    const char *arg;
    uint32_t first_size;
    bool has_init_macro = true;
};

// The caller's struct_size, or INVALID_VALUE with a message naming both
// sizes if it is below the first published size. caller is not NULL.
evx_status_t sized_check(const char *fn, const SizedType &type, const void *caller,
                         uint32_t *size);

// Copies in the caller's fields (min(size, full_size) bytes) over `full`,
// which holds the defaults of the fields the caller's size does not cover.
void sized_read(const void *caller, uint32_t size, void *full, size_t full_size);

// Copies out min(size, full_size) bytes of `full` to the caller's struct,
// with struct_size left as the caller set it; nothing past `size` is
// touched.
void sized_write(void *caller, uint32_t size, const void *full, size_t full_size);

// Typed forms: T is the struct as this library's header has it.
template <class T>
evx_status_t sized_in(const char *fn, const SizedType &type, const T *caller, T *full) {
    uint32_t size;
    const evx_status_t st = sized_check(fn, type, caller, &size);
    if (!st) sized_read(caller, size, full, sizeof(T));
    return st;
}

template <class T>
void sized_out(T *caller, uint32_t size, const T &full) {
    sized_write(caller, size, &full, sizeof(T));
}

}  // namespace evx

#endif  // EVX_SRC_SIZED_HPP
