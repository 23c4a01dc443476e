// Stack overflow reports. Each thread that runs fibers remembers which fiber it is running and
// gets an alternate signal stack on its first resume (Dispatch's worker threads have none, and
// a handler cannot run on the stack that just overflowed). A SIGSEGV whose address lies in the
// running fiber's guard region is reported with the coroutine's name and stack size, then the
// process aborts. Any other SIGSEGV belongs to whoever handled it before: the previous handler
// is put back and the handler returns, so the faulting instruction runs again under it.
// Everything the handler does is async-signal-safe: fixed buffers and write(2).
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include "fiber.h"

enum { alternate_stack_size = 64 * 1024 };

static pthread_once_t handler_once = PTHREAD_ONCE_INIT;
static pthread_key_t alternate_stack_key;
static struct sigaction previous_action;

// MARK: The report, from fixed buffers only.

typedef struct {
  char text[768];
  size_t length;
} message;

static void append(message *m, const char *text) {
  while (*text && m->length < sizeof m->text) m->text[m->length++] = *text++;
}

static void append_number(message *m, uintptr_t value, unsigned base) {
  char digits[24];
  int count = 0;
  do {
    digits[count++] = "0123456789abcdef"[value % base];
    value /= base;
  } while (value && count < (int)sizeof digits);
  if (base == 16) append(m, "0x");
  while (count > 0 && m->length < sizeof m->text) m->text[m->length++] = digits[--count];
}

static void report_overflow(const cu_fiber *fiber, const void *address) {
  const char *name = fiber->shared == NULL ? fiber->name : fiber->label;  // a label may be NULL
  size_t size = fiber->requested_size ? fiber->requested_size : fiber->stack_size;
  message m = {.length = 0};
  append(&m, "\nswift-coroutines: stack overflow in coroutine ");
  if (name != NULL && name[0]) {
    append(&m, "\"");
    append(&m, name);
    append(&m, "\"");
  } else {
    append(&m, "(unnamed)");
  }
  append(&m, ": it used all of its ");
  append_number(&m, size, 10);
  append(&m, "-byte stack (fault at ");
  append_number(&m, (uintptr_t)address, 16);
  append(&m, " in the guard region below it).\n");
  append(&m, "  Give this coroutine a larger stack with the stackSize: of co_launch (or of "
             "CoroutineLoop.run, for its body), for example stackSize: ");
  append_number(&m, size * 4, 10);
  append(&m, ", or raise CoroutineStack.defaultSize for every coroutine launched without one.\n"
             "  Pages are committed only when touched, so a larger stack costs address space, "
             "not memory.\n");
  const char *cursor = m.text;
  size_t left = m.length;
  while (left > 0) {
    ssize_t written = write(STDERR_FILENO, cursor, left);
    if (written <= 0) break;
    cursor += written;
    left -= (size_t)written;
  }
}

// MARK: The handler.

static uintptr_t interrupted_stack_pointer(void *context) {
#if defined(__x86_64__)
  return (uintptr_t)((ucontext_t *)context)->uc_mcontext.gregs[REG_RSP];
#elif defined(__aarch64__)
  return (uintptr_t)((ucontext_t *)context)->uc_mcontext.sp;
#else
  (void)context;
  return 0;
#endif
}

/// True when the fault is the running fiber's overflow: the address is in its guard region, or
/// the stack pointer itself already is (one frame larger than what was left of the stack).
static int is_overflow(const cu_fiber *fiber, uintptr_t address, uintptr_t stack_pointer) {
  uintptr_t guard_start = (uintptr_t)(fiber->shared ? fiber->shared->mapping : fiber->mapping);
  uintptr_t stack_bottom = (uintptr_t)cu_fiber_stack_bottom(fiber);
  if (address >= guard_start && address < stack_bottom) return 1;
  return stack_pointer >= guard_start && stack_pointer < stack_bottom;
}

static void on_segv(int signal_number, siginfo_t *info, void *context) {
  (void)signal_number;
  cu_fiber *fiber = cu_thread.running_fiber;
  if (fiber && is_overflow(fiber, (uintptr_t)info->si_addr, interrupted_stack_pointer(context))) {
    report_overflow(fiber, info->si_addr);
    abort();
  }
  // Not ours: hand the fault back. Calling the previous handler from here would run it inside
  // ours (Swift's backtracer then lost its way); returning re-runs the faulting instruction
  // with the previous handler in place.
  sigaction(SIGSEGV, &previous_action, NULL);
}

static void install_handler(void) {
  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_sigaction = on_segv;
  action.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&action.sa_mask);
  sigaction(SIGSEGV, &action, &previous_action);
}

// MARK: Per thread.

static void release_alternate_stack(void *mapping) {
  stack_t disable = {.ss_sp = NULL, .ss_flags = SS_DISABLE, .ss_size = 0};
  sigaltstack(&disable, NULL);
  munmap(mapping, alternate_stack_size);
}

static void create_key(void) {
  pthread_key_create(&alternate_stack_key, release_alternate_stack);
  install_handler();
}

/// Gives the calling thread an alternate signal stack unless it has one, once per thread.
void cu_prepare_thread(void) {
  cu_thread.prepared = 1;
  // Unless a test forced runtime swaps on this thread before its first resume.
  if (cu_thread.exclusivity_head == NULL) cu_thread.exclusivity_head = cu_exclusivity_find_head();
  pthread_once(&handler_once, create_key);
  stack_t current;
  if (sigaltstack(NULL, &current) == 0 && !(current.ss_flags & SS_DISABLE)) return;
  void *mapping = mmap(NULL, alternate_stack_size, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  if (mapping == MAP_FAILED) return;  // no report on this thread; everything else still works
  stack_t alternate = {.ss_sp = mapping, .ss_flags = 0, .ss_size = alternate_stack_size};
  if (sigaltstack(&alternate, NULL) != 0) {
    munmap(mapping, alternate_stack_size);
    return;
  }
  pthread_setspecific(alternate_stack_key, mapping);
}

void cu_copy_label(char *destination, size_t capacity, const char *name) {
  size_t length = name ? strlen(name) : 0;
  if (length >= capacity) {
    // Cut on a UTF-8 character boundary and mark the cut.
    length = capacity - 4;
    while (length > 0 && ((unsigned char)name[length] & 0xC0) == 0x80) length--;
    memcpy(destination, name, length);
    memcpy(destination + length, "...", 4);
    return;
  }
  if (length) memcpy(destination, name, length);
  destination[length] = '\0';
}
