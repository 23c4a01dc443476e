import Coroutines
import Foundation

extension EchoWalkthrough {
  /// What the simulated run saw, on the network's virtual clock.
  public struct SimulatedReport: Sendable {
    /// Round trips completed, all clients together.
    public let requests: Int
    /// Messages that came back different from what was sent.
    public let mismatches: Int
    /// Virtual seconds from the first connection to the last reply.
    public let virtualSeconds: Double
    /// The median of one round trip, in virtual milliseconds.
    public let p50Milliseconds: Double
    /// The 99th percentile of one round trip, in virtual milliseconds.
    public let p99Milliseconds: Double
    /// Segments the network delivered.
    public let segments: Int
    /// Delivered segments that had been lost and sent again.
    public let resent: Int
    /// The first lines of the network's trace.
    public let traceHead: [String]
  }

  /// `swift run examples echo --simulated`: the same `serveEcho` and the same clients' loop on
  /// a simulated network driven by a test loop: 1 ms each way, 10 % of segments lost (and sent
  /// again 200 ms later), virtual time, the same outcome for the same seed.
  public static let simulatedRun: @Sendable (Narrator) throws -> Void = { narrator in
    var configuration = Configuration()
    configuration.clients = 200
    configuration.roundTrips = 10
    narrator.say(
      "a simulated network on a test loop: host \"server\" runs serveEcho, unchanged; host "
        + "\"clients\" runs \(configuration.clients) clients; 1 ms each way, 10 % of segments "
        + "lost, virtual time, seed 42")
    let report = try runSimulated(configuration, seed: 42)
    guard report.requests == configuration.clients * configuration.roundTrips,
      report.mismatches == 0
    else {
      throw WalkthroughCheckFailed(
        "simulated echo: \(report.requests) round trips, \(report.mismatches) mismatches")
    }
    narrator.show(
      "  \(report.requests) round trips, every byte back in order, in "
        + String(format: "%.3f virtual seconds", report.virtualSeconds)
        + String(
          format: "; round trip p50 %.1f ms, p99 %.1f ms (virtual)", report.p50Milliseconds,
          report.p99Milliseconds))
    narrator.show(
      "  trace: \(report.segments) segments delivered, \(report.resent) of them after a loss; "
        + "it begins:")
    for line in report.traceHead { narrator.show("    " + line) }
  }

  /// Runs `serveEcho` and the clients on a simulated network with 10 % loss, on a test loop
  /// seeded with `seed`, and returns what the clients measured on the virtual clock.
  public static func runSimulated(_ configuration: Configuration, seed: UInt64) throws
    -> SimulatedReport
  {
    let loop = CoroutineTestLoop(seed: seed)
    let network = CoSimulatedNetwork(on: loop)
    network.lossRate = 0.1
    let server = network.addHost("server")
    let clientsHost = network.addHost("clients")
    let listening = server.launch { try serveEcho(on: CoTCPListener(port: 7)) }
    let clients = (0..<configuration.clients).map { client in
      clientsHost.launch { () throws -> (latencies: [Double], mismatches: Int, done: Double) in
        let (latencies, mismatches) = try simulatedExchange(client, loop: loop, configuration)
        return (latencies, mismatches, loop.now)
      }
    }
    while clients.contains(where: { !$0.isSettled }) { loop.advance(by: 1) }
    listening.cancel()
    loop.advance(by: 1)
    var latencies: [Double] = []
    var mismatches = 0
    var done = 0.0
    for client in clients {
      guard let result = try client.result?.get() else { continue }
      latencies += result.latencies
      mismatches += result.mismatches
      done = max(done, result.done)
    }
    latencies.sort()
    func percentile(_ fraction: Double) -> Double {
      guard !latencies.isEmpty else { return 0 }
      return latencies[min(latencies.count - 1, Int(Double(latencies.count) * fraction))] * 1000
    }
    let trace = network.trace
    return SimulatedReport(
      requests: latencies.count, mismatches: mismatches, virtualSeconds: done,
      p50Milliseconds: percentile(0.5), p99Milliseconds: percentile(0.99),
      segments: trace.count, resent: trace.filter { $0.contains("(resent") }.count,
      traceHead: Array(trace.prefix(4)))
  }

  /// One client, as on loopback, timing each round trip on the test loop's clock.
  private static func simulatedExchange(
    _ client: Int, loop: CoroutineTestLoop, _ configuration: Configuration
  ) throws -> (latencies: [Double], mismatches: Int) {
    let stream = try CoTCPStream.connect(host: "server", port: 7, timeout: 10)
    defer { stream.close() }
    var latencies: [Double] = []
    var mismatches = 0
    for round in 0..<configuration.roundTrips {
      let message = (0..<configuration.messageSize).map {
        UInt8(truncatingIfNeeded: client &* 7 &+ round &* 13 &+ $0)
      }
      let sent = loop.now
      try stream.write(message, timeout: 10)
      var reply: [UInt8] = []
      while reply.count < message.count {
        let bytes = try stream.read(upTo: message.count - reply.count, timeout: 10)
        if bytes.isEmpty { break }
        reply += bytes
      }
      latencies.append(loop.now - sent)
      if reply != message { mismatches += 1 }
    }
    return (latencies, mismatches)
  }
}
