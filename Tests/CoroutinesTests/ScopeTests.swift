import Testing

@testable import Coroutines

@Suite struct ScopeTests {
  final class Resource: CoCancellable {
    let cancels = Counter()
    func cancel() { cancels.increment() }
  }

  @Test func cancellingAScopeCancelsEverythingInIt() throws {
    let size = TestStacks.uniqueSize()
    let unwound = Counter()
    let resource = Resource()
    let actions = Counter()
    let outcome = try CoroutineLoop.run { () -> [Bool] in
      let scope = CoScope()
      let task = scope.add(
        co_launch(stackSize: size) { () -> Void in
          defer { unwound.increment() }
          try co_await(CoPromise<Void>())
        })
      let promise = CoPromise<Int>()
      scope.add(promise)
      scope.add(resource)
      scope.onCancel { actions.increment() }
      try co_delay(0)
      scope.cancel()
      _ = try? co_await(task)
      return [isCancellation(task.result), isCancellation(promise.result), scope.isCancelled]
    }
    #expect(outcome == [true, true, true])
    #expect(unwound.value == 1)
    #expect(resource.cancels.value == 1)
    #expect(actions.value == 1)
    #expect(TestStacks.allReturned(size: size))
  }

  @Test func releasingAScopeCancelsEverythingInIt() {
    let promise = CoPromise<Int>()
    let resource = Resource()
    do {
      let scope = CoScope()
      scope.add(promise)
      scope.add(resource)
    }
    #expect(isCancellation(promise.result))
    #expect(resource.cancels.value == 1)
  }

  @Test func cancellingTwiceCancelsOnce() {
    let scope = CoScope()
    let resource = scope.add(Resource())
    scope.cancel()
    scope.cancel()
    #expect(resource.cancels.value == 1)
  }

  @Test func addingToACancelledScopeCancelsAtOnce() {
    let scope = CoScope()
    scope.cancel()
    let promise = scope.add(CoPromise<Int>())
    let actions = Counter()
    scope.onCancel { actions.increment() }
    #expect(isCancellation(promise.result))
    #expect(actions.value == 1)
    #expect(scope.count == 0)
  }

  @Test func settledFuturesLeaveTheScope() {
    let scope = CoScope()
    let promise = CoPromise<Int>()
    scope.add(promise)
    scope.add(fulfilled(1))
    #expect(scope.count == 1)
    promise.fulfill(2)
    #expect(scope.count == 0)
    scope.cancel()
    #expect(value(promise.result) == 2)
  }

  @Test func objectsAreHeldWeakly() {
    let scope = CoScope()
    weak var weakResource: Resource?
    do {
      let resource = Resource()
      weakResource = resource
      scope.add(resource)
    }
    #expect(weakResource == nil)
    scope.cancel()
  }

  @Test func releasedObjectsLeaveTheCount() {
    final class Work: CoCancellable { func cancel() {} }
    let scope = CoScope()
    for _ in 0..<1000 { scope.add(Work()) }
    #expect(scope.count == 0)
    let kept = scope.add(Work())
    #expect(scope.count == 1)
    withExtendedLifetime(kept) {}
  }

  @Test func aLongLivedScopeStaysSmallUnderAMillionShortLivedMembers() {
    let scope = CoScope()
    let kept = (0..<10).map { _ in scope.add(Resource()) }
    var largest = 0
    for index in 0..<1_000_000 {
      if index.isMultiple(of: 2) {
        scope.add(Resource())
      } else {
        scope.add(CoPromise<Int>()).fulfill(index)
      }
      largest = max(largest, scope.storedCount)
    }
    #expect(largest <= 64)
    #expect(scope.count == kept.count)
    scope.cancel()
    #expect(kept.allSatisfy { $0.cancels.value == 1 })
  }

  @Test func actionsStayUntilTheScopeEnds() {
    let scope = CoScope()
    let actions = Counter()
    for _ in 0..<100 { scope.onCancel { actions.increment() } }
    #expect(scope.count == 100)
    scope.cancel()
    #expect(actions.value == 100)
    #expect(scope.count == 0)
  }

