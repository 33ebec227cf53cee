// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//
// The entry of the public calls that end a handle and need nothing more
// than the handle table, and the rare end of a HandleScope: beside
// HandleScope, above the table it calls.
#include "reclaim.hpp"
#include "scope.hpp"

namespace evx {

evx_status_t destroy_handle(const void *h, uint32_t kind, const char *fn, const char *role) {
    ThreadRecord *r;
    evx_status_t st = enter_thread(&r);
    if (st) return st;
    Slot *s = nullptr;
    st = unpublish(h, kind, fn, role, &s);
    return st ? st : retire(r, h);
}

evx_status_t reclaim_held_passing(ThreadRecord *r, evx_status_t st) {
    reclaim_held(r);
    return st;
}

}  // namespace evx
