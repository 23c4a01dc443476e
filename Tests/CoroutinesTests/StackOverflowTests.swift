import CUContext
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

  @Test func overflowOnAStackGuardedWithOthersInOneRunIsReported() async throws {
    let result = try await #require(
      processExitsWith: .signal(SIGABRT), observing: [\.standardErrorContent]
    ) {
      try CoroutineLoop.run {
        // Forty parked coroutines take a fresh slab's first slots; the next slot's guard was
        // installed with the run that began at slot 32, not on its own.
        try overflowAfterParking(40, name: "deep recursion after forty")
      }
    }
    expectOverflowReport(result, name: "deep recursion after forty")
  }

  @Test func overflowIsReportedWhereTheKernelHasNoGuardMarkers() async throws {
    let result = try await #require(
      processExitsWith: .signal(SIGABRT), observing: [\.standardErrorContent]
    ) {
      // As on a kernel before Linux 6.13: every guard is an mprotect'ed region.
      cu_stack_force_guard_fallback()
      try CoroutineLoop.run {
        try overflowAfterParking(40, name: "deep recursion under mprotect guards") {
          // Each of those guards is a mapping of its own: stop without the report otherwise.
          if protectedRegions(of: CoroutineStack.guardSize) < 40 { exit(3) }
        }
      }
    }
    expectOverflowReport(result, name: "deep recursion under mprotect guards")
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

/// Parks `count` coroutines on stacks of the minimum size, calls `parked`, then overflows one
/// more such stack.
private func overflowAfterParking(
  _ count: Int, name: String, parked: () -> Void = {}
) throws {
  let gate = CoPromise<Void>()
  for _ in 0..<count {
    co_launch(stackSize: CoroutineStack.minimumSize) { try co_await(gate) }
  }
  try co_delay(0)
  parked()
  let task = co_launch(name: name, stackSize: CoroutineStack.minimumSize) { recurse(0) }
  _ = try co_await(task)
}

/// How many of the process's mappings are inaccessible and `size` bytes long.
private func protectedRegions(of size: Int) -> Int {
  guard let file = fopen("/proc/self/maps", "r") else { return 0 }
  defer { fclose(file) }
  var count = 0
  var line = [CChar](repeating: 0, count: 4096)
  while fgets(&line, Int32(line.count), file) != nil {
    // "start-end perms offset device inode path", the addresses in hexadecimal.
    let bytes = line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
    let fields = String(decoding: bytes, as: UTF8.self).split(separator: " ")
    let range = fields.first?.split(separator: "-") ?? []
    guard fields.count >= 2, range.count == 2, let low = UInt(range[0], radix: 16),
      let high = UInt(range[1], radix: 16)
    else { continue }
    if fields[1] == "---p" && high - low == UInt(size) { count += 1 }
  }
  return count
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
