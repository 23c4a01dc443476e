import Foundation
import Testing

/// A programming error stops a release-built program with the same message as a debug build:
/// the call and the value, not just "Illegal instruction". Runs `.build/release/stop-messages`
/// (built by `make test`) once per misuse.
@Suite(.enabled(if: stopMessagesRelease != nil, missingStopMessagesRelease))
struct StopMessageTests {
  /// A role of the stop-messages program and what its message must say.
  struct Misuse: Sendable, CustomTestStringConvertible {
    let role: String
    let message: String
    var testDescription: String { role }
  }

  static let misuses = [
    Misuse(
      role: "channelCapacityNegative", message: "CoChannel(capacity:): capacity -1 is negative"),
    Misuse(
      role: "stackSizeBelowMinimum",
      message: "co_launch(stackSize:): stack size 1000 is below the minimum of 65536 bytes"),
    Misuse(role: "delayIsNaN", message: "co_delay(_:): the delay is NaN"),
    Misuse(role: "futureTimeoutIsNaN", message: "CoFuture.timeout(_:on:): the timeout is NaN"),
    Misuse(role: "futureDelayIsNaN", message: "CoFuture.delay(_:on:): the delay is NaN"),
    Misuse(role: "awaitTimeoutIsNaN", message: "co_await(_:timeout:): the timeout is NaN"),
    Misuse(role: "scopeTimeoutIsNaN", message: "CoScope(timeout:on:): the timeout is NaN"),
    Misuse(
      role: "retryNoAttempts", message: "CoFuture.retry(_:delay:): attempts is 0, must be >= 1"),
    Misuse(role: "retryDelayIsNaN", message: "CoFuture.retry(_:delay:): the delay is NaN"),
    Misuse(
      role: "backoffJitterOutOfRange",
      message: "CoBackoff.exponential: jitter is 2.0, must be in 0...1"),
    Misuse(
      role: "backoffMultiplierBelowOne",
      message: "CoBackoff.exponential: multiplier is 0.5, must be 1 or more"),
    Misuse(
      role: "selectWithoutCases",
      message: "co_select: no cases were added, so it would wait forever"
    ),
    Misuse(
      role: "sharedStackOnAQueue",
      message: "co_launch(stack: .shared): shared stacks need a CoroutineLoop scheduler"),
    Misuse(
      role: "generatorReentered",
      message: "CoGenerator.next(): this inline generator is already being driven"),
    Misuse(
      role: "channelIteratedOutsideACoroutine",
      message: "for value in CoChannel: iterating a channel suspends"),
    Misuse(role: "allLimitZero", message: "CoFuture.all(_:limit:): limit is 0, must be >= 1"),
    Misuse(
      role: "advanceBackwards",
      message: "CoroutineTestLoop.advance(by: -1.0): time only moves forward"),
    Misuse(role: "waitTimeoutIsNaN", message: "co_wait(fd:for:timeout:): the timeout is NaN"),
    Misuse(
      role: "waitTimeoutIsNegative",
      message: "co_wait(fd:for:timeout:): the timeout -1.0 is negative"),
    Misuse(role: "waitForNoEvents", message: "co_wait(fd:for:timeout:): no events to wait for"),
    Misuse(
      role: "readMaxBytesNegative",
      message: "CoTCPStream.read(upTo:timeout:): maxBytes -1 is negative"),
    Misuse(
      role: "acceptTimeoutIsNegative",
      message: "CoTCPListener.accept(timeout:): the timeout -0.5 is negative"),
    Misuse(
      role: "groupWithoutThreads",
      message: "CoroutineLoopGroup(threads:): 0 threads; a group needs at least one"),
    Misuse(
      role: "groupScheduleAfterShutdown",
      message: "CoroutineLoopGroup.schedule(_:): the group was shut down"),
    Misuse(
      role: "groupScheduleAfterDelayAfterShutdown",
      message: "CoroutineLoopGroup.schedule(after:_:): the group was shut down"),
    Misuse(
      role: "groupLoopScheduleAfterShutdown",
      message: "CoroutineLoop.schedule(_:): the loop's group was shut down"),
    Misuse(
      role: "groupLoopScheduleAfterDelayAfterShutdown",
      message: "CoroutineLoop.schedule(after:_:): the loop's group was shut down"),
    Misuse(
      role: "groupLoopRunFromOutside",
      message: "CoroutineLoop.run(): this loop belongs to a CoroutineLoopGroup"),
    Misuse(
      role: "releasedGroupLoopRun",
      message: "CoroutineLoop.run(): this loop belongs to a CoroutineLoopGroup"),
    Misuse(
      role: "releasedGroupLoopSchedule",
      message: "CoroutineLoop.schedule(_:): the loop's group was shut down"),
    Misuse(
      role: "endedGroupLoopScheduleFromInside",
      message: "CoroutineLoop.schedule(_:): this loop of a CoroutineLoopGroup has ended"),
    // A release build's backtraces name Swift functions too (from the symbol table).
    Misuse(role: "deadlockNamesItsFrames", message: "receiveWhereABacktraceFindsIt"),
    Misuse(role: "deadlockNamesItsFrames", message: "\"stuck\" [channel receive"),
  ]

  @Test(arguments: misuses)
  func aReleaseBuildStopsWithTheMessage(_ misuse: Misuse) throws {
    let binary = try #require(stopMessagesRelease)
    let process = Process()
    process.executableURL = binary
    process.arguments = [misuse.role]
    let errors = Pipe()
    process.standardError = errors
    process.standardOutput = FileHandle.nullDevice
    try process.run()
    let output = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    #expect(process.terminationReason == .uncaughtSignal, "\(output)")
    #expect(output.contains(misuse.message), "\(output)")
  }
}

/// The release build of the stop-messages program, if it was built.
private let stopMessagesRelease: URL? = {
  let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .deletingLastPathComponent().deletingLastPathComponent()
  let binary = root.appendingPathComponent(".build/release/stop-messages")
  return FileManager.default.isExecutableFile(atPath: binary.path) ? binary : nil
}()

private let missingStopMessagesRelease: Comment =
  "no release build of stop-messages: run `make test`, or `swift build -c release --product stop-messages`"
