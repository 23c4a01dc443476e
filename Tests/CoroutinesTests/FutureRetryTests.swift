import Foundation
import Testing

@testable import Coroutines

@Suite struct FutureRetryTests {
  @Test func retryStopsAtTheFirstSuccess() {
    let attempts = Counter()
    let result = CoFuture<Int>.retry(5) {
      let number = attempts.increment()
      return number < 3 ? rejected(Failure.attempt(number)) : fulfilled(number)
    }
    #expect(value(result.result) == 3)
    #expect(attempts.value == 3)
  }

  @Test func retryGivesUpWithTheLastError() {
    let attempts = Counter()
    let result = CoFuture<Int>.retry(4) { rejected(Failure.attempt(attempts.increment())) }
    #expect(failure(result.result) == .attempt(4))
    #expect(attempts.value == 4)
  }

  @Test func oneAttemptMeansNoRetry() {
    let attempts = Counter()
    let result = CoFuture<Int>.retry(1) { rejected(Failure.attempt(attempts.increment())) }
    #expect(failure(result.result) == .attempt(1))
    #expect(attempts.value == 1)
  }

  @Test func aThrowingMakeCountsAsAFailedAttempt() {
    let attempts = Counter()
    let result = CoFuture<Int>.retry(3) { () -> CoFuture<Int> in
      if attempts.increment() < 3 { throw Failure.disk }
      return fulfilled(9)
    }
    #expect(value(result.result) == 9)
    #expect(attempts.value == 3)
  }

  @Test func retryWaitsTheDelayBetweenAttempts() {
    let scheduler = CoroutineTestLoop()
    let attempts = Counter()
    let result = CoFuture<Int>.retry(3, delay: 10, on: scheduler) {
      rejected(Failure.attempt(attempts.increment()))
    }
    scheduler.runUntilIdle()
    #expect(attempts.value == 1)
    scheduler.advance(by: 9.9)
    #expect(attempts.value == 1)
    scheduler.advance(by: 0.1)
    #expect(attempts.value == 2)
    scheduler.advance(by: 10)
    #expect(attempts.value == 3)
    #expect(failure(result.result) == .attempt(3))
    #expect(scheduler.pendingTimers == 0)
  }

  @Test func cancellationIsNotRetried() {
    let attempts = Counter()
    let result = CoFuture<Int>.retry(5) {
      attempts.increment()
      return rejected(CancellationError())
    }
    #expect(isCancellation(result.result))
    #expect(attempts.value == 1)
  }

  @Test func cancellingARetryCancelsTheAttemptUnderWay() {
    let attempt = CoPromise<Int>()
    let attempts = Counter()
    let result = CoFuture<Int>.retry(5) {
      attempts.increment()
      return attempt
    }
    result.cancel()
    #expect(isCancellation(attempt.result))
    #expect(isCancellation(result.result))
    #expect(attempts.value == 1)
  }

  @Test func cancellingARetryDuringItsDelayStopsIt() {
    let scheduler = CoroutineTestLoop()
    let attempts = Counter()
    let result = CoFuture<Int>.retry(5, delay: 1, on: scheduler) {
      rejected(Failure.attempt(attempts.increment()))
    }
    scheduler.runUntilIdle()
    #expect(scheduler.pendingTimers == 1)
    result.cancel()
    #expect(scheduler.pendingTimers == 0)
    scheduler.advance(by: 10)
    #expect(attempts.value == 1)
    #expect(isCancellation(result.result))
  }

  @Test func retryRelaunchesATaskPerAttempt() throws {
    let size = TestStacks.uniqueSize()
    let launches = Counter()
    let page = try CoroutineLoop.run { () -> String in
      let page = CoFuture.retry(3, delay: 0.001) {
        co_launch(stackSize: size) { () -> String in
          try co_delay(0)
          if launches.increment() < 3 { throw Failure.disk }
          return "page"
        }
      }
      return try co_await(page)
    }
    #expect(page == "page")
    #expect(launches.value == 3)
    #expect(TestStacks.allReturned(size: size))
  }

  // MARK: while a condition holds

