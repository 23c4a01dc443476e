import CLinux
import Foundation
import Synchronization

/// Debugging aids: a list of every live coroutine, printed on request or on `SIGQUIT`, and a
/// watchdog that reports a coroutine holding its thread for too long.
///
/// ```swift
/// print(CoroutineDiagnostics.dump())          // now
/// CoroutineDiagnostics.dumpOnSIGQUIT()        // on `kill -QUIT <pid>` (or Ctrl-\)
/// CoroutineDiagnostics.startStallWatchdog(threshold: 1)
/// ```
public enum CoroutineDiagnostics {
  /// Every coroutine created and not yet finished, in no particular order, each parked one
  /// with its wait reason, how long it has waited and its backtrace.
  public static func liveCoroutines() -> [CoroutineSnapshot] {
    CoroutineRegistry.snapshots(backtraces: true)
  }

  /// A report of every live coroutine in the shape of a Go goroutine dump: for each, a header
  /// with its number, name, and state or wait reason and time parked, then its frames, then its
  /// scheduler and stack use.
  ///
  /// ```
  /// swift-coroutines: 2 live coroutines
  ///
  /// coroutine 17 "fetch-3" [channel receive, 2.5 s]:
  ///     MyApp.fetch(from:) + 0x8c
  ///     closure #1 in MyApp.main() + 0x31
  ///     …
  ///   "fetch-3" suspended; scheduler: CoroutineLoop 0x5581…; stack: 262144 bytes, 8192 used
  ///
  /// coroutine 18 "ticker" [scheduled]:
  ///   "ticker" scheduled; scheduler: CoroutineLoop 0x5581…; stack: 262144 bytes, 4096 used
  /// ```
  ///
  /// Coroutines that are parked come first, longest-waiting first. A dump of a hundred thousand
  /// parked coroutines takes about half a second: each place where coroutines park is unwound
  /// and named once, and the coroutines parked there are only checked against it.
  public static func dump() -> String {
    report(liveCoroutines())
  }

  /// `coroutines` as ``dump()`` shows them.
  static func report(_ coroutines: [CoroutineSnapshot]) -> String {
    var text = "swift-coroutines: \(coroutines.count) live coroutine"
    text += coroutines.count == 1 ? "\n" : "s\n"
    for coroutine in coroutines.sorted(by: longestParkedFirst) {
      text += "\n"
      coroutine.writeEntry(to: &text)
    }
    return text
  }

  /// Parked before unparked, then the longest wait first, then by number.
  private static func longestParkedFirst(_ a: CoroutineSnapshot, _ b: CoroutineSnapshot) -> Bool {
    if a.isParked != b.isParked { return a.isParked }
    let (waitA, waitB) = (a.waitingFor ?? 0, b.waitingFor ?? 0)
    return waitA != waitB ? waitA > waitB : a.number < b.number
  }

  /// The parked coroutines that have waited more than `seconds` on their scheduler's clock,
  /// longest first: for a health check that fails when a wait is stuck, or a periodic log line.
  ///
  /// ```swift
  /// let stuck = CoroutineDiagnostics.waitingLongerThan(30)
  /// for coroutine in stuck {
  ///   print("stuck: \(coroutine.name ?? "?") [\(coroutine.waitReason ?? "")]")
  /// }
  /// ```
  public static func waitingLongerThan(_ seconds: Double) -> [CoroutineSnapshot] {
    coPrecondition(
      !seconds.isNaN, "CoroutineDiagnostics.waitingLongerThan(_:): the time is NaN")
    return liveCoroutines()
      .filter { ($0.waitingFor ?? -1) > seconds }
      .sorted { ($0.waitingFor ?? 0) > ($1.waitingFor ?? 0) }
  }

  // MARK: SIGQUIT

  private static let quitReader = Mutex<Bool>(false)
  /// Called after each dump made for `SIGQUIT`; lets tests wait for it.
  static let afterQuitDump = Mutex<(@Sendable () -> Void)?>(nil)

  /// From now on, `SIGQUIT` prints ``dump()`` to standard error instead of ending the process
  /// with a core dump. The signal handler only writes a byte to a pipe; a dedicated thread
  /// makes the dump, so it is safe whatever the signal interrupted. Calling it again does
  /// nothing.
  public static func dumpOnSIGQUIT() {
    quitReader.withLock { started in
      guard !started else { return }
      var ends: [Int32] = [-1, -1]
      guard pipe(&ends) == 0 else { return }
      for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
      _ = fcntl(ends[1], F_SETFL, fcntl(ends[1], F_GETFL) | O_NONBLOCK)
      let readEnd = ends[0]
      let reader = Thread {
        var byte: UInt8 = 0
        while true {
          let count = read(readEnd, &byte, 1)
          if count < 0 && errno == EINTR { continue }
          guard count > 0 else { return }
          writeToStandardError(dump())
          afterQuitDump.withLock { $0 }?()
        }
      }
      reader.name = "swift-coroutines SIGQUIT"
      reader.start()
      started = cu_sigquit_notify(ends[1]) == 0
    }
  }

