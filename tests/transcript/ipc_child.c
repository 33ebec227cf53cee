/* An IPC event handle opened in another process: the recorder runs itself
 * (--ipc-child HEX) and reads back what the child's driver answered. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ipc_child.h"

static void to_hex(const CUipcEventHandle *h, char *out) {
  const unsigned char *b = (const unsigned char *)h->reserved;
  for (size_t i = 0; i < sizeof h->reserved; i++) sprintf(out + 2 * i, "%02x", b[i]);
}

static int from_hex(const char *s, CUipcEventHandle *h) {
  unsigned char *b = (unsigned char *)h->reserved;
  if (strlen(s) != 2 * sizeof h->reserved) return 1;
  for (size_t i = 0; i < sizeof h->reserved; i++) {
    unsigned v;
    if (sscanf(s + 2 * i, "%2x", &v) != 1) return 1;
    b[i] = (unsigned char)v;
  }
  return 0;
}

/* The child: "open STATUS query STATUS" on stdout. */
int ipc_child_main(const char *driver, const char *hex) {
  CUipcEventHandle h;
  CUdevice dev;
  CUcontext ctx;
  CUevent ev = NULL;
  if (from_hex(hex, &h) || tx_load(driver) || D.Init(0) || D.DeviceGet(&dev, 0) ||
      D.DevicePrimaryCtxRetain(&ctx, dev) || D.CtxSetCurrent(ctx))
    return 3;
  if (!D.IpcOpenEventHandle) return printf("open MISSING\n"), 0;
  CUresult r = D.IpcOpenEventHandle(&ev, h);
  printf("open %s", tx_status_name(r));
  if (r == CUDA_SUCCESS) {
    printf(" query %s", tx_status_name(D.EventQuery(ev)));
    D.EventDestroy(ev);
  }
  printf("\n");
  return 0;
}

/* Runs the child on handle h; *out gets its line (or why there is none). */
void ipc_child_run(const char *driver, const CUipcEventHandle *h, char *out, size_t len) {
  char hex[2 * sizeof h->reserved + 1];
  int fd[2];
  to_hex(h, hex);
  snprintf(out, len, "child failed");
  if (pipe(fd)) return;
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fd[1], 1);
    close(fd[0]);
    execl("/proc/self/exe", "evx-transcript-record", "--ipc-child", hex, "--driver", driver,
          (char *)NULL);
    _exit(127);
  }
  close(fd[1]);
  if (pid < 0) {
    close(fd[0]);
    return;
  }
  FILE *f = fdopen(fd[0], "r");
  char line[160] = "";
  if (f && fgets(line, sizeof line, f)) {
    line[strcspn(line, "\n")] = 0;
    snprintf(out, len, "%s", line);
  }
  if (f) fclose(f);
  int st = 0;
  waitpid(pid, &st, 0);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) snprintf(out, len, "child exit %d", st);
}
