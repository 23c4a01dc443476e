import Foundation
import Testing

@testable import Coroutines

/// A simulated network, its loop and everything on them go away once the test lets go of them
/// and nothing runs on them any more.
@Suite struct SimulatedLifetimeTests {
  @Test func aNetworkWhoseTasksFinishedIsFreedWithItsLoop() throws {
    expectFreed(outliving: "its last task") { net in
      net.startEchoServer().cancel()
      let reply = net.client.launch { () throws -> [UInt8] in
        let stream = try CoTCPStream.connect(host: "server", port: 7)
        defer { stream.close() }
        return try stream.read(upTo: 10)
      }
      net.loop.advance(by: 1)
      // The echo server was cancelled before it listened: the connection is refused.
      #expect(posixCode(reply) == .ECONNREFUSED)
      #expect(net.loop.liveCoroutines == 0)
    }
  }

  @Test func aNetworkLeftWithSegmentsOnTheirWayIsFreedWithItsLoop() throws {
    expectFreed(outliving: "its test") { net in
      net.startEchoServer()
      net.client.launch {
        let stream = try CoTCPStream.connect(host: "server", port: 7)
        _ = try stream.read(upTo: 10)
      }
      net.loop.advance(by: 1)
      // Both ends are connected and waiting; the crashes send resets, still on their way when
      // the test lets go.
      net.finish()
      #expect(net.loop.liveCoroutines == 0)
      #expect(net.loop.pendingTimers > 0, "a reset is on its way")
    }
  }

  /// Runs `body` on a pair of hosts on a fresh network, then expects the network and its loop
  /// to be gone once nothing holds them; `outliving` names what the network must not outlive.
  private func expectFreed(outliving: String, _ body: (SimulatedPair) -> Void) {
    weak var loopLeft: CoroutineTestLoop?
    weak var worldLeft: SimulatedWorld?
    do {
      let net = SimulatedPair()
      loopLeft = net.loop
      worldLeft = net.network.world
      body(net)
    }
    #expect(worldLeft == nil, "the network outlived \(outliving)")
    #expect(loopLeft == nil, "the loop outlived its network")
  }
}
