// The C that the Swift runtime needs beside the switch: the Linux interfaces that Swift's Glibc
// module leaves out (epoll, eventfd, accept4), a SIGQUIT handler, and the few mechanisms Swift
// cannot express as fast: thread-locals read afresh after every switch, a futex lock inlined into
// its callers, a flag biased to one thread and closed with membarrier, and prefetch hints. Swift
// calls them directly.
#ifndef CLINUX_H
#define CLINUX_H

#include <stddef.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>

#ifdef __cplusplus
extern "C" {
#endif

/// accept4(fd, NULL, NULL, flags): glibc declares accept4 only under _GNU_SOURCE, which a
/// header of a Swift module cannot turn on for the system headers it shares with Glibc.
int clinux_accept4(int fd, int flags);

/// Makes SIGQUIT write one byte to `write_fd` (a non-blocking pipe) instead of ending the
/// process, for the coroutine dump. Returns 0, or -1 with errno set.
int cu_sigquit_notify(int write_fd);

/// Hints to the processor, for a loop that knows which coroutines it resumes next: fetch the
/// memory at `address` (an object); the same for `bytes` bytes from `address` (a whole object).
/// Tells the processor that the caller spins on a load: another core's store to the line then
/// lands without the spinning core taking the line back between that core's writes.
static inline void cu_spin_pause(void) {
#if defined(__x86_64__)
  __builtin_ia32_pause();
#endif
}
static inline void cu_prefetch(const void *_Nonnull address) { __builtin_prefetch(address, 1); }
static inline void cu_prefetch_bytes(const void *_Nonnull address, size_t bytes) {
  const char *line = (const char *)((unsigned long)address & ~63ul);
  for (const char *end = (const char *)address + bytes; line < end; line += 64) {
    __builtin_prefetch(line, 1);
  }
}

// Thread-locals of the runtime (tls.c), each behind a real call, as the current coroutine is
// (cucontext.h): a coroutine may resume on another thread.

/// The scheduler loop this thread is running, or NULL.
void *_Nullable cu_tls_current_loop(void);
/// Sets the scheduler loop this thread is running.
void cu_tls_set_current_loop(void *_Nullable loop);
/// The test loop this thread is driving, or NULL.
void *_Nullable cu_tls_current_test_loop(void);
/// Sets the test loop this thread is driving.
void cu_tls_set_current_test_loop(void *_Nullable loop);
/// The calling thread's part of the coroutine registry, of `count`: threads take them in turn,
/// so the threads of a loop group each list their coroutines behind a lock of their own.
int cu_tls_registry_shard(int count);

/// A token for the calling thread, unique among live threads (the address of its thread-local
/// state).
uintptr_t cu_tls_thread_token(void);

/// What an inline generator's `next()` reads of the calling thread, in one call on its hot path.
typedef struct cu_thread_view {
  uintptr_t thread;           // cu_tls_thread_token()
  void *_Nullable coroutine;  // cu_tls_current_coroutine()
  void *_Nullable loop;       // the loop this thread runs, else the test loop it drives, or NULL
} cu_thread_view;

cu_thread_view cu_tls_view(void);

// A one-word lock for short critical sections (channels, generators). Uncontended, taking and
// releasing it is one atomic instruction each, inlined into the caller; a pthread mutex costs
// two calls and about 50 instructions per pair. Contended, a taker spins briefly and then
// sleeps on a futex. The word is 0 when free, 1 when held, 2 when held and someone may sleep.

/// The contended halves, out of line (lock.c).
void cu_lock_wait(uint32_t *_Nonnull word);
void cu_lock_wake(uint32_t *_Nonnull word);

/// Takes the lock at `word`, sleeping while another thread holds it.
static inline void cu_lock(uint32_t *_Nonnull word) {
  uint32_t expected = 0;
  if (!__atomic_compare_exchange_n(word, &expected, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
    cu_lock_wait(word);
  }
}

/// Releases the lock at `word`, waking one sleeper if there may be one.
static inline void cu_unlock(uint32_t *_Nonnull word) {
  if (__atomic_exchange_n(word, 0, __ATOMIC_RELEASE) == 2) cu_lock_wake(word);
}

// A flag owned by one thread, for the hot path of an inline generator (whose `next()` nearly
// always comes from the same thread): the owner enters and leaves with plain stores and loads,
// no locked instruction, and any other thread that needs to see whether the owner is inside
// first *closes* the bias, paying one process-wide barrier (membarrier) instead. This is an
// asymmetric Dekker pairing: the owner stores `session` and then loads `owner`; a closer stores
// `owner` and then, after the heavy barrier, loads `session`; the barrier guarantees that at
// least one of them sees the other's store. Once closed, a bias stays closed.
//
// Swift code must not touch the fields; only the functions below.
typedef struct cu_bias {
  uintptr_t owner;  // 0: unclaimed; CU_BIAS_CLOSED; else the owning thread's token
  int session;      // 1 while the owner is inside a biased session
} cu_bias;

#define CU_BIAS_CLOSED ((uintptr_t)1)

/// What `cu_bias_enter` found.
typedef enum cu_bias_entry {
  CU_BIAS_ENTERED = 1,   // a biased session began: leave it with cu_bias_leave
  CU_BIAS_CLASSIC = 0,   // not the owner, or closed: use the locked protocol
  CU_BIAS_REENTERED = -1 // the owner is already inside a session (a call overlapping itself)
} cu_bias_entry;

/// 1 if this process can close biases with a heavy barrier (membarrier, registered on first
/// use); 0 without it, and under ThreadSanitizer, which cannot see such a barrier. Without it no
/// bias is ever claimed.
int cu_bias_available(void);

/// Claims an unclaimed bias for `thread` if biases are available; 1 if `thread` owns it now.
int cu_bias_claim(cu_bias *_Nonnull bias, uintptr_t thread);

/// For tests: 1 makes the calling thread's claims fail, so that what it drives uses the locked
/// protocol, as on a kernel without membarrier; 0 goes back. Other threads are not affected.
void cu_bias_refuse_claims(int refuse);

/// Makes sure no biased session can begin or is unseen from `thread` any more: a no-op for the
/// owner itself and for a closed bias; otherwise closes it (with the heavy barrier if another
/// thread owned it). Afterwards `cu_bias_in_session` tells whether the old owner is inside.
void cu_bias_close(cu_bias *_Nonnull bias, uintptr_t thread);

/// Begins a session for `thread` if it owns the bias; see the enum above.
static inline cu_bias_entry cu_bias_enter(cu_bias *_Nonnull bias, uintptr_t thread) {
  if (__atomic_load_n(&bias->owner, __ATOMIC_RELAXED) != thread) return CU_BIAS_CLASSIC;
  if (__atomic_load_n(&bias->session, __ATOMIC_RELAXED)) return CU_BIAS_REENTERED;
  __atomic_store_n(&bias->session, 1, __ATOMIC_RELAXED);
  // Compiler-only: the closer's heavy barrier stands in for the fence the processor would need
  // between this store and the load below.
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  if (__atomic_load_n(&bias->owner, __ATOMIC_ACQUIRE) == thread) return CU_BIAS_ENTERED;
  __atomic_store_n(&bias->session, 0, __ATOMIC_RELEASE);
  return CU_BIAS_CLASSIC;
}

/// Ends a biased session; 1 if the bias was closed meanwhile, so that a closer may have left
/// work to the owner (queued jobs, a cancellation).
static inline int cu_bias_leave(cu_bias *_Nonnull bias, uintptr_t thread) {
  __atomic_store_n(&bias->session, 0, __ATOMIC_RELEASE);
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  return __atomic_load_n(&bias->owner, __ATOMIC_ACQUIRE) != thread;
}

/// 1 while the owner is inside a biased session; meaningful after `cu_bias_close`.
static inline int cu_bias_in_session(const cu_bias *_Nonnull bias) {
  return __atomic_load_n(&bias->session, __ATOMIC_ACQUIRE);
}

/// For tests: the bias's owner token (0 unclaimed, CU_BIAS_CLOSED closed).
static inline uintptr_t cu_bias_owner(const cu_bias *_Nonnull bias) {
  return __atomic_load_n(&bias->owner, __ATOMIC_ACQUIRE);
}

#ifdef __cplusplus
}
#endif

#endif
