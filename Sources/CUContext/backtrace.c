// Backtraces of suspended fibers, from the registers their switch saved.
//
// The unwinder is libunwind's local one, started with unw_init_local on the fiber's saved
// ucontext_t (on x86_64 libunwind's unw_context_t is a ucontext_t, and both switches save the
// callee-saved registers, the stack pointer and the resume address where glibc puts them). It
// steps by the DWARF call-frame information of each function, which Swift code has even where
// it keeps no frame pointer; a frame-pointer walk loses callers there. Names come from the
// symbol tables of the binaries themselves (.symtab, read from the files), so a test binary
// that exports next to nothing still names its functions; Swift names are demangled by the
// Swift runtime's own demangler.
//
// libunwind is opened with dlopen the first time a backtrace is asked for, never before: a
// program that never asks does not load it, and one on a system without it gets no frames
// instead of failing to start. The toolchain's own backtracer (the Runtime module) starts from
// a given context only through SPI, and then walks frame pointers whatever algorithm is asked.

#ifndef _GNU_SOURCE
#define _GNU_SOURCE  // REG_RIP and friends, RTLD_DEFAULT
#endif
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

#include "cucontext.h"
#include "fiber.h"

// libunwind's x86_64 ABI, declared here rather than taken from its development headers (which a
// machine running a program need not have): a cursor is 127 words, a register number is an int,
// UNW_REG_IP is RIP's number, 16, UNW_REG_SP is RSP's, 7, and UNW_CACHE_PER_THREAD is 2.
typedef struct { uint64_t opaque[127]; } cu_unw_cursor;
enum { cu_unw_reg_sp = 7, cu_unw_reg_ip = 16, cu_unw_cache_per_thread = 2 };

static struct {
  int (*init_local)(cu_unw_cursor *, ucontext_t *);
  int (*step)(cu_unw_cursor *);
  int (*get_reg)(cu_unw_cursor *, int, uint64_t *);
  int (*get_proc_name)(cu_unw_cursor *, char *, size_t, uint64_t *);
  char *(*demangle)(const char *, size_t, char *, size_t *, uint32_t);
  int loaded;  // 1 when every function above was found
} unwinder;

static pthread_once_t unwinder_once = PTHREAD_ONCE_INIT;

static void load_unwinder(void) {
  void *library = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
  if (library == NULL) library = dlopen("libunwind.so", RTLD_NOW | RTLD_LOCAL);
  if (library == NULL) return;
  unwinder.init_local = (int (*)(cu_unw_cursor *, ucontext_t *))dlsym(library, "_ULx86_64_init_local");
  unwinder.step = (int (*)(cu_unw_cursor *))dlsym(library, "_ULx86_64_step");
  unwinder.get_reg = (int (*)(cu_unw_cursor *, int, uint64_t *))dlsym(library, "_ULx86_64_get_reg");
  unwinder.get_proc_name = (int (*)(cu_unw_cursor *, char *, size_t, uint64_t *))dlsym(
      library, "_ULx86_64_get_proc_name");
  unwinder.demangle = (char *(*)(const char *, size_t, char *, size_t *, uint32_t))dlsym(
      RTLD_DEFAULT, "swift_demangle");
  unwinder.loaded = unwinder.init_local && unwinder.step && unwinder.get_reg &&
                    unwinder.get_proc_name;
  // Each thread keeps its own cache of parsed frame descriptions. With the default, one cache
  // for the process, every step blocks all signals around its lock (two sigprocmask system
  // calls per frame), which made unwinding a hundred thousand coroutines take seconds.
  void **local_space = (void **)dlsym(library, "_ULx86_64_local_addr_space");
  int (*set_caching)(void *, int) = (int (*)(void *, int))dlsym(
      library, "_ULx86_64_set_caching_policy");
  if (local_space != NULL && set_caching != NULL) set_caching(*local_space, cu_unw_cache_per_thread);
}

int cu_backtrace_available(void) {
#if defined(__x86_64__)
  pthread_once(&unwinder_once, load_unwinder);
  return unwinder.loaded;
#else
  return 0;
#endif
}

long cu_fiber_backtrace(const cu_fiber *fiber, uintptr_t *pcs, uintptr_t *sps, long capacity) {
  if (!cu_backtrace_available() || fiber->shared != NULL) return -1;
  // A copy: libunwind may write into the context it starts from.
  ucontext_t context = *fiber->self_context;
  cu_unw_cursor cursor;
  if (unwinder.init_local(&cursor, &context) != 0) return -1;
  long count = 0;
  while (count < capacity) {
    uint64_t pc = 0, sp = 0;
    if (unwinder.get_reg(&cursor, cu_unw_reg_ip, &pc) != 0 || pc == 0) break;
    if (unwinder.get_reg(&cursor, cu_unw_reg_sp, &sp) != 0) break;
    pcs[count] = (uintptr_t)pc;
    sps[count] = (uintptr_t)sp;
    count++;
    if (unwinder.step(&cursor) <= 0) break;
  }
  return count;
}

uintptr_t cu_fiber_saved_pc(const cu_fiber *fiber) {
  return (uintptr_t)fiber->self_context->uc_mcontext.gregs[REG_RIP];
}

uintptr_t cu_fiber_saved_sp(const cu_fiber *fiber) {
  return (uintptr_t)fiber->self_context->uc_mcontext.gregs[REG_RSP];
}

long cu_symbol_name(uintptr_t pc, char *buffer, size_t size) {
  if (!cu_backtrace_available() || size == 0) return -1;
  // A context that says only "at pc": naming looks at the address alone. The stack pointer is
  // this frame's, so that starting the cursor reads nothing that is not there.
  ucontext_t context;
  memset(&context, 0, sizeof context);
  context.uc_mcontext.gregs[REG_RIP] = (greg_t)pc;
  context.uc_mcontext.gregs[REG_RSP] = (greg_t)(uintptr_t)__builtin_frame_address(0);
  context.uc_mcontext.gregs[REG_RBP] = (greg_t)(uintptr_t)__builtin_frame_address(0);
  cu_unw_cursor cursor;
  if (unwinder.init_local(&cursor, &context) != 0) return -1;
  uint64_t offset = 0;
  if (unwinder.get_proc_name(&cursor, buffer, size, &offset) != 0) return -1;
  buffer[size - 1] = 0;
  if (unwinder.demangle != NULL) {
    char *readable = unwinder.demangle(buffer, strlen(buffer), NULL, NULL, 0);
    if (readable != NULL) {
      strncpy(buffer, readable, size - 1);
      buffer[size - 1] = 0;
      free(readable);
    }
  }
  return (long)offset;
}
