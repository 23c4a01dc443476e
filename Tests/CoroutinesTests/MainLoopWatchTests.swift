import Foundation
import Testing

@testable import Coroutines

/// A coroutine launched without a scheduler outside any coroutine and any running loop goes to
/// `CoroutineLoop.main`; a program that never runs that loop is told so on standard error when
/// it exits, and a program that runs it hears nothing.
///
/// Only a fresh process shows what happens at its exit, so each test runs this test binary again
/// with one child test selected, and reads what the child printed.
@Suite struct MainLoopWatchTests {
  /// Set in the child's environment to make the child tests do their work.
  static let childVariable = "COROUTINES_MAIN_LOOP_WATCH_CHILD"

  static let expected =
    "swift-coroutines: co_launch scheduled 2 coroutine(s) on CoroutineLoop.main, but the main "
    + "loop never ran: call CoroutineLoop.main.run() or use CoroutineLoop.run { }"

  /// Runs the child test `name` in a fresh process; its exit status and everything it printed.
  static func runChild(_ name: String) throws -> (status: Int32, printed: String) {
    try runTestInChildProcess("MainLoopWatchTests.\(name)", setting: childVariable)
  }

  @Test func launchesOnAMainLoopThatNeverRunsAreReportedAtExit() throws {
    let child = try Self.runChild("childLaunchesTwiceAndEnds")
    #expect(child.status == 0, "\(child.printed)")
    #expect(child.printed.contains("passed"), "\(child.printed)")
    #expect(child.printed.contains(Self.expected), "\(child.printed)")
  }

  @Test func launchesOnAMainLoopThatRunsAreNotReported() throws {
    let child = try Self.runChild("childLaunchesTwiceAndRunsTheMainLoop")
    #expect(child.status == 0, "\(child.printed)")
    #expect(child.printed.contains("passed"), "\(child.printed)")
    #expect(!child.printed.contains("never ran"), "\(child.printed)")
  }

  /// The first child's work: two launches at the top level, and the process ends.
  @Test func childLaunchesTwiceAndEnds() {
    guard ProcessInfo.processInfo.environment[Self.childVariable] != nil else { return }
    #expect(CoroutineLoop.current == nil && CoroutineHandle.current == nil)
    co_launch { print("never printed") }
    co_launch { print("never printed") }
    #expect(MainLoopWatch.messageAtExit == Self.expected)
  }

  /// The second child's work: the same launches, then the main loop runs them.
  @Test func childLaunchesTwiceAndRunsTheMainLoop() throws {
    guard ProcessInfo.processInfo.environment[Self.childVariable] != nil else { return }
    let first = co_launch { 1 }
    let second = co_launch { 2 }
    CoroutineLoop.main.run()
    #expect(try first.result?.get() == 1)
    #expect(try second.result?.get() == 2)
    #expect(MainLoopWatch.messageAtExit == nil)
  }
}