  // MARK: Stall watchdog

  private static let watchdog = Mutex<StallWatchdog?>(nil)

  /// Starts a thread that looks at the running coroutines a few times per `threshold` and
  /// reports, once, each one that has run without suspending for `threshold` seconds or more:
  /// a coroutine that blocks its thread (with `sleep`, a lock or blocking I/O) stops every
  /// other coroutine of its scheduler. Replaces a watchdog already running.
  ///
  /// - Parameters:
  ///   - threshold: Seconds a coroutine may run between two suspensions.
  ///   - report: Called on the watchdog's thread for each stall; by default a line on standard
  ///     error.
  public static func startStallWatchdog(
    threshold: Double, report: @escaping @Sendable (CoroutineStall) -> Void = printStall
  ) {
    coPrecondition(
      threshold > 0 && threshold.isFinite,
      "CoroutineDiagnostics.startStallWatchdog(threshold:): \(threshold) is not a positive time")
    let next = StallWatchdog(threshold: threshold, report: report)
    watchdog.withLock { current in
      current?.stop()
      current = next
    }
    next.start()
  }

  /// Stops the stall watchdog, if one is running.
  public static func stopStallWatchdog() {
    watchdog.withLock { current in
      current?.stop()
      current = nil
    }
  }

  /// Writes `stall` to standard error: the default report of the watchdog.
  @Sendable public static func printStall(_ stall: CoroutineStall) {
    writeToStandardError("swift-coroutines: \(stall)\n")
  }

  private static func writeToStandardError(_ text: String) {
    var text = text
    text.withUTF8 { bytes in
      var offset = 0
      while offset < bytes.count {
        let written = write(STDERR_FILENO, bytes.baseAddress! + offset, bytes.count - offset)
        if written <= 0 { break }
        offset += written
      }
    }
  }
}

/// A coroutine that held its thread longer than the watchdog's threshold.
public struct CoroutineStall: Sendable, CustomStringConvertible {
  /// The coroutine, as it was when the stall was noticed.
  public let coroutine: CoroutineSnapshot
  /// Seconds it had been running without suspending when noticed (at least the threshold).
  public let seconds: Double

  /// A sentence that names the coroutine and what to do about it.
  public var description: String {
    let name = coroutine.name.map { "\"\($0)\"" } ?? "(unnamed)"
    let time = (seconds * 100).rounded() / 100
    return "coroutine \(name) on \(coroutine.scheduler) has run for \(time) s without "
      + "suspending; it blocks its thread and every coroutine waiting for it. Suspend instead "
      + "of blocking: co_delay instead of sleep, co_await instead of a blocking wait."
  }
}

/// The watchdog's thread and what it remembers between two looks.
private final class StallWatchdog: @unchecked Sendable {  // `stopped` is under `lock`
  private let threshold: UInt64
  private let report: @Sendable (CoroutineStall) -> Void
  private let lock = ConditionLock()
  private var stopped = false

  init(threshold: Double, report: @escaping @Sendable (CoroutineStall) -> Void) {
    self.threshold = nanoseconds(
      fromSeconds: threshold, in: "CoroutineDiagnostics.startStallWatchdog(threshold:)")
    self.report = report
  }

  func start() {
    let thread = Thread { [self] in run() }
    thread.name = "swift-coroutines watchdog"
    thread.start()
  }

  func stop() {
    lock.withLock {
      stopped = true
      lock.signal()
    }
  }

  /// For each running coroutine: its switch count and since when it has stood still.
  private struct Seen {
    var switches: UInt64
    var since: UInt64
    var reported: Bool
  }

  private func run() {
    var seen: [UInt: Seen] = [:]
    let interval = max(threshold / 4, 1_000_000)
    while true {
      let keepGoing = lock.withLock { () -> Bool in
        if !stopped { lock.wait(until: monotonicNanoseconds() &+ interval) }
        return !stopped
      }
      guard keepGoing else { return }
      let now = monotonicNanoseconds()
      var next: [UInt: Seen] = [:]
      for coroutine in CoroutineRegistry.snapshots() where coroutine.isRunning {
        guard var entry = seen[coroutine.identity], entry.switches == coroutine.switches else {
          next[coroutine.identity] = Seen(switches: coroutine.switches, since: now, reported: false)
          continue
        }
        if !entry.reported, now &- entry.since >= threshold {
          entry.reported = true
          report(CoroutineStall(coroutine: coroutine, seconds: Double(now &- entry.since) / 1e9))
        }
        next[coroutine.identity] = entry
      }
      seen = next
    }
  }
}
