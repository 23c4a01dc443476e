// The whole interface between the Swift runtime and the C shim. Swift sees opaque fibers,
// plain functions and integers; ucontext_t never crosses this line.
#ifndef CUCONTEXT_H
#define CUCONTEXT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// An execution context with its own guarded stack. Opaque to Swift.
typedef struct cu_fiber cu_fiber;

/// What a fiber runs. When it returns, the fiber switches back to its resumer for the last time.
typedef void (*cu_fiber_entry)(void *_Nullable argument);

/// Maps a stack of `stack_size` usable bytes (rounded up to whole pages) with a PROT_NONE guard
/// region of `guard_size` bytes below it, and builds a fiber on it. Pages are committed only when
/// touched. Returns NULL and leaves errno set when the kernel refuses the mapping.
cu_fiber *_Nullable cu_fiber_new(size_t stack_size, size_t guard_size);

/// Stacks mapped together: one kernel mapping cut into `count` equal slots, each a guard region,
/// a stack and a fiber. Opaque to Swift.
typedef struct cu_stack_slab cu_stack_slab;

/// Maps `count` slots for stacks of `stack_size` usable bytes (rounded up to whole pages) above
/// PROT_NONE guards of `guard_size` bytes, in one mapping. Nothing is committed or guarded until a
/// slot is first used. Returns NULL and leaves errno set when the kernel refuses the mapping.
cu_stack_slab *_Nullable cu_stack_slab_new(size_t stack_size, size_t guard_size, size_t count);

/// The fiber of slot `index`: built (and its guard installed) on first use or after
/// cu_stack_release_fibers; otherwise the fiber already there. Returns NULL and leaves errno set
/// when the guard cannot be installed.
cu_fiber *_Nullable cu_stack_slab_fiber(cu_stack_slab *_Nonnull slab, size_t index);

/// Readies the never-used slots among `first ..< first + count` for a burst of launches: their
/// guards go in, and the top page of each stack (the fiber's record and first frames) is made
/// resident, two system calls for the lot instead of a system call and a page fault per slot.
/// Only an optimisation: whatever fails here is done slot by slot by cu_stack_slab_fiber.
void cu_stack_slab_prepare(cu_stack_slab *_Nonnull slab, size_t first, size_t count);

/// Gives the touched pages of these built fibers' slots back to the system, in as few system
/// calls as it can (one for up to 1 024 fibers where the kernel takes batched advice); their
/// guards stay, and the next cu_stack_slab_fiber of one of their slots builds a fresh fiber.
void cu_stack_release_fibers(cu_fiber *_Nonnull const *_Nonnull fibers, size_t count);

/// Unmaps the slab and frees its record. No fiber of it may be running or suspended mid-body.
void cu_stack_slab_free(cu_stack_slab *_Nonnull slab);

/// The number of slots of the slab.
size_t cu_stack_slab_count(const cu_stack_slab *_Nonnull slab);

/// The index of a slab fiber's slot.
size_t cu_fiber_slot(const cu_fiber *_Nonnull fiber);

/// The slab a fiber's slot belongs to (NULL for a fiber on a shared stack).
cu_stack_slab *_Nullable cu_fiber_slab(const cu_fiber *_Nonnull fiber);

/// Unmaps the fiber's stack (a fiber of cu_fiber_new), or for a fiber on a shared stack frees its record and saved bytes.
/// The fiber must not be running or suspended mid-body.
void cu_fiber_free(cu_fiber *_Nonnull fiber);

/// A stack that many fibers take turns on: while one runs there, the used part of each of the
/// others waits in a heap buffer of exactly its size (or only the words of it that differ from
/// another parked fiber's at the same depth). Opaque to Swift.
typedef struct cu_shared_stack cu_shared_stack;

/// Maps a shared stack of `stack_size` usable bytes (rounded up to whole pages) above a
/// PROT_NONE guard of `guard_size` bytes. Returns NULL and leaves errno set when the kernel
/// refuses.
cu_shared_stack *_Nullable cu_shared_stack_new(size_t stack_size, size_t guard_size);

/// Unmaps a shared stack. Every fiber bound to it must have been freed.
void cu_shared_stack_free(cu_shared_stack *_Nonnull stack);

/// Builds a fiber bound for life to `stack` (its frames hold absolute addresses, so it can only
/// run where it began). Its record is on the heap; it takes no mapping of its own. Resume the
/// fibers of one shared stack from one thread at a time, and never from a fiber on that same
/// stack. Returns NULL when out of memory.
cu_fiber *_Nullable cu_fiber_new_shared(cu_shared_stack *_Nonnull stack);

