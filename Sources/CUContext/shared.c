// Shared stacks: many fibers take turns on one mapped stack. Each stack remembers its occupant,
// the last fiber that ran there; only when a different fiber is about to run is the occupant's
// used part (from its saved stack pointer to the top) copied out to a heap buffer of exactly that
// size, and the newcomer's saved bytes copied back to the addresses they came from. A fiber
// resumed on a stack it still occupies costs no copy.
//
// The stack, not the fiber, holds the two switch contexts (ucontext_t, 936 bytes each on
// x86_64): only the occupant ever runs there, from one thread at a time. When the occupant is
// copied out, the few registers of its context that are live at a suspension (cu_parked_context)
// go to the head of the same buffer, and come back into the stack's context with its bytes. So a
// parked fiber costs a small record, its used stack and 72 bytes, on either backend.
#define _GNU_SOURCE  // REG_RSP
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "fiber.h"

// Under AddressSanitizer the copies must neither be checked (the saved frames hold redzones) nor
// leave one coroutine's redzone markings over another's frames: the stack is unpoisoned whenever
// its occupant changes.
#if defined(__SANITIZE_ADDRESS__)
#define CU_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CU_ASAN 1
#endif
#endif
#if defined(CU_ASAN)
#include <sanitizer/asan_interface.h>
// A plain copy the sanitizer neither checks nor intercepts; short enough not to matter.
__attribute__((no_sanitize("address"))) static void copy_bytes(char *to, const char *from,
                                                              size_t size) {
  for (size_t i = 0; i < size; i++) to[i] = from[i];
}
#else
#define copy_bytes(to, from, size) memcpy((to), (from), (size))
#endif

static size_t round_up(size_t value, size_t unit) { return (value + unit - 1) / unit * unit; }

// Moving the live part of a switched-out context in and out of the stack's ucontext_t. On
// x86_64 both switches (swapcontext and the register-only one) leave the control words in the
// context's own __fpregs_mem, which its fpregs pointer always names.
#if defined(__x86_64__)
static void pack(cu_parked_context *parked, const ucontext_t *context) {
  const greg_t *gregs = context->uc_mcontext.gregs;
  parked->rip = (unsigned long long)gregs[REG_RIP];
  parked->rbx = (unsigned long long)gregs[REG_RBX];
  parked->rbp = (unsigned long long)gregs[REG_RBP];
  parked->r12 = (unsigned long long)gregs[REG_R12];
  parked->r13 = (unsigned long long)gregs[REG_R13];
  parked->r14 = (unsigned long long)gregs[REG_R14];
  parked->r15 = (unsigned long long)gregs[REG_R15];
  memcpy(&parked->signal_mask, &context->uc_sigmask, sizeof parked->signal_mask);
  parked->mxcsr = context->__fpregs_mem.mxcsr;
  parked->x87_control = context->__fpregs_mem.cwd;
}

static void unpack(ucontext_t *context, const cu_parked_context *parked) {
  greg_t *gregs = context->uc_mcontext.gregs;
  gregs[REG_RIP] = (greg_t)parked->rip;
  gregs[REG_RBX] = (greg_t)parked->rbx;
  gregs[REG_RBP] = (greg_t)parked->rbp;
  gregs[REG_R12] = (greg_t)parked->r12;
  gregs[REG_R13] = (greg_t)parked->r13;
  gregs[REG_R14] = (greg_t)parked->r14;
  gregs[REG_R15] = (greg_t)parked->r15;
  memcpy(&context->uc_sigmask, &parked->signal_mask, sizeof parked->signal_mask);
  context->__fpregs_mem.mxcsr = parked->mxcsr;
  context->__fpregs_mem.cwd = parked->x87_control;
}

// Where the suspended fiber's frames end: the stack pointer its switch saved. Nothing below it
// is live, since the switch was entered by a call (see Internals.md on the red zone).
static char *saved_stack_pointer(const ucontext_t *context) {
  return (char *)context->uc_mcontext.gregs[REG_RSP];
}

static void set_stack_pointer(ucontext_t *context, char *stack_pointer) {
  context->uc_mcontext.gregs[REG_RSP] = (greg_t)stack_pointer;
}
#else
static void pack(cu_parked_context *parked, const ucontext_t *context) {
  memcpy(&parked->context, context, sizeof *context);
}
static void unpack(ucontext_t *context, const cu_parked_context *parked) {
  memcpy(context, &parked->context, sizeof *context);
}
#if defined(__aarch64__)
static char *saved_stack_pointer(const ucontext_t *context) {
  return (char *)context->uc_mcontext.sp;
}
static void set_stack_pointer(ucontext_t *context, char *stack_pointer) { (void)context, (void)stack_pointer; }
#else
#error "shared stacks need the saved stack pointer's place in ucontext_t for this architecture"
#endif
#endif

