/*
 * Copyright 2026 The evx Authors
 * SPDX-License-Identifier: Apache-2.0
 */
/* Preloaded by the no-table test (tests/meson.build): refuses every
 * read-only MAP_NORESERVE mapping, which is how libevx reserves its handle
 * table at load (src/handle.cpp), as an exhausted address space would. */
#define _GNU_SOURCE
/* mmap and mmap64 are both defined here, each under its own name. */
#undef _FILE_OFFSET_BITS

#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/types.h>

typedef void *(*mmap_fn)(void *, size_t, int, int, int, off_t);

static void *refuse_or_map(const char *name, void *addr, size_t len, int prot, int flags,
                           int fd, off_t off)
{
    mmap_fn real;
    if ((flags & MAP_NORESERVE) && prot == PROT_READ) {
        errno = ENOMEM;
        return MAP_FAILED;
    }
    {
        /* dlsym's object pointer to a function pointer, as POSIX allows */
        void *sym = dlsym(RTLD_NEXT, name);
        memcpy(&real, &sym, sizeof real);
    }
    if (real == NULL) {
        errno = ENOSYS;
        return MAP_FAILED;
    }
    return real(addr, len, prot, flags, fd, off);
}

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    return refuse_or_map("mmap", addr, len, prot, flags, fd, off);
}

void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off64_t off)
{
    return refuse_or_map("mmap64", addr, len, prot, flags, fd, off);
}
