// Guarded stacks: one anonymous mapping per fiber. The low `guard` bytes are PROT_NONE so an
// overflow faults; the fiber's own bookkeeping lives at the very top, above the usable stack,
// so a fiber costs one allocation and two kernel mappings (the guard and the stack).
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fiber.h"

size_t cu_page_size(void) {
  static size_t page;
  if (page == 0) page = (size_t)sysconf(_SC_PAGESIZE);
  return page;
}

static size_t round_up(size_t value, size_t unit) { return (value + unit - 1) / unit * unit; }

cu_fiber *cu_fiber_new(size_t stack_size, size_t guard_size) {
  size_t page = cu_page_size();
  size_t usable = round_up(stack_size, page);
  size_t guard = round_up(guard_size, page);
  size_t header = round_up(sizeof(cu_fiber), 64);
  size_t total = round_up(guard + usable + header, page);
  if (usable == 0 || total < usable) {
    errno = EINVAL;
    return NULL;
  }
  void *mapping = mmap(NULL, total, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
  if (mapping == MAP_FAILED) return NULL;
  if (guard > 0 && mprotect(mapping, guard, PROT_NONE) != 0) {
    int saved = errno;
    munmap(mapping, total);
    errno = saved;
    return NULL;
  }
  cu_fiber *fiber = (cu_fiber *)((char *)mapping + total - header);
  memset(fiber, 0, sizeof *fiber);
  fiber->mapping = mapping;
  fiber->mapping_size = total;
  fiber->stack_size = (size_t)((char *)fiber - (char *)mapping) - guard;
  if (getcontext(&fiber->self) != 0) {
    int saved = errno;
    munmap(mapping, total);
    errno = saved;
    return NULL;
  }
  fiber->self.uc_stack.ss_sp = (char *)mapping + guard;
  fiber->self.uc_stack.ss_size = fiber->stack_size;
  fiber->self.uc_link = NULL;
  cu_san_fiber_created(&fiber->sanitizer);
  return fiber;
}

void cu_fiber_free(cu_fiber *fiber) {
  cu_san_fiber_destroyed(&fiber->sanitizer);
  if (fiber->shared != NULL) {
    cu_shared_fiber_free(fiber);
    return;
  }
  munmap(fiber->mapping, fiber->mapping_size);
}

size_t cu_fiber_stack_size(const cu_fiber *fiber) { return fiber->stack_size; }
