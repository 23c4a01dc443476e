import Dispatch
import Testing

@testable import Coroutines

/// Callbacks that a callback sets off run after it returns, in order, on the same stack; a
/// stack's trampoline is its own, so a callback that suspends its coroutine holds up nobody.
@Suite struct TrampolineTests {
  @Test func observersOfAChainRunInTheOrderTheyWereAdded() {
    // Each link's observers run in order, a later link's after its input's, however deep.
    let promise = CoPromise<Int>()
    let log = Log()
    var future: CoFuture<Int> = promise
    for link in 0..<3 {
      future = future.map { $0 + 1 }
      future.whenComplete { _ in log.append(link * 10) }
      future.whenComplete { _ in log.append(link * 10 + 1) }
    }
    promise.fulfill(0)
    #expect(log.values == [0, 1, 10, 11, 20, 21])
  }

  @Test func anObserverAddedToASettledFutureFromACallbackRunsAfterIt() {
    let promise = CoPromise<Int>()
    let log = Log()
    promise.whenComplete { _ in
      fulfilled(1).whenComplete { _ in log.append(2) }
      log.append(1)
    }
    promise.fulfill(0)
    #expect(log.values == [1, 2])
  }

  @Test func aFutureSettledFromACallbackTellsItsObserversWhenTheCallbackReturns() {
    let first = CoPromise<Int>()
    let second = CoPromise<Int>()
    let log = Log()
    second.whenComplete { _ in log.append(2) }
    first.whenComplete { _ in
      second.fulfill(1)
      log.append(1)
    }
    first.fulfill(0)
    #expect(log.values == [1, 2])
  }

  @Test func aSettleOutsideAnyCallbackTellsItsObserversAtOnce() {
    let promise = CoPromise<Int>()
    let mapped = promise.map { $0 + 1 }.map { $0 * 2 }
    promise.fulfill(1)
    #expect(value(mapped.result) == 4)
  }

  @Test func aCallbackThatSuspendsItsCoroutineDoesNotHoldUpOtherCoroutines() throws {
    let log = Log()
    try CoroutineLoop.run {
      let blocked = CoPromise<Int>()
      let release = CoPromise<Void>()
      co_launch {
        blocked.whenComplete { _ in
          // Suspends the coroutine that settles `blocked`, in the middle of telling observers.
          _ = try? co_await(release)
          log.append(3)
        }
        blocked.fulfill(0)
        log.append(4)
      }
      co_launch {
        // Runs while the first coroutine is parked inside its callback: its own chain is told
        // at once, not left for the parked one.
        let promise = CoPromise<Int>()
        let mapped = promise.map { $0 + 1 }
        promise.fulfill(1)
        log.append(value(mapped.result) ?? -1)
        release.fulfill(())
      }
    }
    #expect(log.values == [2, 3, 4])
  }

  @Test func aCallbackThatSuspendsAndMovesThreadFinishesItsChainThere() throws {
    let queue = DispatchQueue(label: "trampoline")
    let outcome = try CoroutineLoop.run { () -> Result<Int, any Error>? in
      try co_launch(on: queue) { () -> Result<Int, any Error>? in
        let head = CoPromise<Int>()
        let tail = (0..<1_000).reduce(head.map { $0 }) { future, _ in future.map { $0 + 1 } }
        head.whenComplete { _ in try? co_delay(0.001) }
        head.fulfill(0)
        return tail.result
      }.await()
    }
    #expect(value(outcome) == 1_000)
  }

  @Test func aLoopRunInsideACallbackTellsItsOwnCallbacks() {
    // The loop's jobs are not part of the callback that runs it: a chain settled by them is
    // told at once, not left for that callback, which is waiting for it.
    let promise = CoPromise<Int>()
    let log = Log()
    promise.whenComplete { _ in
      let inner = try? CoroutineLoop.run { try co_await(co_launch { 1 }.map { $0 + 1 }) }
      log.append(inner ?? -1)
    }
    promise.fulfill(0)
    #expect(log.values == [2])
  }
}
