import Foundation
import Testing

/// Every code sample of the programming-model articles and of the Models doc comments appears,
/// line for line, in a test, so none can rot unnoticed.
@Suite struct ModelsDocSampleTests {
  static let articles = ["Generators", "Channels", "Actors", "Tuples"]

  static let root = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

  /// The lines of `text` without their indentation, so samples match however deeply the test
  /// nests them.
  static func normalized(_ text: String) -> [String] {
    text.split(separator: "\n", omittingEmptySubsequences: false).map { line in
      String(line.drop(while: { (character: Character) in character == " " }))
    }
  }

  /// The Models sources whose doc comments carry samples.
  static let sources = [
    "Actor", "Channel", "ChannelConflated", "ChannelFutures", "ChannelViews", "Generator",
    "Select", "Tuple",
  ]

  static func samples(in article: String) throws -> [[String]] {
    let url = root.appendingPathComponent("Docs/Coroutines.docc/Articles/\(article).md")
    return samples(inMarkdown: try String(contentsOf: url, encoding: .utf8))
  }

  /// The samples of the `///` comments of `Sources/Coroutines/Models/<source>.swift`.
  static func samples(inSource source: String) throws -> [[String]] {
    let url = root.appendingPathComponent("Sources/Coroutines/Models/\(source).swift")
    let comments = try String(contentsOf: url, encoding: .utf8)
      .split(separator: "\n", omittingEmptySubsequences: false)
      .map { $0.drop(while: { $0 == " " }) }
      .filter { $0.hasPrefix("///") }
      .map { $0.hasPrefix("/// ") ? $0.dropFirst(4) : $0.dropFirst(3) }
    return samples(inMarkdown: comments.joined(separator: "\n"))
  }

  static func samples(inMarkdown text: String) -> [[String]] {
    var samples: [[String]] = []
    var current: [String]?
    for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
      if current == nil, line == "```swift" {
        current = []
      } else if current != nil, line == "```" {
        // A complete program's imports go at the top of a test file, not beside the copy:
        // DocBlocksTests compiles the sample with them.
        var code = current!
        while code.first?.hasPrefix("import ") == true { code.removeFirst() }
        if code.count < current!.count, code.first?.isEmpty == true { code.removeFirst() }
        samples.append(normalized(code.joined(separator: "\n")))
        current = nil
      } else if current != nil {
        current!.append(String(line))
      }
    }
    return samples
  }

  static func testLines() throws -> [String] {
    let folder = root.appendingPathComponent("Tests/CoroutinesTests")
    let files = try FileManager.default.contentsOfDirectory(atPath: folder.path)
      .filter { $0.hasSuffix(".swift") }
    return try files.flatMap { file in
      normalized(
        try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8))
    }
  }

  static func expectTested(_ samples: [[String]], from place: String) throws {
    #expect(!samples.isEmpty, "\(place) has no sample")
    let lines = try testLines()
    for sample in samples {
      let found = lines.indices.contains { start in
        start + sample.count <= lines.count
          && Array(lines[start..<start + sample.count]) == sample
      }
      #expect(found, "\(place): no test contains\n\(sample.joined(separator: "\n"))")
    }
  }

  @Test(arguments: articles)
  func everyArticleSampleIsTested(article: String) throws {
    try Self.expectTested(try Self.samples(in: article), from: "\(article).md")
  }

  @Test(arguments: sources)
  func everyDocCommentSampleIsTested(source: String) throws {
    try Self.expectTested(try Self.samples(inSource: source), from: "\(source).swift")
  }
}
