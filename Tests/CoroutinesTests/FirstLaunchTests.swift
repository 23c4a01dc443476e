import Foundation
import Synchronization
import Testing

@testable import Coroutines

/// The runtime's first use in a process happens on several threads at once: whatever it sets up
/// lazily (the page size, the stack pool, the backend) must be set up without a data race.
///
/// What a process does first can only be seen in a fresh process, so the test runs this test
/// binary again with one test selected: several threads, released together, each making the
/// process's first launch. Under ThreadSanitizer (`make sanitize-thread`, which stops at the
/// first report) a race fails the child, and so this test; in other builds the child checks
/// that every thread's coroutine ran.
@Suite struct FirstLaunchTests {
  /// Set in the child's environment to make `severalThreadsLaunchAtOnce` do its work.
  static let childVariable = "COROUTINES_FIRST_LAUNCH_CHILD"

  @Test func theFirstLaunchesOfAProcessOnSeveralThreadsAtOnceDoNotRace() throws {
    let (status, printed) = try runTestInChildProcess(
      "FirstLaunchTests.severalThreadsLaunchAtOnce", setting: Self.childVariable)
    #expect(status == 0, "\(printed)")
    #expect(printed.contains("passed"), "\(printed)")
    #expect(!printed.contains("ThreadSanitizer"), "\(printed)")
  }

  /// The child's work: does nothing unless run by the test above.
  @Test func severalThreadsLaunchAtOnce() throws {
    guard ProcessInfo.processInfo.environment[Self.childVariable] != nil else { return }
    let threads = 8
    let start = DispatchSemaphore(value: 0)
    let done = DispatchGroup()
    let ran = Atomic<Int>(0)
    for _ in 0..<threads {
      done.enter()
      Thread {
        start.wait()
        if (try? CoroutineLoop.run { () -> Int in 1 }) == 1 { ran.add(1, ordering: .relaxed) }
        done.leave()
      }.start()
    }
    for _ in 0..<threads { start.signal() }
    done.wait()
    #expect(ran.load(ordering: .relaxed) == threads)
  }
}
