/// One walkthrough of the `examples` program: a name to run it by, a line for `--help`, and
/// the code that narrates it.
public struct Walkthrough: Sendable {
  /// What to type after `swift run examples`.
  public let name: String
  /// One line for the list.
  public let summary: String
  /// Runs the walkthrough, narrating as it goes; throws when its own checks fail.
  public let run: @Sendable (Narrator) throws -> Void
  /// The variant `--live` runs, over real loopback sockets instead of stubs, if there is one.
  public let live: (@Sendable (Narrator) throws -> Void)?
  /// The variant `--simulated` runs, on a simulated network on a test loop's virtual clock,
  /// if there is one.
  public let simulated: (@Sendable (Narrator) throws -> Void)?
  /// What the walkthrough stubs ("the network", …), said before it runs; nil when it stubs
  /// nothing.
  public let stubs: String?
  /// The program `swift run examples NAME ARGUMENTS...` runs instead of the narration, if the
  /// walkthrough is also a program (a server): it takes the arguments after the name and
  /// returns the exit status. Among all the walkthroughs, the narration runs.
  public let program: (@Sendable ([String]) -> Int32)?

  /// A walkthrough called `name` that stubs `stubs`, with a `--live` variant if `live` is
  /// given, a `--simulated` one if `simulated` is, and a program of its own if `program` is.
  public init(
    name: String, summary: String, stubs: String? = nil,
    live: (@Sendable (Narrator) throws -> Void)? = nil,
    simulated: (@Sendable (Narrator) throws -> Void)? = nil,
    program: (@Sendable ([String]) -> Int32)? = nil,
    run: @escaping @Sendable (Narrator) throws -> Void
  ) {
    self.name = name
    self.summary = summary
    self.stubs = stubs
    self.live = live
    self.simulated = simulated
    self.program = program
    self.run = run
  }

  /// Every walkthrough, in the order `swift run examples` runs them.
  public static let all: [Walkthrough] = [
    FeedWalkthrough.walkthrough,
    ImageWalkthrough.walkthrough,
    GeneratorWalkthrough.walkthrough,
    ActorWalkthrough.walkthrough,
    ChannelWalkthrough.walkthrough,
    TupleWalkthrough.walkthrough,
    ConcurrencyWalkthrough.walkthrough,
    EchoWalkthrough.walkthrough,
    HTTPWalkthrough.walkthrough,
  ]
}

/// A check a walkthrough makes on its own results failed.
public struct WalkthroughCheckFailed: Error, CustomStringConvertible {
  /// What was expected and what happened.
  public let description: String

  /// A failure described by `description`.
  public init(_ description: String) { self.description = description }
}
