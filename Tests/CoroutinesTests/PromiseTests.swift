import Dispatch
import Synchronization
import Testing

@testable import Coroutines

@Suite struct PromiseTests {
  struct Failure: Error, Equatable { let code: Int }

  @Test func aPromiseIsPendingUntilSettled() throws {
    let promise = CoPromise<Int>()
    #expect(promise.result == nil)
    #expect(!promise.isSettled)
    promise.fulfill(1)
    #expect(try promise.result?.get() == 1)
  }

  @Test func onlyTheFirstSettleCounts() throws {
    let promise = CoPromise<Int>()
    promise.fulfill(1)
    promise.fulfill(2)
    promise.reject(Failure(code: 3))
    #expect(try promise.result?.get() == 1)

    let rejected = CoPromise<Int>()
    rejected.reject(Failure(code: 1))
    rejected.fulfill(2)
    #expect(throws: Failure(code: 1)) { try rejected.result?.get() }
  }

  @Test func observersFireOnceEachBeforeAndAfterSettling() {
    let promise = CoPromise<Int>()
    let calls = Log()
    promise.whenComplete { calls.append((try? $0.get()) ?? -1) }
    promise.whenComplete { calls.append(((try? $0.get()) ?? -1) + 10) }
    promise.fulfill(1)
    promise.fulfill(5)
    promise.whenComplete { calls.append(((try? $0.get()) ?? -1) + 100) }
    #expect(calls.values == [1, 11, 101])
  }

  @Test func anObserverAddedAfterSettlingRunsAtOnceOnTheCallersThread() {
    let promise = CoPromise<Int>()
    promise.fulfill(3)
    var seen: Int?
    promise.whenComplete { seen = try? $0.get() }
    #expect(seen == 3)
  }

  @Test func settlingFromManyThreadsAtOnceLetsExactlyOneWin() {
    for _ in 0..<50 {
      let promise = CoPromise<Int>()
      let notified = Atomic<Int>(0)
      for _ in 0..<4 { promise.whenComplete { _ in notified.add(1, ordering: .relaxed) } }
      let wins = Atomic<Int>(0)
      DispatchQueue.concurrentPerform(iterations: 8) { index in
        if promise.settle(.success(index)) { wins.add(1, ordering: .relaxed) }
      }
      #expect(wins.load(ordering: .relaxed) == 1)
      #expect(notified.load(ordering: .relaxed) == 4)
      #expect(promise.result != nil)
    }
  }

  @Test func theBodyInitialiserSettlesAndAThrowRejects() throws {
    let fulfilled = CoPromise<Int> { fulfill, _ in fulfill(9) }
    #expect(try fulfilled.result?.get() == 9)
    let thrown = CoPromise<Int> { _, _ in throw Failure(code: 4) }
    #expect(throws: Failure(code: 4)) { try thrown.result?.get() }
    let rejected = CoPromise<Int> { _, reject in reject(Failure(code: 5)) }
    #expect(throws: Failure(code: 5)) { try rejected.result?.get() }
  }

  @Test func cancelRejectsAPendingPromiseOnly() throws {
    let pending = CoPromise<Int>()
    pending.cancel()
    #expect(throws: CancellationError.self) { try pending.result?.get() }
    let settled = CoPromise<Int>()
    settled.fulfill(1)
    settled.cancel()
    #expect(try settled.result?.get() == 1)
  }

  @Test func aPromiseSettledOnAnotherThreadIsAwaited() throws {
    let value = try CoroutineLoop.run { () -> Int in
      let promise = CoPromise<Int>()
      DispatchQueue.global().asyncAfter(deadline: .now() + 0.005) { promise.fulfill(8) }
      return try co_await(promise) + promise.await()
    }
    #expect(value == 16)
  }

  @Test func everyCoroutineAwaitingOnePromiseGetsItsValue() throws {
    let values = try CoroutineLoop.run { () -> [Int] in
      let promise = CoPromise<Int>()
      let waiters = (0..<3).map { offset in co_launch { try co_await(promise) + offset } }
      co_launch { promise.fulfill(10) }
      return try waiters.map { try co_await($0) }
    }
    #expect(values == [10, 11, 12])
  }

