import Dispatch
import Testing

@testable import Coroutines

@Suite struct SelectFutureTests {
  @Test func aSettledFutureWinsAtOnce() throws {
    let outcome = try CoroutineLoop.run { () -> String in
      let never = CoChannel<Int>()
      let ready = CoPromise<Int>()
      ready.fulfill(3)
      return try co_select { select in
        select.receive(from: never) { "received \($0)" }
        select.await(ready) { "awaited \($0)" }
      }
    }
    #expect(outcome == "awaited 3")
  }

  @Test func aPendingFutureWakesTheSelectWhenItSettles() {
    let loop = CoroutineTestLoop()
    let promise = CoPromise<String>()
    let never = CoChannel<Int>()
    let selecting = co_launch(on: loop) { () -> String in
      try co_select { select in
        select.receive(from: never) { "received \($0)" }
        select.await(promise) { "awaited \($0)" }
      }
    }
    loop.runUntilIdle()
    #expect(selecting.result == nil)
    promise.fulfill("name")
    loop.runUntilIdle()
    #expect(value(selecting.result) == "awaited name")
    #expect(!never.trySend(1))  // the receive case was withdrawn
  }

  @Test func aRejectedFutureMakesTheSelectThrowItsError() {
    let loop = CoroutineTestLoop()
    let promise = CoPromise<Int>()
    let selecting = co_launch(on: loop) { () -> Int in
      try co_select { select in select.await(promise) { $0 } }
    }
    loop.runUntilIdle()
    promise.reject(Failure.disk)
    loop.runUntilIdle()
    #expect(failure(selecting.result) == .disk)
  }

  @Test func aChannelThatWinsLeavesTheFutureAlone() {
    let loop = CoroutineTestLoop()
    let promise = CoPromise<Int>()
    let channel = CoChannel<Int>()
    let selecting = co_launch(on: loop) { () -> [String] in
      let first = try co_select { select in
        select.receive(from: channel) { "received \($0)" }
        select.await(promise) { "awaited \($0)" }
      }
      let second = try co_select { select in
        select.receive(from: channel) { "received \($0)" }
        select.timeout(1) { "timed out" }
      }
      return [first, second]
    }
    loop.runUntilIdle()
    #expect(channel.trySend(1))
    loop.runUntilIdle()
    promise.fulfill(2)  // late: its select is gone, and the next one must not wake
    loop.runUntilIdle()
    #expect(selecting.result == nil)
    loop.advance(by: 1)
    #expect(value(selecting.result) == ["received 1", "timed out"])
    #expect(!promise.wasObserved)
  }

  @Test func aTimeoutBeatsAFutureThatIsLate() {
    let loop = CoroutineTestLoop()
    let promise = CoPromise<Int>()
    let selecting = co_launch(on: loop) { () -> String in
      try co_select { select in
        select.await(promise) { "awaited \($0)" }
        select.timeout(2) { "timed out" }
      }
    }
    loop.runUntilIdle()
    loop.advance(by: 2)
    #expect(value(selecting.result) == "timed out")
    promise.fulfill(1)
    loop.runUntilIdle()
    #expect(promise.result != nil)
  }

  @Test func cancellingTheSelectingCoroutineEndsTheWait() {
    let loop = CoroutineTestLoop()
    let promise = CoPromise<Int>()
    let selecting = co_launch(on: loop) { () -> Int in
      try co_select { select in select.await(promise) { $0 } }
    }
    loop.runUntilIdle()
    selecting.cancel()
    loop.runUntilIdle()
    #expect(isCancellation(selecting.result))
    #expect(promise.result == nil)
  }

  @Test func aFutureSettledOnAnotherThreadWakesTheSelect() throws {
    let outcome = try CoroutineLoop.run { () -> Int in
      let promise = CoPromise<Int>()
      let never = CoChannel<Int>()
      co_launch(on: DispatchQueue(label: "select.future.settler")) { promise.fulfill(9) }
      return try co_select { select in
        select.receive(from: never) { $0 }
        select.await(promise) { $0 }
      }
    }
    #expect(outcome == 9)
  }
}
