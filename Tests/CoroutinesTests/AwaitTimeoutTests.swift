import Testing

@testable import Coroutines

@Suite struct AwaitTimeoutTests {
  @Test func aValueInTimeIsReturned() throws {
    let quote = try CoroutineLoop.run { () -> Double in
      let fetchQuote = { co_launch { () -> Double in 1.5 } }
      let quote = try co_await(fetchQuote(), timeout: 0.5)
      return quote
    }
    #expect(quote == 1.5)
  }

  @Test func aLateValueTimesOutAndTheWorkIsCancelled() throws {
    let size = TestStacks.uniqueSize()
    let unwound = Counter()
    let (error, workResult) = try CoroutineLoop.run {
      () -> (CoroutineError?, Result<Int, any Error>?) in
      let started = CoPromise<Void>()
      let work = co_launch(stackSize: size) { () -> Int in
        defer { unwound.increment() }
        started.fulfill(())
        try co_await(CoPromise<Void>())
        return 1
      }
      // Wait until it runs, so the timeout finds it suspended rather than not yet started.
      try co_await(started)
      do {
        _ = try work.await(timeout: 0.001)
        return (nil, nil)
      } catch let error as CoroutineError {
        _ = try? co_await(work)
        return (error, work.result)
      }
    }
    #expect(error == .timedOut)
    #expect(isCancellation(workResult))
    #expect(unwound.value == 1)
    #expect(TestStacks.allReturned(size: size))
  }

  @Test func anErrorInTimeIsThrown() throws {
    let caught = try CoroutineLoop.run { () -> Failure? in
      do {
        _ = try co_await(rejected(Failure.second, as: Int.self), timeout: 1)
        return nil
      } catch let error as Failure {
        return error
      }
    }
    #expect(caught == .second)
  }

  @Test func theTimerDoesNotOutliveTheAwait() throws {
    // A 10-minute timer left behind would keep `run` from returning: the test would hang.
    let value = try CoroutineLoop.run { () -> Int in
      let work = co_launch { () -> Int in
        try co_delay(0)
        return 4
      }
      return try co_await(work, timeout: 600)
    }
    #expect(value == 4)
  }

  @Test func cancellingTheWaiterLeavesTheFutureAlone() throws {
    let (waiterResult, promiseResult) = try CoroutineLoop.run {
      () -> (Result<Int, any Error>?, Result<Int, any Error>?) in
      let promise = CoPromise<Int>()
      let waiter = co_launch { try co_await(promise, timeout: 600) }
      try co_delay(0)
      waiter.cancel()
      _ = try? co_await(waiter)
      return (waiter.result, promise.result)
    }
    #expect(isCancellation(waiterResult))
    #expect(promiseResult == nil)
  }

  @Test func outsideACoroutineItThrows() {
    #expect(throws: CoroutineError.notInCoroutine) { try co_await(fulfilled(1), timeout: 1) }
  }

  @Test func onAHandDrivenClock() throws {
    let scheduler = CoroutineTestLoop()
    let promise = CoPromise<Int>()
    let waiter = co_launch(on: scheduler) { () -> Int in try promise.await(timeout: 30) }
    scheduler.runUntilIdle()
    scheduler.advance(by: 29)
    #expect(waiter.result == nil)
    scheduler.advance(by: 1)
    #expect(coroutineError(waiter.result) == .timedOut)
    #expect(isCancellation(promise.result))
  }
}
