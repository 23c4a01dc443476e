// The runtime's thread-locals, behind real calls for the reason the shim's are (CUContext's
// tls.c): after a context switch, a cached thread-local address may belong to another thread.
#include "clinux.h"
#include "cucontext.h"

typedef struct runtime_thread {
  void *loop;
  void *test_loop;
  int registry_shard;
} runtime_thread;

static __thread runtime_thread here = {.registry_shard = -1};
static unsigned next_registry_shard;

__attribute__((noinline)) void *cu_tls_current_loop(void) { return here.loop; }

__attribute__((noinline)) void cu_tls_set_current_loop(void *loop) { here.loop = loop; }

__attribute__((noinline)) void *cu_tls_current_test_loop(void) { return here.test_loop; }

__attribute__((noinline)) void cu_tls_set_current_test_loop(void *loop) { here.test_loop = loop; }

__attribute__((noinline)) uintptr_t cu_tls_thread_token(void) { return (uintptr_t)&here; }

__attribute__((noinline)) cu_thread_view cu_tls_view(void) {
  runtime_thread *thread = &here;
  cu_thread_view view = {(uintptr_t)thread, cu_tls_current_coroutine(),
                         thread->loop != NULL ? thread->loop : thread->test_loop};
  return view;
}

__attribute__((noinline)) int cu_tls_registry_shard(int count) {
  if (here.registry_shard < 0) {
    unsigned next = __atomic_fetch_add(&next_registry_shard, 1, __ATOMIC_RELAXED);
    here.registry_shard = (int)(next % (unsigned)count);
  }
  return here.registry_shard;
}
