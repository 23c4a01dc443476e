import Dispatch
import Glibc
import Testing

@testable import Coroutines

/// A stack overflow inside a coroutine is reported, with the coroutine's name and stack size
/// and how to raise it, on whichever thread it happens; then the process aborts. Each overflow
/// happens in a child process (see ``ChildProcess``).
@Suite struct StackOverflowTests {
  @Test func overflowOnTheLoopThreadIsReported() throws {
    let outcome = try ChildProcess.run("childOverflowOnLoop")
    expectOverflowReport(outcome, name: "deep recursion on the loop")
  }

  @Test func overflowOnADispatchWorkerIsReported() throws {
    let outcome = try ChildProcess.run("childOverflowOnQueue")
    expectOverflowReport(outcome, name: "deep recursion on a queue")
  }

  @Test func faultOutsideAnyCoroutineStackIsPassedOn() throws {
    let outcome = try ChildProcess.run("childFaultOutsideCoroutineStack")
    // The previous handler has it: the default action, or a sanitizer's own SEGV report.
    let passedOn =
      (outcome.signaled && outcome.status == SIGSEGV)
      || outcome.output.contains("Sanitizer: SEGV on unknown address 0x000000000010")
    #expect(passedOn, "\(outcome.output)")
    #expect(!outcome.output.contains("stack overflow"))
  }

  private func expectOverflowReport(
    _ outcome: ChildProcess.Outcome, name: String, sourceLocation: SourceLocation = #_sourceLocation
  ) {
    #expect(
      outcome.signaled && outcome.status == SIGABRT, "\(outcome.output)",
      sourceLocation: sourceLocation)
    #expect(
      outcome.output.contains("stack overflow in coroutine \"\(name)\""), "\(outcome.output)",
      sourceLocation: sourceLocation)
    #expect(
      outcome.output.contains("its \(CoroutineStack.minimumSize)-byte stack"),
      sourceLocation: sourceLocation)
    #expect(
      outcome.output.contains("co_launch(name:stackSize:)")
        && outcome.output.contains("CoroutineStack.defaultSize"),
      sourceLocation: sourceLocation)
  }

  // MARK: Child side: each is skipped unless a parent above started it.

  @Test(.enabled(if: ChildProcess.isRunning("childOverflowOnLoop")))
  func childOverflowOnLoop() throws {
    try CoroutineLoop.run {
      let task = co_launch(
        name: "deep recursion on the loop", stackSize: CoroutineStack.minimumSize
      ) {
        recurse(0)
      }
      _ = try co_await(task)
    }
    Issue.record("the overflow did not end the process")
  }

  @Test(.enabled(if: ChildProcess.isRunning("childOverflowOnQueue")))
  func childOverflowOnQueue() throws {
    let queue = DispatchQueue(label: "StackOverflowTests.worker")
    let done = DispatchSemaphore(value: 0)
    let task = co_launch(
      on: queue, name: "deep recursion on a queue", stackSize: CoroutineStack.minimumSize
    ) {
      recurse(0)
    }
    task.whenComplete { _ in done.signal() }
    done.wait()
    Issue.record("the overflow did not end the process")
  }

  @Test(.enabled(if: ChildProcess.isRunning("childFaultOutsideCoroutineStack")))
  func childFaultOutsideCoroutineStack() throws {
    try CoroutineLoop.run {
      // A wild write inside a coroutine, but far from its stack: not an overflow.
      let wild = UnsafeMutablePointer<Int>(bitPattern: 0x10)!
      wild.pointee = 1
    }
    Issue.record("the fault did not end the process")
  }
}

/// Recursion that the optimizer cannot turn into a loop: every frame keeps a buffer alive
/// until the deeper call returns.
@inline(never)
private func recurse(_ depth: Int) -> Int {
  var buffer = (depth, depth, depth, depth, depth, depth, depth, depth)
  let deeper = withUnsafeMutableBytes(of: &buffer) { bytes in
    bytes[0] &+= 1
    return recurse(depth + 1)
  }
  return deeper &+ buffer.0
}
