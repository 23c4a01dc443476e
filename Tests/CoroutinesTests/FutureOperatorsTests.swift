import Dispatch
import Testing

@testable import Coroutines

@Suite struct FutureOperatorsTests {
  // MARK: map

  @Test func mapTransformsTheValue() {
    let promise = CoPromise<Int>()
    let mapped = promise.map { $0 * 2 }
    #expect(mapped.result == nil)
    promise.fulfill(21)
    #expect(value(mapped.result) == 42)
  }

  @Test func mapRunsAtOnceOnAFutureAlreadySettled() {
    let mapped = fulfilled(1).map { $0 + 1 }
    #expect(value(mapped.result) == 2)
  }

  @Test func mapPassesAnErrorOnWithoutCallingTransform() {
    let calls = Counter()
    let mapped = rejected(Failure.first, as: Int.self).map { _ in calls.increment() }
    #expect(failure(mapped.result) == .first)
    #expect(calls.value == 0)
  }

  @Test func mapRejectsWithWhatTransformThrows() {
    let mapped = fulfilled(1).map { _ -> Int in throw Failure.second }
    #expect(failure(mapped.result) == .second)
  }

  @Test func cancellingTheMappedFutureCancelsTheInput() {
    let promise = CoPromise<Int>()
    let calls = Counter()
    let mapped = promise.map { _ in calls.increment() }
    mapped.cancel()
    #expect(isCancellation(mapped.result))
    #expect(isCancellation(promise.result))
    promise.fulfill(1)
    #expect(calls.value == 0)
  }

  @Test func aCancelledInputCancelsTheMappedFuture() {
    let promise = CoPromise<Int>()
    let mapped = promise.map { $0 }
    promise.cancel()
    #expect(isCancellation(mapped.result))
  }

  @Test func mapOnASchedulerRunsThereAndNotBefore() {
    let scheduler = CoroutineTestLoop()
    let mapped = fulfilled(3).map(on: scheduler) { $0 * 3 }
    #expect(mapped.result == nil)
    scheduler.runUntilIdle()
    #expect(value(mapped.result) == 9)
  }

  @Test func mapRunsOnTheThreadThatSettles() {
    let promise = CoPromise<Int>()
    let queue = DispatchQueue(label: "settler")
    let key = DispatchSpecificKey<Bool>()
    queue.setSpecific(key: key, value: true)
    let mapped = promise.map { _ in DispatchQueue.getSpecific(key: key) ?? false }
    queue.sync { promise.fulfill(0) }
    #expect(value(mapped.result) == true)
  }

  @Test func mapInsideACoroutineIsAwaitable() throws {
    let length = try CoroutineLoop.run { () -> Int in
      let name = co_launch { () -> String in
        try co_delay(0)
        return "coroutine"
      }
      return try co_await(name.map { $0.count })
    }
    #expect(length == 9)
  }

  // MARK: flatMap

  @Test func flatMapChainsTheNextFuture() {
    let first = CoPromise<Int>()
    let second = CoPromise<String>()
    let chained = first.flatMap { number in second.map { "\($0)\(number)" } }
    first.fulfill(1)
    #expect(chained.result == nil)
    second.fulfill("n")
    #expect(value(chained.result) == "n1")
  }

  @Test func flatMapPassesEitherError() {
    let early = rejected(Failure.first, as: Int.self).flatMap { fulfilled("\($0)") }
    #expect(failure(early.result) == .first)
    let late = fulfilled(1).flatMap { _ in rejected(Failure.second, as: String.self) }
    #expect(failure(late.result) == .second)
    let thrown = fulfilled(1).flatMap { _ -> CoFuture<Int> in throw Failure.third }
    #expect(failure(thrown.result) == .third)
  }

  @Test func cancellingFlatMapCancelsWhicheverFutureItWaitsFor() {
    let first = CoPromise<Int>()
    let waitingForFirst = first.flatMap { _ in fulfilled(0) }
    waitingForFirst.cancel()
    #expect(isCancellation(first.result))

    let second = CoPromise<Int>()
    let waitingForSecond = fulfilled(1).flatMap { _ in second }
    waitingForSecond.cancel()
    #expect(isCancellation(waitingForSecond.result))
    #expect(isCancellation(second.result))
  }

  @Test func flatMapOnASchedulerMakesTheNextFutureThere() {
    let scheduler = CoroutineTestLoop()
    let chained = fulfilled(2).flatMap(on: scheduler) { fulfilled($0 * 10) }
    #expect(chained.result == nil)
    scheduler.runUntilIdle()
    #expect(value(chained.result) == 20)
  }

  // MARK: recover

  @Test func recoverTurnsAnErrorIntoAValue() {
    let recovered = rejected(Failure.first, as: Int.self).recover { _ in -1 }
    #expect(value(recovered.result) == -1)
  }

