import Dispatch
import Foundation
import Synchronization
import Testing

@testable import Coroutines

@Suite struct AwaitTests {
  struct Failure: Error, Equatable {}

  /// Work written on the main actor (here inside `CoroutineLoop.run`, whose body takes on the
  /// test's isolation) is `@Sendable`, so a closure inside it runs on the other queue without
  /// the main actor's isolation, and the coroutine comes back to its loop's thread.
  @MainActor @Test func workWrittenOnTheMainActorRunsItsClosuresOnAnotherQueue() throws {
    let home = threadID()
    let (values, cameBack) = try CoroutineLoop.run { () -> ([Int], Bool) in
      let values = try co_await(on: DispatchQueue(label: "AwaitTests.elsewhere")) {
        () -> [Int] in
        #expect(threadID() != home)
        return [1, 2].map { $0 + 1 }
      }
      return (values, threadID() == home)
    }
    #expect(values == [2, 3])
    #expect(cameBack)
  }

  @Test func everySuspendingCallThrowsOutsideACoroutine() {
    let promise = CoPromise<Int>()
    #expect(throws: CoroutineError.notInCoroutine) { try co_await(promise) }
    #expect(throws: CoroutineError.notInCoroutine) { try promise.await() }
    #expect(throws: CoroutineError.notInCoroutine) {
      let _: Int = try co_await { done in done(.success(1)) }
    }
    #expect(throws: CoroutineError.notInCoroutine) {
      let _: Int = try co_await { done in done(1, nil) }
    }
    #expect(throws: CoroutineError.notInCoroutine) {
      try co_await(on: DispatchQueue.global()) { 1 }
    }
    #expect(throws: CoroutineError.notInCoroutine) { try co_delay(0.01) }
    #expect(!co_isActive())
  }

  @Test func aCallbackApiIsAwaited() throws {
    let value = try CoroutineLoop.run { () -> String in
      try co_await { done in DispatchQueue.global().async { done(.success("ok")) } }
    }
    #expect(value == "ok")
  }

  @Test func aCallbackCalledTwiceCountsOnce() throws {
    let values = try CoroutineLoop.run { () -> [Int] in
      let first: Int = try co_await { done in
        done(.success(1))
        done(.success(2))
        done(.failure(Failure()))
      }
      let second: Int = try co_await { done in DispatchQueue.global().async { done(.success(3)) } }
      return [first, second]
    }
    #expect(values == [1, 3])
  }

  @Test func aCallbackDroppedWithoutBeingCalledUnwindsTheCoroutine() throws {
    let cleanedUp = Atomic<Bool>(false)
    #expect(throws: CancellationError.self) {
      try CoroutineLoop.run {
        defer { cleanedUp.store(true, ordering: .relaxed) }
        let _: Int = try co_await { done in
          DispatchQueue.global().async { _ = done }  // holds it briefly, never calls it
        }
      }
    }
    #expect(cleanedUp.load(ordering: .relaxed) == true)
  }

  @Test func aValueOrErrorCallbackIsAwaited() throws {
    let value = try CoroutineLoop.run { () -> String in
      try co_await { done in DispatchQueue.global().async { done("ok", nil) } }
    }
    #expect(value == "ok")
    #expect(throws: Failure()) {
      try CoroutineLoop.run { () -> Int in
        try co_await { done in DispatchQueue.global().async { done(nil, Failure()) } }
      }
    }
  }

  @Test func aValueOrErrorCallbackGivenBothThrowsTheError() throws {
    #expect(throws: Failure()) {
      try CoroutineLoop.run { () -> Int in try co_await { done in done(1, Failure()) } }
    }
  }

  @Test func aValueOrErrorCallbackGivenNeitherThrowsAClearError() throws {
    #expect(throws: CoroutineError.neitherValueNorError) {
      try CoroutineLoop.run { () -> Int in
        try co_await { (done: @escaping @Sendable (Int?, (any Error)?) -> Void) in
          done(nil, nil)
        }
      }
    }
  }

  @Test func aValueOrErrorCallbackCalledTwiceCountsOnce() throws {
    let values = try CoroutineLoop.run { () -> [Int] in
      let first: Int = try co_await { done in
        done(1, nil)
        done(2, nil)
        done(nil, Failure())
      }
      let second: Int = try co_await { done in DispatchQueue.global().async { done(3, nil) } }
      return [first, second]
    }
    #expect(values == [1, 3])
  }

  @Test func aValueOrErrorCallbackDroppedUnwindsTheCoroutine() throws {
    #expect(throws: CancellationError.self) {
      try CoroutineLoop.run { () -> Int in
        try co_await { (done: @escaping @Sendable (Int?, (any Error)?) -> Void) in
          DispatchQueue.global().async { _ = done }
        }
      }
    }
  }

  /// Both callback shapes side by side: each call picks its overload from how `done` is used,
  /// whether it is called, passed on as a completion handler or called later on a queue.
  @Test func bothCallbackShapesResolveFromHowTheCallbackIsUsed() throws {
    let resultShaped: @Sendable (@escaping @Sendable (Result<Int, any Error>) -> Void) -> Void = {
      completion in DispatchQueue.global().async { completion(.success(1)) }
    }
    let valueOrErrorShaped: @Sendable (@escaping @Sendable (Int?, (any Error)?) -> Void) -> Void = {
      completion in DispatchQueue.global().async { completion(2, nil) }
    }
    let values = try CoroutineLoop.run { () -> [Int] in
      let a: Int = try co_await { done in done(.success(3)) }
      let b: Int = try co_await { done in done(4, nil) }
      let c: Int = try co_await { done in resultShaped(done) }
      let d: Int = try co_await { done in valueOrErrorShaped(done) }
      let e: Int = try co_await(resultShaped)
      let f: Int = try co_await(valueOrErrorShaped)
      let g = try co_await { done in DispatchQueue.global().async { done(.success(5)) } }
      let h = try co_await { done in DispatchQueue.global().async { done(6, nil) } }
      return [a, b, c, d, e, f, g, h]
    }
    #expect(values == [3, 4, 1, 2, 1, 2, 5, 6])
  }

  @Test func awaitOnAnotherSchedulerRunsThereAndComesBack() throws {
    let threads = try CoroutineLoop.run { () -> [ObjectIdentifier] in
      let before = threadID()
      let during = try co_await(on: DispatchQueue(label: "elsewhere")) { threadID() }
      return [before, during, threadID()]
    }
    #expect(threads[0] != threads[1])  // it really moved threads
    #expect(threads[0] == threads[2])  // and came home
  }

  /// The work runs on the coroutine's own stack, so a cancellation cannot stop it; once it has
  /// returned, the coroutine drops its result and throws, back on its own scheduler.
  @Test func awaitOnAnotherSchedulerCancelledWhileTheWorkRunsThrowsWhenItReturns() throws {
    let (outcome, workFinished, cameHome) = try CoroutineLoop.run {
      () -> (Result<Int, any Error>, Bool, Bool) in
      let home = threadID()
      let started = DispatchSemaphore(value: 0)
      let release = DispatchSemaphore(value: 0)
      let finished = Atomic<Bool>(false)
      let task = co_launch { () -> (Result<Int, any Error>, Bool) in
        let result = Result {
          try co_await(on: DispatchQueue(label: "AwaitTests.work")) { () -> Int in
            started.signal()
            release.wait()
            finished.store(true, ordering: .relaxed)
            return 1
          }
        }
        return (result, threadID() == home)
      }
      try co_delay(0)  // the task has left for the queue
      started.wait()
      task.cancel()
      release.signal()
      let (result, cameHome) = try co_await(task)
      return (result, finished.load(ordering: .relaxed), cameHome)
    }
    #expect(workFinished)
    #expect(cameHome)
    #expect(throws: CancellationError.self) { try outcome.get() }
  }

  @Test func aCoroutineResumesOnItsOwnSchedulerWhoeverSettles() throws {
    let sameThread = try CoroutineLoop.run { () -> Bool in
      let loopThread = threadID()
      let promise = CoPromise<Int>()
      DispatchQueue.global().async { promise.fulfill(1) }  // settled on a worker thread
      _ = try co_await(promise)
      return loopThread == threadID()
    }
    #expect(sameThread)
  }

  @Test func anErrorThrownOnTheOtherSchedulerStillComesHome() throws {
    let cameHome = try CoroutineLoop.run { () -> Bool in
      let loopThread = threadID()
      do {
        try co_await(on: DispatchQueue.global()) { throw Failure() }
      } catch is Failure {}
      return loopThread == threadID()
    }
    #expect(cameHome)
  }

  @Test func aCoroutineOnAQueueSuspendsAndResumesAcrossThreads() throws {
    let task = co_launch(on: DispatchQueue.global()) { () -> Int in
      var total = 0
      for step in 1...20 {
        let promise = CoPromise<Int>()
        DispatchQueue.global().async { promise.fulfill(step) }
        total += try co_await(promise)
        try co_delay(0)
      }
      return total
    }
    let done = DispatchSemaphore(value: 0)
    task.whenComplete { _ in done.signal() }
    done.wait()
    #expect(try task.result?.get() == 210)
  }

  @Test func wakeUpsRacingTheSwitchOutAreNeitherLostNorDoubled() {
    // Promises settled on worker threads while their coroutines are still switching out: the
    // waker may see the coroutine running, then parked, and must still wake it exactly once.
    // Two loops on two threads keep both cores busy so the window is hit often.
    let sums = Log()
    DispatchQueue.concurrentPerform(iterations: 2) { _ in
      let sum = try? CoroutineLoop.run { () -> Int in
        let tasks = (0..<1_000).map { index in
          co_launch { () -> Int in
            var sum = 0
            for round in 0..<20 {
              let promise = CoPromise<Int>()
              DispatchQueue.global().async { promise.fulfill(index + round) }
              sum += try co_await(promise)
            }
            return sum
          }
        }
        return try tasks.reduce(0) { $0 + (try $1.await()) }
      }
      sums.append(sum ?? -1)
    }
    let expected = (0..<1_000).reduce(0) { $0 + 20 * $1 + 190 }
    #expect(sums.values == [expected, expected])
  }

  @Test func delaysWaitOnTheSchedulersClock() throws {
    let elapsed = try CoroutineLoop.run { () -> Double in
      let start = Date()
      try co_delay(0.02)
      return Date().timeIntervalSince(start)
    }
    #expect(elapsed >= 0.02)
  }

  @Test func isActiveIsTrueInsideARunningCoroutine() throws {
    #expect(try CoroutineLoop.run { co_isActive() })
  }

  @Test func aThrownErrorRejectsTheTaskAndNothingCrashes() throws {
    let outcome = try CoroutineLoop.run { () -> Result<Int, any Error> in
      let task = co_launch { () throws -> Int in throw Failure() }
      return Result { try task.await() }
    }
    #expect(throws: Failure()) { try outcome.get() }
  }

  @Test func launchWithoutASchedulerInsideACoroutineUsesItsScheduler() throws {
    let same = try CoroutineLoop.run { () -> Bool in
      let outer = Coroutine.current!.home
      let inner = try co_launch { Coroutine.current!.home }.await()
      return outer === inner
    }
    #expect(same)
  }

  @Test func deepRecursionFitsTheDefaultStack() throws {
    func depth(_ level: Int) -> Int {
      var scratch = (level, level &+ 1, level &+ 2, level &+ 3)  // a frame with some locals
      if level == 0 { return scratch.0 }
      scratch.1 = depth(level - 1)
      return scratch.1 &+ 1
    }
    #expect(try CoroutineLoop.run { depth(1_000) } == 1_000)
  }
}
