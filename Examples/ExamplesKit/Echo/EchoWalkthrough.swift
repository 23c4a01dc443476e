import Coroutines
import Foundation

/// An echo server and a thousand clients, every one of them a coroutine on one loop, talking
/// over loopback: real sockets, written as plain blocking-style loops.
public enum EchoWalkthrough {
  /// How many clients, and how much each sends.
  public struct Configuration: Sendable {
    /// Clients connected at once, each a coroutine with its own connection.
    public var clients = 1000
    /// Round trips each client makes.
    public var roundTrips = 20
    /// Bytes per message.
    public var messageSize = 64

    /// The defaults: 1 000 clients × 20 round trips of 64 bytes.
    public init() {}
  }

  /// What the clients measured.
  public struct Report: Sendable {
    /// Round trips completed, all clients together.
    public let requests: Int
    /// Messages that came back different from what was sent.
    public let mismatches: Int
    /// Round trips per second over the whole run.
    public let requestsPerSecond: Double
    /// The median of one round trip, in microseconds.
    public let p50Microseconds: Double
    /// The 99th percentile of one round trip, in microseconds.
    public let p99Microseconds: Double
  }

  /// The entry for `swift run examples echo`.
  public static let walkthrough = Walkthrough(
    name: "echo",
    summary: "an echo server and 1 000 clients, all coroutines on one loop, over loopback",
    simulated: simulatedRun
  ) { narrator in
    let configuration = Configuration()
    narrator.say(
      "one loop, one thread: an echo server and \(configuration.clients) clients, each a "
        + "coroutine with its own loopback connection (real sockets, nothing stubbed)")
    let report = try run(configuration)
    try check(report, configuration)
    printReport(report, configuration, narrator: narrator)
  }

  /// Starts the server on a free port of 127.0.0.1, runs the clients, and returns what they
  /// measured, on a fresh loop on the calling thread.
  public static func run(_ configuration: Configuration) throws -> Report {
    try CoroutineLoop.run {
      let listener = try CoTCPListener(host: "127.0.0.1", port: 0)
      let server = co_launch { try serveEcho(on: listener) }
      let start = DispatchTime.now().uptimeNanoseconds
      // Clients and server share this process's descriptors: past what it may open, clients
      // take turns rather than fail to connect.
      let turns = CoSemaphore(value: clientsAtOnce(configuration))
      let clients = (0..<configuration.clients).map { client in
        co_launch { () -> (latencies: [UInt64], mismatches: Int) in
          try turns.withPermit { try exchange(client, port: listener.port, configuration) }
        }
      }
      var latencies: [UInt64] = []
      latencies.reserveCapacity(configuration.clients * configuration.roundTrips)
      var mismatches = 0
      for client in clients {
        let result = try client.await()
        latencies += result.latencies
        mismatches += result.mismatches
      }
      let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
      listener.close()
      try server.await()
      latencies.sort()
      func percentile(_ fraction: Double) -> Double {
        guard !latencies.isEmpty else { return 0 }
        return Double(latencies[min(latencies.count - 1, Int(Double(latencies.count) * fraction))])
          / 1000
      }
      return Report(
        requests: latencies.count, mismatches: mismatches,
        requestsPerSecond: Double(latencies.count) / seconds,
        p50Microseconds: percentile(0.5), p99Microseconds: percentile(0.99))
    }
  }

  /// How many clients may be connected at once: each connection takes two descriptors (the
  /// client's and the server's end), under the process's limit (`ulimit -n`), less a margin
  /// for the loop, the listener and standard streams.
  public static func clientsAtOnce(_ configuration: Configuration) -> Int {
    var limit = rlimit()
    guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0 else {
      return configuration.clients
    }
    let available = Int(min(limit.rlim_cur, 1 << 20)) - 64
    return max(1, min(configuration.clients, available / 2))
  }

  /// One client: connects, sends each message and reads it back, timing every round trip.
  private static func exchange(_ client: Int, port: UInt16, _ configuration: Configuration)
    throws -> (latencies: [UInt64], mismatches: Int)
  {
    let stream = try CoTCPStream.connect(host: "127.0.0.1", port: port, timeout: 10)
    defer { stream.close() }
    var latencies: [UInt64] = []
    var mismatches = 0
    for round in 0..<configuration.roundTrips {
      let message = (0..<configuration.messageSize).map {
        UInt8(truncatingIfNeeded: client &* 7 &+ round &* 13 &+ $0)
      }
      let sent = DispatchTime.now().uptimeNanoseconds
      try stream.write(message, timeout: 10)
      var reply: [UInt8] = []
      while reply.count < message.count {
        let bytes = try stream.read(upTo: message.count - reply.count, timeout: 10)
        if bytes.isEmpty { break }
        reply += bytes
      }
      latencies.append(DispatchTime.now().uptimeNanoseconds - sent)
      if reply != message { mismatches += 1 }
    }
    return (latencies, mismatches)
  }

  /// Throws unless every round trip came back, byte for byte.
  public static func check(_ report: Report, _ configuration: Configuration) throws {
    let expected = configuration.clients * configuration.roundTrips
    guard report.requests == expected else {
      throw WalkthroughCheckFailed("\(report.requests) round trips, expected \(expected)")
    }
    guard report.mismatches == 0 else {
      throw WalkthroughCheckFailed("\(report.mismatches) messages came back altered")
    }
  }

  static func printReport(_ report: Report, _ configuration: Configuration, narrator: Narrator) {
    #if DEBUG
      let build = "a debug build: `swift run -c release examples echo` is several times faster"
    #else
      let build = "a release build"
    #endif
    narrator.show("")
    narrator.show(
      "  \(report.requests) round trips of \(configuration.messageSize) bytes, every byte "
        + "checked, in \(build)")
    narrator.show(String(format: "  requests per second  %.0f", report.requestsPerSecond))
    narrator.show(
      String(
        format: "  round trip          p50 %.1f ms, p99 %.1f ms", report.p50Microseconds / 1000,
        report.p99Microseconds / 1000))
    let atOnce = clientsAtOnce(configuration)
    narrator.show(
      "  (\(atOnce == configuration.clients ? "all \(atOnce)" : "\(atOnce)") clients are in "
        + "flight at once, so a round trip includes the turns of the others on the loop's one "
        + "thread)")
    if atOnce < configuration.clients {
      narrator.show(
        "  (the process may open too few descriptors for \(configuration.clients) connections "
          + "at once, two each: see `ulimit -n`)")
    }
    narrator.show("")
    let lines = SourceLines.count(region: "server", inFile: echoServerSource)
    guard let source = SourceLines.text(region: "server", inFile: echoServerSource) else {
      narrator.show("  (the server's source is not beside this binary)")
      return
    }
    narrator.show("  The whole server, \(lines.map(String.init) ?? "?") lines of code:")
    narrator.show("")
    for line in source.split(separator: "\n", omittingEmptySubsequences: false) {
      narrator.show("    " + line)
    }
  }
}
