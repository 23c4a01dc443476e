import Coroutines
import Foundation

/// Prints what a walkthrough does, one line per step, stamped with the time since the
/// walkthrough started and the kind of thread that said it, so a reader can see the
/// concurrency: `[+   12.3 ms] loop       | Fetching Swift Weekly... (3/20)`.
///
/// Any thread may narrate; lines are kept whole and in the order they were said.
public final class Narrator: Sendable {
  private let start: UInt64
  private let sink: @Sendable (String) -> Void
  private let recorded = Locked<[String]>([])

  /// Starts the clock now; `sink` receives every finished line (standard output by default).
  public init(sink: @escaping @Sendable (String) -> Void = { printLine($0) }) {
    start = DispatchTime.now().uptimeNanoseconds
    self.sink = sink
  }

  /// A narrator that only records, for tests.
  public static func silent() -> Narrator { Narrator(sink: { _ in }) }

  /// Milliseconds since the narrator was created.
  public var elapsedMilliseconds: Double {
    Double(DispatchTime.now().uptimeNanoseconds - start) / 1_000_000
  }

  /// Says `message`, stamped with the time and the thread kind.
  public func say(_ message: String) {
    let stamp = String(format: "[+%7.1f ms]", elapsedMilliseconds)
    let line =
      "\(stamp) \(Narrator.threadKind.padding(toLength: 11, withPad: " ", startingAt: 0))| \(message)"
    recorded.withLock { lines in
      lines.append(message)
      sink(line)
    }
  }

  /// Prints `text` as is, without a stamp (headings, tables).
  public func show(_ text: String) {
    recorded.withLock { lines in
      lines.append(text)
      sink(text)
    }
  }

  /// Every message said or shown so far, without stamps.
  public var messages: [String] { recorded.value }

  /// "loop" on a thread that runs a `CoroutineLoop`, "main" on the main thread outside any
  /// loop, "background" elsewhere.
  static var threadKind: String {
    if CoroutineLoop.current != nil { return "loop" }
    return Thread.isMainThread ? "main" : "background"
  }
}
