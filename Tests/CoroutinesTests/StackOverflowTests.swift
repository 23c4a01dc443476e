import Dispatch
import Glibc
import Testing

@testable import Coroutines

/// A stack overflow inside a coroutine is reported, with the coroutine's name and stack size
/// and how to raise it, on whichever thread it happens; then the process aborts. Each overflow
/// happens in a child process (a Swift Testing exit test).
@Suite struct StackOverflowTests {
  @Test func overflowOnTheLoopThreadIsReported() async throws {
    let result = try await #require(
      processExitsWith: .signal(SIGABRT), observing: [\.standardErrorContent]
    ) {
      try CoroutineLoop.run {
        let task = co_launch(
          name: "deep recursion on the loop", stackSize: CoroutineStack.minimumSize
        ) { recurse(0) }
        _ = try co_await(task)
      }
    }
    expectOverflowReport(result, name: "deep recursion on the loop")
  }

  @Test func overflowOnADispatchWorkerIsReported() async throws {
    // Dispatch's worker threads have no alternate signal stack of their own.
    let result = try await #require(
      processExitsWith: .signal(SIGABRT), observing: [\.standardErrorContent]
    ) {
      let queue = DispatchQueue(label: "StackOverflowTests.worker")
      let done = DispatchSemaphore(value: 0)
      let task = co_launch(
        on: queue, name: "deep recursion on a queue", stackSize: CoroutineStack.minimumSize
      ) { recurse(0) }
      task.whenComplete { _ in done.signal() }
      done.wait()
    }
    expectOverflowReport(result, name: "deep recursion on a queue")
  }

  @Test func overflowOnASharedStackIsReported() async throws {
    let result = try await #require(
      processExitsWith: .signal(SIGABRT), observing: [\.standardErrorContent]
    ) {
      try CoroutineLoop.run {
        let task = co_launch(
          name: "deep recursion on a shared stack", stackSize: CoroutineStack.minimumSize,
          stack: .shared
        ) { recurse(0) }
        _ = try co_await(task)
      }
    }
    expectOverflowReport(result, name: "deep recursion on a shared stack")
  }

  @Test func aFaultOutsideEveryCoroutineStackIsPassedOn() async throws {
    let result = try await #require(
      processExitsWith: .failure, observing: [\.standardErrorContent]
    ) {
      try CoroutineLoop.run {
        // A wild write inside a coroutine, but far from its stack: not an overflow.
        UnsafeMutablePointer<Int>(bitPattern: 0x10)!.pointee = 1
      }
    }
    let output = String(decoding: result.standardErrorContent, as: UTF8.self)
    // The previous handler has it: the default action, or a sanitizer's own SEGV report.
    let passedOn =
      result.exitStatus == .signal(SIGSEGV)
      || output.contains("Sanitizer: SEGV on unknown address 0x000000000010")
    #expect(passedOn, "\(output)")
    #expect(!output.contains("stack overflow"))
  }

  private func expectOverflowReport(
    _ result: ExitTest.Result, name: String, sourceLocation: SourceLocation = #_sourceLocation
  ) {
    let output = String(decoding: result.standardErrorContent, as: UTF8.self)
    #expect(
      output.contains("stack overflow in coroutine \"\(name)\""), "\(output)",
      sourceLocation: sourceLocation)
    #expect(
      output.contains("its \(CoroutineStack.minimumSize)-byte stack"),
      sourceLocation: sourceLocation)
    #expect(
      output.contains("the stackSize: of co_launch (or of CoroutineLoop.run, for its body)")
        && output.contains("CoroutineStack.defaultSize"),
      sourceLocation: sourceLocation)
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
