import Testing

@testable import ExamplesKit

@Suite struct CommandTests {
  let names = ["feed", "image"]

  @Test func noArgumentsRunsEveryWalkthrough() {
    #expect(ExamplesCommand.parse([], known: names) == .run(names))
  }
}