cu_shared_stack *cu_shared_stack_new(size_t stack_size, size_t guard_size) {
  size_t page = cu_page_size();
  size_t usable = round_up(stack_size, page);
  size_t guard = round_up(guard_size, page);
  if (usable == 0 || guard + usable < usable) {
    errno = EINVAL;
    return NULL;
  }
  cu_shared_stack *stack = calloc(1, sizeof *stack);
  if (stack == NULL) return NULL;
  void *mapping = mmap(NULL, guard + usable, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
  if (mapping == MAP_FAILED || (guard > 0 && mprotect(mapping, guard, PROT_NONE) != 0) ||
      getcontext(&stack->self) != 0) {
    int saved = errno;
    if (mapping != MAP_FAILED) munmap(mapping, guard + usable);
    free(stack);
    errno = saved;
    return NULL;
  }
  stack->mapping = mapping;
  stack->mapping_size = guard + usable;
  stack->base = (char *)mapping + guard;
  stack->top = stack->base + usable;
  stack->self.uc_stack.ss_sp = stack->base;
  stack->self.uc_stack.ss_size = usable;
  stack->self.uc_link = NULL;
  // The mask and control words of the thread making the stack, as getcontext gives a fiber
  // with its own stack: every fiber here starts with them.
  pack(&stack->start, &stack->self);
  return stack;
}

void cu_shared_stack_free(cu_shared_stack *stack) {
  munmap(stack->mapping, stack->mapping_size);
  free(stack);
}

cu_fiber *cu_fiber_new_shared(cu_shared_stack *stack) {
  // The record ends where a fiber with its own stack goes on with its mapping, name and contexts.
  cu_fiber *fiber = calloc(1, offsetof(cu_fiber, fresh) + sizeof fiber->fresh);
  if (fiber == NULL) return NULL;
  fiber->stack_size = (size_t)(stack->top - stack->base);
  fiber->shared = stack;
  cu_san_fiber_created(&fiber->sanitizer);
  return fiber;
}

void cu_shared_fiber_free(cu_fiber *fiber) {
  if (fiber->shared->occupant == fiber) fiber->shared->occupant = NULL;
  free(fiber->saved);
  free(fiber->label);
  free(fiber);
}

void cu_shared_fiber_set_label(cu_fiber *fiber, const char *name) {
  free(fiber->label);
  fiber->label = NULL;
  if (name == NULL || name[0] == '\0') return;
  enum { capacity = 64 };
  fiber->label = malloc(capacity);  // no report names it if this fails; nothing else changes
  if (fiber->label != NULL) cu_copy_label(fiber->label, capacity, name);
}

size_t cu_fiber_saved_size(const cu_fiber *fiber) {
  if (fiber->shared == NULL || fiber->shared->occupant == fiber || fiber->fresh) return 0;
  return fiber->saved_size;
}

static _Noreturn void stop(const char *message) {
  fprintf(stderr, "swift-coroutines: %s\n", message);
  abort();
}

// Copies the switched-out occupant's live registers and used bytes to a buffer of exactly their
// size, reusing the one it had if the size is the same.
static void save(cu_fiber *occupant) {
  cu_shared_stack *stack = occupant->shared;
  char *sp = saved_stack_pointer(&stack->self);
  if (sp < stack->base || sp > stack->top) {
    stop("a shared-stack fiber's saved stack pointer lies off its stack");
  }
  size_t used = (size_t)(stack->top - sp);
  size_t size = sizeof(cu_parked_context) + used;
  if (size > UINT_MAX) stop("a shared-stack coroutine used more than 4 GiB of stack");
  if (size != occupant->saved_size) {
    free(occupant->saved);
    occupant->saved = malloc(size);
    occupant->saved_size = (unsigned)size;
    if (occupant->saved == NULL) stop("out of memory saving a shared-stack coroutine");
  }
  pack(occupant->saved, &stack->self);
  copy_bytes((char *)occupant->saved + sizeof(cu_parked_context), sp, used);
}

// Puts a parked fiber's registers and bytes back where they came from.
static void restore(cu_fiber *fiber) {
  cu_shared_stack *stack = fiber->shared;
  size_t used = fiber->saved_size - sizeof(cu_parked_context);
  unpack(&stack->self, fiber->saved);
  set_stack_pointer(&stack->self, stack->top - used);
  copy_bytes(stack->top - used, (char *)fiber->saved + sizeof(cu_parked_context), used);
}

static void shared_trampoline(cu_fiber *fiber);
#if !defined(__x86_64__)
static void shared_trampoline_split(unsigned int high, unsigned int low);
#endif

// Makes a prepared fiber's starting context in the stack's: the starting control words and mask,
// and a first frame at the very top of the (now free) stack. On x86_64 the context is set up by
// hand, since every byte under the trampoline is copied out with each suspension: the pointer
// travels whole in the first argument register and no return frame is built, because the
// trampoline never returns. Elsewhere makecontext builds it (the pointer split into two ints).
static void make_start_context(cu_fiber *fiber) {
  cu_shared_stack *stack = fiber->shared;
  unpack(&stack->self, &stack->start);
#if defined(__x86_64__)
  greg_t *gregs = stack->self.uc_mcontext.gregs;
  gregs[REG_RIP] = (greg_t)(uintptr_t)shared_trampoline;
  gregs[REG_RSP] = (greg_t)(uintptr_t)(stack->top - 8);  // as if called: rsp + 8 is 16-aligned
  gregs[REG_RBP] = 0;                                     // ends the frame chain for debuggers
  gregs[REG_RDI] = (greg_t)(uintptr_t)fiber;
#else
  uintptr_t address = (uintptr_t)fiber;
  stack->self.uc_stack.ss_sp = stack->base;
  stack->self.uc_stack.ss_size = (size_t)(stack->top - stack->base);
  stack->self.uc_link = NULL;
  makecontext(&stack->self, (void (*)(void))shared_trampoline_split, 2,
              (unsigned int)(address >> 32), (unsigned int)(address & 0xffffffffu));
#endif
  fiber->fresh = 0;
}

void cu_shared_fiber_armed(cu_fiber *fiber) {
  // A fiber is prepared only when new or finished, so it is not the occupant and owns no bytes.
  fiber->fresh = 1;
}

void cu_shared_stack_acquire(cu_fiber *fiber) {
  cu_shared_stack *stack = fiber->shared;
  cu_fiber *occupant = stack->occupant;
  if (occupant == fiber) return;
  char *here = (char *)__builtin_frame_address(0);
  if (here >= stack->base && here < stack->top) {
    stop("a coroutine on a shared stack tried to resume another coroutine on the same stack");
  }
  if (occupant != NULL) save(occupant);
#if defined(CU_ASAN)
  __asan_unpoison_memory_region(stack->base, (size_t)(stack->top - stack->base));
#endif
  if (fiber->fresh) {
    make_start_context(fiber);
  } else {
    restore(fiber);
  }
  stack->occupant = fiber;
}

// Gives up the stack when the fiber's entry has returned, so its dead frames are never saved.
static void leave(cu_fiber *fiber) {
  if (fiber->shared->occupant == fiber) fiber->shared->occupant = NULL;
  free(fiber->saved);
  fiber->saved = NULL;
  fiber->saved_size = 0;
}

// The last switch out of a finished fiber: the one this thread is running. Kept out of the
// trampoline, whose frame stays under every frame of the fiber's body and so is copied out with
// each of its suspensions; not inlined, so the thread-local is read on the thread that runs it.
CU_SWITCH_CODE __attribute__((noinline, noreturn)) static void finish(void) {
  cu_fiber *fiber = cu_running_fiber;
  cu_shared_stack *stack = fiber->shared;
  leave(fiber);
  cu_san_fiber_leaving(&fiber->sanitizer, 1);
  cu_switch(&stack->self, &stack->resumer);
  abort();  // a finished fiber is prepared again before it is resumed again
}

// A shared-stack fiber's first frame. It keeps nothing across the body (`finish` finds the fiber
// again), so its frame is no more than the return address slot and the saved frame pointer.
CU_SWITCH_CODE static void shared_trampoline(cu_fiber *fiber) {
  cu_san_fiber_arrived(&fiber->sanitizer);
  fiber->entry(fiber->argument);
  finish();
}

#if !defined(__x86_64__)
CU_SWITCH_CODE static void shared_trampoline_split(unsigned int high, unsigned int low) {
  shared_trampoline((cu_fiber *)(((uintptr_t)high << 32) | (uintptr_t)low));
}
#endif
