import Coroutines
import Foundation

/// `swift run -c release examples http [--port N] [--threads N] [--idle-timeout S]
/// [--header-timeout S]`: the HTTP server as a program, until SIGINT or SIGTERM.
public enum HTTPCommand {
  /// The options' help, printed for a mistake in them.
  public static let usage =
    "usage: swift run -c release examples http [--port N] [--threads N] [--idle-timeout S] "
    + "[--header-timeout S]\n       swift run examples http --walkthrough  (the narrated tour)"

  /// The configuration `arguments` (those after `http`) ask for, or what is wrong with them.
  public static func parse(_ arguments: [String]) -> Result<HTTPServerConfiguration, UsageError> {
    var configuration = HTTPServerConfiguration()
    var remaining = arguments[...]
    while let option = remaining.popFirst() {
      guard let value = remaining.popFirst() else {
        return .failure(UsageError("\(option) needs a value"))
      }
      switch option {
      case "--port":
        guard let port = UInt16(value) else { return .failure(UsageError("bad port \(value)")) }
        configuration.port = port
      case "--threads":
        guard let threads = Int(value), (1...256).contains(threads) else {
          return .failure(UsageError("--threads takes 1 to 256, not \(value)"))
        }
        configuration.threads = threads
      case "--idle-timeout", "--header-timeout":
        guard let seconds = Double(value), seconds > 0, seconds.isFinite else {
          return .failure(UsageError("\(option) takes a positive number of seconds, not \(value)"))
        }
        if option == "--idle-timeout" {
          configuration.idleTimeout = seconds
        } else {
          configuration.headerTimeout = seconds
        }
      default:
        return .failure(UsageError("unknown option \(option)"))
      }
    }
    return .success(configuration)
  }

  /// A mistake in the options.
  public struct UsageError: Error, Equatable, CustomStringConvertible {
    /// What is wrong.
    public let description: String
    init(_ description: String) { self.description = description }
  }

  /// Runs the server until SIGINT or SIGTERM: prints `listening on http://127.0.0.1:PORT` first
  /// and the summary last. `--walkthrough` runs the narrated walkthrough instead. Returns the exit status: 0 after a stop (and for `--help`, which
  /// prints the options), 64 for bad options, 1 when the server could not start.
  public static func main(
    _ arguments: [String], output: @escaping @Sendable (String) -> Void = { printLine($0) },
    errors: @escaping @Sendable (String) -> Void = { printError($0) }
  ) -> Int32 {
    if arguments.contains(where: { ["--help", "-h", "help"].contains($0) }) {
      output(usage)
      return 0
    }
    if arguments == ["--walkthrough"] {
      do {
        try HTTPWalkthrough.run(narrator: Narrator(sink: output))
        return 0
      } catch {
        errors("examples http: \(error)")
        return 1
      }
    }
    let configuration: HTTPServerConfiguration
    switch parse(arguments) {
    case .success(let parsed): configuration = parsed
    case .failure(let error):
      errors("examples http: \(error)\n\(usage)")
      return 64
    }
    raiseDescriptorLimit()
    do {
      let server = try HTTPServer(configuration)
      // Signals are taken as events on a queue, not in a handler: stop() takes locks. Each
      // source is registered before the first line is printed, so that a signal sent as soon
      // as the line is read is not lost to the ignored disposition meanwhile.
      let registered = DispatchSemaphore(value: 0)
      let sources = [SIGINT, SIGTERM].map { number in
        signal(number, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
        source.setEventHandler { server.stop() }
        source.setRegistrationHandler { registered.signal() }
        source.resume()
        return source
      }
      for _ in sources { registered.wait() }
      defer { for source in sources { source.cancel() } }
      output("listening on http://127.0.0.1:\(server.port)")
      let group =
        configuration.threads > 1 ? CoroutineLoopGroup(threads: configuration.threads) : nil
      let summary = try CoroutineLoop.run { try server.serve(on: group) }
      group?.shutdown()
      output(summary.line)
      return 0
    } catch {
      errors("examples http: \(error)")
      return 1
    }
  }

  /// Lets the process open as many descriptors as its hard limit allows, as Go's runtime does
  /// at start: a server with a thousand connections needs more than the usual 1 024.
  static func raiseDescriptorLimit() {
    var limit = rlimit()
    let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
    guard getrlimit(resource, &limit) == 0, limit.rlim_cur < limit.rlim_max else { return }
    limit.rlim_cur = limit.rlim_max
    _ = setrlimit(resource, &limit)
  }
}
