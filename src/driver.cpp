// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//
// Choosing and opening the driver, looking up its entry points through the
// versioned cuGetProcAddress, cuInit, per-device primary contexts and the
// context guard.
#include "driver.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

#include "error.hpp"
#include "evx/status.h"

#ifndef EVX_INSTALL_LIBDIR
#error "EVX_INSTALL_LIBDIR must name the install libdir (set by meson)"
#endif

namespace evx {

Driver g_driver;
std::atomic<bool> g_driver_ready{false};

namespace {

std::once_flag g_load_once;
const char kHostLibrary[] = "libevx-host.so";
// Files tried for one EVX_DRIVER choice: for "host", three folders.
constexpr int kMaxCandidates = 3;

// Turns a data pointer from dlsym or cuGetProcAddress into a function pointer.
template <class F>
void set_fn(F *slot, void *p) {
    static_assert(sizeof(F) == sizeof(void *), "function pointers are not pointer-sized");
    std::memcpy(slot, &p, sizeof p);
}

// Appends to a bounded message buffer.
struct Text {
    char *buf;
    size_t cap;
    size_t len = 0;
    void add(const char *fmt, ...) __attribute__((format(printf, 2, 3))) {
        if (len >= cap) return;
        va_list ap;
        va_start(ap, fmt);
        const int n = std::vsnprintf(buf + len, cap - len, fmt, ap);
        va_end(ap);
        if (n > 0) len = std::min(cap, len + static_cast<size_t>(n));
    }
};

// dlerror() text without the leading "<path>: " it usually repeats.
std::string open_error(const char *path) {
    const char *e = dlerror();
    std::string s = e ? e : "unknown dlopen error";
    const std::string prefix = std::string(path) + ": ";
    if (s.compare(0, prefix.size(), prefix) == 0) s.erase(0, prefix.size());
    const char kNoFile[] = "cannot open shared object file: No such file or directory";
    if (s == kNoFile) s = "no such file";
    return s;
}

// Where EVX_DRIVER=host looks: next to libevx, in its host/ folder (the
// build tree), in the install libdir.
std::string own_directory() {
    static const char anchor = 0;
    Dl_info info;
    if (dladdr(&anchor, &info) == 0 || info.dli_fname == nullptr) return {};
    std::string file = info.dli_fname;
    const size_t slash = file.rfind('/');
    if (slash == std::string::npos) return ".";
    return file.substr(0, slash == 0 ? 1 : slash);
}

struct Entry {
    const char *name;
    void *slot;  // address of the DriverApi member
    void (*set)(void *slot, void *fn);
    bool required;
    int max_version;  // newest ABI whose signature DriverApi declares; 0: any
    int min_version;  // oldest ABI with that signature (not looked up below it); 0: any
};

template <class F>
void set_any(void *slot, void *fn) {
    set_fn(static_cast<F *>(slot), fn);
}

using GetProcV2 = CUresult (*)(const char *, void **, int, cuuint64_t,
                               CUdriverProcAddressQueryResult *);
using GetProcV1 = CUresult (*)(const char *, void **, int, cuuint64_t);

struct ProcLookup {
    GetProcV2 v2 = nullptr;
    GetProcV1 v1 = nullptr;
    // Returns the function or nullptr; *why says what went wrong.
    void *get(const char *name, int version, std::string *why) const {
        void *fn = nullptr;
        CUresult r;
        CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SUCCESS;
        if (v2)
            r = v2(name, &fn, version, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &found);
        else
            r = v1(name, &fn, version, CU_GET_PROC_ADDRESS_LEGACY_STREAM);
        if (r == CUDA_SUCCESS && found == CU_GET_PROC_ADDRESS_SUCCESS && fn) return fn;
        char buf[160];
        if (found == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT)
            std::snprintf(buf, sizeof buf, "it has %s only in a version newer than %d",
                          name, version);
        else
            std::snprintf(buf, sizeof buf, "cuGetProcAddress(\"%s\", %d) returned %s",
                          name, version, evx_status_name(r));
        *why = buf;
        return nullptr;
    }
};

// Opens the driver EVX_DRIVER names (the CUDA driver by default); nullptr
// with the message set if none of its candidates opens.
void *open_driver(Driver &d, Text &msg) {
    const char *env = std::getenv("EVX_DRIVER");
    std::string choice = env ? env : "";
    std::string candidates[kMaxCandidates];
    int ncand = 0;
    const char *what;
    if (choice.empty()) {
        candidates[ncand++] = "libcuda.so.1";
        what = "the CUDA driver";
    } else if (choice == "host") {
        const std::string dir = own_directory();
        const std::string tries[kMaxCandidates] = {
            dir.empty() ? std::string() : dir + "/" + kHostLibrary,
            dir.empty() ? std::string() : dir + "/host/" + kHostLibrary,
            std::string(EVX_INSTALL_LIBDIR) + "/" + kHostLibrary,
        };
        for (const std::string &t : tries) {
            if (t.empty()) continue;
            if (std::find(candidates, candidates + ncand, t) == candidates + ncand)
                candidates[ncand++] = t;
        }
        what = "the host emulation (EVX_DRIVER=host)";
    } else {
        candidates[ncand++] = choice;
        what = "the driver named by EVX_DRIVER";
    }

    void *lib = nullptr;
    std::string tried;
    for (int i = 0; i < ncand && !lib; ++i) {
        lib = dlopen(candidates[i].c_str(), RTLD_NOW | RTLD_LOCAL);
        if (lib) {
            std::snprintf(d.path, sizeof d.path, "%s", candidates[i].c_str());
        } else {
            if (!tried.empty()) tried += "; ";
            tried += candidates[i] + " (" + open_error(candidates[i].c_str()) + ")";
        }
    }
    if (!lib) msg.add("cannot open %s: tried %s", what, tried.c_str());
    return lib;
}

// Finds cuGetProcAddress and asks the driver its version; false with the
// message (and status) set if it cannot.
bool driver_version(void *lib, Driver &d, Text &msg, ProcLookup *proc) {
    if (void *p = dlsym(lib, "cuGetProcAddress_v2")) {
        set_fn(&proc->v2, p);
    } else if (void *p1 = dlsym(lib, "cuGetProcAddress")) {
        set_fn(&proc->v1, p1);
    } else {
        msg.add("%s opened, but it exports neither cuGetProcAddress_v2 nor "
                "cuGetProcAddress: not a CUDA driver", d.path);
        return false;
    }
    std::string why;
    void *p = proc->get("cuDriverGetVersion", CUDA_VERSION, &why);
    if (!p) {
        msg.add("%s lacks cuDriverGetVersion: %s", d.path, why.c_str());
        return false;
    }
    set_fn(&d.api.cuDriverGetVersion, p);
    const CUresult r = d.api.cuDriverGetVersion(&d.version);
    if (r != CUDA_SUCCESS) {
        d.status = r;
        msg.add("cuDriverGetVersion of %s returned %s", d.path, evx_status_name(r));
        return false;
    }
    return true;
}

// Looks up every entry point of EVX_DRIVER_ENTRY_POINTS; false with the
// message set if one that evx needs is missing.
bool look_up_entries(const ProcLookup &proc, Driver &d, Text &msg) {
    const int version = std::min(CUDA_VERSION, d.version);
    const Entry entries[] = {
#define EVX_DRIVER_ENTRY(member, name, required, max_version, min_version, ...) \
    Entry{#name, &d.api.member, &set_any<decltype(d.api.member)>, required, max_version, min_version},
        EVX_DRIVER_ENTRY_POINTS(EVX_DRIVER_ENTRY)
#undef EVX_DRIVER_ENTRY
    };
    std::string why;
    for (const Entry &e : entries) {
        if (e.slot == &d.api.cuDriverGetVersion) continue;  // looked up before
        if (d.version < e.min_version) continue;  // left NULL: optional
        const int at = std::max(version, e.min_version);
        void *fn = proc.get(e.name, e.max_version ? std::min(at, e.max_version) : at, &why);
        if (!fn && e.required) {
            msg.add("%s (driver version %d) lacks %s, which evx needs: %s", d.path,
                    d.version, e.name, why.c_str());
            return false;
        }
        e.set(e.slot, fn);
    }

    // A driver that answers "cuLaunchHostFunc" at 13.2 with the function it
    // gives at 13.1 has no sync-mode variant under that name.
    if (d.api.cuLaunchHostFunc_v2 &&
        reinterpret_cast<void *>(d.api.cuLaunchHostFunc_v2) ==
            reinterpret_cast<void *>(d.api.cuLaunchHostFunc))
        d.api.cuLaunchHostFunc_v2 = nullptr;
    return true;
}

// cuInit and the devices; false with the message and status set on failure.
bool init_devices(Driver &d, Text &msg) {
    CUresult r = d.api.cuInit(0);
    if (r != CUDA_SUCCESS) {
        d.status = r;
        msg.add("cuInit(0) of %s returned %s", d.path, evx_status_name(r));
        return false;
    }
    int count = 0;
    r = d.api.cuDeviceGetCount(&count);
    if (r != CUDA_SUCCESS) {
        d.status = r;
        msg.add("cuDeviceGetCount of %s returned %s", d.path, evx_status_name(r));
        return false;
    }
    d.devices = new (std::nothrow) DeviceState[count > 0 ? count : 1];
    if (!d.devices) {
        d.status = EVX_ERROR_OUT_OF_MEMORY;
        msg.add("out of memory while opening %s", d.path);
        return false;
    }
    for (int i = 0; i < count; ++i) {
        r = d.api.cuDeviceGet(&d.devices[i].dev, i);
        if (r != CUDA_SUCCESS) {
            d.status = r;
            msg.add("cuDeviceGet(%d) of %s returned %s", i, d.path, evx_status_name(r));
            return false;
        }
    }
    d.device_count = count;
    return true;
}

void load() {
    Driver &d = g_driver;
    Text msg{d.message, sizeof d.message};
    d.status = EVX_ERROR_NOT_INITIALIZED;
    void *lib = open_driver(d, msg);
    if (!lib) return;
    ProcLookup proc;
    if (!driver_version(lib, d, msg, &proc) || !look_up_entries(proc, d, msg) ||
        !init_devices(d, msg))
        return;
    d.is_emulation = dlsym(lib, "evx_host_emulation_version") != nullptr;
    d.status = EVX_SUCCESS;
    g_driver_ready.store(true, std::memory_order_release);
}

}  // namespace

evx_status_t driver_load_slow(const char *fn) {
    try {
        std::call_once(g_load_once, load);
    } catch (...) {
        // Out of memory while building the messages above: call_once lets
        // a later call try again.
        return fail(EVX_ERROR_OUT_OF_MEMORY, "%s: out of memory while opening the driver",
                    fn);
    }
    if (g_driver_ready.load(std::memory_order_acquire)) return EVX_SUCCESS;
    return fail(g_driver.status, "%s: %s", fn, g_driver.message);
}

evx_status_t device_out_of_range(const char *fn, int device) {
    return fail(EVX_ERROR_INVALID_DEVICE,
                "%s: device %d is out of range: the driver sees %d device%s (0 to %d)", fn,
                device, g_driver.device_count, g_driver.device_count == 1 ? "" : "s",
                g_driver.device_count - 1);
}

evx_status_t primary_context(const char *fn, int device, CUcontext *ctx) {
    DeviceState &d = g_driver.devices[device];
    CUcontext c = d.ctx.load(std::memory_order_acquire);
    if (__builtin_expect(c != nullptr, 1)) {
        *ctx = c;
        return 0;
    }
    std::lock_guard<std::mutex> lock(d.mu);
    c = d.ctx.load(std::memory_order_relaxed);
    if (!c) {
        const CUresult r = cu().cuDevicePrimaryCtxRetain(&c, d.dev);
        if (r != CUDA_SUCCESS)
            return driver_failed(r, fn, "cuDevicePrimaryCtxRetain", "device %d", device);
        d.ctx.store(c, std::memory_order_release);
    }
    *ctx = c;
    return 0;
}

evx_status_t priority_range(const char *fn, int device, int *least, int *greatest) {
    DeviceState &d = g_driver.devices[device];
    if (!d.range_known.load(std::memory_order_acquire)) {
        ContextGuard guard;
        evx_status_t st = guard.enter(fn, device);
        if (st) return st;
        std::lock_guard<std::mutex> lock(d.mu);
        if (!d.range_known.load(std::memory_order_relaxed)) {
            const CUresult r = cu().cuCtxGetStreamPriorityRange(&d.least, &d.greatest);
            if (r != CUDA_SUCCESS)
                return driver_failed(r, fn, "cuCtxGetStreamPriorityRange", "device %d",
                                     device);
            d.range_known.store(true, std::memory_order_release);
        }
        st = guard.leave(fn, "the range was read");
        if (st) return st;
    }
    *least = d.least;
    *greatest = d.greatest;
    return 0;
}

int device_ordinal(CUdevice dev) {
    for (int i = 0; i < g_driver.device_count; ++i)
        if (g_driver.devices[i].dev == dev) return i;
    return -1;
}

evx_status_t current_context(const char *fn, CUcontext *ctx, int *device) {
    CUresult res = cu().cuCtxGetCurrent(ctx);
    if (res != CUDA_SUCCESS)
        return driver_failed(res, fn, "cuCtxGetCurrent", "EVX_DEVICE_CURRENT");
    if (!*ctx) return 0;
    if (!cu().cuCtxGetDevice)
        return fail(EVX_ERROR_NOT_SUPPORTED,
                    "%s: the driver has no cuCtxGetDevice, so the device of the current context "
                    "(EVX_DEVICE_CURRENT) cannot be read",
                    fn);
    CUdevice dev = 0;
    res = cu().cuCtxGetDevice(&dev);
    if (res != CUDA_SUCCESS)
        return driver_failed(res, fn, "cuCtxGetDevice", "the current context %p (EVX_DEVICE_CURRENT)",
                             static_cast<void *>(*ctx));
    *device = device_ordinal(dev);
    if (*device < 0)
        return fail(EVX_ERROR_INVALID_VALUE,
                    "%s: the current context %p is of driver device %d, which is not among the "
                    "%d devices the driver listed",
                    fn, static_cast<void *>(*ctx), static_cast<int>(dev), g_driver.device_count);
    return 0;
}

evx_status_t ContextGuard::enter(const char *fn, int device) {
    CUcontext ctx = nullptr;
    evx_status_t st = primary_context(fn, device, &ctx);
    return st ? st : enter_context(fn, ctx, device);
}

evx_status_t ContextGuard::enter_context(const char *fn, CUcontext ctx, int device,
                                         const char *what) {
    CUcontext cur = nullptr;
    CUresult r = cu().cuCtxGetCurrent(&cur);
    if (r != CUDA_SUCCESS)
        return driver_failed(r, fn, "cuCtxGetCurrent", "reading the current context");
    if (cur == ctx) return 0;
    r = cu().cuCtxPushCurrent(ctx);
    if (r != CUDA_SUCCESS) {
        if (what) return driver_failed(r, fn, "cuCtxPushCurrent", "%s", what);
        if (device >= 0)
            return driver_failed(r, fn, "cuCtxPushCurrent",
                                 "making device %d's primary context current", device);
        return driver_failed(r, fn, "cuCtxPushCurrent", "making the stream's context current");
    }
    pushed_ = true;
    return 0;
}

evx_status_t ContextGuard::pop(const char *fn, const char *done) {
    CUcontext popped = nullptr;
    const CUresult r = cu().cuCtxPopCurrent(&popped);
    pushed_ = false;  // a failed pop is not tried again by the destructor
    if (r == CUDA_SUCCESS) return 0;
    return driver_failed(r, fn, "cuCtxPopCurrent",
                         "%s; the context evx made current for the call stays current on "
                         "this thread",
                         done);
}

evx_status_t driver_failed(CUresult r, const char *fn, const char *call,
                           const char *fmt, ...) {
    if (!fn) return r;
    char detail[256];
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    return fail(r, "%s: %s returned %s (%s)%s", fn, call, evx_status_name(r), detail,
                capture_hint(r));
}

}  // namespace evx
