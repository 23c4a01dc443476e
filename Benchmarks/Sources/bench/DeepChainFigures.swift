import CBaselines
import Coroutines
import Foundation

/// Long chains: settling, cancelling and retrying through a million future links, cancelling
/// and finishing a million nested coroutines. Each figure is the time per link at a million,
/// beside the time per link at a thousand in the same run: a ratio near 1 says the work is
/// linear in the chain's length (and it ran at all: the stack stays bounded).
/// `bench --deep` prints these rows alone.
enum DeepChainFigures {
  static let depths = (short: 1_000, long: 1_000_000)

  /// The figures: a label and a name for the child process.
  static let figures: [(label: String, name: String, perBackend: Bool)] = [
    ("settle a chain of maps, per link", "deep-map", false),
    ("cancel a chain of maps from its tail, per link", "deep-cancel-links", false),
    ("retry attempts rejected at once, per attempt", "deep-retry", false),
    ("cancel nested coroutines (shared stacks), per coroutine", "deep-cancel-nested", true),
    (
      "launch and finish nested coroutines (shared stacks), per coroutine", "deep-finish-nested",
      true
    ),
  ]

  /// Runs a figure of this file if this process is a child asked for one, or prints these
  /// rows alone for `--deep`; returns false otherwise.
  static func runIfRequested() throws -> Bool {
    let arguments = CommandLine.arguments
    if arguments.count == 2, arguments[1] == "--deep" {
      printTable(try rows(backends: CoroutineBackend.allCases.filter(\.isAvailable)))
      return true
    }
    guard arguments.count == 3, arguments[1] == Child.flag,
      let figure = figures.first(where: { arguments[2].hasPrefix($0.name + "-") }),
      let depth = Int(arguments[2].dropFirst(figure.name.count + 1))
    else { return false }
    print(try measure(figure.name, depth: depth))
    return true
  }

  /// One row per figure (per backend for the coroutine figures), each measured in child
  /// processes, the fastest of three kept (as for the other timed figures).
  static func rows(backends: [CoroutineBackend]) throws -> [Row] {
    var rows: [Row] = []
    for figure in figures {
      for backend in figure.perBackend ? backends : [CoroutineBackend.current] {
        FileHandle.standardError.write("… \(figure.name) on \(backend)\n".data(using: .utf8)!)
        let long = try fastest("\(figure.name)-\(depths.long)", on: backend)
        let short = try fastest("\(figure.name)-\(depths.short)", on: backend)
        rows.append(
          Row(
            figure: "\(figure.label), 1 000 000 deep (\(backend))", ours: long,
            baseline: "same, 1 000 deep", baselineValue: short, target: 2))
      }
    }
    return rows
  }

  private static func fastest(_ name: String, on backend: CoroutineBackend) throws -> Double {
    var best = Double.infinity
    for _ in 0..<3 {
      best = min(best, try Child.measure(name, on: backend).first ?? .infinity)
    }
    return best
  }

  /// Nanoseconds per link of figure `name` at `depth`.
  static func measure(_ name: String, depth: Int) throws -> Double {
    // The short chains are measured a thousand times over, one after another in one loop, so
    // that both take a while.
    let repeats = max(1, depths.long / depth)
    let total = try CoroutineLoop.run { () -> UInt64 in
      var total: UInt64 = 0
      for _ in 0..<repeats {
        switch name {
        case "deep-map": total += try settleMaps(depth)
        case "deep-cancel-links": total += try cancelMaps(depth)
        case "deep-retry": total += try retryRejected(depth)
        case "deep-cancel-nested": total += try cancelNested(depth)
        default: total += try finishNested(depth)
        }
      }
      return total
    }
    return Double(total) / Double(repeats * depth)
  }

  private static func mapChain(from head: CoFuture<Int>, links: Int) -> CoFuture<Int> {
    var tail = head
    for _ in 0..<links { tail = tail.map { $0 + 1 } }
    return tail
  }

  /// Fulfils the head of `links` maps, inside a coroutine.
  private static func settleMaps(_ links: Int) throws -> UInt64 {
    let head = CoPromise<Int>()
    let tail = mapChain(from: head, links: links)
    let start = baseline_now_ns()
    head.fulfill(0)
    let elapsed = baseline_now_ns() - start
    guard case .success(links)? = tail.result else { throw CoroutineError.timedOut }
    return elapsed
  }

  /// Cancels the tail of `links` maps, which cancels every link up to the head.
  private static func cancelMaps(_ links: Int) throws -> UInt64 {
    let head = CoPromise<Int>()
    let tail = mapChain(from: head, links: links)
    let start = baseline_now_ns()
    tail.cancel()
    let elapsed = baseline_now_ns() - start
    guard head.isSettled else { throw CoroutineError.timedOut }
    return elapsed
  }

  /// `attempts` attempts, each a future rejected before it is returned.
  private static func retryRejected(_ attempts: Int) throws -> UInt64 {
    let start = baseline_now_ns()
    let result = CoFuture<Int>.retry(attempts) {
      let attempt = CoPromise<Int>()
      attempt.reject(CoroutineError.timedOut)
      return attempt
    }
    let elapsed = baseline_now_ns() - start
    guard result.isSettled else { throw CoroutineError.timedOut }
    return elapsed
  }

  /// Cancels the outermost of `depth` nested coroutines, each parked, and waits until all
  /// have unwound.
  private static func cancelNested(_ depth: Int) throws -> UInt64 {
    let deepest = CoPromise<Void>()
    func nest(_ level: Int) -> CoTask<Void> {
      co_launch(stack: .shared) {
        if level < depth { _ = nest(level + 1) } else { deepest.fulfill(()) }
        try co_delay(3600)
      }
    }
    let root = nest(1)
    try co_await(deepest)
    let start = baseline_now_ns()
    root.cancel()
    _ = try? co_await(root)
    return baseline_now_ns() - start
  }

  /// Launches `depth` nested coroutines that return at once and waits for the outermost,
  /// which completes when the innermost has finished.
  private static func finishNested(_ depth: Int) throws -> UInt64 {
    func nest(_ level: Int) -> CoTask<Void> {
      co_launch(stack: .shared) { if level < depth { _ = nest(level + 1) } }
    }
    let start = baseline_now_ns()
    try co_await(nest(1))
    return baseline_now_ns() - start
  }
}
