import Foundation
import Testing

/// Every code sample of the programming-model articles appears, line for line, in a test, so
/// none can rot unnoticed.
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

  static func samples(in article: String) throws -> [[String]] {
    let url = root.appendingPathComponent("Docs/Coroutines.docc/Articles/\(article).md")
    let text = try String(contentsOf: url, encoding: .utf8)
    var samples: [[String]] = []
    var current: [String]?
    for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
      if current == nil, line == "```swift" {
        current = []
      } else if current != nil, line == "```" {
        samples.append(normalized(current!.joined(separator: "\n")))
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

  @Test(arguments: articles)
  func everySampleIsTested(article: String) throws {
    let samples = try Self.samples(in: article)
    #expect(!samples.isEmpty)
    let lines = try Self.testLines()
    for sample in samples {
      let found = lines.indices.contains { start in
        start + sample.count <= lines.count
          && Array(lines[start..<start + sample.count]) == sample
      }
      #expect(found, "\(article).md: no test contains\n\(sample.joined(separator: "\n"))")
    }
  }
}
