import Testing

@testable import Coroutines

/// The rule that decides when idle stacks beyond the pool's capacity give their memory back:
/// only those unused through a whole interval go, at its end.
struct IdleStackDecayTests {
  let second = IdleStackDecay.interval
  let capacity = 64

  /// The look at `now` with `idle` stacks idle: how many go back, nil before the interval ends.
  private func look(_ decay: inout IdleStackDecay, at now: UInt64, idle: Int) -> Int? {
    decay.release(now: now, idle: idle, capacity: capacity)
  }

  /// One more stack went idle at `now`, making `idle`: whether that started an interval.
  private func rise(_ decay: inout IdleStackDecay, to idle: Int, at now: UInt64) -> Bool {
    decay.idleRose(to: idle, capacity: capacity, now: { now })
  }

  @Test func noIntervalStartsWhileTheIdleStacksFitTheCapacity() {
    var decay = IdleStackDecay()
    #expect(rise(&decay, to: 64, at: 0) == false)
    #expect(decay.deadline == nil)
    #expect(look(&decay, at: 10 * second, idle: 64) == nil)
  }

  @Test func nothingGoesBackBeforeTheIntervalEnds() {
    var decay = IdleStackDecay()
    #expect(rise(&decay, to: 65, at: 5) == true)
    #expect(decay.deadline == 5 + second)
    // A second stack going idle does not restart the interval.
    #expect(rise(&decay, to: 66, at: 7) == false)
    #expect(look(&decay, at: 4 + second, idle: 66) == nil)
    #expect(decay.deadline == 5 + second)
  }

  @Test func stacksIdleSinceTheIntervalBeganGoAtItsEndAndLaterOnesAtTheNext() {
    var decay = IdleStackDecay()
    _ = rise(&decay, to: 70, at: 0)
    // A burst ends during the interval: 930 more go idle, unused for less than an interval.
    #expect(look(&decay, at: second, idle: 1_000) == 6)
    #expect(decay.deadline == 2 * second)
    #expect(look(&decay, at: 2 * second, idle: 994) == 930)
    #expect(decay.deadline == nil)
  }

  @Test func stacksTakenDuringTheIntervalStayResident() {
    var decay = IdleStackDecay()
    _ = rise(&decay, to: 1_000, at: 0)
    // The load comes back and takes all but 100 of them before the interval ends.
    decay.idleFell(to: 100)
    #expect(look(&decay, at: second, idle: 1_000) == 36)
    #expect(decay.deadline == 2 * second)
  }

  @Test func aLoadThatReturnsWithinEachIntervalKeepsEveryStack() {
    var decay = IdleStackDecay()
    _ = rise(&decay, to: 5_000, at: 0)
    decay.idleFell(to: 0)
    #expect(look(&decay, at: second, idle: 5_000) == 0)
    decay.idleFell(to: 10)
    #expect(look(&decay, at: 2 * second, idle: 5_000) == 0)
  }

  @Test func aResetForgetsTheInterval() {
    var decay = IdleStackDecay()
    _ = rise(&decay, to: 100, at: 0)
    decay.reset()
    #expect(decay.deadline == nil)
    #expect(look(&decay, at: 5 * second, idle: 100) == nil)
  }
}
