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
  void *mapping;               // start of the mmap'ed region (guard included)
  size_t mapping_size;
  size_t stack_size;
  cu_sanitizer_fiber sanitizer;  // ASan/TSan bookkeeping; empty in plain builds
  char name[64];                 // the coroutine's name for overflow reports (may be cut)
  size_t requested_size;         // the stack size the coroutine asked for, for the same reports
};

// Overflow reports (overflow.c): the resumer marks the fiber as running on this thread (and
// prepares the thread on its first resume), then restores what ran before.
cu_fiber *cu_overflow_enter(cu_fiber *fiber);
void cu_overflow_leave(cu_fiber *previous);

#endif
