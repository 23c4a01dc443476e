import Coroutines
import Foundation

/// The `examples` command line, parsed by hand: the root package has no dependencies.
///
/// ```
/// swift run examples            every walkthrough in turn
/// swift run examples feed       one (or several: feed image)
/// swift run examples feed --live  its variant over real loopback sockets
/// swift run examples echo --simulated  its variant on a simulated network (feed --live too)
/// swift run examples --help     the list
/// swift run examples --version  the release, build configuration and backend
/// swift run examples http --port 8080   a walkthrough that is also a program, run as one
/// ```
public enum ExamplesCommand {
  /// What the arguments ask for.
  public enum Action: Equatable {
    /// Print the list and exit 0.
    case help
    /// Print the version line and exit 0.
    case version
    /// Run these walkthroughs, in this order; their live variants with `live`, their
    /// simulated ones with `simulated`.
    case run([String], live: Bool = false, simulated: Bool = false)
    /// Print why and the list, and exit non-zero.
    case unknown(String)
    /// Run the program of this walkthrough with these arguments.
    case program(String, [String])
  }

  /// Reads the arguments after the program's name; `programs` are the walkthroughs that are
  /// also programs: named first, they take every argument after their name.
  public static func parse(_ arguments: [String], known: [String], programs: [String] = [])
    -> Action
  {
    if arguments.isEmpty { return .run(known) }
    if let name = programs.first(where: { $0.lowercased() == arguments[0].lowercased() }) {
      return .program(name, Array(arguments.dropFirst()))
    }
    if arguments.contains(where: { ["--help", "-h", "help"].contains($0) }) { return .help }
    if arguments.contains("--version") { return .version }
    let live = arguments.contains("--live")
    let simulated = arguments.contains("--simulated")
    // A name is matched whatever its case (`Echo` runs `echo`), and reported as typed.
    var names: [String] = []
    for argument in arguments where argument != "--live" && argument != "--simulated" {
      guard let name = known.first(where: { $0.lowercased() == argument.lowercased() }) else {
        return .unknown(argument)
      }
      names.append(name)
    }
    return .run(names.isEmpty ? known : names, live: live, simulated: simulated)
  }

  /// The list `--help` prints: a usage line, then one line per walkthrough.
  public static func usage(_ walkthroughs: [Walkthrough]) -> String {
    let width = walkthroughs.map(\.name.count).max() ?? 0
    let lines = walkthroughs.map {
      "  \($0.name.padding(toLength: width, withPad: " ", startingAt: 0))  \($0.summary)"
    }
    let live = walkthroughs.filter { $0.live != nil }.map(\.name)
    let simulated = walkthroughs.filter { $0.simulated != nil }.map(\.name)
    return
      ([
        "usage: swift run examples [walkthrough...] [--live] [--simulated]  (none: all of them)",
        "  --live  runs over real loopback sockets where there is a live variant ("
          + live.joined(separator: ", ") + "), the stubbed walkthrough elsewhere",
        "  --simulated  runs on a simulated network, in virtual time with 10 % loss, where "
          + "there is a simulated variant (" + simulated.joined(separator: ", ") + ")",
        "  swift run -c release examples http [--port N] ...  serves until SIGINT or SIGTERM "
          + "(examples http --help: its options; --walkthrough: its narration alone)",
        "walkthroughs:",
      ]
      + lines).joined(separator: "\n")
  }

  /// Runs the command and returns the process's exit status: 0 when every walkthrough ran and
  /// passed its checks, 1 when one failed, 64 for an unknown name.
  public static func main(
    _ arguments: [String],
    walkthroughs: [Walkthrough] = Walkthrough.all,
    output: @escaping @Sendable (String) -> Void = { printLine($0) },
    errors: @escaping @Sendable (String) -> Void = { printError($0) }
  ) -> Int32 {
    let programs = walkthroughs.filter { $0.program != nil }.map(\.name)
    switch parse(arguments, known: walkthroughs.map(\.name), programs: programs) {
    case .program(let name, let arguments):
      return walkthroughs.first { $0.name == name }!.program!(arguments)
    case .version:
      output(versionLine)
      return 0
    case .help:
      output(usage(walkthroughs))
      return 0
    case .unknown(let name):
      errors("examples: no walkthrough named '\(name)'\n" + usage(walkthroughs))
      return 64
    case .run(let names, let live, let simulated):
      var failed: [String] = []
      for name in names {
        guard let walkthrough = walkthroughs.first(where: { $0.name == name }) else { continue }
        let simulatedVariant = simulated ? walkthrough.simulated : nil
        let variant = simulatedVariant ?? (live ? walkthrough.live : nil)
        let flags =
          simulatedVariant != nil
          ? (walkthrough.live != nil ? " --live --simulated" : " --simulated")
          : (variant == nil ? "" : " --live")
        output("\n=== \(walkthrough.name)\(flags): \(walkthrough.summary) ===")
        if variant == nil, let stubs = walkthrough.stubs {
          output(
            "(stubbed here: \(stubs), so every run behaves the same"
              + (walkthrough.live == nil ? ")" : "; add --live for real sockets)"))
        }
        do {
          try (variant ?? walkthrough.run)(Narrator(sink: output))
        } catch {
          errors("examples: \(name) failed: \(error)")
          failed.append(name)
        }
      }
      if !failed.isEmpty { errors("examples: failed: \(failed.joined(separator: ", "))") }
      return failed.isEmpty ? 0 : 1
    }
  }
}

extension ExamplesCommand {
  /// What `--version` prints: the library's release (none is tagged yet), the build
  /// configuration and the context-switch backend in use, the three things that decide what
  /// the walkthroughs measure.
  public static var versionLine: String {
    #if DEBUG
      let build = "debug build"
    #else
      let build = "release build"
    #endif
    return "swift-coroutines examples, unreleased (\(build), \(CoroutineBackend.current) backend)"
  }
}

/// Writes `text` and a newline to standard output, unbuffered, so lines from walkthroughs and
/// errors interleave in the order they happened even through a pipe.
public func printLine(_ text: String) {
  FileHandle.standardOutput.write(Data((text + "\n").utf8))
}

/// Writes `text` and a newline to standard error.
public func printError(_ text: String) {
  FileHandle.standardError.write(Data((text + "\n").utf8))
}
