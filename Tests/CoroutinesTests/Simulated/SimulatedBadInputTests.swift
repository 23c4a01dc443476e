import Foundation
import Testing

@testable import Coroutines

/// A simulated network given a setting it cannot have stops with a message naming the call and
/// the value (checked in child processes: Swift Testing exit tests).
@Suite struct SimulatedBadInputTests {
  typealias Misuse = BadInputTests.Misuse

  static let misuses = [
    Misuse(
      role: "negativeLatency",
      message: "CoSimulatedNetwork.latency: .fixed(-0.5) has a negative or NaN latency -0.5"),
    Misuse(role: "nanLatency", message: "CoSimulatedNetwork.latency: .fixed(nan) has a negative"),
    Misuse(
      role: "negativeUniformLatency",
      message: "CoSimulatedNetwork.latency: .uniform(-1.0...2.0) has a negative or NaN latency"),
    Misuse(role: "lossOfOne", message: "CoSimulatedNetwork.lossRate: 1.0 is not in 0 ..< 1"),
    Misuse(role: "negativeLoss", message: "CoSimulatedNetwork.lossRate: -0.1 is not in 0 ..< 1"),
    Misuse(role: "nanLoss", message: "CoSimulatedNetwork.lossRate: nan is not in 0 ..< 1"),
    Misuse(
      role: "negativeRetransmit",
      message: "CoSimulatedNetwork.retransmitTimeout: -1.0 is negative or NaN"),
    Misuse(
      role: "duplicateHost",
      message: "CoSimulatedNetwork.addHost(_:): the name \"a\" is already a host's"),
    Misuse(
      role: "partitionWithItself",
      message: "CoSimulatedNetwork.partition(_:_:): \"a\" cannot be partitioned from itself"),
    Misuse(
      role: "oneWayPartitionWithItself",
      message: "CoSimulatedNetwork.partition(from:to:): \"a\" cannot be partitioned from itself"),
    Misuse(
      role: "negativeReadTimeout",
      message: "CoTCPStream.read(upTo:timeout:): the timeout -1.0 is negative"),
  ]

  @Test(arguments: misuses)
  func aBadSettingStopsWithAMessageNamingTheCallAndValue(_ misuse: Misuse) async throws {
    let result = try await #require(
      processExitsWith: .failure, observing: [\.standardErrorContent]
    ) { [misuse] in
      Self.commit(misuse.role)
    }
    let output = String(decoding: result.standardErrorContent, as: UTF8.self)
    #expect(output.contains(misuse.message), "\(output)")
  }

  /// Commits the misuse named `role`; returns only if it failed to stop the process.
  static func commit(_ role: String) {
    let loop = CoroutineTestLoop()
    let network = CoSimulatedNetwork(on: loop)
    let a = network.addHost("a")
    switch role {
    case "negativeLatency": network.latency = .fixed(-0.5)
    case "nanLatency": network.latency = .fixed(.nan)
    case "negativeUniformLatency": network.latency = .uniform(-1...2)
    case "lossOfOne": network.lossRate = 1
    case "negativeLoss": network.lossRate = -0.1
    case "nanLoss": network.lossRate = .nan
    case "negativeRetransmit": network.retransmitTimeout = -1
    case "duplicateHost": _ = network.addHost("a")
    case "partitionWithItself": network.partition(a, a)
    case "oneWayPartitionWithItself": network.partition(from: a, to: a)
    case "negativeReadTimeout":
      a.launch {
        let listener = try CoTCPListener(port: 7)
        co_launch { _ = try listener.accept() }
        let stream = try CoTCPStream.connect(host: "a", port: 7)
        _ = try stream.read(upTo: 1, timeout: -1)
      }
      loop.advance(by: 1)
    default: break
    }
  }
}
