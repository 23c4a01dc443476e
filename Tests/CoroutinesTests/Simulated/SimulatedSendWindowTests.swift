import Foundation
import Testing

@testable import Coroutines

/// A simulated stream's send side is bounded as a real socket's is: a write to a peer that does
/// not read waits once the window is full, and ends by its timeout, by the peer reading, or
/// with the error a real socket gives.
@Suite struct SimulatedSendWindowTests {
  /// More than the window: a write of it must wait for the peer.
  static let moreThanTheWindow = 4 * SimulatedConnection.sendWindow

  /// Accepts one connection on the server and holds it for `seconds` without reading.
  static func acceptAndIgnore(_ net: SimulatedPair, for seconds: Double = 1_000) {
    net.server.launch(name: "ignoring server") {
      let listener = try CoTCPListener(port: 7)
      let connection = try listener.accept()
      try co_delay(seconds)
      connection.close()
    }
  }

  @Test func aWriteToAPeerThatNeverReadsTimesOutAtItsVirtualDeadline() throws {
    let net = SimulatedPair()
    defer { net.finish() }
    let loop = net.loop
    Self.acceptAndIgnore(net)
    let outcome = net.client.launch(name: "writer") {
      () throws -> (accepted: Int, startedAt: Double, failedAt: Double)? in
      let stream = try CoTCPStream.connect(host: "server", port: 7)
      defer { stream.close() }
      let chunk = [UInt8](repeating: 1, count: 16_384)
      var accepted = 0
      while accepted < Self.moreThanTheWindow {
        let startedAt = loop.now
        do {
          try stream.write(chunk, timeout: 5)
        } catch CoroutineError.timedOut {
          return (accepted, startedAt, loop.now)
        }
        accepted += chunk.count
      }
      return nil
    }
    loop.advance(by: 1)
    #expect(!outcome.isSettled, "the write that does not fit waits: \(loop)")
    let writer = loop.parkedCoroutines.first { $0.name == "writer" }
    #expect(writer?.waitReason == "simulated network")
    loop.advance(by: 10)
    let result = try #require(try outcome.result?.get(), "every write went through: \(loop)")
    #expect(result.accepted == SimulatedConnection.sendWindow, "the window, then no more")
    #expect(abs(result.failedAt - (result.startedAt + 5)) < 1e-9, "\(result)")
  }

  @Test func aWriterBlockedOnAFullWindowResumesAsThePeerReads() throws {
    let net = SimulatedPair()
    defer { net.finish() }
    let loop = net.loop
    let total = Self.moreThanTheWindow
    let received = net.server.launch { () throws -> [UInt8] in
      let listener = try CoTCPListener(port: 7)
      let connection = try listener.accept()
      try co_delay(10)
      var all: [UInt8] = []
      while all.count < total {
        let bytes = try connection.read(upTo: 65_536)
        if bytes.isEmpty { break }
        all += bytes
      }
      return all
    }
    let payload = (0..<total).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 >> 8) }
    let writtenAt = net.client.launch { () throws -> Double in
      let stream = try CoTCPStream.connect(host: "server", port: 7)
      defer { stream.close() }
      try stream.write(payload)
      return loop.now
    }
    loop.advance(by: 9)
    #expect(!writtenAt.isSettled, "nobody read: the write waits for room")
    loop.advance(by: 10)
    let finishedAt = try #require(try writtenAt.result?.get(), "\(loop)")
    #expect(finishedAt > 10, "it went on once the peer read")
    #expect(try received.result?.get() == payload, "every byte, in order")
  }

  @Test func aCrashedPeerFailsTheBlockedWriter() throws {
    let net = SimulatedPair()
    defer { net.finish() }
    Self.acceptAndIgnore(net)
    let writer = Self.launchBlockedWriter(net)
    net.server.crash()
    net.loop.advance(by: 1)
    #expect(posixCode(writer) == .ECONNRESET, "\(String(describing: writer.result))")
  }

  @Test func aPeerThatClosesWithoutReadingFailsTheBlockedWriter() throws {
    let net = SimulatedPair()
    defer { net.finish() }
    Self.acceptAndIgnore(net, for: 5)
    let writer = Self.launchBlockedWriter(net)
    net.loop.advance(by: 10)
    #expect(posixCode(writer) == .ECONNRESET, "\(String(describing: writer.result))")
  }

  @Test func aBlockedWriterReplaysTheSameTraceForTheSameSeed() throws {
    func run(seed: UInt64) throws -> (trace: [String], received: Int) {
      let net = SimulatedPair(seed: seed)
      defer { net.finish() }
      net.network.latency = .uniform(0.001...0.01)
      net.network.lossRate = 0.2
      let total = 3 * SimulatedConnection.sendWindow
      let received = net.server.launch { () throws -> Int in
        let listener = try CoTCPListener(port: 7)
        let connection = try listener.accept()
        var count = 0
        while count < total {
          try co_delay(0.1)  // a slow reader: the writer waits for it again and again
          let bytes = try connection.read(upTo: 100_000)
          if bytes.isEmpty { break }
          count += bytes.count
        }
        return count
      }
      net.client.launch {
        let stream = try CoTCPStream.connect(host: "server", port: 7)
        defer { stream.close() }
        try stream.write([UInt8](repeating: 4, count: total))
      }
      net.loop.advance(by: 100)
      return (net.network.trace, try #require(try received.result?.get()))
    }
    let first = try run(seed: 11)
    let again = try run(seed: 11)
    #expect(first.received == 3 * SimulatedConnection.sendWindow)
    #expect(first.trace == again.trace)
    #expect(first.trace.count > 6, "the write went in several segments: \(first.trace)")
  }

  /// A client that writes more than the window to the server, launched and run until its write
  /// waits for room.
  private static func launchBlockedWriter(_ net: SimulatedPair) -> CoTask<Void> {
    let writer = net.client.launch { () throws in
      let stream = try CoTCPStream.connect(host: "server", port: 7)
      defer { stream.close() }
      try stream.write([UInt8](repeating: 2, count: moreThanTheWindow))
    }
    net.loop.advance(by: 1)
    #expect(!writer.isSettled, "the write waits for room")
    return writer
  }
}
