// Baselines in plain C, measured in the same run as the library: what a context switch costs
// with nothing around it.
#ifndef BASELINES_H
#define BASELINES_H

/// Nanoseconds per round trip (into a coroutine and back) with glibc swapcontext, best of
/// `repetitions` runs of `round_trips` each.
double baseline_swapcontext_round_trip_ns(long round_trips, int repetitions);

/// Nanoseconds per round trip with a minimal register-only switch (callee-saved registers,
/// MXCSR and the x87 control word pushed on the stack; an indirect jump to continue), best of
/// `repetitions` runs. Returns a negative number where no such switch exists (not x86_64).
double baseline_register_switch_round_trip_ns(long round_trips, int repetitions);

/// The bare register switch with `1 + extra` plain C frames entered before it and returned from
/// after it on each side: what a frame spanning a switch costs. -1 where there is no such switch.
double baseline_register_switch_spanning_ns(int extra, long round_trips, int repetitions);

/// Nanoseconds for a cache line to cross between two threads one way (half a round trip of a
/// value passed back and forth), best of `repetitions` runs of `round_trips` each; the threads
/// are not pinned, so they land where the system puts them, as the library's do. -1 when the
/// second thread cannot start.
double baseline_cache_line_crossing_ns(long round_trips, int repetitions);

/// Nanoseconds on the monotonic clock.
unsigned long long baseline_now_ns(void);

#include <stddef.h>
/// Lays out, at the top of `size` bytes of `stack`, the frame baseline_switch would leave when
/// switching out of a coroutine about to call `start` (x86_64); returns its stack pointer.
void *_Nonnull baseline_switch_frame(char *_Nonnull stack, size_t size, void (*_Nonnull start)(void));

#endif
