// How long a cache line takes to cross from one core to another: the unit that every cross-thread
// wake-up is made of, and the part of it that the host, not the code, decides.
#include "baselines.h"

#include <pthread.h>
#include <stdatomic.h>

// The line the two threads pass back and forth, alone in its 64 bytes.
static _Alignas(64) _Atomic long baton;
static long crossing_round_trips;

// Waits for each odd value and answers with the next even one.
static void *answer(void *unused) {
  (void)unused;
  for (long value = 1; value < 2 * crossing_round_trips; value += 2) {
    while (atomic_load_explicit(&baton, memory_order_acquire) != value) {}
    atomic_store_explicit(&baton, value + 1, memory_order_release);
  }
  return NULL;
}

double baseline_cache_line_crossing_ns(long round_trips, int repetitions) {
  double best = 1e300;
  crossing_round_trips = round_trips;
  for (int repetition = 0; repetition < repetitions; repetition++) {
    atomic_store(&baton, 0);
    pthread_t other;
    if (pthread_create(&other, NULL, answer, NULL) != 0) return -1;
    // The clock starts once the other thread has answered once, so its start-up is not timed.
    atomic_store_explicit(&baton, 1, memory_order_release);
    while (atomic_load_explicit(&baton, memory_order_acquire) != 2) {}
    unsigned long long start = baseline_now_ns();
    for (long value = 3; value < 2 * round_trips; value += 2) {
      atomic_store_explicit(&baton, value, memory_order_release);
      while (atomic_load_explicit(&baton, memory_order_acquire) != value + 1) {}
    }
    double each = (double)(baseline_now_ns() - start) / (double)(2 * (round_trips - 1));
    pthread_join(other, NULL);
    if (each < best) best = each;
  }
  return best;
}
