import Dispatch
import Glibc
import Synchronization
import Testing

@testable import Coroutines

/// Bad input gets a clear answer and loses nothing: run-time conditions throw, programming
/// errors stop the process with a message naming the call and the value (checked in child
/// processes: Swift Testing exit tests).
@Suite struct BadInputTests {
  /// A programming error, the child role that commits it, and what the message must say.
  struct Misuse: Sendable, Codable, CustomTestStringConvertible {
    let role: String
    let message: String
    var testDescription: String { role }
  }

  static let misuses = [
    Misuse(
      role: "stackBelowMinimum",
      message: "co_launch(stackSize:): stack size 1000 is below the minimum of 65536 bytes"),
    Misuse(
      role: "stackAbsurdlyLarge",
      message:
        "co_launch(stackSize:): stack size 1099511627776 is above the maximum of 1073741824 bytes"),
    Misuse(
      role: "defaultStackBelowMinimum",
      message: "CoroutineStack.defaultSize: stack size 4096 is below the minimum of 65536 bytes"),
    Misuse(role: "negativePoolCapacity", message: "CoroutineStack.poolCapacity: -1 is negative"),
    Misuse(role: "delayIsNaN", message: "co_delay(_:): the delay is NaN"),
    Misuse(
      role: "finishedCoroutineRunAgain",
      message: "coroutine run twice: a finished coroutine cannot resume"),
    Misuse(
      role: "watchdogThresholdZero",
      message: "CoroutineDiagnostics.startStallWatchdog(threshold:): 0.0 is not a positive time"),
  ]

  @Test(arguments: misuses)
  func aProgrammingErrorStopsWithAMessageNamingTheCallAndValue(_ misuse: Misuse) async throws {
    let result = try await #require(
      processExitsWith: .failure, observing: [\.standardErrorContent]
    ) { [misuse] in
      try Self.commit(misuse.role)
    }
    let output = String(decoding: result.standardErrorContent, as: UTF8.self)
    #expect(output.contains(misuse.message), "\(output)")
  }

  /// Commits the misuse named `role`; returns only if it failed to stop the process.
  static func commit(_ role: String) throws {
    switch role {
    case "stackBelowMinimum": co_launch(stackSize: 1000) {}
    case "stackAbsurdlyLarge": co_launch(stackSize: 1 << 40) {}
    case "defaultStackBelowMinimum": CoroutineStack.defaultSize = 4096
    case "negativePoolCapacity": CoroutineStack.poolCapacity = -1
    case "delayIsNaN": try CoroutineLoop.run { try co_delay(.nan) }
    case "finishedCoroutineRunAgain":
      let coroutine = Coroutine(
        scheduler: CoroutineLoop(), name: "run twice", stackSize: CoroutineStack.minimumSize
      ) { {} }
      _ = try coroutine.runInline()
      _ = try coroutine.runInline()
    case "watchdogThresholdZero": CoroutineDiagnostics.startStallWatchdog(threshold: 0)
    default: break
    }
  }

  // MARK: Run-time conditions

  @Test func aResumerCalledAfterItsCoroutineFinishedIsIgnored() throws {
    let saved = Mutex<(@Sendable (Result<Int, any Error>) -> Void)?>(nil)
    let value = try CoroutineLoop.run { () -> Int in
      let first: Int = try co_await { done in
        saved.withLock { $0 = done }
        DispatchQueue.global().async { done(.success(1)) }
      }
      return first
    }
    let late = try #require(saved.withLock { $0 })
    late(.success(2))  // the coroutine is gone: nothing happens
    late(.failure(CancellationError()))
    #expect(value == 1)
  }

  @Test func aPromiseSettledTwiceKeepsTheFirstOutcomeForEveryAwaiter() throws {
    let promise = CoPromise<Int>()
    let values = try CoroutineLoop.run { () -> [Int] in
      let awaiters = (0..<3).map { _ in co_launch { try co_await(promise) } }
      promise.fulfill(1)
      promise.fulfill(2)
      promise.reject(CancellationError())
      #expect(!promise.settle(.success(3)))
      return try awaiters.map { try co_await($0) }
    }
    #expect(values == [1, 1, 1])
  }

  @Test func aCoroutineCancelledWhileScheduledKeepsTheValueItWasWokenWith() throws {
    let outcome = try CoroutineLoop.run { () -> (Int, Bool) in
      let promise = CoPromise<Int>()
      let parked = CoPromise<Void>()
      let task = co_launch { () -> (Int, Bool) in
        parked.fulfill(())
        let value = try co_await(promise)  // woken, then cancelled before it runs again
        let nextThrows = (try? co_delay(0)) == nil
        return (value, nextThrows)
      }
      try co_await(parked)
      promise.fulfill(7)  // now scheduled on this loop, which is busy running us
      task.cancel()
      task.cancel()  // twice: no different
      return try co_await(task)
    }
    #expect(outcome.0 == 7)
    #expect(outcome.1)
  }

  @Test func aCoroutineCancelledWhileRunningThrowsAtItsNextSuspension() throws {
    let log = Log()
    let result = try CoroutineLoop.run { () -> Result<Void, any Error> in
      let task = co_launch { () -> Void in
        try Coroutine.requireCurrent().cancel()  // cancelled while running
        log.append(1)  // running code carries on: cancellation is delivered at suspensions
        defer { log.append(3) }
        try co_delay(0)
        log.append(2)
      }
      return Result { try co_await(task) }
    }
    #expect(throws: CancellationError.self) { try result.get() }
    #expect(log.values == [1, 3])
  }
}
