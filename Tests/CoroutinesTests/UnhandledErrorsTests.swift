import Testing

@testable import Coroutines

@Suite struct UnhandledErrorsTests {
  /// Runs `body` in a loop with a handler that records "name: error" lines.
  func reports(_ body: @escaping () throws -> Void) throws -> [String] {
    let log = Journal<String>()
    try CoUnhandledErrors.withHandler({ name, error in log.append("\(name ?? "-"): \(error)") }) {
      try CoroutineLoop.run(body)
    }
    return log.entries
  }

  @Test func aDiscardedFailingTaskIsReportedOnceWithItsName() throws {
    let lines = try reports {
      co_launch(name: "worker") { () -> Void in throw Failure.disk }
    }
    #expect(lines == ["worker: disk"])
  }

  @Test func theDocumentedExample() throws {
    let reported = CoPromise<String>()
    try CoUnhandledErrors.withHandler({ _, error in reported.fulfill("\(error)") }) {
      try CoroutineLoop.run { _ = co_launch(name: "worker") { throw Failure.disk } }
    }
    #expect(value(reported.result) == "disk")
  }

  @Test func anAwaitedErrorIsNotReported() throws {
    let lines = try reports {
      let task = co_launch { () -> Void in throw Failure.disk }
      _ = try? co_await(task)
    }
    #expect(lines.isEmpty)
  }

  @Test func anObservedErrorIsNotReported() throws {
    let lines = try reports {
      co_launch { () -> Void in throw Failure.first }.whenComplete { _ in }
      let read = co_launch { () -> Void in throw Failure.second }
      try co_delay(0.001)
      _ = read.result
      _ = co_launch { () -> Int in throw Failure.third }.map { $0 + 1 }
    }
    #expect(lines.isEmpty)
  }

  @Test func cancellationIsNotReported() throws {
    let lines = try reports {
      co_launch { () -> Void in try co_await(CoPromise<Void>()) }.cancel()
    }
    #expect(lines.isEmpty)
  }

  @Test func aTaskOnlyInAScopeIsStillUnobserved() throws {
    let lines = try reports {
      let scope = CoScope()
      scope.add(co_launch(name: "scoped") { () -> Void in throw Failure.disk })
      try co_delay(0.001)
    }
    #expect(lines == ["scoped: disk"])
  }

  @Test func aHeldTaskIsReportedWhenReleased() throws {
    let log = Journal<String>()
    var held: [CoTask<Void>] = []
    try CoUnhandledErrors.withHandler({ name, _ in log.append(name ?? "-") }) {
      held = try CoroutineLoop.run {
        [co_launch(name: "kept") { () -> Void in throw Failure.disk }]
      }
    }
    #expect(held.first?.isSettled == true)
    #expect(log.entries.isEmpty)
    held = []
    #expect(log.entries == ["kept"])
  }

  @Test func grandchildrenInheritTheHandler() throws {
    let lines = try reports {
      co_launch { () -> Void in
        co_launch(name: "grandchild") { () -> Void in throw Failure.third }
      }
    }
    #expect(lines == ["grandchild: third"])
  }

  @Test func theStandardErrorLineNamesTheCoroutineAndTheError() {
    #expect(
      CoUnhandledErrors.message(coroutineName: "loader", error: Failure.disk)
        == "swift-coroutines: unhandled error in coroutine 'loader': disk")
    #expect(
      CoUnhandledErrors.message(coroutineName: nil, error: CoroutineError.timedOut)
        == "swift-coroutines: unhandled error in coroutine (unnamed): the operation timed out")
  }

  @Test func withHandlerRestoresThePreviousHandler() throws {
    let outer = Journal<String>()
    let inner = Journal<String>()
    try CoUnhandledErrors.withHandler({ name, _ in outer.append(name ?? "-") }) {
      try CoUnhandledErrors.withHandler({ name, _ in inner.append(name ?? "-") }) {
        try CoroutineLoop.run { _ = co_launch(name: "a") { () -> Void in throw Failure.disk } }
      }
      try CoroutineLoop.run { _ = co_launch(name: "b") { () -> Void in throw Failure.disk } }
    }
    #expect(inner.entries == ["a"])
    #expect(outer.entries == ["b"])
  }
}