/// Bytes of the fiber's own heap buffer right now: its used stack and the few registers of its
/// context that a suspension leaves live, whole or as the words that differ from an image it
/// shares (0 while its frames are in place on the shared stack, and always 0 for a fiber with
/// its own stack).
size_t cu_fiber_saved_size(const cu_fiber *_Nonnull fiber);

/// How many fibers a shared stack must carry before a parking is stored as the words that
/// differ from an image: below it, whole copies (faster to switch, and little memory anyway).
enum { CU_SHARED_DELTA_MIN_FIBERS = 32 };

/// 1 when a parking is compared with its stack's image four words at a time (x86_64 with AVX2,
/// which the system saves), 0 when with the portable loop.
int cu_shared_stack_uses_avx2(void);

/// For tests: sets bit `first + i` of `map` for each of `count` words that differs from
/// `reference`'s, with the AVX2 loop (`vector` 1) or the portable one (0). Returns 0, changing
/// nothing, when AVX2 was asked for and is not usable here.
int cu_shared_stack_mark_differences(const unsigned long long *_Nonnull words,
                                     const unsigned long long *_Nonnull reference, size_t count,
                                     size_t first, unsigned long long *_Nonnull map, int vector);

/// Arms a new or finished fiber to run `entry(argument)` from the top of its stack on the next
/// resume. Reusing a pooled fiber this way costs no system call.
void cu_fiber_prepare(cu_fiber *_Nonnull fiber, cu_fiber_entry _Nonnull entry,
                      void *_Nullable argument);

/// Switches from the calling stack into the fiber; returns when the fiber suspends or finishes.
/// Swift's exclusivity access set is swapped for the fiber's own around the switch, so accesses
/// begun in the fiber never mix with the resuming thread's; and the thread's current coroutine
/// (`cu_tls_current_coroutine`) is `coroutine` while the fiber runs, and what it was afterwards.
void cu_fiber_resume(cu_fiber *_Nonnull fiber, void *_Nullable coroutine);

/// Hints to the processor, for a loop that knows which coroutines it resumes next: fetch the
/// memory at `address` (an object); fetch the fiber's saved context; fetch the top of its saved
/// frames (read from that context, so ask for the context a little earlier).
void cu_prefetch(const void *_Nonnull address);
/// The same for `bytes` bytes from `address` (a whole object), inlined into the caller.
static inline void cu_prefetch_bytes(const void *_Nonnull address, size_t bytes) {
  const char *line = (const char *)((unsigned long)address & ~63ul);
  for (const char *end = (const char *)address + bytes; line < end; line += 64) {
    __builtin_prefetch(line, 1);
  }
}
void cu_fiber_prefetch_context(const cu_fiber *_Nonnull fiber);
void cu_fiber_prefetch_frames(const cu_fiber *_Nonnull fiber);

/// Called on the fiber's own stack: switches back to whoever resumed it. Returns when resumed.
void cu_fiber_suspend(cu_fiber *_Nonnull fiber);

/// Labels the fiber for stack overflow reports with the name and requested stack size of the
/// coroutine that runs on it next. NULL clears the name; the name is copied, and cut to 63 bytes.
void cu_fiber_set_label(cu_fiber *_Nonnull fiber, const char *_Nullable name, size_t stack_size);

/// Usable stack bytes of the fiber (after rounding).
size_t cu_fiber_stack_size(const cu_fiber *_Nonnull fiber);

/// Bytes of stack touched below `stack_top` (a fiber's address: its stack ends there), looking
/// at most `stack_size` bytes down; page granularity. Asks the kernel which pages are resident,
/// so it never reads the stack and returns 0 for an address that is no longer mapped. A pooled
/// stack remembers the deepest use of every coroutine that ran on it.
size_t cu_stack_high_water(const void *_Nonnull stack_top, size_t stack_size);

/// Makes SIGQUIT write one byte to `write_fd` (a non-blocking pipe) instead of ending the
/// process. Returns 0, or -1 with errno set.
int cu_sigquit_notify(int write_fd);

/// The system page size.
size_t cu_page_size(void);

/// Chooses the switch used by every fiber from now on: 0 selects glibc swapcontext, 1 the
/// register-only switch (x86_64 only). Call it before any fiber runs: the two keep the same
/// registers in the same places, but only swapcontext saves the signal mask and the whole x87
/// environment, so a fiber must be switched out and back in by the same backend.
/// Returns 0 on success, -1 when the backend is not available on this machine.
int cu_set_backend(int backend);

/// The backend in use (see cu_set_backend).
int cu_backend(void);

