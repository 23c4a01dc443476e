import Coroutines
import Dispatch
import Glibc

// Commits one programming error, named by the first argument, so that a test can check the
// message it stops with. `make test` builds this in release, where Swift's own `precondition`
// prints nothing: the test proves that the library's checks still name the call and the value.
// Each role and its expected message are listed in Tests/CoroutinesTests/StopMessageTests.swift.

/// The misuses, by role. Each stops the process; returning means the check is missing.
let misuses: [String: () throws -> Void] = [
  "channelCapacityNegative": { _ = CoChannel<Int>(capacity: -1) },
  "stackSizeBelowMinimum": { co_launch(stackSize: 1000) {} },
  "delayIsNaN": { try CoroutineLoop.run { try co_delay(.nan) } },
  "futureTimeoutIsNaN": { _ = CoPromise<Int>().timeout(.nan) },
  "futureDelayIsNaN": { _ = CoPromise<Int>().delay(.nan) },
  "awaitTimeoutIsNaN": {
    try CoroutineLoop.run { _ = try co_await(CoPromise<Int>(), timeout: .nan) }
  },
  "scopeTimeoutIsNaN": { _ = CoScope(timeout: .nan) },
  "retryNoAttempts": { _ = CoFuture<Int>.retry(0) { CoPromise<Int>() } },
  "retryDelayIsNaN": { _ = CoFuture<Int>.retry(3, delay: .nan) { CoPromise<Int>() } },
  "backoffJitterOutOfRange": { _ = CoBackoff.exponential(initial: 1, jitter: 2) },
  "backoffMultiplierBelowOne": { _ = CoBackoff.exponential(initial: 1, multiplier: 0.5) },
  "selectWithoutCases": {
    try CoroutineLoop.run { _ = try co_select { (_: CoSelect<Int>) in } }
  },
  "sharedStackOnAQueue": {
    co_launch(on: DispatchQueue(label: "stop-messages"), stack: .shared) {}
  },
  "generatorReentered": {
    final class Slot: @unchecked Sendable {  // reason: used on this thread only
      var generator: CoGenerator<Int>?
    }
    let slot = Slot()
    slot.generator = co_sequence { yield in try yield(slot.generator?.next() ?? 0) }
    _ = slot.generator?.next()
  },
  "channelIteratedOutsideACoroutine": {
    for _ in CoChannel<Int>(capacity: 1) {}
  },
  "allLimitZero": { _ = CoFuture<Int>.all([1], limit: 0) { _ in CoPromise<Int>() } },
  "advanceBackwards": { CoroutineTestLoop().advance(by: -1) },
  "waitTimeoutIsNaN": {
    try CoroutineLoop.run { _ = try co_wait(fd: 0, for: .readable, timeout: .nan) }
  },
  "waitTimeoutIsNegative": {
    try CoroutineLoop.run { _ = try co_wait(fd: 0, for: .readable, timeout: -1) }
  },
  "waitForNoEvents": { try CoroutineLoop.run { _ = try co_wait(fd: 0, for: []) } },
  "readMaxBytesNegative": {
    try CoroutineLoop.run {
      let listener = try CoTCPListener()
      let stream = try CoTCPStream.connect(host: "127.0.0.1", port: listener.port)
      _ = try stream.read(upTo: -1)
    }
  },
  "acceptTimeoutIsNegative": {
    try CoroutineLoop.run { _ = try CoTCPListener().accept(timeout: -0.5) }
  },
  "groupWithoutThreads": { _ = CoroutineLoopGroup(threads: 0) },
  "groupScheduleAfterShutdown": {
    let group = CoroutineLoopGroup(threads: 1)
    group.shutdown()
    group.schedule {}
  },
  "groupScheduleAfterDelayAfterShutdown": {
    let group = CoroutineLoopGroup(threads: 1)
    group.shutdown()
    _ = group.schedule(after: 1) {}
  },
  "groupLoopScheduleAfterShutdown": {
    let group = CoroutineLoopGroup(threads: 1)
    group.shutdown()
    group.loops[0].schedule {}
  },
  "groupLoopScheduleAfterDelayAfterShutdown": {
    let group = CoroutineLoopGroup(threads: 1)
    group.shutdown()
    _ = group.loops[0].schedule(after: 1) {}
  },
  "groupLoopRunFromOutside": {
    let group = CoroutineLoopGroup(threads: 1)
    group.loops[0].run()
  },
  "releasedGroupLoopRun": { loopOfAReleasedGroup().run() },
  "releasedGroupLoopSchedule": { loopOfAReleasedGroup().schedule {} },
  "endedGroupLoopScheduleFromInside": {
    let group = CoroutineLoopGroup(threads: 2)
    let started = CoPromise<Void>()
    // A coroutine of loop 1 outlives loop 0, which ends once the group is shut down.
    co_launch(on: group.loops[1]) {
      try co_await(on: group.loops[0]) {}  // loop 0 has started: it runs until it ends
      started.fulfill(())
      while group.loops[0].isRunning { try co_delay(0.001) }
      group.loops[0].schedule {}
    }
    try CoroutineLoop.run { try co_await(started) }
    group.shutdown()
  },
  // Not a check of the library's but of its diagnostics in an optimised build: a deadlock
  // report names the parked coroutine's functions, read from the binary's symbol table.
  "deadlockNamesItsFrames": {
    let loop = CoroutineTestLoop()
    let channel = CoChannel<Int>()
    co_launch(on: loop, name: "stuck") { _ = try receiveWhereABacktraceFindsIt(channel) }
    loop.runUntilIdle()
    do { try loop.checkForDeadlock() } catch { fatalError("\(error)") }
  },
]

/// Parks from a frame of its own, which a backtrace of the release build must name.
@inline(never)
func receiveWhereABacktraceFindsIt(_ channel: CoChannel<Int>) throws -> Int {
  try channel.receive()
}

/// A loop of a group that was shut down and released.
func loopOfAReleasedGroup() -> CoroutineLoop {
  let group = CoroutineLoopGroup(threads: 1)
  group.shutdown()
  return group.loops[0]
}

let arguments = CommandLine.arguments.dropFirst()
guard let role = arguments.first, let misuse = misuses[role] else {
  print("usage: stop-messages <role>; roles: \(misuses.keys.sorted().joined(separator: ", "))")
  exit(2)
}
try misuse()
print("stop-messages: \(role) returned without stopping")
exit(1)
