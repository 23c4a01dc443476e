import Dispatch
import Foundation
import Synchronization
import Testing

@testable import Coroutines

@Suite struct CancellationTests {
  @Test func cancellingAnAwaitingCoroutineThrowsAtOnceRunsDefersAndRejectsTheTask() throws {
    let cleanedUp = Counter()
    let never = CoPromise<Int>()
    let outcome = try CoroutineLoop.run { () -> Result<Int, any Error> in
      let task = co_launch { () -> Int in
        defer { cleanedUp.increment() }
        return try co_await(never)
      }
      try co_delay(0)  // let it park
      task.cancel()
      return Result { try task.await() }
    }
    #expect(cleanedUp.value == 1)
    #expect(throws: CancellationError.self) { try outcome.get() }
    #expect(never.result == nil)  // the promise itself is untouched
  }

  @Test func cancellingADelayEndsItAtOnceAndFreesTheLoop() throws {
    let started = Date()
    let outcome = try CoroutineLoop.run { () -> Result<Void, any Error> in
      let task = co_launch { try co_delay(30) }
      try co_delay(0.001)
      task.cancel()
      return Result { try task.await() }
    }
    #expect(throws: CancellationError.self) { try outcome.get() }
    #expect(Date().timeIntervalSince(started) < 10)  // not the 30 s of the delay
  }

  @Test func cancellingFromAnotherThreadWakesTheCoroutineOnItsScheduler() throws {
    let resumedOnLoop = try CoroutineLoop.run { () -> Bool in
      let loopThread = threadID()
      let onLoop = Atomic<Bool>(false)
      let task = co_launch { () -> Void in
        do { _ = try co_await(CoPromise<Int>()) } catch {}
        onLoop.store(loopThread == threadID(), ordering: .relaxed)
      }
      try co_delay(0.001)
      DispatchQueue.global().async { task.cancel() }
      try? task.await()
      return onLoop.load(ordering: .relaxed)
    }
    #expect(resumedOnLoop)
  }

  @Test func aCancelRacingTheStartOfAWaitIsNeverLost() throws {
    // Cancels from worker threads land while coroutines are between their cancellation check
    // and the moment their wait becomes visible. A lost cancel would leave a coroutine waiting
    // for the fallback below, and it would return a value instead of throwing.
    let lost = try CoroutineLoop.run { () -> Int in
      let fallback = CoPromise<Int>()
      let tasks = (0..<5_000).map { _ in
        co_launch { () -> Int in
          try co_delay(0)
          return try co_await(fallback)
        }
      }
      for task in tasks { DispatchQueue.global().async { task.cancel() } }
      let timer = CoroutineLoop.current!.schedule(after: 5) { fallback.fulfill(1) }
      defer { timer.cancel() }
      return tasks.filter { (try? $0.await()) != nil }.count
    }
    #expect(lost == 0)
  }

  @Test func aCancelledCoroutineIsInactiveAndEveryLaterAwaitThrows() throws {
    let observed = try CoroutineLoop.run { () -> [Bool] in
      let gate = CoPromise<Void>()
      let log = Mutex<[Bool]>([])
      let task = co_launch {
        try? co_await(gate)
        log.withLock { $0.append(co_isActive()) }
        let delayThrew = (try? co_delay(0)) == nil
        let awaitThrew = (try? co_await(CoPromise<Int>().settled(1))) == nil
        log.withLock { $0 += [delayThrew, awaitThrew] }
      }
      try co_delay(0)
      task.cancel()
      #expect(task.isCancelled)
      _ = try? task.await()
      return log.withLock { $0 }
    }
    #expect(observed == [false, true, true])
  }

  @Test func aZeroDelayLetsQueuedJobsRunAndStillHonoursCancellation() throws {
    let outcome = try CoroutineLoop.run { () -> Result<Void, any Error> in
      let task = co_launch { () -> Void in
        while true { try co_delay(0) }  // spins through the loop until cancelled
      }
      try co_delay(0)
      task.cancel()
      return Result { try task.await() }
    }
    #expect(throws: CancellationError.self) { try outcome.get() }
  }

  @Test func aTaskCancelledBeforeItStartsNeverRunsItsBody() throws {
    let ran = Counter()
    let outcome = try CoroutineLoop.run { () -> Result<Void, any Error> in
      let task = co_launch { _ = ran.increment() }
      task.cancel()
      return Result { try task.await() }
    }
    #expect(ran.value == 0)
    #expect(throws: CoroutineError.cancelledBeforeStart) { try outcome.get() }
  }

  /// The loop's start job names the coroutine unretained, and only the task keeps it alive; a
  /// task dropped and cancelled before its start must still be told, and then be freed.
  @Test func aDroppedTaskCancelledBeforeItStartsIsToldAndFreed() throws {
    weak var dropped: CoTask<Void>?
    let ran = Counter()
    let rejections = Atomic<Int>(0)
    try CoroutineLoop.run {
      let task = co_launch { _ = ran.increment() }
      task.whenComplete { result in
        if case .failure(CoroutineError.cancelledBeforeStart) = result {
          rejections.add(1, ordering: .relaxed)
        }
      }
      dropped = task
      task.cancel()
    }
    #expect(ran.value == 0)
    #expect(rejections.load(ordering: .relaxed) == 1)
    #expect(dropped == nil)
  }

  @Test func cancellingAFinishedTaskChangesNothing() throws {
    let value = try CoroutineLoop.run { () -> Int in
      let task = co_launch { 5 }
      let value = try task.await()
      task.cancel()
      #expect(try task.result?.get() == 5)
      return value
    }
    #expect(value == 5)
  }

  @Test func aBodyThatCatchesCancellationDecidesTheOutcome() throws {
    let value = try CoroutineLoop.run { () -> Int in
      let task = co_launch { () -> Int in
        do { try co_delay(30) } catch { return -1 }
        return 0
      }
      try co_delay(0)
      task.cancel()
      return try task.await()
    }
    #expect(value == -1)
  }
}

extension CoPromise {
  /// The promise, already fulfilled with `value`.
  func settled(_ value: T) -> CoPromise<T> {
    fulfill(value)
    return self
  }
}
