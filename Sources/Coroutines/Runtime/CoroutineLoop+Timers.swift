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
      onCancel: { [cancellations] in
        cancellations.withOwner { loop in
          loop.pendingTimers.subtract(1, ordering: .sequentiallyConsistent)
          loop.wakeUpIfElsewhere()
        }
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

  /// Puts `coroutine`, whose wait of `generation` is armed, to sleep for `delay` nanoseconds;
  /// the loop wakes it directly, so `co_delay` allocates nothing. Called on the loop's own
  /// thread.
  ///
  /// While other timers are pending, the sleep gets its deadline when the loop next reads the
  /// clock to fire them, at its next turn or before it waits for work (`stampSleeps`), from
  /// that one reading: a reading per sleep cost as much as the rest of the sleep with thousands
  /// of coroutines each sleeping in turn (its fence waited for the misses of the switch into a
  /// cold coroutine before it). libuv likewise dates its timers from one reading per loop
  /// iteration, taken at the iteration's start; taken after the sleep was armed here, it never
  /// makes a sleep shorter than asked, only longer by the rest of the turn's jobs. The sleeps
  /// of one turn with the same delay share a deadline, and join the heap's run in the order
  /// they were armed. With no timer pending, the turns read no clock, so the sleep reads it at
  /// once: `unstampedSleeps` is empty whenever `timers` is, and a turn checks one of them.
  func addSleep(_ coroutine: Coroutine, generation: UInt64, nanoseconds delay: UInt64) {
    sleepers += 1
    guard timers.isEmpty else {
      // Retained here; the reference moves into the heap's entry (see `stampSleeps`).
      unstampedSleeps.append(
        UnstampedSleep(
          coroutine: Unmanaged.passRetained(coroutine), generation: generation, delay: delay))
      return
    }
    nextSequence &+= 1
    let crowded = timers.insert(
      TimerEntry(
        sleeping: coroutine, generation: generation, deadline: monotonicNanoseconds() &+ delay,
        sequence: nextSequence))
    if crowded { dropDeadTimers() }
  }

  /// Gives the sleeps armed since the last stamp their deadlines, from one reading of the
  /// clock taken after all of them were armed, and returns the reading. Loop thread only.
  @inline(never)
  func stampSleeps() -> UInt64 {
    let now = monotonicNanoseconds()
    var crowded = false
    for index in unstampedSleeps.indices {
      let sleep = unstampedSleeps[index]
      nextSequence &+= 1
      // The list's reference moves into the entry.
      if timers.insert(
        TimerEntry(
          sleeping: sleep.coroutine.takeRetainedValue(), generation: sleep.generation,
          deadline: now &+ sleep.delay, sequence: nextSequence))
      {
        crowded = true
      }
    }
    unstampedSleeps.removeAll(keepingCapacity: true)
    if crowded { dropDeadTimers() }
    return now
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
    // Sleeps not dated yet wait for the turns to fire the heap: it must not be left empty.
    if timers.isEmpty, !unstampedSleeps.isEmpty { _ = stampSleeps() }
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
    return timers.count + unstampedSleeps.count
  }
}

/// A `co_delay` sleep waiting for its deadline (see `CoroutineLoop.addSleep`): its coroutine,
/// retained, the generation of the wait it armed, and its delay in nanoseconds.
struct UnstampedSleep {
  let coroutine: Unmanaged<Coroutine>
  let generation: UInt64
  let delay: UInt64
}
