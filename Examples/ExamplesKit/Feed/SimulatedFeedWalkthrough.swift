import Coroutines
import Foundation

extension FeedWalkthrough {
  /// What the refresh did on the simulated network.
  public struct SimulatedReport: Sendable {
    /// The refresh's outcome, as for the live run; its time is virtual.
    public let live: LiveReport
    /// Segments the network delivered.
    public let segments: Int
    /// Delivered segments that had been lost and sent again.
    public let resent: Int
  }

  /// `swift run examples feed --live --simulated`: the live run's HTTP server and client,
  /// unchanged, on a simulated network: host `feeds.example.org` serves, host `app` refreshes,
  /// 1 ms each way with 10 % of segments lost, in virtual time.
  public static let simulatedLiveRun: @Sendable (Narrator) throws -> Void = { narrator in
    let feedCount = Configuration().feedCount
    let report = try runSimulatedLive(feedCount: feedCount, seed: 42, narrator: narrator)
    try checkLive(report.live, feedCount: feedCount)
    narrator.show("")
    narrator.show(
      "  \(report.live.outcome.feeds.count) feeds fetched over simulated HTTP and saved in "
        + String(format: "%.0f virtual ms", report.live.outcome.milliseconds)
        + " by the same refreshFeeds(…) as the stubbed run")
    narrator.show(
      "  trace: \(report.segments) segments delivered, \(report.resent) of them after a loss")
  }

  /// Runs the HTTP server on one simulated host and the coroutine refresh on another, with
  /// 10 % loss, on a test loop seeded with `seed`.
  public static func runSimulatedLive(feedCount: Int, seed: UInt64, narrator: Narrator) throws
    -> SimulatedReport
  {
    let subscriptions = FeedServer.subscriptions(count: feedCount)
    let loop = CoroutineTestLoop(seed: seed)
    let network = CoSimulatedNetwork(on: loop)
    network.lossRate = 0.1
    let feeds = network.addHost("feeds.example.org")
    let app = network.addHost("app")
    let serving = feeds.launch {
      try LiveHTTPServer(routes: FeedServer.route).serve(on: CoTCPListener(port: 80))
    }
    narrator.say(
      "a simulated network: host feeds.example.org serves HTTP/1.1 on port 80, host app runs "
        + "the coroutine refresh; 1 ms each way, 10 % of segments lost, virtual time")
    let database = StubFeedDatabase(
      rememberedIcons: FeedServer.rememberedIcons(for: subscriptions),
      conditions: StubConditions(latency: 0...0, failureRate: 0), narrator: narrator)
    let screen = FeedScreen(label: "simulated", testLoop: loop, narrator: narrator)
    let refresh = app.launch { () throws -> [SavedFeed] in
      try refreshFeeds(
        subscriptions, http: LiveHTTPClient(port: 80, host: "feeds.example.org"),
        database: database, screen: screen)
    }
    // The stub database answers on a queue of its own, off the loop: its answers come back as
    // the loop's jobs, so the loop is also driven while it waits for them.
    while !refresh.isSettled {
      loop.advance(by: 0.001)
      if loop.readyJobs == 0 { usleep(50) }
    }
    let milliseconds = loop.now * 1000
    serving.cancel()
    loop.advance(by: 1)
    let saved = try refresh.result!.get()
    let trace = network.trace
    let outcome = Outcome(
      feeds: saved, databaseRows: database.savedFeeds, progress: screen.progressMessages,
      reloads: screen.reloads, offLoopCalls: screen.offLoopCalls, milliseconds: milliseconds)
    return SimulatedReport(
      live: LiveReport(outcome: outcome, port: 80), segments: trace.count,
      resent: trace.filter { $0.contains("(resent") }.count)
  }
}