/// What cu_backend_probe found.
enum {
  CU_PROBE_PASSED = 0,
  CU_PROBE_UNAVAILABLE = 1,       // the backend does not exist on this machine
  CU_PROBE_NO_MEMORY = 2,         // the probe could not allocate its context
  CU_PROBE_NOT_STARTED = 3,       // the made context did not run, or ran the wrong number of times
  CU_PROBE_BAD_ARGUMENTS = 4,     // the made context's entry missed makecontext's arguments
  CU_PROBE_LOST_REGISTERS = 5,    // a callee-saved register changed across a switch
  CU_PROBE_LOST_FP_CONTROL = 6,   // a side's x87 or SSE rounding mode leaked to the other
};

/// Checks one backend's switch without touching the one in use: starts a context made by
/// getcontext + makecontext with six arguments and switches into it and back a few times,
/// checking on both sides that callee-saved registers and floating-point control words survive.
/// Returns CU_PROBE_PASSED or the first problem found.
int cu_backend_probe(int backend);

// Thread-locals. Each access is a real call so that no compiler caches a thread-local's address
// across a context switch: a coroutine may resume on another thread.

/// The coroutine running on this thread, or NULL.
void *_Nullable cu_tls_current_coroutine(void);
/// The scheduler loop this thread is running, or NULL.
void *_Nullable cu_tls_current_loop(void);
/// Sets the scheduler loop this thread is running.
void cu_tls_set_current_loop(void *_Nullable loop);
/// The test loop this thread is driving, or NULL.
/// The calling thread's part of the coroutine registry, of `count`: threads take them in turn,
/// so the threads of a loop group each list their coroutines behind a lock of their own.
int cu_tls_registry_shard(int count);

void *_Nullable cu_tls_current_test_loop(void);
/// Sets the test loop this thread is driving.
void cu_tls_set_current_test_loop(void *_Nullable loop);

/// 1 when switches can tell, without calling into the Swift runtime, that neither side has an
/// exclusivity access in flight, and so skip swapping the access sets; 0 when every switch swaps.
int cu_exclusivity_swap_skippable(void);

/// For tests: 1 makes every switch on the calling thread swap the access sets through the
/// runtime, as on a runtime whose set the shim cannot find; 0 goes back to skipping when it can.
void cu_exclusivity_force_runtime_swaps(int force);

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

// A loop group's count of live coroutines, kept by each of its threads on a cache line of its
// own: how many coroutines the thread created and how many finished on it. A group thread counts
// with plain stores (it is the only writer of its tally); one shared counter cost every launch
// and every finish a locked instruction on a line that all the group's threads fought over.
// Threads outside the group count on a tally of their own with atomic additions. The sum is
// only read to decide whether a shut-down group may end, which is rare.
typedef struct cu_live_tally {
  long created;
  long finished;
  char padding[48];  // to 64 bytes; allocated 64-byte aligned
} cu_live_tally;

/// A coroutine was created (`finished` 0) or finished (1) on the tally's own thread.
static inline void cu_live_tally_count_here(cu_live_tally *_Nonnull tally, int finished) {
  long *count = finished ? &tally->finished : &tally->created;
  __atomic_store_n(count, __atomic_load_n(count, __ATOMIC_RELAXED) + 1, __ATOMIC_RELEASE);
}

/// The same, on a tally that several threads share.
static inline void cu_live_tally_count_shared(cu_live_tally *_Nonnull tally, int finished) {
  __atomic_fetch_add(finished ? &tally->finished : &tally->created, 1, __ATOMIC_SEQ_CST);
}

/// Coroutines created and not finished, over `count` tallies. Every finish it sees had its
/// creation counted before it (the coroutine passed from its creator to where it finished), so
/// a sum of zero means that no coroutine counted so far is still live.
static inline long cu_live_tally_sum(const cu_live_tally *_Nonnull tallies, size_t count) {
  long finished = 0, created = 0;
  for (size_t index = 0; index < count; index++) {
    finished += __atomic_load_n(&tallies[index].finished, __ATOMIC_SEQ_CST);
  }
  for (size_t index = 0; index < count; index++) {
    created += __atomic_load_n(&tallies[index].created, __ATOMIC_SEQ_CST);
  }
  return created - finished;
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

/// A token for the calling thread, unique among live threads (the address of its thread-local
/// state). A real call, as every thread-local access.
uintptr_t cu_tls_thread_token(void);

/// What an inline generator's `next()` reads of the calling thread, in one call on its hot path.
typedef struct cu_thread_view {
  uintptr_t thread;           // cu_tls_thread_token()
  void *_Nullable coroutine;  // cu_tls_current_coroutine()
  void *_Nullable loop;       // the loop this thread runs, else the test loop it drives, or NULL
} cu_thread_view;

cu_thread_view cu_tls_view(void);

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
