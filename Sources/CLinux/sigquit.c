// The dump on SIGQUIT needs a handler in C that only writes a byte to a pipe (what a handler may
// do); a thread on the Swift side reads it and prints the dump.
#define _DEFAULT_SOURCE
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "clinux.h"

static int quit_pipe = -1;

static void on_sigquit(int signal_number) {
  (void)signal_number;
  int saved = errno;
  char byte = 1;
  if (write(quit_pipe, &byte, 1) < 0) {
    // A full pipe already has a dump pending; nothing to add.
  }
  errno = saved;
}

int cu_sigquit_notify(int write_fd) {
  quit_pipe = write_fd;
  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_handler = on_sigquit;
  action.sa_flags = SA_RESTART | SA_ONSTACK;
  sigemptyset(&action.sa_mask);
  return sigaction(SIGQUIT, &action, NULL);
}
