import Foundation
import Testing

@testable import Coroutines

/// What the test loop's diagnostics say of coroutines waiting on the simulated network.
@Suite struct SimulatedDiagnosticsTests {
  @Test func aCoroutineWaitingOnASimulatedStreamNamesTheSimulatedNetwork() throws {
    let net = SimulatedPair()
    defer { net.finish() }
    net.startEchoServer()
    net.client.launch(name: "reader") { () throws -> [UInt8] in
      let stream = try CoTCPStream.connect(host: "server", port: 7)
      return try stream.read(upTo: 100)  // the server echoes nothing unasked
    }
    net.loop.advance(by: 1)
    let reader = net.loop.parkedCoroutines.first { $0.name == "reader" }
    #expect(reader?.waitReason == "simulated network")
    #expect(reader?.waitingFor == 1 - 0.002, "parked once connected, one round trip in")
  }

  @Test func aSegmentOnItsWayIsNotADeadlockAndAnIdleNetworkIs() throws {
    let net = SimulatedPair()
    defer { net.finish() }
    net.startEchoServer()
    let reply = net.client.launch { () throws -> [UInt8] in
      let stream = try CoTCPStream.connect(host: "server", port: 7)
      try stream.write([7])
      return try stream.read(upTo: 100)
    }
    net.loop.runUntilIdle()
    // The connection attempt is on its way: a pending timer, which can still wake the client.
    try net.loop.checkForDeadlock()
    net.loop.advance(by: 1)
    #expect(try reply.result?.get() == [7])
    // Only the server is left, parked in accept, and nothing is on its way to it.
    #expect(throws: CoroutineDeadlock.self) { try net.loop.checkForDeadlock() }
  }
}
