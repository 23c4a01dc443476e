import Coroutines
import Testing

@testable import ExamplesKit

/// `--simulated`: the echo and live feed walkthroughs on a simulated network, in virtual time
/// with 10 % loss.
@Suite struct SimulatedWalkthroughTests {
  @Test func simulatedAsksForTheSimulatedVariants() {
    let names = ["feed", "echo"]
    #expect(
      ExamplesCommand.parse(["echo", "--simulated"], known: names)
        == .run(["echo"], simulated: true))
    #expect(
      ExamplesCommand.parse(["feed", "--live", "--simulated"], known: names)
        == .run(["feed"], live: true, simulated: true))
  }

  @Test func simulatedRunsTheSimulatedVariantWhereThereIsOne() {
    let ran = Locked<[String]>([])
    let echo = Walkthrough(
      name: "echo", summary: "", simulated: { _ in ran.withLock { $0.append("simulated") } }
    ) { _ in ran.withLock { $0.append("loopback") } }
    let image = Walkthrough(name: "image", summary: "") { _ in
      ran.withLock { $0.append("image") }
    }
    let lines = Locked<[String]>([])
    let status = ExamplesCommand.main(
      ["echo", "image", "--simulated"], walkthroughs: [echo, image],
      output: { text in lines.withLock { $0.append(text) } }, errors: { _ in })
    #expect(status == 0)
    #expect(ran.value == ["simulated", "image"])
    #expect(lines.value.contains { $0.contains("=== echo --simulated") })
    #expect(ExamplesCommand.usage([echo, image]).contains("--simulated  runs on a simulated"))
  }

  @Test func theSimulatedEchoAnswersEveryClientInOrderDespiteLoss() throws {
    var configuration = EchoWalkthrough.Configuration()
    configuration.clients = 50
    configuration.roundTrips = 5
    let report = try EchoWalkthrough.runSimulated(configuration, seed: 42)
    #expect(report.requests == 250)
    #expect(report.mismatches == 0)
    #expect(report.resent > 0, "10 % of the segments were lost and resent")
    #expect(report.p50Milliseconds >= 2, "a round trip takes two latencies of 1 ms at least")
    #expect(report.traceHead.count == 4)
  }

  @Test func theSimulatedEchoIsTheSameForTheSameSeed() throws {
    var configuration = EchoWalkthrough.Configuration()
    configuration.clients = 20
    configuration.roundTrips = 3
    let first = try EchoWalkthrough.runSimulated(configuration, seed: 7)
    let again = try EchoWalkthrough.runSimulated(configuration, seed: 7)
    #expect(first.virtualSeconds == again.virtualSeconds)
    #expect(first.traceHead == again.traceHead)
    #expect(first.resent == again.resent)
  }

  @Test func theSimulatedLiveFeedFetchesEveryFeedAsTheStubbedRunDoes() throws {
    let simulated = try FeedWalkthrough.runSimulatedLive(
      feedCount: 8, seed: 3, narrator: .silent())
    try FeedWalkthrough.checkLive(simulated.live, feedCount: 8)
    var configuration = FeedWalkthrough.Configuration()
    configuration.feedCount = 8
    configuration.network = StubConditions(latency: 0...0.001, failureRate: 0, seed: 1)
    let stubbed = try FeedWalkthrough.run(configuration, narrator: .silent())
    #expect(simulated.live.outcome.feeds == stubbed.coroutine.feeds)
    #expect(simulated.live.outcome.offLoopCalls == 0)
  }
}
