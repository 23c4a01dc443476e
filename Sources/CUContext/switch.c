// The switch every fiber uses: glibc's swapcontext, or the register-only switch of
// switch_x86_64.S. Chosen once, when the program loads, so that it is settled before any
// coroutine can run: COROUTINES_BACKEND=ucontext|fast, else the fastest this machine has. A
// misspelt value stops the program rather than quietly testing or measuring the wrong switch.
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

#include "fiber.h"

// A tail call, so that swapcontext saves the resume point of whoever called the switch (see
// cu_fiber_resume). Its result is not checked: it fails only when the kernel rejects the signal
// mask it installs, and every mask here was one the kernel itself handed to getcontext.
CU_SWITCH_CODE static void switch_with_swapcontext(ucontext_t *from, ucontext_t *to) {
  swapcontext(from, to);
}

cu_switch_function cu_current_switch = switch_with_swapcontext;
static int current_backend = 0;

// Also the tests' way to a switch they check without selecting it (Tests/CSwitchProbe).
cu_switch_function cu_backend_switch(int backend) {
  switch (backend) {
    case 0: return switch_with_swapcontext;
#if defined(__x86_64__)
    case 1: return cu_switch_fast;
#endif
    default: return NULL;
  }
}

// Only before any fiber runs: both switches keep the same registers in the same places, but only
// swapcontext saves the signal mask and the whole x87 environment, so a fiber must be switched
// out and back in by the same one. -1 when the backend does not exist on this machine.
static int set_backend(int backend) {
  cu_switch_function chosen = cu_backend_switch(backend);
  if (chosen == NULL) return -1;
  cu_current_switch = chosen;
  current_backend = backend;
  return 0;
}

int cu_backend(void) { return current_backend; }

enum { backend_ucontext = 0, backend_fast = 1 };

__attribute__((constructor)) static void choose_backend_from_environment(void) {
  const char *name = getenv("COROUTINES_BACKEND");
  if (name == NULL || name[0] == '\0' || strcasecmp(name, "fast") == 0) {
    if (set_backend(backend_fast) == 0) return;
    set_backend(backend_ucontext);
    if (name != NULL && name[0] != '\0') {
      fputs("swift-coroutines: COROUTINES_BACKEND=fast is not available on this machine (it needs "
            "x86_64); using ucontext\n",
            stderr);
    }
    return;
  }
  if (strcasecmp(name, "ucontext") == 0) {
    set_backend(backend_ucontext);
    return;
  }
  fprintf(stderr,
          "swift-coroutines: COROUTINES_BACKEND=%s is not a backend; use ucontext or fast, or "
          "leave it unset for the default\n",
          name);
  exit(EXIT_FAILURE);
}
