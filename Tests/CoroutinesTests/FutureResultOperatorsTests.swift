import Dispatch
import Foundation
import Testing

@testable import Coroutines

@Suite struct FutureResultOperatorsTests {
  // MARK: flatMapError

  @Test func flatMapErrorWaitsForTheFutureTheHandlerMakes() {
    let replacement = CoPromise<Int>()
    let recovered = rejected(Failure.first, as: Int.self).flatMapError { error in
      #expect(error as? Failure == .first)
      return replacement
    }
    #expect(recovered.result == nil)
    replacement.fulfill(7)
    #expect(value(recovered.result) == 7)
  }

  @Test func flatMapErrorPassesAValueOnWithoutCallingTheHandler() {
    let calls = Counter()
    let recovered = fulfilled(1).flatMapError { _ in
      calls.increment()
      return fulfilled(2)
    }
    #expect(value(recovered.result) == 1)
    #expect(calls.value == 0)
  }

  @Test func flatMapErrorPassesCancellationOn() {
    let calls = Counter()
    let promise = CoPromise<Int>()
    let recovered = promise.flatMapError { _ in
      calls.increment()
      return fulfilled(2)
    }
    promise.cancel()
    #expect(isCancellation(recovered.result))
    #expect(calls.value == 0)
  }

  @Test func flatMapErrorRejectsWithWhatTheHandlerThrowsOrTheReplacementFails() {
    let thrown = rejected(Failure.first, as: Int.self).flatMapError { _ in throw Failure.second }
    let failed = rejected(Failure.first, as: Int.self).flatMapError { _ in
      rejected(Failure.disk)
    }
    #expect(failure(thrown.result) == .second)
    #expect(failure(failed.result) == .disk)
  }

  @Test func cancellingAfterFlatMapErrorCancelsTheReplacement() {
    let replacement = CoPromise<Int>()
    let recovered = rejected(Failure.first, as: Int.self).flatMapError { _ in replacement }
    recovered.cancel()
    #expect(isCancellation(replacement.result))
  }

  @Test func flatMapErrorOnASchedulerRunsThereAndNotBefore() {
    let scheduler = CoroutineTestLoop()
    let recovered = rejected(Failure.first, as: Int.self).flatMapError(on: scheduler) { _ in
      fulfilled(5)
    }
    #expect(recovered.result == nil)
    scheduler.runUntilIdle()
    #expect(value(recovered.result) == 5)
  }

  // MARK: mapResult

  @Test func mapResultSeesAValueAndAnError() {
    let describe = { (result: Result<Int, any Error>) -> String in
      switch result {
      case .success(let number): "value \(number)"
      case .failure(let error): "error \(error)"
      }
    }
    #expect(value(fulfilled(3).mapResult(describe).result) == "value 3")
    #expect(
      value(rejected(Failure.first, as: Int.self).mapResult(describe).result) == "error first")
  }

  @Test func mapResultSeesCancellationOfTheInput() {
    let promise = CoPromise<Int>()
    let mapped = promise.mapResult { result in
      if case .failure(let error) = result, error is CancellationError { return "cancelled" }
      return "other"
    }
    promise.cancel()
    #expect(value(mapped.result) == "cancelled")
  }

  @Test func mapResultRejectsWithWhatTransformThrows() {
    let mapped = fulfilled(1).mapResult { _ -> Int in throw Failure.second }
    #expect(failure(mapped.result) == .second)
  }

  @Test func cancellingTheResultOfMapResultCancelsTheInputAndSkipsTransform() {
    let promise = CoPromise<Int>()
    let calls = Counter()
    let mapped = promise.mapResult { _ in calls.increment() }
    mapped.cancel()
    #expect(isCancellation(promise.result))
    #expect(calls.value == 0)
  }

  @Test func mapResultOnASchedulerRunsThereAndNotBefore() {
    let scheduler = CoroutineTestLoop()
    let mapped = fulfilled(3).mapResult(on: scheduler) { try $0.get() * 3 }
    #expect(mapped.result == nil)
    scheduler.runUntilIdle()
    #expect(value(mapped.result) == 9)
  }

  /// A transform written on the main actor and given a global queue is `@Sendable`, so it does
  /// not take on the main actor's isolation: the closure inside it runs on the queue's thread (a
  /// transform that took it on would trap there, checking for the main actor).
  @MainActor @Test func mapResultWrittenOnTheMainActorRunsItsClosuresOnAGlobalQueue()
    async throws
  {
    let mapped = fulfilled([1, 2, 3]).mapResult(on: DispatchQueue.global()) {
      result -> [Int] in
      #expect(!Thread.isMainThread)
      return try result.get().map { $0 * 2 }
    }
    #expect(try await mapped.value == [2, 4, 6])
  }

  @Test func mapResultRunsOnTheThreadThatSettles() {
    let promise = CoPromise<Int>()
    let queue = DispatchQueue(label: "settler")
    let key = DispatchSpecificKey<Bool>()
    queue.setSpecific(key: key, value: true)
    let mapped = promise.mapResult { _ in DispatchQueue.getSpecific(key: key) ?? false }
    queue.sync { promise.reject(Failure.first) }
    #expect(value(mapped.result) == true)
  }

  // MARK: flatMapResult

  @Test func flatMapResultChainsFromAValueOrAnError() {
    let next = { (result: Result<Int, any Error>) -> CoFuture<String> in
      switch result {
      case .success(let number): fulfilled("value \(number)")
      case .failure: fulfilled("fallback")
      }
    }
    #expect(value(fulfilled(4).flatMapResult(next).result) == "value 4")
    #expect(value(rejected(Failure.first, as: Int.self).flatMapResult(next).result) == "fallback")
  }

  @Test func flatMapResultRejectsWithWhatNextThrows() {
    let chained = fulfilled(1).flatMapResult { _ -> CoFuture<Int> in throw Failure.second }
    #expect(failure(chained.result) == .second)
  }

  @Test func cancellingAfterFlatMapResultCancelsTheFollowingFuture() {
    let following = CoPromise<Int>()
    let chained = fulfilled(1).flatMapResult { _ in following }
    #expect(chained.result == nil)
    chained.cancel()
    #expect(isCancellation(following.result))
  }

  @Test func flatMapResultOnASchedulerIsAwaitableInACoroutine() throws {
    let outcome = try CoroutineLoop.run { () -> String in
      let loop = CoroutineLoop.current!
      let chained = rejected(Failure.first, as: Int.self).flatMapResult(on: loop) {
        (result: Result<Int, any Error>) -> CoFuture<String> in
        fulfilled((try? result.get()) == nil ? "recovered" : "value")
      }
      return try co_await(chained)
    }
    #expect(outcome == "recovered")
  }

  // MARK: doc-comment samples

  @Test func theFlatMapErrorSample() {
    let url = "/page"
    let mirror = "/mirror"
    let fetchPage = { (url: String) in
      url == "/page" ? rejected(Failure.disk) : fulfilled("page at \(url)")
    }
    let page = fetchPage(url).flatMapError { _ in fetchPage(mirror) }
    #expect(value(page.result) == "page at /mirror")
  }

  @Test func theMapResultSample() {
    let fetchName = { rejected(Failure.disk, as: String.self) }
    let status = fetchName().mapResult { result in
      switch result {
      case .success(let name): "hello, \(name)"
      case .failure: "nobody"
      }
    }
    #expect(value(status.result) == "nobody")
  }
}
