import Dispatch
import Foundation
import Testing

@testable import Coroutines

/// Runs a loop on a thread of its own, so that a loop waiting for Swift tasks never holds one of
/// the few threads of Swift's cooperative pool (which runs those tasks, and these tests).
func runLoopOnOwnThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
  try await withCheckedThrowingContinuation { continuation in
    let thread = Thread { continuation.resume(with: Result { try CoroutineLoop.run(body) }) }
    thread.start()
  }
}

func double(_ value: Int) async throws -> Int {
  await Task.yield()
  return value * 2
}

@Suite struct ConcurrencyTests {
  // MARK: from a coroutine to async code

  @Test func aCoroutineAwaitsAnAsyncFunction() async throws {
    let value = try await runLoopOnOwnThread { try co_await { try await double(21) } }
    #expect(value == 42)
  }

  @Test func anAsyncErrorIsThrownInTheCoroutine() async throws {
    let caught = try await runLoopOnOwnThread { () -> Failure? in
      do {
        _ = try co_await(async: { () async throws -> Int in throw Failure.disk })
        return nil
      } catch let error as Failure {
        return error
      }
    }
    #expect(caught == .disk)
  }

  @Test func onlyTheCoroutineWaitsNotItsThread() async throws {
    // The async work waits for a second coroutine on the same loop: had the first blocked the
    // loop's thread, the second could never run.
    let value = try await runLoopOnOwnThread { () -> Int in
      let handOff = CoPromise<Int>()
      co_launch { handOff.fulfill(7) }
      return try co_await { try await handOff.value }
    }
    #expect(value == 7)
  }

  @Test func cancellingTheCoroutineCancelsTheSwiftTask() async throws {
    let size = TestStacks.uniqueSize()
    let sawCancellation = CoPromise<Void>()
    let unwound = Counter()
    let result = try await runLoopOnOwnThread { () -> Result<Int, any Error>? in
      let started = CoPromise<Void>()
      let task = co_launch(stackSize: size) { () -> Int in
        defer { unwound.increment() }
        return try co_await {
          let (never, source) = AsyncStream<Void>.makeStream()
          await withTaskCancellationHandler {
            started.fulfill(())
            // Nothing is ever sent: only the task's cancellation ends this loop.
            for await _ in never {}
            source.finish()
          } onCancel: {
            sawCancellation.fulfill(())
          }
          return 0
        }
      }
      try co_await(started)
      task.cancel()
      _ = try? co_await(task)
      return task.result
    }
    #expect(isCancellation(result))
    #expect(unwound.value == 1)
    #expect(sawCancellation.isSettled)
    #expect(TestStacks.allReturned(size: size))
  }

  @Test func outsideACoroutineItThrows() {
    #expect(throws: CoroutineError.notInCoroutine) { try co_await { try await double(1) } }
  }

  @Test func aCancelledCoroutineDoesNotStartTheTask() async throws {
    let started = Counter()
    let result = try await runLoopOnOwnThread { () -> Result<Int, any Error>? in
      let task = co_launch { () -> Int in
        do { try co_await(CoPromise<Void>()) } catch {}
        return try co_await {
          started.increment()
          return 1
        }
      }
      try co_delay(0)
      task.cancel()
      _ = try? co_await(task)
      return task.result
    }
    #expect(isCancellation(result))
    #expect(started.value == 0)
  }

  // MARK: from async code to a coroutine

  @Test func asyncCodeAwaitsATask() async throws {
    let queue = DispatchQueue(label: "sum")
    let sumFiles = { @Sendable () throws -> Int in
      try co_delay(0)
      return 6
    }
    let total = try await co_launch(on: queue) { try sumFiles() }.value
    #expect(total == 6)
  }

  @Test func asyncCodeAwaitsAFuture() async throws {
    let promise = CoPromise<String>()
    DispatchQueue.global().async { promise.fulfill("hello") }
    #expect(try await promise.value == "hello")
  }

  @Test func asyncCodeGetsTheTasksError() async throws {
    let task = co_launch(on: DispatchQueue(label: "failing")) { () -> Int in throw Failure.third }
    await #expect(throws: Failure.third) { try await task.value }
  }

  @Test func cancellingTheSwiftTaskCancelsTheCoroutine() async throws {
    let size = TestStacks.uniqueSize()
    let queue = DispatchQueue(label: "worker")
    let started = CoPromise<Void>()
    let unwound = Counter()
    let coroutine = co_launch(on: queue, stackSize: size) { () -> Int in
      defer { unwound.increment() }
      started.fulfill(())
      try co_await(CoPromise<Void>())
      return 1
    }
    let waiter = Task { try await coroutine.value }
    _ = try await started.value
    waiter.cancel()
    await #expect(throws: CancellationError.self) { try await waiter.value }
    // The task settles only once the coroutine has unwound and left its stack.
    await #expect(throws: CancellationError.self) { try await coroutine.value }
    #expect(unwound.value == 1)
    #expect(coroutine.isCancelled)
    #expect(TestStacks.allReturned(size: size))
  }

  @Test func cancellingTheSwiftTaskRejectsAPromise() async throws {
    let promise = CoPromise<Int>()
    let waiter = Task { try await promise.value }
    waiter.cancel()
    await #expect(throws: CancellationError.self) { try await waiter.value }
    #expect(isCancellation(promise.result))
  }
}
