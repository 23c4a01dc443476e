// Shared stacks: many fibers take turns on one mapped stack. Each stack remembers its occupant,
// the last fiber that ran there; only when a different fiber is about to run is the occupant's
// used part (from its saved stack pointer to the top) copied out to a heap buffer of exactly that
// size, and the newcomer's saved bytes copied back to the addresses they came from. A fiber
// resumed on a stack it still occupies costs no copy.
#define _GNU_SOURCE  // REG_RSP
#include <errno.h>
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

struct cu_shared_stack {
  void *mapping;  // the whole region, guard included
  size_t mapping_size;
  char *base;          // lowest usable address
  char *top;           // one past the highest: frames grow down from here
  cu_fiber *occupant;  // whose frames are on the stack now, or NULL
  ucontext_t blank;    // a getcontext result copied into new fibers: no system call per fiber
};

static size_t round_up(size_t value, size_t unit) { return (value + unit - 1) / unit * unit; }

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
      getcontext(&stack->blank) != 0) {
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
  return stack;
}

void cu_shared_stack_free(cu_shared_stack *stack) {
  munmap(stack->mapping, stack->mapping_size);
  free(stack);
}

cu_fiber *cu_fiber_new_shared(cu_shared_stack *stack) {
  cu_fiber *fiber = calloc(1, sizeof *fiber);
  if (fiber == NULL) return NULL;
  memcpy(&fiber->self, &stack->blank, sizeof fiber->self);
  fiber->self.uc_mcontext.fpregs = &fiber->self.__fpregs_mem;  // the copy's own area
  fiber->self.uc_stack.ss_sp = stack->base;
  fiber->self.uc_stack.ss_size = (size_t)(stack->top - stack->base);
  fiber->self.uc_link = NULL;
  fiber->stack_size = (size_t)(stack->top - stack->base);
  fiber->shared = stack;
  fiber->mapping = stack->mapping;  // for overflow reports only: the guard starts here
  cu_san_fiber_created(&fiber->sanitizer);
  return fiber;
}

void cu_shared_fiber_free(cu_fiber *fiber) {
  if (fiber->shared->occupant == fiber) fiber->shared->occupant = NULL;
  free(fiber->saved);
  free(fiber);
}

size_t cu_fiber_saved_size(const cu_fiber *fiber) { return fiber->saved_size; }

// Where the suspended fiber's frames end: the stack pointer its switch saved. Nothing below it
// is live, since the switch was entered by a call (see Internals.md on the red zone).
static char *saved_stack_pointer(const cu_fiber *fiber) {
#if defined(__x86_64__)
  return (char *)fiber->self.uc_mcontext.gregs[REG_RSP];
#elif defined(__aarch64__)
  return (char *)fiber->self.uc_mcontext.sp;
#else
#error "shared stacks need the saved stack pointer's place in ucontext_t for this architecture"
#endif
}

static _Noreturn void stop(const char *message) {
  fprintf(stderr, "swift-coroutines: %s\n", message);
  abort();
}

// Copies the suspended occupant's used bytes to a buffer of exactly their size.
static void save(cu_fiber *occupant) {
  char *top = occupant->shared->top;
  char *sp = saved_stack_pointer(occupant);
  if (sp < occupant->shared->base || sp > top) {
    stop("a shared-stack fiber's saved stack pointer lies off its stack");
  }
  size_t size = (size_t)(top - sp);
  if (size != occupant->saved_capacity) {
    free(occupant->saved);
    occupant->saved = malloc(size);
    occupant->saved_capacity = size;
    if (occupant->saved == NULL && size > 0) stop("out of memory saving a shared-stack coroutine");
  }
  copy_bytes(occupant->saved, sp, size);
  occupant->saved_size = size;
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
  if (fiber->saved_size > 0) {
    copy_bytes(stack->top - fiber->saved_size, fiber->saved, fiber->saved_size);
    fiber->saved_size = 0;
  }
  stack->occupant = fiber;
}

void cu_shared_stack_leave(cu_fiber *fiber) {
  if (fiber->shared->occupant == fiber) fiber->shared->occupant = NULL;
  free(fiber->saved);
  fiber->saved = NULL;
  fiber->saved_size = 0;
  fiber->saved_capacity = 0;
}
