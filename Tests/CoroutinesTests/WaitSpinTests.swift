import Foundation
import Synchronization
import Testing

@testable import Coroutines

/// A coroutine about to park while its loop has nothing else to run spins on its own stack
/// first, whatever it waits for: a wake-up from another thread during that spin ends the wait
/// without a switch out and back in. These count the switches into the waiting coroutine.
@Suite struct WaitSpinTests {
  /// The switches into the calling coroutine while `body` runs.
  static func switches(during body: () throws -> Void) rethrows -> UInt64 {
    let coroutine = Coroutine.current!
    let before = coroutine.registryEntry.switches.load(ordering: .relaxed)
    try body()
    return coroutine.registryEntry.switches.load(ordering: .relaxed) &- before
  }

  /// True once `coroutine` has armed a wait that nobody has claimed yet.
  static func isWaiting(_ coroutine: Coroutine) -> Bool {
    coroutine.waitWord.load(ordering: .acquiring) & 1 == 1
  }

  @Test func aCallbackAnsweredByAPlainThreadEndsTheWaitWithoutASwitch() throws {
    let (value, switches) = try LoopSpinTests.runWithLongSpinBudget { () -> (Int, UInt64) in
      let coroutine = Coroutine.current!
      var value = 0
      let switches = try Self.switches {
        value = try co_await { (done: @escaping @Sendable (Result<Int, any Error>) -> Void) in
          PlainThreads.start {
            _ = PlainThreads.poll { Self.isWaiting(coroutine) }
            done(.success(5))
          }
        }
      }
      return (value, switches)
    }
    #expect(value == 5)
    #expect(switches == 0)
  }

  @Test func aGroupCoroutineTakesAPlainThreadsAnswerWithoutASwitch() throws {
    let group = CoroutineLoopGroup(threads: 2)
    defer { group.shutdown() }
    let promise = CoPromise<Int>()
    let task = co_launch(on: group.loops[0]) { () throws -> UInt64 in
      let loop = CoroutineLoop.current!
      loop.setSpinBudgetForTesting(LoopSpinTests.longBudget)
      let (outcome, switches) = LoopSpinTests.awaitWhileSpinning(promise) { promise.fulfill(7) }
      // Never switched out, so still on the same loop: an idle group loop spins too, and a
      // long budget would hold the shutdown.
      loop.setSpinBudgetForTesting(0)
      #expect(try outcome.get() == 7)
      return switches
    }
    #expect(try PlainThreads.value(of: task) == 0)
  }

  @Test func aCoroutineOfAnotherLoopEndsASpinningWaitWithoutASwitch() throws {
    let group = CoroutineLoopGroup(threads: 2)
    defer { group.shutdown() }
    let answer = CoPromise<Int>()
    // Each on a loop of its own, which keeps it there.
    let receiver = co_launch(on: group.loops[0]) { () throws -> UInt64 in
      let loop = CoroutineLoop.current!
      loop.setSpinBudgetForTesting(LoopSpinTests.longBudget)
      var value = 0
      let switches = try Self.switches { value = try co_await(answer) }
      loop.setSpinBudgetForTesting(0)
      #expect(value == 8)
      return switches
    }
    let coroutine = receiver.coroutine
    let sender = co_launch(on: group.loops[1]) {
      // Yields rather than sleeps: a loop that idled would spin too, and with two loops only
      // one may spin at a time (see LoopSpinTests.aGroupLetsAtMostHalfItsLoopsSpin).
      while !Self.isWaiting(coroutine) { try co_delay(0) }
      answer.fulfill(8)
    }
    try PlainThreads.value(of: sender)
    #expect(try PlainThreads.value(of: receiver) == 0)
  }

  @Test func aWaitDoesNotSpinWhileItsLoopHasACoroutineToRun() throws {
    let value = try LoopSpinTests.runWithLongSpinBudget { () -> Int in
      let promise = CoPromise<Int>()
      // Queued on this loop: it runs only once the body parks.
      co_launch { promise.fulfill(3) }
      return try co_await(promise)
    }
    #expect(value == 3)
  }

  @Test func aTimerFallingDueEndsTheWaitsSpin() throws {
    let value = try LoopSpinTests.runWithLongSpinBudget { () -> Int in
      let promise = CoPromise<Int>()
      co_launch {
        try co_delay(0.002)
        promise.fulfill(5)
      }
      // Lets the coroutine above start its sleep, so that the loop has nothing queued.
      try co_delay(0)
      return try co_await(promise)
    }
    #expect(value == 5)
  }
}
