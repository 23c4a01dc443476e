import Dispatch
import Testing

@testable import Coroutines

@Suite struct TaskTests {
  @Test func aParentSettlesOnlyAfterItsChildren() throws {
    let size = TestStacks.uniqueSize()
    let log = Journal<String>()
    try CoroutineLoop.run {
      let gate = CoPromise<Void>()
      let parent = co_launch(name: "parent", stackSize: size) { () -> String in
        let child = co_launch(name: "child", stackSize: size) { () -> Void in
          try co_await(gate)
          log.append("child body done")
        }
        child.whenComplete { _ in log.append("child settled") }
        log.append("parent body done")
        return "parent value"
      }
      parent.whenComplete { _ in log.append("parent settled") }
      try co_delay(0.001)
      #expect(log.entries == ["parent body done"])
      #expect(parent.result == nil)
      gate.fulfill(())
      #expect(try co_await(parent) == "parent value")
    }
    #expect(
      log.entries == ["parent body done", "child body done", "child settled", "parent settled"])
    #expect(TestStacks.allReturned(size: size))
  }

  @Test func cancellingAParentCancelsChildrenAndGrandchildren() throws {
    let size = TestStacks.uniqueSize()
    let unwound = Journal<String>()
    let outcomes = try CoroutineLoop.run { () -> [Bool] in
      let childStarted = CoPromise<Void>()
      let grandchildStarted = CoPromise<Void>()
      let parent = co_launch(stackSize: size) { () -> Void in
        defer { unwound.append("parent") }
        co_launch(stackSize: size) { () -> Void in
          defer { unwound.append("child") }
          co_launch(stackSize: size) { () -> Void in
            defer { unwound.append("grandchild") }
            grandchildStarted.fulfill(())
            try co_await(CoPromise<Void>())
          }
          childStarted.fulfill(())
          try co_await(CoPromise<Void>())
        }
        try co_await(CoPromise<Void>())
      }
      _ = try co_await(CoFuture.all([childStarted, grandchildStarted]))
      parent.cancel()
      _ = try? co_await(parent)
      return [isCancellation(parent.result), parent.isCancelled]
    }
    #expect(outcomes == [true, true])
    #expect(Set(unwound.entries) == ["parent", "child", "grandchild"])
    #expect(TestStacks.allReturned(size: size))
  }

  @Test func aChildLaunchedByACancelledParentNeverRuns() throws {
    let size = TestStacks.uniqueSize()
    let ran = Counter()
    let childResult = try CoroutineLoop.run { () -> Result<Void, any Error>? in
      let handOver = CoPromise<CoTask<Void>>()
      let parent = co_launch(stackSize: size) { () -> Void in
        do {
          try co_await(CoPromise<Void>())
        } catch {
          // Cleanup that launches is still bound by the parent's cancellation.
          let child = co_launch(stackSize: size) { () -> Void in ran.increment() }
          handOver.fulfill(child)
          throw error
        }
      }
      try co_delay(0)
      parent.cancel()
      let child = try co_await(handOver)
      _ = try? co_await(parent)
      return child.result
    }
    #expect(coroutineError(childResult) == .cancelledBeforeStart)
    #expect(ran.value == 0)
    #expect(TestStacks.allReturned(size: size))
  }

  @Test func aParentThatThrowsCancelsItsRunningChildrenThenWaits() throws {
    let size = TestStacks.uniqueSize()
    let log = Journal<String>()
    let result = try CoroutineLoop.run { () -> Result<Void, any Error>? in
      let parent = co_launch(stackSize: size) { () -> Void in
        co_launch(stackSize: size) { () -> Void in
          defer { log.append("child unwound") }
          try co_await(CoPromise<Void>())
        }
        try co_delay(0)
        throw Failure.disk
      }
      parent.whenComplete { _ in log.append("parent settled") }
      _ = try? co_await(parent)
      return parent.result
    }
    #expect(failure(result) == .disk)
    #expect(log.entries == ["child unwound", "parent settled"])
    #expect(TestStacks.allReturned(size: size))
  }

  @Test func aChildsErrorDoesNotFailItsParent() throws {
    let reported = Journal<String>()
    let value = try CoUnhandledErrors.withHandler({ name, _ in reported.append(name ?? "?") }) {
      try CoroutineLoop.run { () -> Int in
        let parent = co_launch { () -> Int in
          co_launch(name: "failing child") { () -> Void in throw Failure.disk }
          return 5
        }
        return try co_await(parent)
      }
    }
    #expect(value == 5)
    #expect(reported.entries == ["failing child"])
  }

  @Test func anAwaitedChildsErrorReachesTheParentThroughItsBody() throws {
    let result = try CoroutineLoop.run { () -> Result<Int, any Error>? in
      let parent = co_launch { () -> Int in
        try co_await(co_launch { () -> Int in throw Failure.second })
      }
      _ = try? co_await(parent)
      return parent.result
    }
    #expect(failure(result) == .second)
  }

  @Test func runWaitsForChildrenOnOtherSchedulers() throws {
    let queue = DispatchQueue(label: "children")
    let gate = CoPromise<Void>()
    let finished = Counter()
    let value = try CoroutineLoop.run { () -> Int in
      co_launch(on: queue) { () -> Void in
        try co_await(gate)
        finished.increment()
      }
      queue.async { gate.fulfill(()) }
      return 1
    }
    #expect(value == 1)
    #expect(finished.value == 1)
  }

  @Test func cancellingAChildLeavesTheParentRunning() throws {
    let result = try CoroutineLoop.run { () -> String in
      let child = co_launch { () -> Void in try co_await(CoPromise<Void>()) }
      child.cancel()
      _ = try? co_await(child)
      #expect(co_isActive())
      return "parent carries on"
    }
    #expect(result == "parent carries on")
  }

  @Test func manyChildrenFromManyThreadsAllSettleBeforeTheParent() throws {
    let size = TestStacks.uniqueSize()
    let settledChildren = Counter()
    let childrenSeenByParent = try CoroutineLoop.run { () -> Int in
      let parent = co_launch(stackSize: size) { () -> Void in
        for index in 0..<50 {
          let queue = DispatchQueue(label: "child \(index)")
          co_launch(on: queue, stackSize: size) { () -> Void in try co_delay(0) }
            .whenComplete { _ in settledChildren.increment() }
        }
      }
      try co_await(parent)
      return settledChildren.value
    }
    #expect(childrenSeenByParent == 50)
    #expect(TestStacks.allReturned(size: size))
  }
}
