import Coroutines
import Foundation

/// The feed screen, refreshed twice: with callbacks and a `DispatchGroup`, then with a
/// coroutine. Both must save the same feeds under the same ids.
public enum FeedWalkthrough {
  /// What the walkthrough fetches and how the stubbed network behaves.
  public struct Configuration: Sendable {
    /// How many feeds the user subscribed to.
    public var feedCount = 20
    /// Latency and failure rate of the stub HTTP client (10% of fetches fail by default).
    public var network = StubConditions()
    /// Latency of the stub database's writes.
    public var database = StubConditions(latency: 0.0005...0.002, failureRate: 0)

    /// The defaults: 20 feeds, 5–40 ms per fetch, 10% failures.
    public init() {}
  }

  /// What each version did.
  public struct Outcome: Sendable {
    /// The feeds saved, in order, with their ids.
    public let feeds: [SavedFeed]
    /// What the database holds afterwards.
    public let databaseRows: [SavedFeed]
    /// Progress messages the screen showed, in order.
    public let progress: [String]
    /// The lists the screen was reloaded with.
    public let reloads: [[SavedFeed]]
    /// Screen calls made off the main loop (a UI bug).
    public let offLoopCalls: Int
    /// Milliseconds from start to reload.
    public let milliseconds: Double
  }

  /// Both versions' outcomes.
  public struct Report: Sendable {
    /// The callback and `DispatchGroup` version.
    public let callbacks: Outcome
    /// The coroutine version.
    public let coroutine: Outcome
  }

  /// The entry for `swift run examples feed`.
  public static let walkthrough = Walkthrough(
    name: "feed",
    summary: "the feed screen: 20 fetches, parse, save, progress; callbacks vs a coroutine",
    stubs: "the network and the database",
    live: liveRun,
    simulated: simulatedLiveRun
  ) { narrator in
    let report = try run(Configuration(), narrator: narrator)
    try check(report)
    printComparison(report, narrator: narrator)
  }

  /// Runs both versions on a fresh loop on the calling thread, narrating to `narrator`.
  public static func run(_ configuration: Configuration, narrator: Narrator) throws -> Report {
    let subscriptions = FeedServer.subscriptions(count: configuration.feedCount)
    let icons = FeedServer.rememberedIcons(for: subscriptions)
    func fixtures(_ label: String, on loop: CoroutineLoop) -> (
      StubHTTPClient, StubFeedDatabase, FeedScreen
    ) {
      (
        StubHTTPClient(conditions: configuration.network, routes: FeedServer.route),
        StubFeedDatabase(
          rememberedIcons: icons, conditions: configuration.database, narrator: narrator),
        FeedScreen(label: label, loop: loop, narrator: narrator)
      )
    }
    return try CoroutineLoop.run {
      let loop = CoroutineLoop.current!
      narrator.say(
        "refresh 1 of 2: callbacks; a worker thread waits in group.wait() for each feed")
      let (http1, database1, screen1) = fixtures("callbacks", on: loop)
      let start1 = narrator.elapsedMilliseconds
      let viaCallbacks: [SavedFeed] = try co_await { done in
        refreshFeedsWithCallbacks(
          subscriptions, http: http1, database: database1, screen: screen1, mainLoop: loop
        ) { done(.success($0)) }
      }
      let callbacks = outcome(viaCallbacks, database1, screen1, since: start1, narrator)

      narrator.say("refresh 2 of 2: a coroutine on the main loop; no thread waits")
      let (http2, database2, screen2) = fixtures("coroutine", on: loop)
      let start2 = narrator.elapsedMilliseconds
      let viaCoroutine = try refreshFeeds(
        subscriptions, http: http2, database: database2, screen: screen2)
      let coroutine = outcome(viaCoroutine, database2, screen2, since: start2, narrator)
      return Report(callbacks: callbacks, coroutine: coroutine)
    }
  }

  private static func outcome(
    _ feeds: [SavedFeed], _ database: StubFeedDatabase, _ screen: FeedScreen, since start: Double,
    _ narrator: Narrator
  ) -> Outcome {
    Outcome(
      feeds: feeds, databaseRows: database.savedFeeds, progress: screen.progressMessages,
      reloads: screen.reloads, offLoopCalls: screen.offLoopCalls,
      milliseconds: narrator.elapsedMilliseconds - start)
  }

  /// Throws unless both versions saved the same feeds with the same ids, listed them all and
  /// touched the screen only on the main loop.
  public static func check(_ report: Report) throws {
    for (name, outcome) in [("callbacks", report.callbacks), ("coroutine", report.coroutine)] {
      guard outcome.offLoopCalls == 0 else {
        throw WalkthroughCheckFailed("\(name): \(outcome.offLoopCalls) screen calls off the loop")
      }
      guard outcome.reloads == [outcome.feeds], outcome.databaseRows == outcome.feeds else {
        throw WalkthroughCheckFailed("\(name): the list shown is not what was saved")
      }
    }
    guard report.callbacks.feeds == report.coroutine.feeds else {
      throw WalkthroughCheckFailed("the two versions saved different feeds or ids")
    }
  }

  /// Prints the two versions side by side: lines of code, time, feeds and failures.
  static func printComparison(_ report: Report, narrator: Narrator) {
    let callbackLines = SourceLines.count(region: "callbacks", inFile: refreshWithCallbacksSource)
    let coroutineLines = SourceLines.count(region: "coroutine", inFile: refreshWithCoroutinesSource)
    func lines(_ count: Int?) -> String { count.map(String.init) ?? "(source not found)" }
    func saved(_ outcome: Outcome) -> String {
      let failed = outcome.feeds.filter { $0.record.failure != nil }.count
      return "\(outcome.feeds.count), \(failed) without items"
    }
    let rows = [
      ("", "callbacks + DispatchGroup", "coroutine"),
      ("lines of code", lines(callbackLines), lines(coroutineLines)),
      ("feeds saved", saved(report.callbacks), saved(report.coroutine)),
      ("ids", idRange(report.callbacks.feeds), idRange(report.coroutine.feeds)),
      ("threads blocked", "1 worker, \(report.callbacks.feeds.count) waits", "none"),
      (
        "time to reload", String(format: "%.0f ms", report.callbacks.milliseconds),
        String(format: "%.0f ms", report.coroutine.milliseconds)
      ),
    ]
    narrator.show("")
    for (label, left, right) in rows {
      narrator.show(
        "  " + label.padding(toLength: 16, withPad: " ", startingAt: 0)
          + left.padding(toLength: 32, withPad: " ", startingAt: 0) + right)
    }
    narrator.show(
      "  Both versions saved the same feeds under the same ids, failed fetches included.")
  }

  private static func idRange(_ feeds: [SavedFeed]) -> String {
    guard let first = feeds.first?.id, let last = feeds.last?.id else { return "none" }
    return "#\(first)...#\(last), in order"
  }
}
