// Bare context-switch round trips: a coroutine that only switches back, driven in a loop.
#include "baselines.h"

#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <ucontext.h>

enum { stack_size = 64 * 1024 };

// A bare switch's speed depends on where its stack sits relative to the contexts it saves and
// loads: when addresses written and read in a switch are 4 KiB apart, the processor mistakes
// them for the same location and stalls (measured here: 450 to 760 ns per swapcontext round
// trip, by stack placement alone). So each baseline is measured at several stack placements
// and keeps its best: the bare switch at its fastest, the strictest thing to be compared with.
enum { placements = 8, placement_step = 512 };

unsigned long long baseline_now_ns(void) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (unsigned long long)now.tv_sec * 1000000000ull + (unsigned long long)now.tv_nsec;
}

// ---- glibc swapcontext

static ucontext_t driver_context, coroutine_context;

static void bounce_with_swapcontext(void) {
  for (;;) swapcontext(&coroutine_context, &driver_context);
}

static double swapcontext_round_trip_ns(char *stack, long round_trips, int repetitions) {
  getcontext(&coroutine_context);
  coroutine_context.uc_stack.ss_sp = stack;
  coroutine_context.uc_stack.ss_size = stack_size;
  coroutine_context.uc_link = NULL;
  makecontext(&coroutine_context, bounce_with_swapcontext, 0);
  double best = 1e300;
  for (int repetition = 0; repetition < repetitions; repetition++) {
    unsigned long long start = baseline_now_ns();
    for (long i = 0; i < round_trips; i++) swapcontext(&driver_context, &coroutine_context);
    double each = (double)(baseline_now_ns() - start) / (double)round_trips;
    if (each < best) best = each;
  }
  return best;
}

typedef double (*round_trip_measure)(char *stack, long round_trips, int repetitions);

// The best of `measure` over the stack placements (see `placements` above).
static double best_over_placements(round_trip_measure measure, long round_trips,
                                   int repetitions) {
  char *memory = malloc(stack_size + placements * placement_step);
  double best = 1e300;
  for (int placement = 0; placement < placements; placement++) {
    double each = measure(memory + placement * placement_step, round_trips, repetitions);
    if (each < best) best = each;
  }
  free(memory);
  return best;
}

double baseline_swapcontext_round_trip_ns(long round_trips, int repetitions) {
  return best_over_placements(swapcontext_round_trip_ns, round_trips, repetitions);
}

// ---- a minimal register-only switch (register_switch_x86_64.S)

#if defined(__x86_64__)
void baseline_switch(void **save_stack_pointer, void *load_stack_pointer);
void baseline_switch_start(void);

static void *driver_stack_pointer, *coroutine_stack_pointer;

// Entered once, from baseline_switch_start, on the coroutine's stack.
void baseline_bounce(void) {
  for (;;) baseline_switch(&coroutine_stack_pointer, driver_stack_pointer);
}

void *baseline_switch_frame(char *stack, size_t size, void (*start)(void)) {
  // A frame as baseline_switch leaves it: control words, the six registers it pops, then the
  // resume address: a start stub that aligns the stack and calls the coroutine's function.
  uintptr_t *top = (uintptr_t *)(((uintptr_t)(stack + size)) & ~(uintptr_t)15);
  uintptr_t *frame = top - 10;
  for (int i = 0; i < 10; i++) frame[i] = 0;
  uint32_t mxcsr = __builtin_ia32_stmxcsr();
  uint16_t control;
  __asm__ volatile("fnstcw %0" : "=m"(control));
  frame[0] = (uintptr_t)mxcsr | ((uintptr_t)control << 32);  // control words
  frame[7] = (uintptr_t)start;                                 // resume address
  return frame;
}

static double register_switch_round_trip_ns(char *stack, long round_trips, int repetitions) {
  coroutine_stack_pointer = baseline_switch_frame(stack, stack_size, baseline_switch_start);
  double best = 1e300;
  for (int repetition = 0; repetition < repetitions; repetition++) {
    unsigned long long start = baseline_now_ns();
    for (long i = 0; i < round_trips; i++)
      baseline_switch(&driver_stack_pointer, coroutine_stack_pointer);
    double each = (double)(baseline_now_ns() - start) / (double)round_trips;
    if (each < best) best = each;
  }
  return best;
}

double baseline_register_switch_round_trip_ns(long round_trips, int repetitions) {
  return best_over_placements(register_switch_round_trip_ns, round_trips, repetitions);
}
#else
double baseline_register_switch_round_trip_ns(long round_trips, int repetitions) {
  (void)round_trips;
  (void)repetitions;
  return -1;
}
#endif
