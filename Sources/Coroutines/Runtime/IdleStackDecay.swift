/// When the memory of finished stacks that the pool does not keep ready goes back to the system.
///
/// A load that rises and falls again soon needs its stacks again: giving their pages back and
/// faulting them in a moment later cost a loop group about a tenth of its time on a tree of
/// short coroutines (see Performance.md). So the finished stacks of one size beyond
/// ``CoroutineStack/poolCapacity`` stay idle, holding their memory, and are watched over
/// intervals of ``interval``: those that stayed unused through a whole interval (the fewest idle
/// at any moment of it, beyond the capacity) go back at its end. A burst's stacks go back within
/// two intervals of its end; a load that returns within one interval finds them still resident.
///
/// Pure bookkeeping, with the time passed in: the pool keeps one per size, under its mutex.
struct IdleStackDecay {
  /// One second: long enough to bridge the bursts of a busy server, short enough that a
  /// program done with a burst has its memory back within two.
  static let interval: UInt64 = 1_000_000_000

  /// When the current interval started, or nil while no more than the capacity are idle.
  private var intervalStart: UInt64?
  /// The fewest stacks idle at any moment of the current interval.
  private var fewestIdle = 0

  /// When the current interval ends, if one is running.
  var deadline: UInt64? { intervalStart.map { $0 &+ Self.interval } }

  /// One more stack went idle, making `idle`. True if that starts an interval: the caller then
  /// makes sure the pool is looked at again when it ends.
  mutating func idleRose(to idle: Int, capacity: Int, now: () -> UInt64) -> Bool {
    guard intervalStart == nil, idle > capacity else { return false }
    intervalStart = now()
    fewestIdle = idle
    return true
  }

  /// An idle stack was taken for a coroutine, leaving `idle`.
  mutating func idleFell(to idle: Int) {
    if idle < fewestIdle { fewestIdle = idle }
  }

  /// How many of the `idle` stacks to give back at `now`, if the interval has ended (nil
  /// otherwise); a new interval starts if more than the capacity stay idle after that.
  mutating func release(now: UInt64, idle: Int, capacity: Int) -> Int? {
    guard let deadline, now >= deadline else { return nil }
    let unused = max(0, min(fewestIdle, idle) - capacity)
    let kept = idle - unused
    if kept > capacity {
      intervalStart = now
      fewestIdle = kept
    } else {
      intervalStart = nil
    }
    return unused
  }

  /// Forgets the interval: a trim gave the idle stacks back.
  mutating func reset() { intervalStart = nil }
}
