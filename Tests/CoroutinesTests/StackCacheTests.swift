import Foundation
import Synchronization
import Testing

@testable import Coroutines

/// The per-thread cache in front of the stack pool's mutex (`StackCache`). Each test uses a
/// stack size no other test uses, so the counts it reads for that size are its own.
@Suite struct StackCacheTests {
  /// Runs `body` on a thread of its own and returns once that thread has exited: joined, so
  /// its thread-specific destructors (the stack cache's among them) have run.
  private func onThreadThatExits(_ body: @escaping @Sendable () throws -> Void) throws {
    final class Job: @unchecked Sendable {  // reason: written by the thread, read after join
      let body: @Sendable () throws -> Void
      var failure: (any Error)?
      init(_ body: @escaping @Sendable () throws -> Void) { self.body = body }
    }
    let job = Unmanaged.passRetained(Job(body))
    var thread = pthread_t()
    let status = pthread_create(
      &thread, nil,
      { raw in
        let job = Unmanaged<Job>.fromOpaque(raw!).takeUnretainedValue()
        do { try job.body() } catch { job.failure = error }
        return nil
      }, job.toOpaque())
    try #require(status == 0)
    pthread_join(thread, nil)
    let failure = job.takeRetainedValue().failure
    if let failure { throw failure }
  }

  /// Runs `body` on a fresh thread (whose cache is empty: test threads are shared, so theirs
  /// may hold another test's stack), then `check` on this thread while that thread still lives.
  private func onFreshThread(
    _ body: @escaping @Sendable () throws -> Void, whileItLives check: () throws -> Void
  ) throws {
    let failure = Mutex<String?>(nil)
    let finished = DispatchSemaphore(value: 0)
    let release = DispatchSemaphore(value: 0)
    let thread = Thread {
      do { try body() } catch { failure.withLock { $0 = "\(error)" } }
      finished.signal()
      release.wait()
    }
    thread.start()
    finished.wait()
    defer { release.signal() }
    #expect(failure.withLock { $0 } == nil)
    try check()
  }

  @Test func aFinishedStackWaitsInTheThreadsCacheAndCountsAsPooled() throws {
    let size = TestStacks.uniqueSize()
    try onFreshThread {
      try CoroutineLoop.run {
        for _ in 0..<5 { try co_launch(stackSize: size) { try co_delay(0) }.await() }
        // One stack, in use or cached, never a second mapped.
        precondition(StackPool.shared.mappedCount(size: size) == 1)
      }
    } whileItLives: {
      // The loop's thread still lives: its cache holds the stack.
      #expect(TestStacks.allReturned(size: size))
      Self.expectOneCachedStackThatTrimmingFrees(size: size)
    }
  }

  @Test func trimmingFromAnotherThreadEmptiesALiveThreadsCache() throws {
    let size = TestStacks.uniqueSize()
    try onFreshThread {
      // Awaited, so the child gives its stack back first: the cache keeps the first it gets.
      try CoroutineLoop.run { try co_launch(stackSize: size) {}.await() }
    } whileItLives: {
      Self.expectOneCachedStackThatTrimmingFrees(size: size)
    }
  }

  /// One stack of `size` sits in a live thread's cache, counted as pooled and not in use, and a
  /// trim from this thread takes it out and unmaps it.
  static func expectOneCachedStackThatTrimmingFrees(size: Int) {
    #expect(StackPool.shared.cachedFiberCount(size: size) == 1)
    #expect(StackPool.shared.pooledCount(size: size) == 1)
    #expect(StackPool.shared.inUseCount(size: size) == 0)
    StackPool.shared.trim(size: size, to: 0)
    #expect(StackPool.shared.cachedFiberCount(size: size) == 0)
    #expect(StackPool.shared.mappedCount(size: size) == 0)
  }

  @Test func aThreadThatExitsGivesItsCachedStackBack() throws {
    let size = TestStacks.uniqueSize()
    try onThreadThatExits {
      try CoroutineLoop.run { try co_launch(stackSize: size) {}.await() }
    }
    #expect(StackPool.shared.cachedFiberCount(size: size) == 0)
    #expect(StackPool.shared.pooledCount(size: size) == 1)
    #expect(StackPool.shared.mappedCount(size: size) == 1)
    #expect(StackPool.shared.inUseCount(size: size) == 0)
    StackPool.shared.trim(size: size, to: 0)
    #expect(StackPool.shared.mappedCount(size: size) == 0)
  }

