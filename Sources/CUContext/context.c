#define _GNU_SOURCE  // REG_RSP
// Making and switching contexts. A fiber starts in `trampoline`, which runs the entry and switches
// back to the resumer for the last time when the entry returns. On x86_64 its first frame is set
// up by hand (see cu_fiber_prepare); elsewhere makecontext calls it through `trampoline_split`.
#include <stdint.h>
#include <stdlib.h>

#include "fiber.h"

CU_SWITCH_CODE static void trampoline(cu_fiber *fiber) {
  cu_san_fiber_arrived(&fiber->sanitizer);
  fiber->entry(fiber->argument);
  cu_fiber_leave_thread(fiber);
  cu_san_fiber_leaving(&fiber->sanitizer, 1);
  cu_current_switch(&fiber->self, fiber->resumer);
  abort();  // a finished fiber is prepared again before it is resumed again
}

#if !defined(__x86_64__)
// makecontext passes only ints: the fiber's address arrives split in two.
CU_SWITCH_CODE static void trampoline_split(unsigned int high, unsigned int low) {
  trampoline((cu_fiber *)(((uintptr_t)high << 32) | (uintptr_t)low));
}
#endif

void cu_fiber_prepare(cu_fiber *fiber, cu_fiber_entry entry, void *argument) {
  fiber->entry = entry;
  fiber->argument = argument;
  fiber->exclusivity[0] = NULL;
  fiber->exclusivity[1] = NULL;
  cu_san_fiber_prepared(&fiber->sanitizer);
  if (fiber->shared != NULL) {
    cu_shared_fiber_armed(fiber);  // starts from shared.c's trampoline, made when it takes the stack
    return;
  }
#if defined(__x86_64__)
  // By hand rather than with makecontext (about 80 instructions on every launch): the first
  // frame starts as if `trampoline(fiber)` had just been called, its stack pointer 8 below a
  // 16-byte boundary, with the whole pointer in the first argument register. Both switches load
  // RDI from the context. No return address is pushed: the trampoline never returns. The rest of
  // the context (signal mask, floating-point state and its pointer) stays as makecontext would
  // leave it: as cu_context_init made it, or as the fiber's last switch saved it.
  greg_t *gregs = fiber->self.uc_mcontext.gregs;
  uintptr_t top = (uintptr_t)fiber->self.uc_stack.ss_sp + fiber->self.uc_stack.ss_size;
  gregs[REG_RIP] = (greg_t)(uintptr_t)trampoline;
  gregs[REG_RSP] = (greg_t)((top & ~(uintptr_t)15) - 8);
  gregs[REG_RBP] = 0;  // ends the frame chain for debuggers and backtraces
  gregs[REG_RDI] = (greg_t)(uintptr_t)fiber;
#else
  uintptr_t address = (uintptr_t)fiber;
  makecontext(&fiber->self, (void (*)(void))trampoline_split, 2, (unsigned int)(address >> 32),
              (unsigned int)(address & 0xffffffffu));
#endif
}

// Resume and suspend do all their bookkeeping before the switch, on the side that leaves, and
// end with the switch as a tail call (in builds without sanitizers). The switch then saves the
// caller's own resume point, so control comes back straight into the Swift code that called
// resume or suspend, with no C frame left to return through.
//
// That matters more than any instruction here: a `ret` right after a switch returns into frames
// entered before it, while the processor's return-address predictor holds the calls the other
// side made. Each such return mispredicts, about 12 ns on the machine of Performance.md, and one
// C frame on each side was two of them per round trip.
//
// Sanitizer builds keep a frame: ASan and TSan must be told on the arriving side too.
#if defined(CU_ASAN) || defined(CU_TSAN)
#define CU_SWITCH_TAIL 0
#else
#define CU_SWITCH_TAIL 1
#endif

void cu_fiber_resume(cu_fiber *fiber, void *coroutine) {
  cu_fiber_enter_thread(fiber, coroutine);
  if (fiber->shared != NULL) cu_shared_stack_acquire(fiber);
  if (!cu_exclusivity_swap_is_noop(cu_thread.exclusivity_head, fiber)) {
    swift_task_enterThreadLocalContext((char *)fiber->exclusivity);
  }
#if CU_SWITCH_TAIL
  cu_current_switch(fiber->resumer, fiber->self_context);
#else
  void *resumer_fake = NULL;
  cu_san_resume_begin(&fiber->sanitizer, &resumer_fake, cu_fiber_stack_bottom(fiber),
                      fiber->stack_size);
  cu_current_switch(fiber->resumer, fiber->self_context);
  cu_san_resume_end(resumer_fake);
#endif
}

void cu_fiber_suspend(cu_fiber *fiber) {
  cu_fiber_leave_thread(fiber);
#if CU_SWITCH_TAIL
  cu_current_switch(fiber->self_context, fiber->resumer);
#else
  cu_san_fiber_leaving(&fiber->sanitizer, 0);
  cu_current_switch(fiber->self_context, fiber->resumer);
  cu_san_fiber_arrived(&fiber->sanitizer);
#endif
}

void cu_fiber_set_label(cu_fiber *fiber, const char *name, size_t stack_size) {
  fiber->requested_size = stack_size;
  if (fiber->shared != NULL) {
    cu_shared_fiber_set_label(fiber, name);  // a heap copy, only when named
    return;
  }
  cu_copy_label(fiber->name, sizeof fiber->name, name);
}

// Only addresses are computed here, nothing is loaded: the fiber's record is as cold as what it
// points to, and a load would stall the loop for the whole miss the hint is meant to hide. For a
// fiber on a shared stack the addresses lie past its small record; a prefetch never faults.
static void prefetch_range(const void *start, size_t bytes) {
  const char *line = (const char *)((uintptr_t)start & ~(uintptr_t)63);
  for (const char *end = (const char *)start + bytes; line < end; line += 64) {
    __builtin_prefetch(line, 1);
  }
}

// What a switch touches of a context: the general registers up to RIP, the fpregs pointer, and
// the x87 control word and MXCSR in the floating-point area (offsets: switch_offsets.h).
static void prefetch_switch_fields(const ucontext_t *context) {
  prefetch_range(&context->uc_mcontext.gregs, sizeof context->uc_mcontext.gregs + sizeof(void *));
#if defined(__x86_64__)
  prefetch_range(&context->__fpregs_mem, 32);
#endif
}

void cu_fiber_prefetch_context(const cu_fiber *fiber) {
  prefetch_range(fiber, 64);  // exclusivity set, entry, shared, stack size
  prefetch_switch_fields(&fiber->self);
}

void cu_fiber_prefetch_frames(const cu_fiber *fiber) {
  if (fiber->shared != NULL) return;  // resuming copies its frames back in; nothing to warm
  const char *frames = (const char *)fiber->self.uc_mcontext.gregs[REG_RSP];
  if (frames == NULL) return;
  // Returning from the suspending call climbs back through its callers' frames; and the next
  // wait it arms goes a little deeper than where it suspended (the timer's calls), storing into
  // lines below the saved stack pointer that have been cold since its last wait. A store that
  // misses holds up the next atomic instruction (the retain that parks it) until it lands: with
  // 10 000 and 100 000 coroutines on stacks of their own, a tenth and a fifth of the samples.
  prefetch_range(frames - 256, 256 + 512);
}
