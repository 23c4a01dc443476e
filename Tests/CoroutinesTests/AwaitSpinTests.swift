import Foundation
import Synchronization
import Testing

@testable import Coroutines

/// A coroutine that awaits a pending future while its loop has nothing else to run spins on
/// the future before parking, when the loop's spin budget allows: an answer from another thread
/// then costs no switch at all. These check that the spin takes every kind of outcome, and
/// that it gives way to everything else the loop must do.
@Suite struct AwaitSpinTests {
  static let longBudget: UInt64 = 60_000_000_000

  struct Refused: Error, Equatable {}

  /// Runs `body` on a loop whose spin budget is a minute, far longer than the test may take,
  /// and checks that the run took less than half of that: a spin that ignored what it must give
  /// way to would last the whole budget.
  static func runWithLongSpinBudget<T>(
    sourceLocation: SourceLocation = #_sourceLocation, _ body: @escaping () throws -> T
  ) throws -> T {
    let clock = ContinuousClock()
    let started = clock.now
    let result = try CoroutineLoop.run { () throws -> T in
      CoroutineLoop.current!.setSpinBudgetForTesting(longBudget)
      return try body()
    }
    #expect(clock.now - started < .seconds(30), sourceLocation: sourceLocation)
    return result
  }

  /// Awaits `promise` in the calling coroutine, which spins while a plain thread runs `answer`
  /// once the await has begun (its first look at the outcome marks the promise observed);
  /// returns the outcome and the switches into the coroutine during the await.
  static func awaitWhileSpinning<T: Sendable>(
    _ promise: CoPromise<T>, answer: @escaping @Sendable () -> Void
  ) -> (outcome: Result<T, any Error>, switches: UInt64) {
    let coroutine = Coroutine.current!
    LoopWatchTests.onPlainThread {
      _ = LoopWatchTests.poll { promise.wasObserved }
      answer()
    }
    let before = coroutine.registryEntry.switches.load(ordering: .relaxed)
    let outcome = Result { try co_await(promise) }
    return (outcome, coroutine.registryEntry.switches.load(ordering: .relaxed) &- before)
  }

  @Test func anAnswerFromAnotherThreadReachesAnIdleLoopsAwaitWithoutASwitch() throws {
    let promise = CoPromise<Int>()
    let (outcome, switches) = try Self.runWithLongSpinBudget {
      Self.awaitWhileSpinning(promise) { promise.fulfill(42) }
    }
    #expect(try outcome.get() == 42)
    #expect(switches == 0)
  }

  @Test func aSpinningAwaitTakesBoxedValuesAndErrors() throws {
    let words = CoPromise<[String]>()
    let refusal = CoPromise<Int>()
    let (value, error, switches) = try Self.runWithLongSpinBudget {
      () -> ([String]?, (any Error)?, UInt64) in
      let value = Self.awaitWhileSpinning(words) { words.fulfill(["spun", "on"]) }
      let error = Self.awaitWhileSpinning(refusal) { refusal.reject(Refused()) }
      return (try? value.outcome.get(), error.outcome.failure, value.switches + error.switches)
    }
    #expect(value == ["spun", "on"])
    #expect(error is Refused)
    #expect(switches == 0)
  }

  @Test func aGroupCoroutineTakesAnAnswerFromAnotherThreadWithoutASwitch() throws {
    let group = CoroutineLoopGroup(threads: 2)
    defer { group.shutdown() }
    let promise = CoPromise<Int>()
    let task = co_launch(on: group) { () throws -> UInt64 in
      let loop = CoroutineLoop.current!
      loop.setSpinBudgetForTesting(Self.longBudget)
      let (outcome, switches) = Self.awaitWhileSpinning(promise) { promise.fulfill(7) }
      // Never switched out, so still on the same loop: a group loop spins even with nothing
      // left to run, and a long budget would hold the shutdown.
      loop.setSpinBudgetForTesting(0)
      #expect(try outcome.get() == 7)
      return switches
    }
    #expect(try LoopWatchTests.value(of: task) == 0)
  }

  @Test func anAwaitDoesNotSpinWhileItsLoopHasACoroutineToRun() throws {
    let value = try Self.runWithLongSpinBudget { () -> Int in
      let promise = CoPromise<Int>()
      // Queued on this loop: it runs only once the body parks.
      co_launch { promise.fulfill(3) }
      return try co_await(promise)
    }
    #expect(value == 3)
  }

  @Test func aTimerFallingDueEndsTheSpin() throws {
    let value = try Self.runWithLongSpinBudget { () -> Int in
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

  @Test func workFromAnotherThreadEndsTheSpin() throws {
    let (outcome, switches) = try Self.runWithLongSpinBudget {
      let loop = CoroutineLoop.current!
      let promise = CoPromise<Int>()
      // The answer comes from a coroutine that the other thread queues on this loop: only
      // once the spin gives way does it run.
      return Self.awaitWhileSpinning(promise) {
        _ = co_launch(on: loop) { promise.fulfill(9) }
      }
    }
    #expect(try outcome.get() == 9)
    #expect(switches == 1)
  }

  @Test func cancellingASpinningAwaitEndsIt() throws {
    let never = CoPromise<Int>()
    let outcome = try Self.runWithLongSpinBudget { () -> String in
      let waiter = co_launch { try co_await(never) }
      LoopWatchTests.onPlainThread {
        _ = LoopWatchTests.poll { never.wasObserved }
        waiter.cancel()
      }
      return try LoopWatchTests.valueOrCancelled(of: waiter)
    }
    #expect(outcome == "cancelled")
  }
}

extension Result {
  /// The error of a failure; nil for a success.
  fileprivate var failure: Failure? {
    if case .failure(let error) = self { return error }
    return nil
  }
}
