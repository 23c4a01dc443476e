// The contended halves of cu_lock (clinux.h), after Drepper's "Futexes Are Tricky": a taker
// that finds the lock held marks it 2 ("someone may sleep") before sleeping, so a releaser
// calls into the kernel only when that mark is set.
#define _GNU_SOURCE
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "clinux.h"

// Critical sections under these locks are a few dozen instructions: a short spin usually sees
// the holder leave, which is far cheaper than a sleep and a wake-up through the kernel.
enum { spins_before_sleeping = 100 };

static inline void relax(void) {
#if defined(__x86_64__)
  __builtin_ia32_pause();
#endif
}

void cu_lock_wait(uint32_t *word) {
  for (int spin = 0; spin < spins_before_sleeping; spin++) {
    relax();
    uint32_t expected = 0;
    if (__atomic_load_n(word, __ATOMIC_RELAXED) == 0 &&
        __atomic_compare_exchange_n(word, &expected, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
      return;
    }
  }
  // Taking the lock as 2 rather than 1 may cost one needless wake-up later, never a lost one.
  while (__atomic_exchange_n(word, 2, __ATOMIC_ACQUIRE) != 0) {
    syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, 2, NULL, NULL, 0);
  }
}

void cu_lock_wake(uint32_t *word) { syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0); }
