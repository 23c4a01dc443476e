// Guarded stacks, mapped in slabs. A slab is one anonymous mapping cut into equal slots; each slot
// is a PROT_NONE guard region, the usable stack above it, and the fiber's own bookkeeping at the
// very top. Mapping and unmapping many stacks at once is what makes a burst of coroutines cheap:
// one mmap and one munmap per slab instead of one each (plus an mprotect) per stack.
//
// The guard is a "guard marker" (madvise MADV_GUARD_INSTALL, Linux 6.13+) where the kernel has
// them: it faults like PROT_NONE but does not split the mapping, so a whole slab stays one kernel
// mapping. Older kernels refuse it and get mprotect instead: two mappings per stack, as before.
// A slot's guard is installed the first time the slot is used, so an unused slot costs nothing,
// together with the guards of the next few never-used slots: one process_madvise for a run of
// slots instead of one madvise each. The run doubles with each slot the slab has handed out (1, 1,
// 2, 4, ... up to guard_run_most), so a slab guards at most about twice the slots it has used,
// and a burst of launches enters the kernel once per run. (What a guard costs in the kernel is
// mostly its page-table walk, one per slot; the batch saves the system call's entry and lookups.)
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "fiber.h"

#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102
#endif
#ifndef PIDFD_SELF
#define PIDFD_SELF -10000  // "the calling process" for process_madvise (Linux 6.14+)
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

// A slot's state is read and written with atomics: a thread guarding a run of slots marks slots
// that other threads may be taking meanwhile (each of those, finding its slot still fresh, guards
// it itself: installing a guard twice is harmless).
enum slot_state { slot_fresh = 0, slot_guarded = 1, slot_built = 2 };

struct cu_stack_slab {
  char *mapping;
  size_t mapping_size;
  size_t slot_size;   // guard + usable + header
  size_t guard;       // bytes of guard at the bottom of each slot
  size_t count;
  size_t guard_calls;     // system calls made to install guards (for tests)
  unsigned char state[];  // one enum slot_state per slot
};

// 1 until a kernel refuses guard markers, then 0 for good (answers never change mid-process).
static int guard_markers_work = 1;
// 1 until a kernel refuses guard markers through process_madvise on the calling process (before
// Linux 6.14 it knows no PIDFD_SELF), then 0 for good.
static int guard_runs_work = 1;

void cu_stack_force_guard_fallback(void) {
  __atomic_store_n(&guard_markers_work, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&guard_runs_work, 0, __ATOMIC_RELAXED);
}

int cu_stack_guard_runs_work(void) {
  return __atomic_load_n(&guard_markers_work, __ATOMIC_RELAXED) &&
         __atomic_load_n(&guard_runs_work, __ATOMIC_RELAXED);
}

size_t cu_stack_slab_guard_calls(const cu_stack_slab *slab) {
  return __atomic_load_n(&slab->guard_calls, __ATOMIC_RELAXED);
}

static int install_guard(cu_stack_slab *slab, char *guard, size_t size) {
  if (size == 0) return 0;
  __atomic_fetch_add(&slab->guard_calls, 1, __ATOMIC_RELAXED);
  if (__atomic_load_n(&guard_markers_work, __ATOMIC_RELAXED)) {
    if (madvise(guard, size, MADV_GUARD_INSTALL) == 0) return 0;
    if (errno != EINVAL) return -1;
    __atomic_store_n(&guard_markers_work, 0, __ATOMIC_RELAXED);
  }
  return mprotect(guard, size, PROT_NONE);
}

enum { guard_run_most = 32 };

// Installs guard markers on the fresh slots among the `count` from `first` in one system call and
// marks them guarded. Best effort: a slot left fresh is guarded alone when it is first used.
static void guard_run(cu_stack_slab *slab, size_t first, size_t count) {
#if defined(SYS_process_madvise)
  if (slab->guard == 0 || !__atomic_load_n(&guard_markers_work, __ATOMIC_RELAXED) ||
      !__atomic_load_n(&guard_runs_work, __ATOMIC_RELAXED)) {
    return;
  }
  struct iovec ranges[guard_run_most];
  size_t slots[guard_run_most];
  size_t found = 0;
  for (size_t index = first; index < first + count && found < guard_run_most; index++) {
    if (__atomic_load_n(&slab->state[index], __ATOMIC_ACQUIRE) != slot_fresh) continue;
    ranges[found] = (struct iovec){
        .iov_base = slab->mapping + index * slab->slot_size, .iov_len = slab->guard};
    slots[found++] = index;
  }
  if (found == 0) return;
  __atomic_fetch_add(&slab->guard_calls, 1, __ATOMIC_RELAXED);
  long done = syscall(SYS_process_madvise, PIDFD_SELF, ranges, found, MADV_GUARD_INSTALL, 0);
  if (done != (long)(found * slab->guard)) {
    if (done < 0 && (errno == EBADF || errno == EINVAL || errno == ENOSYS || errno == EPERM)) {
      __atomic_store_n(&guard_runs_work, 0, __ATOMIC_RELAXED);
    }
    return;  // the slots stay fresh: each is guarded alone (again, for those that took)
  }
  for (size_t index = 0; index < found; index++) {
    unsigned char expected = slot_fresh;  // a slot another thread built meanwhile stays built
    __atomic_compare_exchange_n(&slab->state[slots[index]], &expected, slot_guarded, 0,
                                __ATOMIC_RELEASE, __ATOMIC_RELAXED);
  }
#else
  (void)slab, (void)first, (void)count;
#endif
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
  unsigned char state = __atomic_load_n(&slab->state[index], __ATOMIC_ACQUIRE);
  if (state == slot_fresh) {
    // Slots are handed out in order, so the next ones are likely to follow soon.
    size_t run = index == 0 ? 1 : index < guard_run_most ? index : guard_run_most;
    if (run > slab->count - index) run = slab->count - index;
    if (run > 1) {
      guard_run(slab, index, run);
      state = __atomic_load_n(&slab->state[index], __ATOMIC_ACQUIRE);
    }
    if (state == slot_fresh) {
      if (install_guard(slab, start, slab->guard) != 0) return NULL;
      __atomic_store_n(&slab->state[index], slot_guarded, __ATOMIC_RELEASE);
    }
  }
  cu_fiber *fiber = slot_fiber(slab, index);
  if (state == slot_built) return fiber;
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
  __atomic_store_n(&slab->state[index], slot_built, __ATOMIC_RELEASE);
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
      __atomic_store_n(&slab->state[slot], slot_guarded, __ATOMIC_RELAXED);
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
    if (__atomic_load_n(&slab->state[index], __ATOMIC_ACQUIRE) == slot_built) {
      cu_san_fiber_destroyed(&slot_fiber(slab, index)->sanitizer);
    }
  }
  munmap(slab->mapping, slab->mapping_size);
  free(slab);
}

size_t cu_stack_slab_count(const cu_stack_slab *slab) { return slab->count; }

size_t cu_fiber_stack_size(const cu_fiber *fiber) { return fiber->stack_size; }
