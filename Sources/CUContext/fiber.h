// The fiber layout shared by the C files of the shim (never seen by Swift).
#ifndef CU_FIBER_H
#define CU_FIBER_H

#include <ucontext.h>

#include "cucontext.h"
#include "sanitizer.h"

struct cu_fiber {
  ucontext_t self;             // where the fiber's registers rest while it is suspended
  ucontext_t resumer;          // where the resumer's registers rest while the fiber runs
  void *exclusivity[2];        // the fiber's own Swift exclusivity access set
  cu_fiber_entry entry;
  void *argument;
  void *mapping;               // start of the fiber's slot (guard included)
  size_t mapping_size;         // bytes of the slot
  struct cu_stack_slab *slab;  // the slab the slot belongs to (stack.c); NULL on a shared stack
  size_t slot;                 // the slot's index in `slab`
  int owns_slab;               // 1 for cu_fiber_new's single-slot slab, freed with the fiber
  size_t stack_size;
  cu_sanitizer_fiber sanitizer;  // ASan/TSan bookkeeping; empty in plain builds
  char name[64];                 // the coroutine's name for overflow reports (may be cut)
  size_t requested_size;         // the stack size the coroutine asked for, for the same reports
  // Shared-stack mode (shared.c); all zero for a fiber with a stack of its own.
  struct cu_shared_stack *shared;  // the stack it runs on, or NULL
  void *saved;                     // its used stack bytes while another fiber has the stack
  size_t saved_size;               // bytes in `saved` waiting to be copied back (0: in place)
  size_t saved_capacity;           // bytes allocated for `saved`
};

// Overflow reports (overflow.c): the resumer marks the fiber as running on this thread (and
// prepares the thread on its first resume), then restores what ran before. Inlined: the code
// after a resume runs on the thread that called it, so reusing the thread-local's address
// there is safe (unlike after a suspend, which may return on another thread).
extern __thread cu_fiber *cu_running_fiber;
extern __thread int cu_thread_prepared;
void cu_prepare_thread(void);

static inline cu_fiber *cu_overflow_enter(cu_fiber *fiber) {
  if (__builtin_expect(!cu_thread_prepared, 0)) cu_prepare_thread();
  cu_fiber *previous = cu_running_fiber;
  cu_running_fiber = fiber;
  return previous;
}

static inline void cu_overflow_leave(cu_fiber *previous) { cu_running_fiber = previous; }

// Shared-stack mode, called by context.c around switches. `acquire` puts the fiber's saved bytes
// back on its shared stack (first saving the previous occupant's) before it is resumed; `leave`
// gives up the stack when the fiber's entry has returned, so dead frames are never saved.
void cu_shared_stack_acquire(cu_fiber *fiber);
void cu_shared_stack_leave(cu_fiber *fiber);
// Frees a fiber built by cu_fiber_new_shared (cu_fiber_free dispatches here).
void cu_shared_fiber_free(cu_fiber *fiber);

// Fills `context` as getcontext would, from a template captured once (context.c): getcontext
// makes a system call (the signal mask) every time, and a new fiber needs only its fields.
void cu_context_init(ucontext_t *context);

#if defined(__x86_64__)
// The fast backend's switch (switch_x86_64.S): saves the callee-saved registers, MXCSR and the
// x87 control word of the caller in `from` and continues `to`, both in glibc's own layout.
void cu_switch_fast(ucontext_t *from, ucontext_t *to);
#endif

#endif
