// The fiber layout shared by the C files of the shim (never seen by Swift).
#ifndef CU_FIBER_H
#define CU_FIBER_H

#include <ucontext.h>

#include "cucontext.h"

struct cu_fiber {
  ucontext_t self;             // where the fiber's registers rest while it is suspended
  ucontext_t resumer;          // where the resumer's registers rest while the fiber runs
  void *exclusivity[2];        // the fiber's own Swift exclusivity access set
  cu_fiber_entry entry;
  void *argument;
  void *mapping;               // start of the mmap'ed region (guard included)
  size_t mapping_size;
  size_t stack_size;
};

#if defined(__x86_64__)
// The fast backend's switch (switch_x86_64.S): saves the callee-saved registers, MXCSR and the
// x87 control word of the caller in `from` and continues `to`, both in glibc's own layout.
void cu_switch_fast(ucontext_t *from, ucontext_t *to);
#endif

#endif
