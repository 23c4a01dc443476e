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
}
