// The slow side of a thread-biased flag (cu_bias in clinux.h): claiming and closing.
#include <linux/membarrier.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "clinux.h"

#if defined(__has_feature)  // clang's way (what SwiftPM compiles C with)
#if __has_feature(thread_sanitizer)
#define CU_TSAN 1
#endif
#endif

static int heavy_barrier_ready;
static pthread_once_t heavy_barrier_once = PTHREAD_ONCE_INIT;

static long membarrier(int command) { return syscall(__NR_membarrier, command, 0, 0); }

static void register_heavy_barrier(void) {
#ifdef CU_TSAN
  // ThreadSanitizer models fences, not a barrier another thread's system call imposes: it
  // would report the owner's plain accesses as races. Every flag stays on the locked protocol.
  heavy_barrier_ready = 0;
#else
  long commands = membarrier(MEMBARRIER_CMD_QUERY);
  heavy_barrier_ready = commands >= 0 && (commands & MEMBARRIER_CMD_PRIVATE_EXPEDITED) &&
                        membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0;
#endif
}

int cu_bias_available(void) {
  pthread_once(&heavy_barrier_once, register_heavy_barrier);
  return heavy_barrier_ready;
}

static __thread int claims_refused;

void cu_bias_refuse_claims(int refuse) { claims_refused = refuse; }

int cu_bias_claim(cu_bias *bias, uintptr_t thread) {
  uintptr_t unclaimed = 0;
  if (cu_bias_available() && !claims_refused) {
    __atomic_compare_exchange_n(&bias->owner, &unclaimed, thread, 0, __ATOMIC_ACQ_REL,
                                __ATOMIC_ACQUIRE);
  }
  return __atomic_load_n(&bias->owner, __ATOMIC_ACQUIRE) == thread;
}

void cu_bias_close(cu_bias *bias, uintptr_t thread) {
  uintptr_t owner = __atomic_load_n(&bias->owner, __ATOMIC_ACQUIRE);
  if (owner == thread || owner == CU_BIAS_CLOSED) return;
  owner = __atomic_exchange_n(&bias->owner, CU_BIAS_CLOSED, __ATOMIC_SEQ_CST);
  if (owner == 0 || owner == CU_BIAS_CLOSED || owner == thread) return;
  // Another thread owned it and may be between its store to `session` and its load of `owner`
  // with neither visible yet: the barrier makes every running thread of the process execute a
  // full fence, so after it either its session is visible here or it sees the bias closed.
  // It fails only for a process that did not register, and an owner exists only if this one did.
  if (membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0) abort();
}
