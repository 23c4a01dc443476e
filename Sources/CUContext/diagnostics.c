// Debugging aids that must be C: how deep a stack has been touched (asked of the kernel, so
// the fiber itself is never read and a stale address is harmless), and a SIGQUIT handler that
// only writes a byte to a pipe; a thread on the Swift side reads it and prints the dump.
#define _DEFAULT_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fiber.h"

size_t cu_stack_high_water(const void *stack_top, size_t stack_size) {
  size_t page = cu_page_size();
  uintptr_t top = (uintptr_t)stack_top;
  uintptr_t first = (top - stack_size) & ~(uintptr_t)(page - 1);
  uintptr_t end = (top + page - 1) & ~(uintptr_t)(page - 1);
  size_t pages = (end - first) / page;
  unsigned char resident[256];
  // Walk from the bottom up in chunks; the first resident page is the deepest one touched.
  for (size_t done = 0; done < pages;) {
    size_t chunk = pages - done < sizeof resident ? pages - done : sizeof resident;
    if (mincore((void *)(first + done * page), chunk * page, resident) != 0) return 0;
    for (size_t index = 0; index < chunk; index++) {
      if (resident[index] & 1) {
        uintptr_t deepest = first + (done + index) * page;
        return deepest >= top ? 0 : (size_t)(top - deepest);
      }
    }
    done += chunk;
  }
  return 0;
}

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