  @Test func aCacheHoldsOneSizeAndOtherSizesGoThroughThePool() throws {
    let first = TestStacks.uniqueSize()
    let second = TestStacks.uniqueSize()
    try onFreshThread {
      try CoroutineLoop.run {
        for round in 0..<6 {
          let size = round.isMultiple(of: 2) ? first : second
          let sum = try co_launch(stackSize: size) { () throws -> Int in
            try co_delay(0)
            return cacheDeepSum(round, depth: 100)
          }.await()
          precondition(sum == cacheDeepSum(round, depth: 100))
        }
      }
    } whileItLives: {
      // One stack of each size, both finished: one cached, one in the ready list.
      #expect(StackPool.shared.mappedCount(size: first) == 1)
      #expect(StackPool.shared.mappedCount(size: second) == 1)
      #expect(StackPool.shared.pooledCount(size: first) == 1)
      #expect(StackPool.shared.pooledCount(size: second) == 1)
      #expect(
        StackPool.shared.cachedFiberCount(size: first)
          + StackPool.shared.cachedFiberCount(size: second) == 1)
    }
    StackPool.shared.trim(size: first, to: 0)
    StackPool.shared.trim(size: second, to: 0)
    #expect(StackPool.shared.mappedCount(size: first) == 0)
    #expect(StackPool.shared.mappedCount(size: second) == 0)
  }

  @Test func aCacheCountsAgainstThePoolsCapacity() throws {
    let size = TestStacks.uniqueSize()
    let count = CoroutineStack.poolCapacity + 10
    let gate = CoPromise<Void>()
    try onFreshThread {
      try CoroutineLoop.run {
        let tasks = (0..<count).map { _ in co_launch(stackSize: size) { try co_await(gate) } }
        try co_delay(0)
        gate.fulfill(())
        for task in tasks { try task.await() }
      }
    } whileItLives: {
      // The cache's fiber and the ready list together keep at most the capacity; the rest
      // are idle.
      #expect(StackPool.shared.cachedFiberCount(size: size) == 1)
      #expect(StackPool.shared.pooledCount(size: size) <= 2 * CoroutineStack.poolCapacity)
      #expect(StackPool.shared.inUseCount(size: size) == 0)
    }
    StackPool.shared.trim(size: size, to: 0)
    #expect(StackPool.shared.mappedCount(size: size) == 0)
  }

  @Test func stacksStayExactWhileAnotherThreadTrimsAgainAndAgain() throws {
    let size = TestStacks.uniqueSize()
    let stop = Atomic<Bool>(false)
    let trimmer = Thread {
      while !stop.load(ordering: .relaxed) { StackPool.shared.trim(size: size, to: 0) }
    }
    trimmer.start()
    try CoroutineLoop.run {
      for index in 0..<2_000 {
        let value = try co_launch(stackSize: size) { () throws -> Int in
          if index.isMultiple(of: 3) { try co_delay(0) }
          return cacheDeepSum(index, depth: 50)
        }.await()
        #expect(value == cacheDeepSum(index, depth: 50))
      }
    }
    stop.store(true, ordering: .relaxed)
    while !trimmer.isFinished { sched_yield() }
    #expect(StackPool.shared.inUseCount(size: size) == 0)
    #expect(TestStacks.allReturned(size: size))
    StackPool.shared.trim(size: size, to: 0)
    #expect(StackPool.shared.mappedCount(size: size) == 0)
  }
}

/// A recursion that keeps a frame's worth of data on the stack at every level, so a stack
/// handed out twice at once would corrupt one of the sums.
private func cacheDeepSum(_ seed: Int, depth: Int) -> Int {
  var frame = (seed, seed &* 3, seed &+ depth, depth)
  let below =
    depth == 0
    ? 0
    : withUnsafeMutablePointer(to: &frame) { pointer in
      cacheDeepSum(pointer.pointee.0 &+ 1, depth: depth - 1)
    }
  return below &+ frame.0 &+ frame.1 &+ frame.2 &+ frame.3
}
