import Coroutines
import Testing

@testable import ExamplesKit

@Suite struct GeneratorWalkthroughTests {
  static func configuration() -> GeneratorWalkthrough.Configuration {
    var configuration = GeneratorWalkthrough.Configuration()
    configuration.network = StubConditions(latency: 0.001...0.003, failureRate: 0)
    return configuration
  }

  @Test func theConsumerShowsTenUnreadMessagesInOrder() throws {
    let report = try GeneratorWalkthrough.run(Self.configuration(), narrator: .silent())
    #expect(report.shown.count == 10)
    #expect(report.shown.allSatisfy { $0.unread })
    #expect(report.shown.map(\.id) == report.shown.map(\.id).sorted())
  }

  @Test func theProducerRunsOnlyAsFarAsAskedAndStopsWithTheConsumer() throws {
    let configuration = Self.configuration()
    let report = try GeneratorWalkthrough.run(configuration, narrator: .silent())
    let last = try #require(report.shown.last?.id)
    #expect(report.producerUnwound)
    #expect(report.yielded >= last && report.yielded <= last + 1)
    let pagesNeeded = (last + configuration.pageSize - 1) / configuration.pageSize
    #expect(report.pagesFetched == pagesNeeded)
  }

  @Test func aFailingPageEndsTheWalkthroughWithItsError() {
    var configuration = Self.configuration()
    configuration.network.failureRate = 1
    #expect(throws: StubError.self) {
      try GeneratorWalkthrough.run(configuration, narrator: .silent())
    }
  }
}

@Suite struct ActorWalkthroughTests {
  static func configuration() -> ActorWalkthrough.Configuration {
    var configuration = ActorWalkthrough.Configuration()
    configuration.origin = StubConditions(latency: 0.001...0.003, failureRate: 0)
    return configuration
  }

  @Test func everyRequestIsAnsweredAndEachKeyFetchedOnce() throws {
    let configuration = Self.configuration()
    let report = try ActorWalkthrough.run(configuration, narrator: .silent())
    #expect(report.answered == configuration.clients * configuration.requestsPerClient)
    #expect(report.wrong == 0)
    #expect(report.originFetches == configuration.keys)
  }

  @Test func aMessageSentAfterStopIsRejected() throws {
    let report = try ActorWalkthrough.run(Self.configuration(), narrator: .silent())
    #expect(report.rejectedAfterStop)
  }

  @Test func originFailuresReachTheClients() {
    var configuration = Self.configuration()
    configuration.origin.failureRate = 1
    #expect(throws: StubError.self) {
      try ActorWalkthrough.run(configuration, narrator: .silent())
    }
  }
}

@Suite struct ChannelWalkthroughTests {
  static func configuration() -> ChannelWalkthrough.Configuration {
    var configuration = ChannelWalkthrough.Configuration()
    configuration.consumerDelay = 0.001
    return configuration
  }

  @Test func thePipelineDeliversEveryItemInOrder() throws {
    let report = try ChannelWalkthrough.run(Self.configuration(), narrator: .silent())
    #expect(report.received == Array(1...8))
  }

  @Test func backPressureKeepsTheProducerClose() throws {
    let configuration = Self.configuration()
    let report = try ChannelWalkthrough.run(configuration, narrator: .silent())
    #expect(report.largestLead <= configuration.capacity + 1)
  }

  @Test func selectSeesBothChannelsThenTimesOut() throws {
    let report = try ChannelWalkthrough.run(Self.configuration(), narrator: .silent())
    let news = ["news: coroutines ship", "news: loop stays free", "news: stacks pooled"]
    #expect(report.selected.filter { $0.hasPrefix("news: ") } == news)
    let alerts = ["alert: disk 91% full", "alert: disk 95% full"]
    #expect(report.selected.filter { $0.hasPrefix("alert: ") } == alerts)
    let closed = try #require(report.selected.firstIndex(of: "news closed"))
    #expect(report.selected[..<closed].filter { $0.hasPrefix("news: ") }.count == 3)
    #expect(report.selected.last == "timeout")
    #expect(report.selected.filter { $0 == "timeout" }.count == 1)
  }
}
