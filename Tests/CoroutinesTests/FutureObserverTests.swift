import Dispatch
import Testing

@testable import Coroutines

/// A coroutine's resumer is stored as an observer of its own kind (no closure around it):
/// it must still be notified once, in registration order among the callbacks.
@Suite struct FutureObserverTests {
  @Test func aResumerObserverIsNotifiedInRegistrationOrder() throws {
    let log = ModelsLog<String>()
    let value = try CoroutineLoop.run { () -> Int in
      let promise = CoPromise<Int>()
      promise.whenComplete { log.append("before \((try? $0.get()) ?? -1)") }
      let waiter = co_launch { () throws -> Int in
        let coroutine = try Coroutine.requireCurrent()
        let value: Int = try coroutine.suspend(for: .callback) { resumer in
          promise.whenComplete(resuming: resumer)
        }
        log.append("resumed \(value)")
        return value
      }
      try co_delay(0)  // the waiter has registered its resumer
      promise.whenComplete { result in
        log.append("after \((try? result.get()) ?? -1)")
        // Observers run on the settling thread before anyone resumes: the waiter is woken,
        // not yet run.
        log.append("waiter settled: \(waiter.isSettled)")
      }
      promise.fulfill(7)
      return try co_await(waiter)
    }
    #expect(value == 7)
    #expect(log.values == ["before 7", "after 7", "waiter settled: false", "resumed 7"])
  }

  @Test func aResumerObserverOfASettledFutureResumesAtOnce() throws {
    let value = try CoroutineLoop.run { () -> Int in
      let promise = CoPromise<Int>()
      promise.fulfill(3)
      let coroutine = try Coroutine.requireCurrent()
      return try coroutine.suspend(for: .callback) { resumer in
        promise.whenComplete(resuming: resumer)
      }
    }
    #expect(value == 3)
  }

  @Test func aResumerObserverDeliversTheError() throws {
    struct Refused: Error {}
    try CoroutineLoop.run {
      let promise = CoPromise<Int>()
      DispatchQueue.global().async { promise.reject(Refused()) }
      let coroutine = try Coroutine.requireCurrent()
      #expect(throws: Refused.self) {
        let _: Int = try coroutine.suspend(for: .callback) { resumer in
          promise.whenComplete(resuming: resumer)
        }
      }
    }
  }
}
