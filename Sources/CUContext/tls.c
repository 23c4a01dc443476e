// Thread-locals behind real calls. clang and gcc cache a thread-local's address within a
// function; after a context switch that address may belong to another thread, so every read
// and write goes through a non-inlined function that computes it afresh.
#include "cucontext.h"

static __thread void *current_coroutine;
static __thread void *current_loop;

__attribute__((noinline)) void *cu_tls_current_coroutine(void) { return current_coroutine; }

__attribute__((noinline)) void cu_tls_set_current_coroutine(void *coroutine) {
  current_coroutine = coroutine;
}

__attribute__((noinline)) void *cu_tls_current_loop(void) { return current_loop; }

__attribute__((noinline)) void cu_tls_set_current_loop(void *loop) { current_loop = loop; }
