// Chooses the context-switch backend once, when the program loads, so that it is settled before
// any coroutine can run: COROUTINES_BACKEND=ucontext|fast, else the fastest this machine has.
// A misspelt value stops the program rather than quietly testing or measuring the wrong switch.
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

#include "cucontext.h"

enum { backend_ucontext = 0, backend_fast = 1 };

__attribute__((constructor)) static void choose_backend_from_environment(void) {
  const char *name = getenv("COROUTINES_BACKEND");
  if (name == NULL || name[0] == '\0' || strcasecmp(name, "fast") == 0) {
    if (cu_set_backend(backend_fast) == 0) return;
    cu_set_backend(backend_ucontext);
    if (name != NULL && name[0] != '\0') {
      fputs("swift-coroutines: COROUTINES_BACKEND=fast is not available on this machine (it needs "
            "x86_64); using ucontext\n",
            stderr);
    }
    return;
  }
  if (strcasecmp(name, "ucontext") == 0) {
    cu_set_backend(backend_ucontext);
    return;
  }
  fprintf(stderr,
          "swift-coroutines: COROUTINES_BACKEND=%s is not a backend; use ucontext or fast, or "
          "leave it unset for the default\n",
          name);
  exit(EXIT_FAILURE);
}
