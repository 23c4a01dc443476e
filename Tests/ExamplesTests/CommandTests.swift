import Testing

@testable import ExamplesKit

@Suite struct CommandTests {
  let names = ["feed", "image"]

  @Test func noArgumentsRunsEveryWalkthrough() {
    #expect(ExamplesCommand.parse([], known: names) == .run(names))
  }

  @Test func namesRunInTheOrderGiven() {
    #expect(ExamplesCommand.parse(["image", "feed"], known: names) == .run(["image", "feed"]))
  }

  @Test func namesAreMatchedWhateverTheirCase() {
    #expect(ExamplesCommand.parse(["Image", "FEED"], known: names) == .run(["image", "feed"]))
    #expect(ExamplesCommand.parse(["Feed", "--live"], known: names) == .run(["feed"], live: true))
    #expect(ExamplesCommand.parse(["Nope"], known: names) == .unknown("Nope"))
  }

  @Test func liveAsksForTheLiveVariants() {
    #expect(ExamplesCommand.parse(["feed", "--live"], known: names) == .run(["feed"], live: true))
    #expect(ExamplesCommand.parse(["--live"], known: names) == .run(names, live: true))
    #expect(ExamplesCommand.parse(["--lve"], known: names) == .unknown("--lve"))
  }

  @Test func liveRunsTheLiveVariantWhereThereIsOne() {
    let ran = Locked<[String]>([])
    let withLive = Walkthrough(
      name: "feed", summary: "", live: { _ in ran.withLock { $0.append("live") } }
    ) { _ in ran.withLock { $0.append("stubbed") } }
    let without = Walkthrough(name: "image", summary: "") { _ in
      ran.withLock { $0.append("image") }
    }
    let quiet: @Sendable (String) -> Void = { _ in }
    let status = ExamplesCommand.main(
      ["feed", "image", "--live"], walkthroughs: [withLive, without], output: quiet, errors: quiet)
    #expect(status == 0)
    #expect(ran.value == ["live", "image"])
  }

  @Test func versionPrintsTheBuildAndTheBackend() {
    #expect(ExamplesCommand.parse(["--version"], known: names) == .version)
    let output = Locked<[String]>([])
    let status = ExamplesCommand.main(
      ["--version"], output: { text in output.withLock { $0.append(text) } })
    #expect(status == 0)
    #expect(output.value.count == 1)
    #expect(output.value.first?.hasPrefix("swift-coroutines examples") == true)
    #expect(output.value.first?.contains("backend") == true)
  }

  @Test func aStubbedWalkthroughSaysWhatItStubs() {
    let output = Locked<[String]>([])
    let stubbed = Walkthrough(name: "feed", summary: "", stubs: "the network") { _ in }
    let status = ExamplesCommand.main(
      ["feed"], walkthroughs: [stubbed], output: { text in output.withLock { $0.append(text) } })
    #expect(status == 0)
    #expect(output.value.contains("(stubbed here: the network, so every run behaves the same)"))
  }

  @Test func helpWinsOverNames() {
    #expect(ExamplesCommand.parse(["feed", "--help"], known: names) == .help)
    #expect(ExamplesCommand.parse(["-h"], known: names) == .help)
  }

  @Test func anUnknownNameIsReported() {
    #expect(ExamplesCommand.parse(["feed", "nope"], known: names) == .unknown("nope"))
  }

  @Test func helpListsEveryWalkthroughOnOneLineEach() {
    let output = Locked<[String]>([])
    let status = ExamplesCommand.main(
      ["--help"], output: { text in output.withLock { $0.append(text) } })
    #expect(status == 0)
    let lines = output.value.joined(separator: "\n").split(separator: "\n")
    for walkthrough in Walkthrough.all {
      #expect(lines.filter { $0.hasPrefix("  \(walkthrough.name) ") }.count == 1)
    }
  }

  @Test func anUnknownNamePrintsTheListAndFails() {
    let errors = Locked<[String]>([])
    let status = ExamplesCommand.main(
      ["nope"], output: { _ in }, errors: { text in errors.withLock { $0.append(text) } })
    #expect(status != 0)
    #expect(errors.value.joined().contains("no walkthrough named 'nope'"))
    #expect(errors.value.joined().contains("feed"))
  }

  @Test func aFailingWalkthroughMakesTheRunFail() {
    let failing = Walkthrough(name: "broken", summary: "fails") { _ in
      throw WalkthroughCheckFailed("on purpose")
    }
    let passing = Walkthrough(name: "fine", summary: "passes") { _ in }
    let quiet: @Sendable (String) -> Void = { _ in }
    #expect(
      ExamplesCommand.main([], walkthroughs: [failing, passing], output: quiet, errors: quiet) == 1)
    #expect(
      ExamplesCommand.main(
        ["fine"], walkthroughs: [failing, passing], output: quiet, errors: quiet) == 0)
  }
}
