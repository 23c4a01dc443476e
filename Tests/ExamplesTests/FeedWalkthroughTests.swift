import Testing

@testable import ExamplesKit

@Suite struct FeedWalkthroughTests {
  /// Fast, failure-heavy conditions: a third of the fetches fail.
  static func configuration(feeds: Int = 12, failureRate: Double = 0.3)
    -> FeedWalkthrough.Configuration
  {
    var configuration = FeedWalkthrough.Configuration()
    configuration.feedCount = feeds
    configuration.network = StubConditions(
      latency: 0.001...0.004, failureRate: failureRate, seed: 3)
    configuration.database = StubConditions(latency: 0...0.001, failureRate: 0, seed: 3)
    return configuration
  }

  @Test func bothVersionsSaveTheSameFeedsUnderTheSameIds() throws {
    let configuration = Self.configuration()
    let report = try FeedWalkthrough.run(configuration, narrator: .silent())
    try FeedWalkthrough.check(report)
    #expect(report.callbacks.feeds == report.coroutine.feeds)
    #expect(report.coroutine.feeds.map(\.id) == Array(1...12))
    #expect(
      report.coroutine.feeds.map(\.record.url) == FeedServer.subscriptions(count: 12).map(\.url))
  }

  @Test func failedFetchesAreSavedWithoutItemsAndWithTheirRememberedIcon() throws {
    let configuration = Self.configuration()
    let subscriptions = FeedServer.subscriptions(count: 12)
    let expectedFailures = subscriptions.filter { configuration.network.outcome(for: $0.url).fails }
    try #require(!expectedFailures.isEmpty, "the seed should make some fetches fail")
    let report = try FeedWalkthrough.run(configuration, narrator: .silent())
    for outcome in [report.callbacks, report.coroutine] {
      let failed = outcome.feeds.filter { $0.record.failure != nil }
      #expect(failed.map(\.record.url) == expectedFailures.map(\.url))
      #expect(failed.allSatisfy { $0.record.itemCount == 0 })
      #expect(failed.allSatisfy { $0.record.iconURL?.hasSuffix("/icon.png") == true })
      #expect(
        outcome.feeds.filter { $0.record.failure == nil }.allSatisfy { $0.record.itemCount >= 3 })
    }
  }

  @Test func everyFetchFailingStillListsEveryFeed() throws {
    let report = try FeedWalkthrough.run(
      Self.configuration(feeds: 5, failureRate: 1), narrator: .silent())
    try FeedWalkthrough.check(report)
    #expect(report.coroutine.feeds.count == 5)
    #expect(report.coroutine.feeds.allSatisfy { $0.record.failure != nil })
  }

  @Test func progressIsShownOnTheMainLoopInOrderAndTheListReloadedOnce() throws {
    let report = try FeedWalkthrough.run(Self.configuration(feeds: 4), narrator: .silent())
    let expected = FeedServer.subscriptions(count: 4).enumerated().map {
      "Fetching \($0.element.title)... (\($0.offset + 1)/4)"
    }
    for outcome in [report.callbacks, report.coroutine] {
      #expect(outcome.progress == expected)
      #expect(outcome.reloads == [outcome.feeds])
      #expect(outcome.offLoopCalls == 0)
    }
  }

  @Test func checkRejectsVersionsThatDisagree() throws {
    let report = try FeedWalkthrough.run(
      Self.configuration(feeds: 2, failureRate: 0), narrator: .silent())
    let tampered = FeedWalkthrough.Report(
      callbacks: report.callbacks,
      coroutine: FeedWalkthrough.Outcome(
        feeds: report.coroutine.feeds.reversed(), databaseRows: report.coroutine.feeds.reversed(),
        progress: report.coroutine.progress, reloads: [report.coroutine.feeds.reversed()],
        offLoopCalls: 0, milliseconds: 0))
    #expect(throws: WalkthroughCheckFailed.self) { try FeedWalkthrough.check(tampered) }
  }

  @Test func theCoroutineVersionIsShorter() throws {
    let callbacks = try #require(
      SourceLines.count(region: "callbacks", inFile: refreshWithCallbacksSource))
    let coroutine = try #require(
      SourceLines.count(region: "coroutine", inFile: refreshWithCoroutinesSource))
    #expect(coroutine < callbacks)
  }

  @Test func sourceLinesSkipBlankAndCommentLines() {
    let text = "a\n// region: x\n/// doc\n\nlet a = 1\n  // note\nlet b = 2\n// endregion\nc"
    #expect(SourceLines.count(region: "x", in: text) == 2)
    #expect(SourceLines.count(region: "y", in: text) == nil)
  }
}
