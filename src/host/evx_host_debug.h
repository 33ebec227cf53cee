/*
 * Copyright 2026 The evx Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/*
 * Test-only introspection of the host emulation (libevx-host.so): how many
 * driver objects are alive, and injected driver faults. Not part of evx's
 * ABI and not installed. A test reaches these functions with
 * dlopen(<the path evx_driver_get_path() gives>, RTLD_NOLOAD | RTLD_LAZY)
 * and dlsym; the real driver has neither. See docs/robustness.md.
 */
#ifndef EVX_HOST_DEBUG_H
#define EVX_HOST_DEBUG_H

#ifdef __cplusplus
extern "C" {
#endif

/* Live driver objects of the emulation, all devices together. */
typedef struct evx_host_live {
    long long events;     /* driver events alive (cuEventCreate minus cuEventDestroy;
                             the last primary-context release destroys the
                             context's events too) */
    long long streams;    /* streams alive (created minus destroyed, likewise) */
    long long contexts;   /* primary-context retains outstanding, plus contexts
                             made by cuCtxCreate and not yet destroyed */
    long long host_funcs; /* cuLaunchHostFunc callbacks enqueued and not yet run */
    long long user_objects; /* cuUserObjectCreate'd objects whose destructor has
                               not run yet */
    long long pinned;     /* pinned host ranges: cuMemHostAlloc'd and not freed,
                             plus cuMemHostRegister'd and not unregistered */
} evx_host_live;

/* Fills *out (nothing happens if out is NULL). Thread-safe. */
void evx_host_get_live(evx_host_live *out);

/* Fault injection: make the nth (1-based, counted from now) call of driver
 * entry point `entry` fail with CUresult `status`. `entry` is a base name
 * as cuGetProcAddress takes it ("cuEventCreate"); a fault on it covers all
 * its exported variants (_v2, _ptsz). The failing call returns `status`
 * before doing anything else, so it has no effect. Each fault fires once;
 * several may be armed, on the same entry too. nth 0 clears all faults
 * (entry may then be NULL). Returns 0, or -1 for an unknown entry name, a
 * negative nth or a status that is not a failure (<= 0). Thread-safe.
 *
 * The variable EVX_HOST_FAULT=entry:nth:status[,entry:nth:status...]
 * (status a number or a name such as CUDA_ERROR_OUT_OF_MEMORY) arms the
 * same faults when the library is loaded; a malformed value makes cuInit
 * return CUDA_ERROR_INVALID_VALUE. */
int evx_host_set_fault(const char *entry, long long nth, int status);

/* How many injected faults have fired since the library was loaded: tells a
 * test whether the call it armed a fault for reached that entry point. */
long long evx_host_faults_fired(void);

/* Stall injection: the nth (1-based, counted from now) call of driver entry
 * point `entry` (a base name, as for faults) blocks before it does anything
 * until evx_host_release_stalls(), then runs as usual. Lets a test hold a
 * call that never waits on a real driver (a query, a record) inside evx
 * while another thread acts. A call on which a fault fires too stalls
 * first, then returns the fault's status. Returns 0, or -1 for an unknown
 * entry name or nth <= 0. evx_host_set_fault(NULL, 0, 0) disarms stalls
 * not yet fired too. Thread-safe. */
int evx_host_set_stall(const char *entry, long long nth);

/* How many calls are blocked in a stall now. */
long long evx_host_stalled(void);

/* Lets every stalled call go on and disarms the stalls not yet fired. */
void evx_host_release_stalls(void);

#ifdef __cplusplus
}
#endif

#endif /* EVX_HOST_DEBUG_H */
