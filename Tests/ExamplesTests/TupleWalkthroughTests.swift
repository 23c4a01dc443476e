import Coroutines
import Foundation
import Testing

@testable import ExamplesKit

@Suite struct TupleWalkthroughTests {
  static func directory() -> URL {
    FileManager.default.temporaryDirectory.appendingPathComponent("tuple-test-\(UUID().uuidString)")
  }

  @Test func anExistingFileGivesDataAndAMissingOneAnError() throws {
    let directory = Self.directory()
    let loaded = try TupleWalkthrough.run(in: directory, narrator: .silent())
    #expect(loaded.count == 2)
    #expect(loaded[0].text == "hello from a coroutine\n")
    #expect(loaded[0].error == nil)
    #expect(loaded[1].text == nil)
    #expect(loaded[1].error != nil)
    #expect(loaded[1].path.hasSuffix("missing.txt"))
    #expect(!FileManager.default.fileExists(atPath: directory.path), "the walkthrough cleans up")
  }

  @Test func theTupleIsDestructuredAfterAwaiting() throws {
    let (path, data, error) = try CoroutineLoop.run {
      try co_await(loadContentFromFile("/nonexistent/\(UUID().uuidString)"))
    }
    #expect(path.hasPrefix("/nonexistent/"))
    #expect(data == nil)
    #expect(error != nil)
  }
}