  @Test func aScopesCoroutinesOutliveTheirLauncherAndDieWithTheScope() throws {
    let size = TestStacks.uniqueSize()
    let unwound = Counter()
    try CoroutineLoop.run {
      let scope = CoScope()
      let launcher = co_launch(stackSize: size) { () -> CoTask<Void> in
        scope.launch(stackSize: size) { () -> Void in
          defer { unwound.increment() }
          try co_await(CoPromise<Void>())
        }
      }
      // The launcher settles though the scope's coroutine is still running.
      let worker = try co_await(launcher)
      #expect(worker.result == nil)
      #expect(scope.count == 1)
      try co_delay(0)  // let it start, so cancellation unwinds it rather than skipping it
      scope.cancel()
      _ = try? co_await(worker)
      #expect(isCancellation(worker.result))
    }
    #expect(unwound.value == 1)
    #expect(TestStacks.allReturned(size: size))
  }

  @Test func cancellingAScopeCancelsTheChildrenOfItsCoroutines() throws {
    let size = TestStacks.uniqueSize()
    let unwound = Journal<String>()
    try CoroutineLoop.run {
      let scope = CoScope()
      let started = CoPromise<Void>()
      let worker = scope.launch(stackSize: size) { () -> Void in
        defer { unwound.append("worker") }
        co_launch(stackSize: size) { () -> Void in
          defer { unwound.append("child") }
          started.fulfill(())
          try co_await(CoPromise<Void>())
        }
        try co_await(CoPromise<Void>())
      }
      try co_await(started)
      scope.cancel()
      _ = try? co_await(worker)
    }
    #expect(Set(unwound.entries) == ["worker", "child"])
    #expect(TestStacks.allReturned(size: size))
  }

  // MARK: deadlines

  @Test func aDeadlineCancelsTheScopeWhenItPasses() {
    let scheduler = CoroutineTestLoop()
    let scope = CoScope(timeout: 30, on: scheduler)
    let promise = scope.add(CoPromise<Int>())
    scheduler.advance(by: 29.9)
    #expect(!scope.isCancelled)
    scheduler.advance(by: 0.1)
    #expect(scope.isCancelled)
    #expect(isCancellation(promise.result))
  }

  @Test func aNewDeadlineReplacesTheOld() {
    let scheduler = CoroutineTestLoop()
    let scope = CoScope()
    scope.cancel(after: 1, on: scheduler)
    scope.cancel(after: 5, on: scheduler)
    #expect(scheduler.pendingTimers == 1)
    scheduler.advance(by: 4)
    #expect(!scope.isCancelled)
    scheduler.advance(by: 1)
    #expect(scope.isCancelled)
  }

  @Test func cancellingOrReleasingAScopeCancelsItsDeadline() {
    let scheduler = CoroutineTestLoop()
    let cancelled = CoScope(timeout: 1, on: scheduler)
    cancelled.cancel()
    do { _ = CoScope(timeout: 1, on: scheduler) }
    #expect(scheduler.pendingTimers == 0)
  }

  @Test func aDeadlineUnwindsCoroutinesOnTheLoop() throws {
    let size = TestStacks.uniqueSize()
    let unwound = Journal<String>()
    let result = try CoroutineLoop.run { () -> Result<Void, any Error>? in
      let scope = CoScope()
      let childStarted = CoPromise<Void>()
      let worker = scope.launch(stackSize: size) { () -> Void in
        defer { unwound.append("worker") }
        co_launch(stackSize: size) { () -> Void in
          defer { unwound.append("child") }
          childStarted.fulfill(())
          try co_await(CoPromise<Void>())
        }
        try co_await(CoPromise<Void>())
      }
      // Set once both run, so the deadline finds them suspended rather than not yet started.
      try co_await(childStarted)
      scope.cancel(after: 0.001)
      _ = try? co_await(worker)
      return worker.result
    }
    #expect(isCancellation(result))
    #expect(Set(unwound.entries) == ["worker", "child"])
    #expect(TestStacks.allReturned(size: size))
  }
}

@Suite struct ScopeChainingTests {
  @Test func addedToReturnsTheSameTaskAndPutsItInTheScope() throws {
    let outcome = try CoroutineLoop.run { () -> Bool in
      let scope = CoScope()
      let task = co_launch { () -> Void in try co_await(CoPromise<Void>()) }.added(to: scope)
      #expect(scope.count == 1)
      try co_delay(0)  // let it start, so cancellation unwinds it rather than skipping it
      scope.cancel()
      _ = try? co_await(task)
      return isCancellation(task.result)
    }
    #expect(outcome)
  }
}
