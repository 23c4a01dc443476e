import Glibc

/// A mutex paired with a condition variable, for the few places that must block a thread (a
/// generator's consumer, the stall watchdog); a loop's remote queue uses its mutex alone, as
/// the loop sleeps in its poller. Everything else locks with `Synchronization.Mutex`.
final class ConditionLock: @unchecked Sendable {  // pthread_mutex_t/pthread_cond_t synchronise it
  private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
  private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

  init() {
    pthread_mutex_init(mutex, nil)
    var attributes = pthread_condattr_t()
    pthread_condattr_init(&attributes)
    pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
    pthread_cond_init(condition, &attributes)
    pthread_condattr_destroy(&attributes)
  }

  deinit {
    pthread_cond_destroy(condition)
    pthread_mutex_destroy(mutex)
    condition.deallocate()
    mutex.deallocate()
  }

  func lock() { pthread_mutex_lock(mutex) }
  func unlock() { pthread_mutex_unlock(mutex) }
  func signal() { pthread_cond_signal(condition) }

  /// Waits for a signal, or until the monotonic clock reaches `deadline` (nanoseconds) if given.
  /// Must be called with the lock held; returns with it held.
  func wait(until deadline: UInt64?) {
    guard let deadline else {
      pthread_cond_wait(condition, mutex)
      return
    }
    var time = timespec(
      tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
    pthread_cond_timedwait(condition, mutex, &time)
  }

  @inline(__always)
  func withLock<R>(_ body: () throws -> R) rethrows -> R {
    lock()
    defer { unlock() }
    return try body()
  }
}

/// Nanoseconds on the monotonic clock, the time base of every loop and timer.
@inline(__always)
func monotonicNanoseconds() -> UInt64 {
  var time = timespec()
  clock_gettime(CLOCK_MONOTONIC, &time)
  return UInt64(time.tv_sec) &* 1_000_000_000 &+ UInt64(time.tv_nsec)
}

/// The monotonic clock at its coarse resolution (a few milliseconds), which costs a fraction of
/// a precise reading: for stamps that only diagnostics read.
func coarseMonotonicNanoseconds() -> UInt64 {
  var time = timespec()
  clock_gettime(CLOCK_MONOTONIC_COARSE, &time)
  return UInt64(time.tv_sec) &* 1_000_000_000 &+ UInt64(time.tv_nsec)
}

/// Converts a delay in seconds to whole nanoseconds, treating negative delays as zero.
func nanoseconds(fromSeconds seconds: Double, in call: StaticString) -> UInt64 {
  // Not `coPrecondition`, and the message built elsewhere: in a debug build its closures, or
  // the interpolation's zeroed locals here, cost more than the rest of this function.
  if seconds.isNaN { delayIsNaN(in: call) }
  if seconds <= 0 { return 0 }
  let value = seconds * 1e9
  // 2^63, `Double(UInt64.max / 2)` as a literal: that conversion is generic, a witness-table
  // look-up per call in a debug build.
  return value >= 0x1p63 ? UInt64.max / 2 : UInt64(value)
}

/// Stops the program: a NaN delay given to `call`.
@inline(never)
private func delayIsNaN(in call: StaticString) -> Never {
  coStop("\(call): the delay is NaN")
}
