import Dispatch
import Synchronization
import Testing

@testable import Coroutines

/// A cancelled timer (a timeout that did not fire, a sleep ended early) gives back what it holds
/// at once, and its place in the timer heap within a bounded amount of later work, even when a
/// live timer due before it keeps it from surfacing.
@Suite struct CancelledTimerTests {
  /// An object whose release a test watches through a weak reference.
  final class Held: Sendable {}

  /// How many entries a heap holding two live timers may keep: dead entries are dropped once
  /// they are a quarter of the heap, and a heap smaller than a few dozen entries is left alone.
  static let mostEntries = 128

  @Test func answeredTimeoutsBehindALiveSleepLeaveABoundedHeap() throws {
    let (before, after) = try CoroutineLoop.run { () throws -> (Int, Int) in
      let loop = try #require(CoroutineLoop.current)
      // Due before every timeout below, so none of them reaches the front of the heap.
      let long = co_launch { try co_delay(600) }
      try co_delay(0)  // the long sleep is on the heap
      let before = loop.timerCountForTesting
      for index in 0..<20_000 {
        let answer = CoPromise<Int>()
        loop.schedule { answer.fulfill(index) }
        #expect(try co_await(answer, timeout: 3600) == index)
      }
      let after = loop.timerCountForTesting
      long.cancel()
      return (before, after)
    }
    #expect(before == 1)
    #expect(after <= Self.mostEntries, "\(after) timer entries left after 20 000 answered waits")
  }

  @Test func sleepsEndedEarlyBehindALiveSleepLeaveABoundedHeap() throws {
    let after = try CoroutineLoop.run { () throws -> Int in
      let loop = try #require(CoroutineLoop.current)
      let long = co_launch { try co_delay(600) }
      for _ in 0..<5_000 {
        let sleeper = co_launch { try co_delay(3600) }
        try co_delay(0)  // it sleeps
        sleeper.cancel()
        _ = try? sleeper.await()
      }
      let after = loop.timerCountForTesting
      long.cancel()
      return after
    }
    #expect(after <= Self.mostEntries, "\(after) timer entries left after 5 000 ended sleeps")
  }

  @Test func aCancelledLoopTimerReleasesWhatItsJobHoldsAtOnce() throws {
    try CoroutineLoop.run {
      let loop = try #require(CoroutineLoop.current)
      let long = loop.schedule(after: 600) {}
      weak var watched: Held?
      let timer = Self.timer(on: loop, holding: &watched)
      #expect(watched != nil)
      timer.cancel()
      #expect(watched == nil, "a cancelled timer still holds what its job captured")
      // Cancelled from another thread, too.
      let other = Self.timer(on: loop, holding: &watched)
      DispatchQueue.global().sync { other.cancel() }
      #expect(watched == nil)
      long.cancel()
    }
  }

  @Test func cancelledTimersOnATestLoopLeaveABoundedHeapAndHoldNothing() {
    let loop = CoroutineTestLoop()
    let long = loop.schedule(after: 600) {}
    for _ in 0..<20_000 {
      loop.schedule(after: 3600) {}.cancel()
    }
    #expect(loop.timerCountForTesting <= Self.mostEntries)
    weak var watched: Held?
    let timer = Self.timer(on: loop, holding: &watched)
    timer.cancel()
    #expect(watched == nil, "a cancelled timer still holds what its job captured")
    // The live timer still fires, and the cancelled ones never run.
    let fired = Atomic<Bool>(false)
    _ = loop.schedule(after: 60) { fired.store(true, ordering: .relaxed) }
    long.cancel()
    loop.advance(by: 3600)
    let liveTimerFired = fired.load(ordering: .relaxed)
    #expect(liveTimerFired)
    #expect(loop.pendingTimers == 0)
    #expect(loop.timerCountForTesting == 0)
  }

  /// A timer an hour away on `scheduler`, whose job holds a fresh object that `watched`
  /// names.
  private static func timer(
    on scheduler: some CoroutineScheduler, holding watched: inout Held?
  ) -> any CoroutineTimer {
    let held = Held()
    watched = held
    return scheduler.schedule(after: 3600) { withExtendedLifetime(held) {} }
  }
}
