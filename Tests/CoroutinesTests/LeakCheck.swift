import Glibc
import Testing

@testable import Coroutines

/// The suite-wide leak check: when the test process exits, after every test has finished, no
/// coroutine may be alive and, once the pool is drained, no stack may be mapped.
///
/// Tests run in parallel, so no test can check the process-wide counts while others run.
/// Instead the check runs at exit: it is registered with `atexit` while Swift Testing plans the
/// run (it evaluates the condition of the test below before any test starts), and it fails the
/// run by exiting with status 1 and a dump of what was left. A run filtered so that the test
/// below is not planned does not check.
enum LeakCheck {
  static let installed: Bool = {
    atexit { LeakCheck.checkAtExit() }
    return true
  }()

  private static func checkAtExit() {
    let live = CoroutineStatistics.current.liveCoroutines
    CoroutineStack.drainPool()
    let mapped = CoroutineStatistics.current.mappedStacks
    guard live != 0 || mapped != 0 else { return }
    let report =
      "\nLEAK CHECK FAILED: \(live) coroutines alive and \(mapped) stacks mapped once every test "
      + "had finished (expected 0 and 0).\n" + CoroutineDiagnostics.dump()
    var text = report
    text.withUTF8 { bytes in _ = write(STDERR_FILENO, bytes.baseAddress, bytes.count) }
    _exit(1)
  }
}

@Suite struct LeakCheckTests {
  @Test(.enabled(if: LeakCheck.installed))
  func everyCoroutineAndStackIsCheckedWhenTheRunEnds() {
    #expect(LeakCheck.installed)
  }
}
