import Glibc
import Synchronization

/// Tells a program that launched coroutines on ``CoroutineLoop/main`` and never ran it.
///
/// A coroutine launched without a scheduler outside any coroutine and any running loop (a
/// `co_launch` at the top level of `main.swift`) goes to ``CoroutineLoop/main``, which runs it
/// only once the program calls ``CoroutineLoop/run()`` on it. A program that ends without doing
/// so would drop such coroutines without a word. The first of those launches schedules a marker
/// job ahead of its coroutine on the main loop and registers an exit hook: at exit, if the marker
/// never ran, the hook says so on standard error. A warning at exit rather than a stop at the
/// launch, since launching first and running the loop afterwards is correct (and how a program
/// that drives `CoroutineLoop.main` by hand starts); only the end of the process knows that the
/// loop never came. (Kotlin drops a `GlobalScope.launch` whose `main` returns without a word.)
/// It costs one atomic increment per such launch, and nothing on any other path.
enum MainLoopWatch {
  /// Coroutines launched on the main loop by default.
  private static let launched = Atomic<Int>(0)
  /// Whether the marker job ran: the main loop ran after the first such launch.
  private static let loopRan = Atomic<Bool>(false)

  /// Records a coroutine about to be launched on the main loop because nothing else was running;
  /// called before the coroutine's start is queued, so the marker is queued ahead of it.
  static func launchingByDefault() {
    guard launched.wrappingAdd(1, ordering: .relaxed).oldValue == 0 else { return }
    CoroutineLoop.main.schedule { MainLoopWatch.loopRan.store(true, ordering: .releasing) }
    atexit { MainLoopWatch.reportAtExit() }
  }

  /// The line printed at exit, if any.
  static var messageAtExit: String? {
    let count = launched.load(ordering: .relaxed)
    guard count > 0, !loopRan.load(ordering: .acquiring) else { return nil }
    return "swift-coroutines: co_launch scheduled \(count) coroutine(s) on CoroutineLoop.main, "
      + "but the main loop never ran: call CoroutineLoop.main.run() or use CoroutineLoop.run { }"
  }

  private static func reportAtExit() {
    guard let message = messageAtExit else { return }
    let line = message + "\n"
    _ = line.utf8CString.withUnsafeBufferPointer {
      write(STDERR_FILENO, $0.baseAddress, $0.count - 1)
    }
  }
}
