/* An IPC event handle opened by a child process (ipc_child.c). */
#ifndef EVX_TRANSCRIPT_IPC_CHILD_H
#define EVX_TRANSCRIPT_IPC_CHILD_H
#include <stddef.h>

#include "drv.h"
int ipc_child_main(const char *driver, const char *hex);
void ipc_child_run(const char *driver, const CUipcEventHandle *h, char *out, size_t len);
#endif
