// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//
// How a public call starts and ends. Every public call enters one way:
//   - a call on handles opens a HandleScope: the thread record, lookups that
//     publish hazards, and the hazards cleared when the scope ends, on every
//     exit path (a live handle implies a loaded driver);
//   - a call on a device number calls enter_device(): driver loaded, device
//     in range, thread record;
//   - calls that read only what the driver reported at load call
//     ensure_driver().
// Everything here is inline: a HandleScope costs what the hand-written
// bracket cost (per handle one store, with no fence where light_hazards(),
// else a seq_cst exchange; one release store at the end). The hot calls'
// bodies are noexcept (nothing in them throws): else the compiler keeps an
// unwinding path that runs the destructor, and with it a frame pointer the
// hand-written code did not have. See docs/design.md, "Safe use against a
// racing destroy".
#ifndef EVX_SRC_SCOPE_HPP
#define EVX_SRC_SCOPE_HPP

#include <new>

#include "driver.hpp"
#include "error.hpp"
#include "handle.hpp"
#include "reclaim.hpp"
#include "stream_object.hpp"
#include "thread.hpp"

namespace evx {

// The calling thread's record in *r, or OUT_OF_MEMORY (no message can be
// kept without a record).
inline evx_status_t enter_thread(ThreadRecord **r) {
    *r = self();
    return __builtin_expect(*r != nullptr, 1) ? 0 : no_thread_record();
}

// The driver loaded, `device` one of its devices, and the thread's record.
inline evx_status_t enter_device(const char *fn, int device, ThreadRecord **r) {
    evx_status_t st = ensure_driver(fn);
    if (!st) st = check_device(fn, device);
    if (!st) st = enter_thread(r);
    return st;
}

// enter_device(), then a new T (Pool, Timer, Timeline) of that device in
// *obj: the entry of a call that makes an object.
template <class T>
evx_status_t enter_device_new(const char *fn, int device, ThreadRecord **r, T **obj) {
    const evx_status_t st = enter_device(fn, device, r);
    if (st) return st;
    *obj = new (std::nothrow) T;
    if (!*obj) return fail(EVX_ERROR_OUT_OF_MEMORY, "%s: out of memory", fn);
    (*obj)->device = device;
    return 0;
}

// The slot of the first (which 0) or second (1) handle a call on r looked
// up, read back from the hazard word that holds it (the low half of a
// handle names its slot: slot_of()). For the cold failure paths of the hot
// calls, so that nothing but the thread's record has to outlive their
// driver call. Only after a successful lookup, while the call holds it.
inline Slot *held_slot(const ThreadRecord *r, unsigned which) {
    return slot_of(static_cast<uint32_t>(r->hazards.load(std::memory_order_relaxed) >>
                                         (32 * which)));
}

// The stream of a looked-up stream slot. Hot calls read it again after
// their driver call rather than keep it: they keep only the slots (and the
// thread's record) across that call.
inline const Stream *stream_in(const Slot *ss) { return static_cast<const Stream *>(ss->obj); }

// A hot call's EVX_SUCCESS after its driver call returned CUDA_SUCCESS
// (res: that result; both are 0): returned from the register that holds
// res, where the compiler, which knows it is 0 there, would otherwise make
// the constant again.
inline evx_status_t driver_success(CUresult res) {
    static_assert(CUDA_SUCCESS == 0 && EVX_SUCCESS == 0, "the same value");
    evx_status_t st = static_cast<evx_status_t>(res);
    asm("" : "+r"(st));
    return st;
}

// reclaim_held(r), then st: HandleScope::finish()'s rare end.
evx_status_t reclaim_held_passing(ThreadRecord *r, evx_status_t st)
    __attribute__((cold, noinline));

// A call's hold on the handles it looks up. The lookups publish hazards;
// the destructor clears them (one release store), so no exit path clears by
// hand. A handle's object may be used only while the scope lives.
class HandleScope {
public:
    HandleScope() : r_(self()) {}
    // With the thread's record already at hand (not nullptr): for the hot
    // calls, which attach a new thread on a path of their own, so that no
    // argument has to outlive that call in a saved register.
    explicit HandleScope(ThreadRecord *r) : r_(r) {}
    ~HandleScope() {
        if (r_) release_hazards(r_);
    }
    HandleScope(const HandleScope &) = delete;
    HandleScope &operator=(const HandleScope &) = delete;

    // The thread record (nullptr only before a failed lookup).
    ThreadRecord *record() const { return r_; }

    // Ends the hold now, as the destructor would, and returns st: for the
    // hot calls, whose rare reclaim then passes st through (a tail call)
    // rather than keep it in their frame across reclaim_held().
    evx_status_t finish(evx_status_t st) {
        ThreadRecord *r = r_;
        r_ = nullptr;
        if (clear_hazards(r)) return reclaim_held_passing(r, st);
        return st;
    }

    // One live handle of `kind`, protected until the scope ends.
    evx_status_t lookup(const char *fn, const void *h, uint32_t kind, const char *role,
                        Slot **out) {
        if (__builtin_expect(r_ == nullptr, 0)) return no_thread_record();
        return evx::lookup(r_, h, kind, fn, role, out);
    }

    // Two live handles under both hazard slots, a store per half.
    evx_status_t lookup2(const char *fn, const void *h0, uint32_t kind0, const char *role0,
                         Slot **out0, const void *h1, uint32_t kind1, const char *role1,
                         Slot **out1) {
        if (__builtin_expect(r_ == nullptr, 0)) return no_thread_record();
        return evx::lookup2(r_, fn, h0, kind0, role0, out0, h1, kind1, role1, out1);
    }

private:
    ThreadRecord *r_;
};

// A public *_destroy call whose object needs nothing more than retire():
// ends the handle (of racing destroys exactly one wins) and retires it.
// (scope.cpp)
evx_status_t destroy_handle(const void *h, uint32_t kind, const char *fn, const char *role);

// Looks a handle up and returns use(slot) on its live object, the hazard
// held for the call, or the lookup's failure. For the calls that only read,
// lock or renew one object.
template <class Use>
evx_status_t with_live(const char *fn, const void *h, uint32_t kind, const char *role,
                       Use use) {
    HandleScope scope;
    Slot *slot = nullptr;
    const evx_status_t st = scope.lookup(fn, h, kind, role, &slot);
    if (st) return st;
    return use(*slot);
}

// with_live() for a call on two handles: both under the call's hazard slots
// (a store each), use(slot0, slot1) run while the scope lives.
template <class Use>
evx_status_t with_live2(const char *fn, const void *h0, uint32_t kind0, const char *role0,
                        const void *h1, uint32_t kind1, const char *role1, Use use) {
    HandleScope scope;
    Slot *s0 = nullptr, *s1 = nullptr;
    const evx_status_t st = scope.lookup2(fn, h0, kind0, role0, &s0, h1, kind1, role1, &s1);
    if (st) return st;
    return use(*s0, *s1);
}

}  // namespace evx

#endif  // EVX_SRC_SCOPE_HPP
