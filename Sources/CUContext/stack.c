// Guarded stacks, mapped in slabs. A slab is one anonymous mapping cut into equal slots; each slot
// is a PROT_NONE guard region, the usable stack above it, and the fiber's own bookkeeping at the
// very top. Mapping and unmapping many stacks at once is what makes a burst of coroutines cheap:
// one mmap and one munmap per slab instead of one each (plus an mprotect) per stack.
//
// The guard is a "guard marker" (madvise MADV_GUARD_INSTALL, Linux 6.13+) where the kernel has
// them: it faults like PROT_NONE but does not split the mapping, so a whole slab stays one kernel
// mapping. Older kernels refuse it and get mprotect instead: two mappings per stack, as before.
// A slot's guard is installed the first time the slot is used, so an unused slot costs nothing.
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include "fiber.h"

#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102
#endif

// glibc keeps the page size from the auxiliary vector; asking is a load, so nothing is cached
// here: a lazily filled static would race when several threads make their first launch at once.
size_t cu_page_size(void) { return (size_t)getpagesize(); }

static ucontext_t context_template;
static pthread_once_t context_template_once = PTHREAD_ONCE_INIT;

static void capture_template(void) {
  if (getcontext(&context_template) != 0) abort();  // cannot fail on Linux
}

// Fills a new fiber's context as getcontext would, from a template captured once: getcontext
// makes a system call (the signal mask) every time, and a new fiber needs only its fields.
// A fiber's signal mask is the one of the first thread to build a fiber, rather than of the
// thread building this one; it matters only to the ucontext backend (swapcontext installs it),
// and a pooled fiber already carried the mask of whoever built it first.
static void context_init(ucontext_t *context) {
  pthread_once(&context_template_once, capture_template);
  memcpy(context, &context_template, sizeof *context);
#if defined(__x86_64__)
  // getcontext points the floating-point state at the context's own copy of it.
  context->uc_mcontext.fpregs = &context->__fpregs_mem;
#endif
}

enum slot_state { slot_fresh = 0, slot_guarded = 1, slot_built = 2 };

struct cu_stack_slab {
  char *mapping;
  size_t mapping_size;
  size_t slot_size;   // guard + usable + header
  size_t guard;       // bytes of guard at the bottom of each slot
  size_t count;
  unsigned char state[];  // one enum slot_state per slot
};

// 1 until a kernel refuses guard markers, then 0 for good (answers never change mid-process).
static int guard_markers_work = 1;

static int install_guard(char *guard, size_t size) {
  if (size == 0) return 0;
  if (__atomic_load_n(&guard_markers_work, __ATOMIC_RELAXED)) {
    if (madvise(guard, size, MADV_GUARD_INSTALL) == 0) return 0;
    if (errno != EINVAL) return -1;
    __atomic_store_n(&guard_markers_work, 0, __ATOMIC_RELAXED);
  }
  return mprotect(guard, size, PROT_NONE);
}

static size_t header_size(void) { return cu_round_up(sizeof(cu_fiber), 64); }

