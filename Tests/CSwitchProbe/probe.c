// A self-check of one switch, run by the tests for each backend: start a context made by
// makecontext, pass it six arguments, and bounce between it and the caller a few times, checking
// on both sides that callee-saved registers and the floating-point control words come back.
#include <stdint.h>
#include <stdlib.h>
#include <ucontext.h>

#include "cswitchprobe.h"

// The switch of a backend, or NULL where it does not exist (Sources/CUContext/switch.c; not in
// the library's header, since ucontext_t never crosses it).
typedef void (*cu_switch_function)(ucontext_t *from, ucontext_t *to);
cu_switch_function cu_backend_switch(int backend);

enum { probe_rounds = 3, probe_stack_size = 64 * 1024 };

// Values each side keeps in its callee-saved registers across a switch: different, so a register
// the switch forgets to restore shows up as the other side's value.
static const uint64_t caller_seed = 0x0c0ffee000000000u, context_seed = 0x0decade000000000u;

// Rounding modes, set and read straight from the x87 control word and MXCSR (no libm): a
// mode each side sets on its own and must find again after every switch.
enum { round_up = 2, round_toward_zero = 3 };

#if defined(__x86_64__)
uint64_t cu_probe_call_preserving(void (*fn)(void *), void *arg, uint64_t seed);  // .S

static void set_rounding(unsigned mode) {
  unsigned short control;
  __asm__ volatile("fnstcw %0" : "=m"(control));
  control = (unsigned short)((control & ~0x0c00u) | (mode << 10));
  __asm__ volatile("fldcw %0" : : "m"(control));
  __builtin_ia32_ldmxcsr((__builtin_ia32_stmxcsr() & ~0x6000u) | (mode << 13));
}

static unsigned rounding(void) {
  unsigned short control;
  __asm__ volatile("fnstcw %0" : "=m"(control));
  return (control >> 10) & 3u;
}

static int rounding_is(unsigned mode) {
  unsigned short control;
  __asm__ volatile("fnstcw %0" : "=m"(control));
  return ((control >> 10) & 3u) == mode && ((__builtin_ia32_stmxcsr() >> 13) & 3u) == mode;
}
#else
static uint64_t cu_probe_call_preserving(void (*fn)(void *), void *arg, uint64_t seed) {
  (void)seed;
  fn(arg);
  return 0;
}
static void set_rounding(unsigned mode) { (void)mode; }
static unsigned rounding(void) { return 0; }
static int rounding_is(unsigned mode) { return (void)mode, 1; }
#endif

typedef struct probe {
  struct probe *self;  // lets the made context check the address it was given
  ucontext_t caller;
  ucontext_t context;
  cu_switch_function switch_to;  // the switch under test
  int rounds;   // rounds the made context has begun
  int failure;  // the first problem the made context saw
} probe;

static void to_context(void *argument) {
  probe *p = argument;
  p->switch_to(&p->caller, &p->context);
}

static void to_caller(void *argument) {
  probe *p = argument;
  p->switch_to(&p->context, &p->caller);
}

static void note(probe *p, int failure) {
  if (p->failure == CU_PROBE_PASSED) p->failure = failure;
}

// Runs on the made context and never returns: the caller simply stops resuming it. The fiber's
// address comes in the middle two arguments, so a lost first, second, fifth or sixth argument is
// reported rather than followed; a lost address stops the process.
static void probe_entry(unsigned first, unsigned second, unsigned high, unsigned low,
                        unsigned fifth, unsigned sixth) {
  probe *p = (probe *)(((uintptr_t)high << 32) | (uintptr_t)low);
  if (p->self != p) abort();
  if (first != 1 || second != 2 || fifth != 5 || sixth != 6) note(p, CU_PROBE_BAD_ARGUMENTS);
  set_rounding(round_up);  // a mode the caller does not use: each side must keep its own
  for (;;) {
    p->rounds += 1;
    if (cu_probe_call_preserving(to_caller, p, context_seed) != 0) note(p, CU_PROBE_LOST_REGISTERS);
    if (!rounding_is(round_up)) note(p, CU_PROBE_LOST_FP_CONTROL);
  }
}

int cu_backend_probe(int backend) {
  cu_switch_function switch_to = cu_backend_switch(backend);
  if (switch_to == NULL) return CU_PROBE_UNAVAILABLE;
  probe *p = calloc(1, sizeof *p);
  void *stack = malloc(probe_stack_size);
  if (p == NULL || stack == NULL || getcontext(&p->context) != 0) {
    free(p);
    free(stack);
    return CU_PROBE_NO_MEMORY;
  }
  p->self = p;
  p->switch_to = switch_to;
  p->context.uc_stack.ss_sp = stack;
  p->context.uc_stack.ss_size = probe_stack_size;
  p->context.uc_link = NULL;
  uintptr_t address = (uintptr_t)p;
  makecontext(&p->context, (void (*)(void))probe_entry, 6, 1u, 2u, (unsigned)(address >> 32),
              (unsigned)(address & 0xffffffffu), 5u, 6u);

  unsigned caller_rounding = rounding();
  set_rounding(round_toward_zero);
  int result = CU_PROBE_PASSED;
  for (int round = 1; round <= probe_rounds && result == CU_PROBE_PASSED; round++) {
    if (cu_probe_call_preserving(to_context, p, caller_seed) != 0) result = CU_PROBE_LOST_REGISTERS;
    else if (p->failure != CU_PROBE_PASSED) result = p->failure;
    else if (p->rounds != round) result = CU_PROBE_NOT_STARTED;
    else if (!rounding_is(round_toward_zero)) result = CU_PROBE_LOST_FP_CONTROL;
  }
  set_rounding(caller_rounding);
  free(stack);
  free(p);
  return result;
}