  @Test func aPromiseSettledAfterItsWaiterWasCancelledLeavesThatCoroutineAlone() throws {
    let promise = CoPromise<Int>()
    let outcome = try CoroutineLoop.run { () -> String in
      let waiter = co_launch { try co_await(promise) }
      // Queued after the waiter's start, so it cancels a coroutine already parked on the promise.
      co_launch { waiter.cancel() }
      let outcome: String
      do {
        outcome = "value \(try co_await(waiter))"
      } catch is CancellationError {
        outcome = "cancelled"
      }
      // The waiter has finished: the promise must not wake it again.
      promise.fulfill(1)
      try co_delay(0)
      return outcome
    }
    #expect(outcome == "cancelled")
  }

  @Test func aCoroutineWhoseWaitWasCancelledIsFreedWhenItsPromiseGoesUnsettled() throws {
    weak var freedLoop: CoroutineLoop?
    var promise: CoPromise<Int>? = CoPromise()
    do {
      let loop = CoroutineLoop()
      freedLoop = loop
      let awaited = promise!
      let waiter = co_launch(on: loop) { try co_await(awaited) }
      co_launch(on: loop) { waiter.cancel() }
      loop.run()
      #expect(throws: CancellationError.self) { try waiter.result?.get() }
    }
    // The cancelled wait's entry in the promise still holds the coroutine, which holds its loop.
    #expect(freedLoop != nil)
    promise = nil
    #expect(freedLoop == nil)
  }

  /// Waits whose value fits in a word take another way to the coroutine than the others:
  /// every kind arrives intact, through a promise and through a callback.
  @Test func awaitedValuesOfEveryLayoutArriveIntact() throws {
    struct Pair: Equatable { let first: Int, second: Int }
    final class Box: Sendable { let label = "boxed" }
    func settledLater<T: Sendable>(_ value: T) throws -> T {
      let promise = CoPromise<T>()
      DispatchQueue.global().async { promise.fulfill(value) }
      return try co_await(promise)
    }
    func calledBackLater<T: Sendable>(_ value: T) throws -> T {
      try co_await { (done: @escaping @Sendable (Result<T, any Error>) -> Void) in
        DispatchQueue.global().async { done(.success(value)) }
      }
    }
    try CoroutineLoop.run {
      for wait in [settledLater, calledBackLater] as [(Int) throws -> Int] {
        #expect(try wait(-42) == -42)
      }
      #expect(try settledLater(Int8(-7)) == -7)
      #expect(try calledBackLater(true) == true)
      #expect(try settledLater(2.5) == 2.5)
      try settledLater(())
      #expect(try calledBackLater(Pair(first: 1, second: 2)) == Pair(first: 1, second: 2))
      #expect(try settledLater(Int?.none) == nil)
      #expect(try settledLater(Int?.some(3)) == 3)
      #expect(try calledBackLater("text") == "text")
      #expect(try settledLater(Box()).label == "boxed")
    }
  }

  /// A wait ended by cancellation throws, whatever the wait before it delivered.
  @Test func aCancelledWaitDoesNotReturnThePreviousWaitsValue() throws {
    let waiter = try CoroutineLoop.run { () -> CoTask<Int> in
      let secondWaitStarts = CoPromise<Void>()
      let waiter = co_launch { () -> Int in
        let first = CoPromise<Int>()
        co_launch { first.fulfill(7) }
        _ = try co_await(first)
        secondWaitStarts.fulfill(())
        return try co_await(CoPromise<Int>())
      }
      // One loop: this runs once the waiter has parked in its second wait.
      co_launch {
        try co_await(secondWaitStarts)
        waiter.cancel()
      }
      return waiter
    }
    #expect(isCancellation(waiter.result))
  }

  @Test func aRejectedPromiseThrowsFromTheAwait() {
    #expect(throws: Failure(code: 2)) {
      try CoroutineLoop.run { () -> Int in
        let promise = CoPromise<Int>()
        DispatchQueue.global().async { promise.reject(Failure(code: 2)) }
        return try co_await(promise)
      }
    }
  }

  @Test func swiftConcurrencyAwaitsAFutureAndATask() async throws {
    let promise = CoPromise<Int>()
    DispatchQueue.global().async { promise.fulfill(11) }
    #expect(try await promise.value == 11)
    let task = co_launch(on: DispatchQueue.global()) { () -> Int in
      try co_delay(0.001)
      return 12
    }
    #expect(try await task.value == 12)
  }
}
