// The shim's thread-locals, behind real calls. clang and gcc cache a thread-local's address
// within a function; after a context switch that address may belong to another thread, so every
// read from Swift goes through a non-inlined function that computes it afresh.
#include "fiber.h"

__attribute__((visibility("hidden"))) __thread cu_thread_state cu_thread;

__attribute__((noinline)) void *cu_tls_current_coroutine(void) { return cu_thread.current_coroutine; }
