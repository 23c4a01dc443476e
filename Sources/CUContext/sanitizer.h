// Telling AddressSanitizer and ThreadSanitizer about every stack switch. Without it ASan takes a
// fiber's stack for a wild write into the thread's, and TSan crashes as soon as a coroutine
// changes threads. Outside sanitizer builds every helper here is empty and compiles away.
//
// The protocol, per switch from stack A to stack B:
//   on A, just before: ASan start_switch_fiber with B's bounds; TSan switch_to_fiber(B)
//     (cu_san_resume_begin on a resumer, cu_san_fiber_leaving on a fiber)
//   on B, just after: ASan finish_switch_fiber, which tells B where A's stack is
//     (cu_san_fiber_arrived on a fiber, cu_san_resume_end on a resumer)
// A fiber learns its resumer's stack bounds on every arrival, so it may be resumed from any
// thread (or from another fiber) and still switch back to the right stack.
#ifndef CU_SANITIZER_H
#define CU_SANITIZER_H

#include <stddef.h>

// clang (what SwiftPM compiles C with) says so through __has_feature.
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CU_ASAN 1
#endif
#if __has_feature(thread_sanitizer)
#define CU_TSAN 1
#endif
#endif

// TSan keeps a shadow call stack per fiber: an instrumented function entered on one fiber's
// books and left on another's makes the new fiber's stack underflow (a SEGV in
// __tsan_func_entry) and the old one's grow with every pooled reuse. So the code that runs
// between __tsan_switch_to_fiber and the switch itself carries no instrumentation: the helpers
// below are always inlined (even at -O0) and the switch and trampoline are CU_SWITCH_CODE.
#define CU_SAN_INLINE static inline __attribute__((always_inline))
#if defined(__has_attribute)
#if __has_attribute(disable_sanitizer_instrumentation)
#define CU_SWITCH_CODE __attribute__((disable_sanitizer_instrumentation))
#endif
#endif
#ifndef CU_SWITCH_CODE
#define CU_SWITCH_CODE
#endif

#ifdef CU_ASAN
void __sanitizer_start_switch_fiber(void **fake_stack_save, const void *bottom, size_t size);
void __sanitizer_finish_switch_fiber(void *fake_stack_save, const void **bottom_old,
                                     size_t *size_old);
#endif
#ifdef CU_TSAN
void *__tsan_get_current_fiber(void);
void *__tsan_create_fiber(unsigned flags);
void __tsan_destroy_fiber(void *fiber);
void __tsan_switch_to_fiber(void *fiber, unsigned flags);
#endif

/// What the sanitizers need to know about one fiber; empty without sanitizers.
typedef struct cu_sanitizer_fiber {
#ifdef CU_ASAN
  void *fake_stack;              // ASan's fake frames of the fiber while it is switched out
  const void *resumer_bottom;    // the stack that resumed the fiber, learnt on each arrival
  size_t resumer_size;
#endif
#ifdef CU_TSAN
  void *tsan_fiber;              // TSan's context for the fiber's stack
  void *tsan_resumer;            // TSan's context of whoever resumed the fiber
#endif
  char unused;                   // keeps the struct non-empty in plain builds
} cu_sanitizer_fiber;

/// A new fiber (its stack mapped): TSan gets a context for it.
CU_SAN_INLINE void cu_san_fiber_created(cu_sanitizer_fiber *san) {
#ifdef CU_TSAN
  san->tsan_fiber = __tsan_create_fiber(0);
#endif
  (void)san;
}

/// A fiber about to be unmapped (never the running one).
CU_SAN_INLINE void cu_san_fiber_destroyed(cu_sanitizer_fiber *san) {
#ifdef CU_TSAN
  if (san->tsan_fiber) {
    // Made current for an instant first: TSan sets up a context's trace only once it is current,
    // and destroying contexts that never were (slab slots built but never run, stacks released
    // unused) left it walking uninitialised traces in ThreadContext::OnFinished, where it
    // eventually crashed. The happens-before edge the switches add goes nowhere: nothing runs on
    // a fiber being destroyed.
    void *current = __tsan_get_current_fiber();
    __tsan_switch_to_fiber(san->tsan_fiber, 0);
    __tsan_switch_to_fiber(current, 0);
    __tsan_destroy_fiber(san->tsan_fiber);
  }
  san->tsan_fiber = NULL;
#endif
  (void)san;
}

/// A fiber armed to run from the top of its stack: it has no fake frames yet.
CU_SAN_INLINE void cu_san_fiber_prepared(cu_sanitizer_fiber *san) {
#ifdef CU_ASAN
  san->fake_stack = NULL;
#endif
  (void)san;
}

/// On the resumer's stack, just before switching into the fiber whose stack is given; the
/// resumer's own fake frames wait at `resumer_fake` meanwhile.
CU_SAN_INLINE void cu_san_resume_begin(cu_sanitizer_fiber *san, void **resumer_fake,
                                       const void *stack_bottom, size_t stack_size) {
#ifdef CU_TSAN
  san->tsan_resumer = __tsan_get_current_fiber();
  __tsan_switch_to_fiber(san->tsan_fiber, 0);
#endif
#ifdef CU_ASAN
  __sanitizer_start_switch_fiber(resumer_fake, stack_bottom, stack_size);
#endif
  (void)san, (void)resumer_fake, (void)stack_bottom, (void)stack_size;
}

/// On the resumer's stack, right after the fiber switched back.
CU_SAN_INLINE void cu_san_resume_end(void *resumer_fake) {
#ifdef CU_ASAN
  __sanitizer_finish_switch_fiber(resumer_fake, NULL, NULL);
#endif
  (void)resumer_fake;
}

/// On the fiber's stack, right after it starts or is resumed.
CU_SAN_INLINE void cu_san_fiber_arrived(cu_sanitizer_fiber *san) {
#ifdef CU_ASAN
  __sanitizer_finish_switch_fiber(san->fake_stack, &san->resumer_bottom, &san->resumer_size);
#endif
  (void)san;
}

/// On the fiber's stack, just before switching back to its resumer. A fiber that `finishing`
/// never comes back, so ASan may drop its fake frames.
CU_SAN_INLINE void cu_san_fiber_leaving(cu_sanitizer_fiber *san, int finishing) {
#ifdef CU_ASAN
  __sanitizer_start_switch_fiber(finishing ? NULL : &san->fake_stack, san->resumer_bottom,
                                 san->resumer_size);
#endif
#ifdef CU_TSAN
  __tsan_switch_to_fiber(san->tsan_resumer, 0);
#endif
  (void)san, (void)finishing;
}

#endif
