import Synchronization
import Testing

@testable import Coroutines

/// A wait that ends because what it waited on was released is reported through the
/// unhandled-error handler, with the waiter's reason, before the waiter gets its
/// `CancellationError`; a wait ended on purpose (cancellation) is not.
@Suite struct AbandonedWaitTests {
  /// The reports a handler received, and what the waiter had seen of them when it woke.
  final class Reports: Sendable {
    let lines = Mutex<[String]>([])
    let seenByWaiter = Mutex<Int?>(nil)

    var handler: CoUnhandledErrors.Handler {
      { name, error in
        let reason = (error as? CoroutineWaitAbandoned)?.waitReason ?? "other"
        self.lines.withLock { $0.append("\(name ?? "(unnamed)") [\(reason)]") }
      }
    }

    /// Called by the waiter as it catches its error.
    func waiterWoke() { seenByWaiter.withLock { $0 = lines.withLock { $0.count } } }
  }

  @Test func aCallbackDroppedUncalledIsReportedBeforeTheWaiterGetsItsError() throws {
    let loop = CoroutineTestLoop()
    let reports = Reports()
    let kept = Mutex<(@Sendable (Result<Int, any Error>) -> Void)?>(nil)
    let task = CoUnhandledErrors.withHandler(reports.handler) {
      co_launch(on: loop, name: "waits for a callback") {
        do {
          let _: Int = try co_await { done in kept.withLock { $0 = done } }
        } catch is CancellationError {
          reports.waiterWoke()
          throw CancellationError()
        }
      }
    }
    loop.runUntilIdle()
    kept.withLock { $0 = nil }  // the callback goes away, never called
    loop.runUntilIdle()
    #expect(task.isSettled)
    #expect(reports.lines.withLock { $0 } == ["waits for a callback [callback]"])
    #expect(reports.seenByWaiter.withLock { $0 } == 1)
  }

  @Test func aFutureReleasedWithACoroutineWaitingIsReportedAsTheFutureItWaitedFor() throws {
    let loop = CoroutineTestLoop()
    let reports = Reports()
    let holder = Mutex<CoPromise<Int>?>(CoPromise())
    // Not retained by the waiter: only `holder` keeps the future, so dropping it there frees
    // the future while the coroutine waits on it, as an optimised build may where the
    // awaiting code no longer needs it.
    let future = Unmanaged.passUnretained(holder.withLock { $0! })
    let task = CoUnhandledErrors.withHandler(reports.handler) {
      co_launch(on: loop, name: "waits for a future") {
        let coroutine = try #require(Coroutine.current)
        do {
          // Registered as `co_await(_:)` registers, with no reference kept in this frame.
          let delivered: Result<Int, any Error>? = try coroutine.waitForDelivery(for: .future) {
            generation, slot in
            future.takeUnretainedValue().whenComplete(
              waking: coroutine, generation: generation, into: slot)
          }
          #expect(delivered == nil)
          throw CancellationError()
        } catch is CancellationError {
          reports.waiterWoke()
          throw CancellationError()
        }
      }
    }
    loop.runUntilIdle()
    holder.withLock { $0 = nil }
    loop.runUntilIdle()
    #expect(task.isSettled)
    #expect(reports.lines.withLock { $0 } == ["waits for a future [future]"])
    #expect(reports.seenByWaiter.withLock { $0 } == 1)
  }

  @Test func cancellingAWaitReportsNothing() throws {
    let loop = CoroutineTestLoop()
    let reports = Reports()
    let kept = Mutex<(@Sendable (Result<Int, any Error>) -> Void)?>(nil)
    let task = CoUnhandledErrors.withHandler(reports.handler) {
      co_launch(on: loop, name: "cancelled") {
        let _: Int = try co_await { done in kept.withLock { $0 = done } }
      }
    }
    loop.runUntilIdle()
    task.cancel()
    kept.withLock { $0 = nil }
    loop.runUntilIdle()
    #expect(task.isSettled)
    #expect(reports.lines.withLock { $0 }.isEmpty)
  }

  @Test func cancellingAGeneratorWhoseProducerWaitsForDemandReportsNothing() throws {
    let loop = CoroutineTestLoop()
    let reports = Reports()
    let values = co_sequence(on: loop, name: "produces ahead") { (yield: CoYield<Int>) in
      try yield(1)
      try yield(2)
    }
    // The producer starts on the first demand, and inherits the handler of the coroutine
    // that asks.
    let first = CoUnhandledErrors.withHandler(reports.handler) {
      co_launch(on: loop) { values.next() }
    }
    loop.runUntilIdle()
    #expect(try first.result?.get() == 1)
    values.cancel()
    loop.runUntilIdle()
    #expect(loop.liveCoroutines == 0)
    #expect(reports.lines.withLock { $0 }.isEmpty)
  }
}