  @Test func aConditionSeesTheRemainingAttemptsAndTheErrorAndStopsTheRetries() {
    let asked = Journal<String>()
    let attempts = Counter()
    let result = CoFuture<Int>.retry(
      5,
      while: { remaining, error in
        asked.append("\(remaining) \(error)")
        return remaining > 3
      }
    ) {
      rejected(Failure.attempt(attempts.increment()))
    }
    #expect(failure(result.result) == .attempt(2))
    #expect(attempts.value == 2)
    #expect(asked.entries == ["4 attempt(1)", "3 attempt(2)"])
  }

  @Test func aConditionIsNotAskedAfterTheLastAttemptNorAfterCancellation() {
    let asked = Counter()
    let last = CoFuture<Int>.retry(2, while: { _, _ in asked.increment() > 0 }) {
      rejected(Failure.disk)
    }
    let cancelled = CoFuture<Int>.retry(3, while: { _, _ in asked.increment() > 0 }) {
      rejected(CancellationError())
    }
    #expect(failure(last.result) == .disk)
    #expect(isCancellation(cancelled.result))
    #expect(asked.value == 1)
  }

  @Test func aConditionWaitsTheDelayAfterSayingYes() {
    let scheduler = CoroutineTestLoop()
    let attempts = Counter()
    let result = CoFuture<Int>.retry(3, delay: 2, on: scheduler, while: { _, _ in true }) {
      attempts.increment() < 2 ? rejected(Failure.disk) : fulfilled(5)
    }
    scheduler.runUntilIdle()
    scheduler.advance(by: 1.9)
    #expect(attempts.value == 1)
    scheduler.advance(by: 0.1)
    #expect(value(result.result) == 5)
  }

  // MARK: asking a future

  @Test func anAsynchronousConditionRetriesOnceItsFutureSaysYes() {
    let answers = [CoPromise<Bool>(), CoPromise<Bool>()]
    let asked = Counter()
    let attempts = Counter()
    let result = CoFuture<Int>.retry(5, asking: { _, _ in answers[asked.increment() - 1] }) {
      rejected(Failure.attempt(attempts.increment()))
    }
    #expect(attempts.value == 1)
    answers[0].fulfill(true)
    #expect(attempts.value == 2)
    #expect(result.result == nil)
    answers[1].fulfill(false)
    #expect(failure(result.result) == .attempt(2))
  }

  @Test func anAsynchronousConditionThatFailsRejectsTheRetryWithItsError() {
    let result = CoFuture<Int>.retry(3, asking: { _, _ in rejected(Failure.third) }) {
      rejected(Failure.disk)
    }
    #expect(failure(result.result) == .third)
  }

  @Test func cancellingTheRetryCancelsThePendingCondition() {
    let answer = CoPromise<Bool>()
    let result = CoFuture<Int>.retry(3, asking: { _, _ in answer }) { rejected(Failure.disk) }
    result.cancel()
    #expect(isCancellation(answer.result))
    #expect(isCancellation(result.result))
  }

  @Test func theConditionRunsOnTheScheduler() {
    let scheduler = CoroutineTestLoop()
    let asked = Counter()
    let result = CoFuture<Int>.retry(
      2, on: scheduler,
      asking: { _, _ in
        asked.increment()
        return fulfilled(true)
      }
    ) {
      asked.value == 0 ? rejected(Failure.disk) : fulfilled(1)
    }
    #expect(asked.value == 0)
    scheduler.runUntilIdle()
    #expect(asked.value == 1)
    #expect(value(result.result) == 1)
  }

  // MARK: backoff

  @Test func anExponentialBackoffWaitsLongerAfterEachFailureUpToItsMaximum() {
    let scheduler = CoroutineTestLoop()
    let started = Journal<Double>()
    let backoff = CoBackoff.exponential(initial: 1, maximum: 3)
    let result = CoFuture<Int>.retry(5, backoff: backoff, on: scheduler) {
      started.append(scheduler.now)
      return rejected(Failure.disk)
    }
    scheduler.runUntilIdle()
    scheduler.advance(by: 20)
    #expect(started.entries == [0, 1, 3, 6, 9])
    #expect(failure(result.result) == .disk)
  }

  @Test func aBackoffWithAConditionStopsWhenTheConditionSaysNo() {
    let scheduler = CoroutineTestLoop()
    let attempts = Counter()
    let result = CoFuture<Int>.retry(
      5, backoff: .constant(1), on: scheduler, while: { remaining, _ in remaining > 2 }
    ) {
      rejected(Failure.attempt(attempts.increment()))
    }
    scheduler.runUntilIdle()
    scheduler.advance(by: 10)
    #expect(failure(result.result) == .attempt(3))
  }

