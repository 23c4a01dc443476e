import Coroutines
import Foundation

extension FeedWalkthrough {
  /// What the live refresh did.
  public struct LiveReport: Sendable {
    /// The refresh's outcome, as for the stubbed run.
    public let outcome: Outcome
    /// The port the in-process HTTP server listened on.
    public let port: UInt16
  }

  /// `swift run examples feed --live`: the coroutine refresh, unchanged, fetching every feed
  /// over real HTTP/1.1 from a server this process starts on 127.0.0.1.
  public static let liveRun: @Sendable (Narrator) throws -> Void = { narrator in
    let report = try runLive(feedCount: Configuration().feedCount, narrator: narrator)
    try checkLive(report, feedCount: Configuration().feedCount)
    narrator.show("")
    narrator.show(
      "  \(report.outcome.feeds.count) feeds fetched over HTTP from 127.0.0.1:\(report.port) "
        + String(format: "and saved in %.0f ms", report.outcome.milliseconds)
        + " by the same refreshFeeds(…) as the stubbed run; the database is still the stub.")
  }

  /// Starts the HTTP server, runs the coroutine refresh against it on a fresh loop on the
  /// calling thread, then stops the server.
  public static func runLive(feedCount: Int, narrator: Narrator) throws -> LiveReport {
    let subscriptions = FeedServer.subscriptions(count: feedCount)
    let icons = FeedServer.rememberedIcons(for: subscriptions)
    return try CoroutineLoop.run {
      let loop = CoroutineLoop.current!
      let listener = try CoTCPListener(host: "127.0.0.1", port: 0)
      let server = co_launch { try LiveHTTPServer(routes: FeedServer.route).serve(on: listener) }
      narrator.say(
        "an HTTP/1.1 server on 127.0.0.1:\(listener.port) serves the feeds; the refresh is the "
          + "coroutine version, with a client over real sockets")
      let database = StubFeedDatabase(
        rememberedIcons: icons, conditions: StubConditions(latency: 0...0.001, failureRate: 0),
        narrator: narrator)
      let screen = FeedScreen(label: "live", loop: loop, narrator: narrator)
      let start = narrator.elapsedMilliseconds
      let feeds = try refreshFeeds(
        subscriptions, http: LiveHTTPClient(port: listener.port), database: database,
        screen: screen)
      let outcome = Outcome(
        feeds: feeds, databaseRows: database.savedFeeds, progress: screen.progressMessages,
        reloads: screen.reloads, offLoopCalls: screen.offLoopCalls,
        milliseconds: narrator.elapsedMilliseconds - start)
      listener.close()
      try server.await()
      return LiveReport(outcome: outcome, port: listener.port)
    }
  }

  /// Throws unless every feed was fetched (the server fails none), saved in order and shown.
  public static func checkLive(_ report: LiveReport, feedCount: Int) throws {
    let outcome = report.outcome
    guard outcome.feeds.map(\.record.url) == FeedServer.subscriptions(count: feedCount).map(\.url)
    else {
      throw WalkthroughCheckFailed("live: the feeds saved are not the subscriptions, in order")
    }
    if let failed = outcome.feeds.first(where: { $0.record.failure != nil }) {
      throw WalkthroughCheckFailed("live: \(failed.record.url) failed: \(failed.record.failure!)")
    }
    guard outcome.offLoopCalls == 0, outcome.reloads == [outcome.feeds],
      outcome.databaseRows == outcome.feeds
    else {
      throw WalkthroughCheckFailed("live: the list shown is not what was saved")
    }
  }
}
