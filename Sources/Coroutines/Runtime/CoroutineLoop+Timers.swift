import CUContext
import Foundation
import Synchronization

/// A loop's timers: ``CoroutineLoop/schedule(after:_:)``'s jobs and `co_delay`'s sleeps, kept in
/// one heap that only the loop's own thread touches.
extension CoroutineLoop {
  /// Runs `job` on this loop once `seconds` have passed on the monotonic clock.
  ///
  /// On a loop of a ``CoroutineLoopGroup``, refused as ``schedule(_:)`` refuses a job.
  public func schedule(after seconds: Double, _ job: @escaping @Sendable () -> Void)
    -> any CoroutineTimer
  {
    let delay = nanoseconds(fromSeconds: seconds, in: "CoroutineLoop.schedule(after:)")
    coPrecondition(
      isCurrent || !refusesOutsideWork, Self.refusedFromOutside("CoroutineLoop.schedule(after:_:)"))
    pendingTimers.add(1, ordering: .relaxed)
    // The sequence that orders equal deadlines is the heap's own, given on arrival.
    let timer = LoopTimer(
      deadline: monotonicNanoseconds() &+ delay, sequence: 0, job: job,
      onCancel: { [weak self] in
        guard let self else { return }
        self.pendingTimers.subtract(1, ordering: .sequentiallyConsistent)
        self.wakeUpIfElsewhere()
      })
    if isCurrent {
      insert(timer)
    } else {
      // Numbered when it reaches the heap, on the loop's thread.
      guard enqueueFromElsewhere(.closure { [self] in insert(timer) }) else {
        coStop(Self.refusedAfterEnd("CoroutineLoop.schedule(after:_:)"))
      }
    }
    return timer
  }

  /// Puts `coroutine`, whose wait of `generation` is armed, to sleep on the timer heap for
  /// `delay` nanoseconds; the loop wakes it directly, so `co_delay` allocates nothing. Called
  /// on the loop's own thread.
  func addSleep(_ coroutine: Coroutine, generation: UInt64, nanoseconds delay: UInt64) {
    sleepers += 1
    nextSequence &+= 1
    let crowded = timers.insert(
      TimerEntry(
        sleeping: coroutine, generation: generation, deadline: monotonicNanoseconds() &+ delay,
        sequence: nextSequence))
    if crowded { dropDeadTimers() }
  }

  /// A sleep ended before its deadline (cancelled): it no longer keeps the loop alive. Called
  /// on the loop's own thread, where the sleeping coroutine resumes.
  func sleepEndedEarly() {
    sleepers -= 1
  }

  /// Puts a timer on the heap, numbered after every entry already there. Loop thread only.
  private func insert(_ timer: LoopTimer) {
    nextSequence &+= 1
    if timers.insert(TimerEntry(timer, sequence: nextSequence)) { dropDeadTimers() }
  }

  /// Drops the dead entries of the crowded timer heap (see `TimerHeap.compact(liveAtMost:)`):
  /// a timeout answered in time, or a sleep ended early, behind a live timer due before it
  /// would otherwise stay until that timer rings. Out of line: rarely called.
  @inline(never)
  private func dropDeadTimers() {
    // Live entries are at most the sleeps not yet ended and the timers neither fired nor
    // cancelled (some of which are still on their way from other threads).
    let dead = timers.compact(liveAtMost: sleepers &+ pendingTimers.load(ordering: .relaxed))
    // Released only now that the heap is whole again: the last release of a coroutine may run
    // code that arms a timer on this loop.
    _ = consume dead
  }

  /// How many `co_delay` sleeps are pending (for tests, on the loop's own thread).
  var pendingSleepsForTesting: Int {
    coPrecondition(isCurrent, "pendingSleepsForTesting: read it on the loop's own thread")
    return sleepers
  }

  /// How many ``schedule(after:_:)`` timers are pending (for tests).
  var pendingTimersForTesting: Int { pendingTimers.load(ordering: .acquiring) }

  /// How many entries the timer heap holds, dead ones included (for tests, on the loop's own
  /// thread).
  var timerCountForTesting: Int {
    coPrecondition(isCurrent, "timerCountForTesting: read it on the loop's own thread")
    return timers.count
  }
}
