// Thread-locals behind real calls. clang and gcc cache a thread-local's address within a
// function; after a context switch that address may belong to another thread, so every read
// and write goes through a non-inlined function that computes it afresh.
#include "cucontext.h"
#include "fiber.h"

__attribute__((visibility("hidden"))) __thread cu_thread_state cu_thread;
static __thread void *current_loop;
static __thread void *current_test_loop;

__attribute__((noinline)) void *cu_tls_current_coroutine(void) { return cu_thread.current_coroutine; }

__attribute__((noinline)) void *cu_tls_current_loop(void) { return current_loop; }

__attribute__((noinline)) void cu_tls_set_current_loop(void *loop) { current_loop = loop; }

__attribute__((noinline)) void *cu_tls_current_test_loop(void) { return current_test_loop; }

__attribute__((noinline)) void cu_tls_set_current_test_loop(void *loop) { current_test_loop = loop; }

__attribute__((noinline)) uintptr_t cu_tls_thread_token(void) { return (uintptr_t)&cu_thread; }

__attribute__((noinline)) cu_thread_view cu_tls_view(void) {
  cu_thread_view view = {(uintptr_t)&cu_thread, cu_thread.current_coroutine,
                         current_loop != NULL ? current_loop : current_test_loop};
  return view;
}

static __thread int registry_shard = -1;
static unsigned next_registry_shard;

__attribute__((noinline)) int cu_tls_registry_shard(int count) {
  if (registry_shard < 0) {
    registry_shard = (int)(__atomic_fetch_add(&next_registry_shard, 1, __ATOMIC_RELAXED) % count);
  }
  return registry_shard;
}
