import Dispatch
import Testing

@testable import Coroutines

@Suite struct FutureTimingTests {
  // MARK: timeout

  @Test func timeoutPassesAValueThatArrivesInTime() {
    let scheduler = CoroutineTestLoop()
    let promise = CoPromise<Int>()
    let limited = promise.timeout(5, on: scheduler)
    scheduler.advance(by: 4.9)
    promise.fulfill(7)
    scheduler.runUntilIdle()
    #expect(value(limited.result) == 7)
    #expect(scheduler.pendingTimers == 0)
  }

  @Test func timeoutPassesAnErrorThatArrivesInTime() {
    let scheduler = CoroutineTestLoop()
    let limited = rejected(Failure.first, as: Int.self).timeout(5, on: scheduler)
    scheduler.runUntilIdle()
    #expect(failure(limited.result) == .first)
    #expect(scheduler.pendingTimers == 0)
  }

  @Test func timeoutRejectsWithTimedOutAndCancelsTheInput() {
    let scheduler = CoroutineTestLoop()
    let promise = CoPromise<Int>()
    let limited = promise.timeout(5, on: scheduler)
    scheduler.advance(by: 4.999)
    #expect(limited.result == nil)
    scheduler.advance(by: 0.001)
    #expect(coroutineError(limited.result) == .timedOut)
    #expect(isCancellation(promise.result))
  }

  @Test func cancellingATimeoutCancelsItsTimerAndInput() {
    let scheduler = CoroutineTestLoop()
    let promise = CoPromise<Int>()
    let limited = promise.timeout(5, on: scheduler)
    limited.cancel()
    #expect(isCancellation(limited.result))
    #expect(isCancellation(promise.result))
    #expect(scheduler.pendingTimers == 0)
  }

  @Test func timeoutUsesTheCoroutinesLoopAndLetsItFinish() throws {
    let size = TestStacks.uniqueSize()
    let outcome = try CoroutineLoop.run { () -> CoroutineError? in
      let slow = co_launch(stackSize: size) { () -> Int in
        try co_await(CoPromise<Int>())
      }
      do {
        _ = try co_await(slow.timeout(0.001))
        return nil
      } catch let error as CoroutineError {
        return error
      }
    }
    #expect(outcome == .timedOut)
    #expect(TestStacks.allReturned(size: size))
  }

  @Test func aTimeoutThatWasNotNeededDoesNotKeepTheLoopWaiting() throws {
    // A 10-minute timer left behind would keep `run` from returning: the test would hang.
    let doubled = try CoroutineLoop.run { try co_await(fulfilled(21).timeout(600).map { $0 * 2 }) }
    #expect(doubled == 42)
  }

  @Test func timeoutOfAFutureAwaitedInACoroutine() throws {
    let message = try CoroutineLoop.run { () -> String in
      let profile = co_launch { () -> String in
        try co_delay(0.001)
        return "profile"
      }
      return try co_await(profile.timeout(600))
    }
    #expect(message == "profile")
  }

  // MARK: delay

  @Test func delayDeliversTheValueLater() {
    let scheduler = CoroutineTestLoop()
    let promise = CoPromise<String>()
    let delayed = promise.delay(2, on: scheduler)
    scheduler.advance(by: 1)
    promise.fulfill("late")
    scheduler.advance(by: 1.999)
    #expect(delayed.result == nil)
    scheduler.advance(by: 0.001)
    #expect(value(delayed.result) == "late")
  }

  @Test func delayDeliversAnErrorLaterToo() {
    let scheduler = CoroutineTestLoop()
    let delayed = rejected(Failure.second, as: Int.self).delay(1, on: scheduler)
    #expect(delayed.result == nil)
    scheduler.advance(by: 1)
    #expect(failure(delayed.result) == .second)
  }

  @Test func cancellingADelayCancelsItsTimer() {
    let scheduler = CoroutineTestLoop()
    let delayed = fulfilled(1).delay(1, on: scheduler)
    #expect(scheduler.pendingTimers == 1)
    delayed.cancel()
    #expect(scheduler.pendingTimers == 0)
    #expect(isCancellation(delayed.result))
  }

  @Test func cancellingADelayBeforeTheInputSettlesCancelsTheInput() {
    let scheduler = CoroutineTestLoop()
    let promise = CoPromise<Int>()
    let delayed = promise.delay(1, on: scheduler)
    delayed.cancel()
    #expect(isCancellation(promise.result))
    #expect(scheduler.pendingTimers == 0)
  }

  @Test func delayOnTheCoroutinesLoop() throws {
    let value = try CoroutineLoop.run { try co_await(fulfilled(3).delay(0.001)) }
    #expect(value == 3)
  }

  @Test func timersOutsideAnyLoopRunOnDispatch() {
    let done = DispatchSemaphore(value: 0)
    let limited = CoPromise<Int>().timeout(0.001)
    limited.whenComplete { _ in done.signal() }
    done.wait()
    #expect(coroutineError(limited.result) == .timedOut)
  }

  // MARK: doc-comment samples

  @Test func theTimeoutSample() {
    let loop = CoroutineTestLoop()
    let fetchProfile = { CoPromise<String>() }
    let driver = co_launch(on: loop) { () -> String in
      let profile = try co_await(fetchProfile().timeout(2))
      return profile
    }
    loop.runUntilIdle()
    loop.advance(by: 2)
    #expect(coroutineError(driver.result) == .timedOut)
  }
}