  @Test func aBackoffWithAnAsynchronousCondition() {
    let scheduler = CoroutineTestLoop()
    let attempts = Counter()
    let result = CoFuture<Int>.retry(
      3, backoff: .constant(1), on: scheduler, asking: { _, _ in fulfilled(true) }
    ) {
      attempts.increment() < 3 ? rejected(Failure.disk) : fulfilled(3)
    }
    scheduler.runUntilIdle()
    scheduler.advance(by: 1)
    #expect(attempts.value == 2)
    scheduler.advance(by: 1)
    #expect(value(result.result) == 3)
  }

  @Test func withoutASchedulerABackoffWithAConditionTakesAnyClosure() {
    var asked: [Int] = []  // a plain closure may capture a local variable
    var attempts = 0
    let result = CoFuture<Int>.retry(
      4, backoff: .constant(0),
      while: { remaining, _ in
        asked.append(remaining)
        return remaining > 1
      }
    ) {
      attempts += 1
      return rejected(Failure.attempt(attempts))
    }
    #expect(asked == [3, 2, 1])
    #expect(failure(result.result) == .attempt(3))
  }

  @Test func withoutASchedulerABackoffWithAnAsynchronousConditionTakesAnyClosure() {
    var attempts = 0  // a plain closure may capture a local variable
    let answer = CoPromise<Bool>()
    let result = CoFuture<Int>.retry(3, backoff: .constant(0), asking: { _, _ in answer }) {
      attempts += 1
      return attempts < 2 ? rejected(Failure.disk) : fulfilled(attempts)
    }
    #expect(attempts == 1)
    answer.fulfill(true)
    #expect(value(result.result) == 2)
  }

  // MARK: doc-comment samples

  @Test func theRetrySample() {
    let url = "/page"
    let attempts = Counter()
    let fetchPage = { (url: String) -> CoFuture<String> in
      attempts.increment() == 1 ? rejected(Failure.disk) : fulfilled("contents of \(url)")
    }
    let loop = CoroutineTestLoop()
    let driver = co_launch(on: loop) { () -> String in
      let page = CoFuture.retry(3, delay: 0.5) { fetchPage(url) }
      return try co_await(page)
    }
    loop.runUntilIdle()
    loop.advance(by: 0.5)
    #expect(value(driver.result) == "contents of /page")
    #expect(attempts.value == 2)
  }

  @Test func theConditionSample() {
    let url = "/page"
    let attempts = Counter()
    let fetchPage = { (url: String) -> CoFuture<String> in
      attempts.increment() < 3 ? rejected(URLError(.timedOut)) : fulfilled("contents of \(url)")
    }
    let page = CoFuture.retry(5, while: { _, error in error is URLError }) { fetchPage(url) }
    #expect(value(page.result) == "contents of /page")
  }

  @Test func theAskingSample() {
    let url = "/page"
    let token = Counter()
    let refreshToken = { () -> CoFuture<Bool> in fulfilled(token.increment() > 0) }
    let fetchPage = { (url: String) -> CoFuture<String> in
      token.value == 0 ? rejected(Failure.disk) : fulfilled("contents of \(url)")
    }
    let page = CoFuture.retry(3, asking: { _, _ in refreshToken() }) { fetchPage(url) }
    #expect(value(page.result) == "contents of /page")
  }

  @Test func theBackoffSample() {
    let url = "/page"
    let attempts = Counter()
    let fetchPage = { (url: String) -> CoFuture<String> in
      attempts.increment() < 4 ? rejected(Failure.disk) : fulfilled("contents of \(url)")
    }
    let loop = CoroutineTestLoop()
    let driver = co_launch(on: loop) { () -> String in
      let backoff = CoBackoff.exponential(initial: 0.1, maximum: 5, jitter: 0.5)
      let page = CoFuture.retry(6, backoff: backoff) { fetchPage(url) }
      return try co_await(page)
    }
    loop.runUntilIdle()
    loop.advance(by: 0.1 + 0.2 + 0.4)
    #expect(value(driver.result) == "contents of /page")
  }
}