  @Test func recoverLeavesAValueAlone() {
    let calls = Counter()
    let recovered = fulfilled(5).recover { _ in
      calls.increment()
      return 0
    }
    #expect(value(recovered.result) == 5)
    #expect(calls.value == 0)
  }

  @Test func recoverRejectsWithWhatTheHandlerThrows() {
    let recovered = rejected(Failure.first, as: Int.self).recover { _ in throw Failure.second }
    #expect(failure(recovered.result) == .second)
  }

  @Test func recoverDoesNotSwallowCancellation() {
    let promise = CoPromise<Int>()
    let recovered = promise.recover { _ in 0 }
    promise.cancel()
    #expect(isCancellation(recovered.result))
  }

  @Test func recoverHandlesATimeout() {
    let scheduler = CoroutineTestLoop()
    let recovered = CoPromise<String>().timeout(1, on: scheduler).recover { _ in "fallback" }
    scheduler.advance(by: 1)
    #expect(value(recovered.result) == "fallback")
  }

  @Test func cancellingRecoverCancelsTheInput() {
    let promise = CoPromise<Int>()
    let recovered = promise.recover { _ in 0 }
    recovered.cancel()
    #expect(isCancellation(promise.result))
    #expect(isCancellation(recovered.result))
  }

  // MARK: always

  @Test func alwaysRunsOnFulfilmentBeforeTheResultSettles() {
    let log = Journal<String>()
    let promise = CoPromise<Int>()
    let ensured = promise.always { log.append("always") }
    ensured.whenComplete { _ in log.append("settled") }
    promise.fulfill(1)
    #expect(log.entries == ["always", "settled"])
    #expect(value(ensured.result) == 1)
  }

  @Test func alwaysRunsOnRejectionAndKeepsTheError() {
    let calls = Counter()
    let ensured = rejected(Failure.first, as: Int.self).always { calls.increment() }
    #expect(failure(ensured.result) == .first)
    #expect(calls.value == 1)
  }

  @Test func alwaysRunsOnceWhenCancelled() {
    let calls = Counter()
    let promise = CoPromise<Int>()
    let ensured = promise.always { calls.increment() }
    ensured.cancel()
    promise.fulfill(1)
    #expect(calls.value == 1)
    #expect(isCancellation(ensured.result))
    #expect(isCancellation(promise.result))
  }

  @Test func alwaysOnASchedulerRunsThere() {
    let scheduler = CoroutineTestLoop()
    let calls = Counter()
    let ensured = fulfilled(1).always(on: scheduler) { calls.increment() }
    #expect(calls.value == 0)
    scheduler.runUntilIdle()
    #expect(calls.value == 1)
    #expect(value(ensured.result) == 1)
  }

  // MARK: validate

  @Test func validateAcceptsAndRefuses() {
    #expect(value(fulfilled(4).validate { $0.isMultiple(of: 2) }.result) == 4)
    let refused = fulfilled(3).validate { $0.isMultiple(of: 2) }
    #expect(coroutineError(refused.result) == .validationFailed)
    let thrown = fulfilled(3).validate { _ in throw Failure.first }
    #expect(failure(thrown.result) == .first)
  }

  @Test func validatePassesAnErrorOn() {
    let calls = Counter()
    let validated = rejected(Failure.second, as: Int.self).validate { _ in
      calls.increment()
      return true
    }
    #expect(failure(validated.result) == .second)
    #expect(calls.value == 0)
  }

  @Test func cancellingValidateCancelsTheInput() {
    let promise = CoPromise<Int>()
    let validated = promise.validate { _ in true }
    validated.cancel()
    #expect(isCancellation(promise.result))
  }

  @Test func validateOnASchedulerRunsThere() {
    let scheduler = CoroutineTestLoop()
    let validated = fulfilled(1).validate(on: scheduler) { $0 == 1 }
    #expect(validated.result == nil)
    scheduler.runUntilIdle()
    #expect(value(validated.result) == 1)
  }

  // MARK: a task as input

  @Test func cancellingAnOperatorOnATaskUnwindsItsCoroutine() throws {
    let size = TestStacks.uniqueSize()
    let deferRan = Counter()
    let result = try CoroutineLoop.run { () -> Result<Int, any Error>? in
      let task = co_launch(stackSize: size) { () -> Int in
        defer { deferRan.increment() }
        try co_await(CoPromise<Void>())
        return 1
      }
      let mapped = task.map { $0 + 1 }
      try co_delay(0)
      mapped.cancel()
      _ = try? co_await(task)
      return task.result
    }
    #expect(isCancellation(result))
    #expect(deferRan.value == 1)
    #expect(TestStacks.allReturned(size: size))
  }

  // MARK: doc-comment samples

  @Test func theMapSample() {
    let fetchName = { fulfilled("Ada Lovelace") }
    let length = fetchName().map { $0.count }
    #expect(value(length.result) == 12)
  }
}
