import Coroutines
import Testing

@testable import ExamplesKit

@Suite struct LiveWalkthroughTests {
  @Test func theEchoServerAnswersEveryClientByteForByte() throws {
    var configuration = EchoWalkthrough.Configuration()
    configuration.clients = 100
    configuration.roundTrips = 5
    let report = try EchoWalkthrough.run(configuration)
    try EchoWalkthrough.check(report, configuration)
    #expect(report.requests == 500)
    #expect(report.mismatches == 0)
    #expect(report.p50Microseconds <= report.p99Microseconds)
  }

  @Test func theEchoWalkthroughPrintsTheServerItRuns() throws {
    let source = try #require(SourceLines.text(region: "server", inFile: echoServerSource))
    #expect(source.contains("public func serveEcho(on listener: CoTCPListener) throws {"))
    #expect(source.contains("try connection.write(bytes)"))
    let lines = try #require(SourceLines.count(region: "server", inFile: echoServerSource))
    #expect(lines <= 20)
  }

  @Test func theLiveFeedFetchesEveryFeedOverHTTPAsTheStubbedRunDoes() throws {
    let live = try FeedWalkthrough.runLive(feedCount: 8, narrator: .silent())
    try FeedWalkthrough.checkLive(live, feedCount: 8)
    var configuration = FeedWalkthrough.Configuration()
    configuration.feedCount = 8
    configuration.network = StubConditions(latency: 0...0.001, failureRate: 0, seed: 1)
    let stubbed = try FeedWalkthrough.run(configuration, narrator: .silent())
    #expect(live.outcome.feeds == stubbed.coroutine.feeds)
  }

  @Test func theLiveClientReportsA404() throws {
    let error = try CoroutineLoop.run {
      let listener = try CoTCPListener()
      let server = co_launch { try LiveHTTPServer(routes: { _ in nil }).serve(on: listener) }
      defer {
        listener.close()
        _ = try? server.await()
      }
      do {
        _ = try LiveHTTPClient(port: listener.port).fetch("https://feeds.example.org/none.json")
        return nil as LiveHTTPError?
      } catch let error as LiveHTTPError {
        return error
      }
    }
    #expect(error?.description.hasSuffix("HTTP 404") == true)
  }
}