cu_stack_slab *cu_stack_slab_new(size_t stack_size, size_t guard_size, size_t count) {
  size_t page = cu_page_size();
  size_t usable = cu_round_up(stack_size, page);
  size_t guard = cu_round_up(guard_size, page);
  size_t slot = cu_round_up(guard + usable + header_size(), page);
  if (usable == 0 || count == 0 || slot < usable || slot > SIZE_MAX / count) {
    errno = EINVAL;
    return NULL;
  }
  cu_stack_slab *slab = calloc(1, sizeof *slab + count);
  if (slab == NULL) return NULL;
  void *mapping = mmap(NULL, slot * count, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
  if (mapping == MAP_FAILED) {
    int saved = errno;
    free(slab);
    errno = saved;
    return NULL;
  }
  slab->mapping = mapping;
  slab->mapping_size = slot * count;
  slab->slot_size = slot;
  slab->guard = guard;
  slab->count = count;
  return slab;
}

static cu_fiber *slot_fiber(const cu_stack_slab *slab, size_t index) {
  return (cu_fiber *)(slab->mapping + (index + 1) * slab->slot_size - header_size());
}

cu_fiber *cu_stack_slab_fiber(cu_stack_slab *slab, size_t index) {
  if (index >= slab->count) {
    errno = EINVAL;
    return NULL;
  }
  char *start = slab->mapping + index * slab->slot_size;
  if (slab->state[index] == slot_fresh) {
    if (install_guard(start, slab->guard) != 0) return NULL;
    slab->state[index] = slot_guarded;
  }
  cu_fiber *fiber = slot_fiber(slab, index);
  if (slab->state[index] == slot_built) return fiber;
  memset(fiber, 0, sizeof *fiber);
  fiber->mapping = start;
  fiber->mapping_size = slab->slot_size;
  fiber->stack_size = (size_t)((char *)fiber - start) - slab->guard;
  fiber->slab = slab;
  fiber->slot = index;
  context_init(&fiber->self);
  fiber->self_context = &fiber->self;
  fiber->self.uc_stack.ss_sp = start + slab->guard;
  fiber->self.uc_stack.ss_size = fiber->stack_size;
  fiber->self.uc_link = NULL;
  cu_san_fiber_created(&fiber->sanitizer);
  slab->state[index] = slot_built;
  return fiber;
}

size_t cu_fiber_slot(const cu_fiber *fiber) { return fiber->slot; }

cu_stack_slab *cu_fiber_slab(const cu_fiber *fiber) { return fiber->slab; }

static int by_address(const void *left, const void *right) {
  const struct iovec *a = left, *b = right;
  return (a->iov_base > b->iov_base) - (a->iov_base < b->iov_base);
}

void cu_stack_release_fibers(cu_fiber *const *fibers, size_t count) {
  enum { most = 1024 };
  struct iovec ranges[most];
  while (count > 0) {
    size_t batch = count < most ? count : most;
    for (size_t index = 0; index < batch; index++) {
      cu_stack_slab *slab = fibers[index]->slab;
      size_t slot = fibers[index]->slot;  // read before the pages holding it go
      cu_san_fiber_destroyed(&fibers[index]->sanitizer);
      slab->state[slot] = slot_guarded;
      ranges[index] = (struct iovec){
          .iov_base = slab->mapping + slot * slab->slot_size, .iov_len = slab->slot_size};
    }
    // Neighbouring slots merge into one range: one madvise, and one flush of every thread's
    // TLB, per run of slots instead of per slot.
    qsort(ranges, batch, sizeof ranges[0], by_address);
    size_t merged = 0;
    for (size_t index = 0; index < batch; index++) {
      if (merged > 0 &&
          (char *)ranges[merged - 1].iov_base + ranges[merged - 1].iov_len == ranges[index].iov_base) {
        ranges[merged - 1].iov_len += ranges[index].iov_len;
      } else {
        ranges[merged++] = ranges[index];
      }
    }
    // Guards (markers or PROT_NONE) survive MADV_DONTNEED; only the touched pages go.
    for (size_t index = 0; index < merged; index++) {
      madvise(ranges[index].iov_base, ranges[index].iov_len, MADV_DONTNEED);
    }
    fibers += batch;
    count -= batch;
  }
}

void cu_stack_slab_free(cu_stack_slab *slab) {
  for (size_t index = 0; index < slab->count; index++) {
    if (slab->state[index] == slot_built) {
      cu_san_fiber_destroyed(&slot_fiber(slab, index)->sanitizer);
    }
  }
  munmap(slab->mapping, slab->mapping_size);
  free(slab);
}

size_t cu_stack_slab_count(const cu_stack_slab *slab) { return slab->count; }

size_t cu_fiber_stack_size(const cu_fiber *fiber) { return fiber->stack_size; }
