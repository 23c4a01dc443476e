// The bare register switch with plain C frames spanning it on both sides: what a frame that is
// entered before a switch and returned from after it costs (Performance.md, "no frame spans a
// switch"). The processor predicts returns from the calls this core made, and after a switch
// those were the other side's, so each such return mispredicts.
#include "baselines.h"

#include <stdint.h>
#include <stdlib.h>

#if defined(__x86_64__)
void baseline_switch(void **save_stack_pointer, void *load_stack_pointer);
void baseline_switch_start_spanning(void);

enum { spanning_stack_size = 64 * 1024 };

static void *driver_stack_pointer, *coroutine_stack_pointer;
static int spanning_frames;

// The function itself and `frames` more plain frames, then the switch; each returns only after
// the other side switched back. The empty asm keeps the compiler from turning the recursion into a loop or a tail call.
__attribute__((noinline)) static void driver_side(int frames) {
  if (frames > 0) {
    driver_side(frames - 1);
    __asm__ volatile("");
    return;
  }
  baseline_switch(&driver_stack_pointer, coroutine_stack_pointer);
  __asm__ volatile("");
}

__attribute__((noinline)) static void coroutine_side(int frames) {
  if (frames > 0) {
    coroutine_side(frames - 1);
    __asm__ volatile("");
    return;
  }
  baseline_switch(&coroutine_stack_pointer, driver_stack_pointer);
  __asm__ volatile("");
}

// Entered once, from baseline_switch_start_spanning, on the coroutine's stack.
void baseline_bounce_spanning(void) {
  for (;;) coroutine_side(spanning_frames);
}

double baseline_register_switch_spanning_ns(int extra, long round_trips, int repetitions) {
  char *stack = malloc(spanning_stack_size);
  coroutine_stack_pointer =
      baseline_switch_frame(stack, spanning_stack_size, baseline_switch_start_spanning);
  spanning_frames = extra;
  double best = 1e300;
  for (int repetition = 0; repetition < repetitions; repetition++) {
    unsigned long long start = baseline_now_ns();
    for (long i = 0; i < round_trips; i++) driver_side(extra);
    double each = (double)(baseline_now_ns() - start) / (double)round_trips;
    if (each < best) best = each;
  }
  // The coroutine is left suspended in its frames; its stack is not freed, for that reason.
  return best;
}
#else
double baseline_register_switch_spanning_ns(int extra, long round_trips, int repetitions) {
  (void)extra;
  (void)round_trips;
  (void)repetitions;
  return -1;
}
#endif
