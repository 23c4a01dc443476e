import Foundation
import Testing

/// Every code sample of the futures, cancellation and Swift Concurrency articles, and of the
/// doc comments of the sources behind them, appears line for line in a test (the check of
/// ModelsDocSampleTests, over these files).
@Suite struct FuturesDocSampleTests {
  static let articles = ["AwaitingPromises", "CancellationAndScopes", "SwiftConcurrency"]

  /// The Async sources whose doc comments carry samples.
  static let sources = [
    "AwaitTimeout", "Concurrency", "FutureCollection", "FutureCombinators", "FutureOperators",
    "FutureResultOperators", "Backoff", "FutureFold",
    "FutureRetry", "FutureTiming", "FutureZip", "Launch", "Scope", "UnhandledErrors",
  ]

  /// The samples of the `///` comments of `Sources/Coroutines/Async/<source>.swift`.
  static func samples(inSource source: String) throws -> [[String]] {
    let url = ModelsDocSampleTests.root.appendingPathComponent(
      "Sources/Coroutines/Async/\(source).swift")
    let comments = try String(contentsOf: url, encoding: .utf8)
      .split(separator: "\n", omittingEmptySubsequences: false)
      .map { $0.drop(while: { $0 == " " }) }
      .filter { $0.hasPrefix("///") }
      .map { $0.hasPrefix("/// ") ? $0.dropFirst(4) : $0.dropFirst(3) }
    return ModelsDocSampleTests.samples(inMarkdown: comments.joined(separator: "\n"))
  }

  @Test(arguments: articles)
  func everyArticleSampleIsTested(article: String) throws {
    try ModelsDocSampleTests.expectTested(
      try ModelsDocSampleTests.samples(in: article), from: "\(article).md")
  }

  @Test(arguments: sources)
  func everyDocCommentSampleIsTested(source: String) throws {
    try ModelsDocSampleTests.expectTested(
      try Self.samples(inSource: source), from: "\(source).swift")
  }
}
