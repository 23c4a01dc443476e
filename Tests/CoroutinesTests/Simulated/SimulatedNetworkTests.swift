import Foundation
import Testing

@testable import Coroutines

/// The simulated network runs the TCP types unchanged on a test loop's virtual clock: hosts,
/// latency, connection errors, timeouts and reproducible traces. No descriptor is opened.
@Suite struct SimulatedNetworkTests {
  @Test func anEchoServerAndClientRunUnchangedOnSimulatedHosts() throws {
    let net = SimulatedPair()
    defer { net.finish() }
    net.startEchoServer()
    let reply = net.client.launch { () throws -> [UInt8] in
      let stream = try CoTCPStream.connect(host: "server", port: 7)
      defer { stream.close() }
      try stream.write(Array("ping".utf8))
      return try stream.read(upTo: 100)
    }
    net.loop.advance(by: 1)
    #expect(try reply.result?.get() == Array("ping".utf8), "\(net.loop)")
  }

  @Test func hostsHaveLoopbackAddressesInTheOrderTheyWereAdded() throws {
    let net = SimulatedPair()
    defer { net.finish() }
    #expect(net.server.address == "127.77.0.1")
    #expect(net.client.address == "127.77.0.2")
    #expect(net.server.name == "server")
    #expect(net.server.isUp)
    net.startEchoServer()
    let reply = net.client.launch { () throws -> [UInt8] in
      let stream = try CoTCPStream.connect(host: "127.77.0.1", port: 7)
      try stream.write([1, 2, 3])
      return try stream.read(upTo: 100)
    }
    net.loop.advance(by: 1)
    #expect(try reply.result?.get() == [1, 2, 3])
  }

  @Test func localhostIsTheHostItself() throws {
    let net = SimulatedPair()
    defer { net.finish() }
    let reply = net.server.launch { () throws -> [UInt8] in
      let listener = try CoTCPListener(host: "0.0.0.0", port: 80)
      let accepted = co_launch { () throws -> CoTCPStream in try listener.accept() }
      let stream = try CoTCPStream.connect(host: "localhost", port: 80)
      try stream.write([9])
      return try co_await(accepted).read(upTo: 10)
    }
    net.loop.advance(by: 1)
    #expect(try reply.result?.get() == [9])
    #expect(net.network.trace.allSatisfy { $0.contains("server:") && !$0.contains("client") })
  }

  @Test func connectingTakesOneRoundTripAndEachSegmentOneLatency() throws {
    let net = SimulatedPair()
    defer { net.finish() }
    net.network.latency = .fixed(0.01)
    net.startEchoServer()
    let loop = net.loop
    let times = net.client.launch { () throws -> [Double] in
      let stream = try CoTCPStream.connect(host: "server", port: 7)
      let connected = loop.now
      try stream.write([1])
      _ = try stream.read(upTo: 10)
      return [connected, loop.now]
    }
    loop.advance(by: 1)
    #expect(try times.result?.get() == [0.02, 0.04])
    #expect(loop.pendingTimers == 0, "nothing is in flight once all is delivered")
  }

  @Test func aUniformLatencyIsDrawnFromTheSeedWithinItsRange() throws {
    func run(seed: UInt64) throws -> (trace: [String], times: [Double]) {
      let net = SimulatedPair(seed: seed)
      defer { net.finish() }
      net.network.latency = .uniform(0.01...0.05)
      net.startEchoServer()
      let loop = net.loop
      let times = net.client.launch { () throws -> [Double] in
        let stream = try CoTCPStream.connect(host: "server", port: 7)
        var times: [Double] = []
        for index in 0..<5 {
          let sent = loop.now
          try stream.write([UInt8(index)])
          _ = try stream.read(upTo: 10)
          times.append(loop.now - sent)
        }
        return times
      }
      loop.advance(by: 10)
      return (net.network.trace, try #require(times.result).get())
    }
    let first = try run(seed: 11)
    let again = try run(seed: 11)
    #expect(first.trace == again.trace)
    #expect(first.times == again.times)
    for roundTrip in first.times { #expect(roundTrip >= 0.02 - 1e-9 && roundTrip <= 0.1 + 1e-9) }
    #expect(Set(first.times).count > 1, "a uniform latency varies: \(first.times)")
  }

  @Test func connectingToAPortWithoutAListenerIsRefusedAfterOneRoundTrip() throws {
    let net = SimulatedPair()
    defer { net.finish() }
    net.network.latency = .fixed(0.05)
    let loop = net.loop
    var refusedAt = -1.0
    let task = net.client.launch {
      defer { refusedAt = loop.now }
      _ = try CoTCPStream.connect(host: "server", port: 9)
    }
    loop.advance(by: 1)
    #expect(posixCode(task) == .ECONNREFUSED)
    #expect(refusedAt == 0.1)
  }

  @Test func anUnknownNameOrAddressIsUnreachableAtOnce() throws {
    let net = SimulatedPair()
    defer { net.finish() }
    for target in ["nowhere", "127.77.0.99"] {
      let task = net.client.launch { _ = try CoTCPStream.connect(host: target, port: 7) }
      net.loop.runUntilIdle()
      #expect(posixCode(task) == .EHOSTUNREACH, "\(target)")
    }
    #expect(net.loop.now == 0)
  }

  @Test func aListenerPortIsTakenOnceAndPortZeroPicksOne() throws {
    let net = SimulatedPair()
    defer { net.finish() }
    let ports = net.server.launch { () throws -> [UInt16] in
      let first = try CoTCPListener(port: 0)
      let second = try CoTCPListener(port: 0)
      let fixed = try CoTCPListener(port: 80)
      #expect(throws: POSIXError(.EADDRINUSE)) { _ = try CoTCPListener(port: 80) }
      return [first.port, second.port, fixed.port]
    }
    net.loop.runUntilIdle()
    let values = try #require(ports.result).get()
    #expect(values[0] != 0 && values[1] != 0 && values[0] != values[1] && values[2] == 80)
  }

  @Test func aReadTimesOutOnTheVirtualClockAndTheStreamStaysUsable() throws {
    let net = SimulatedPair()
    defer { net.finish() }
    let loop = net.loop
    let server = net.server.launch { () throws -> Void in
      let listener = try CoTCPListener(port: 7)
      let connection = try listener.accept()
      try co_delay(2)
      try connection.write([42])
    }
    let client = net.client.launch { () throws -> [String] in
      let stream = try CoTCPStream.connect(host: "server", port: 7)
      var seen: [String] = []
      do {
        _ = try stream.read(upTo: 10, timeout: 0.5)
      } catch CoroutineError.timedOut {
        seen.append("timed out at \(loop.now)")
      }
      seen.append("read \(try stream.read(upTo: 10)) at \(loop.now)")
      return seen
    }
    loop.advance(by: 5)
    #expect(throws: Never.self) { try server.result?.get() }
    // Connected at 0.002; the server accepted at 0.001, writes 2 s later, arriving at 2.002.
    #expect(try client.result?.get() == ["timed out at 0.502", "read [42] at 2.002"])
  }

  @Test func anAcceptTimesOutOnTheVirtualClock() throws {
    let net = SimulatedPair()
    defer { net.finish() }
    let loop = net.loop
    let task = net.server.launch { () throws -> Double in
      let listener = try CoTCPListener(port: 7)
      #expect(throws: CoroutineError.timedOut) { _ = try listener.accept(timeout: 3) }
      return loop.now
    }
    loop.advance(by: 10)
    #expect(try task.result?.get() == 3)
  }

  @Test func closingEndsThePeersStreamAndLaterCallsThrowBadDescriptor() throws {
    let net = SimulatedPair()
    defer { net.finish() }
    net.server.launch {
      let listener = try CoTCPListener(port: 7)
      let connection = try listener.accept()
      try connection.write([1, 2])
      connection.close()
      #expect(throws: POSIXError(.EBADF)) { _ = try connection.read(upTo: 1) }
      #expect(throws: POSIXError(.EBADF)) { try connection.write([1]) }
    }
    let reads = net.client.launch { () throws -> [[UInt8]] in
      let stream = try CoTCPStream.connect(host: "server", port: 7)
      defer { stream.close() }
      return [try stream.read(upTo: 1), try stream.read(upTo: 10), try stream.read(upTo: 10)]
    }
    net.loop.advance(by: 1)
    #expect(try reads.result?.get() == [[1], [2], []])
  }

  @Test func aWriteAfterShutdownWriteThrowsBrokenPipeAndThePeerReadsTheEnd() throws {
    let net = SimulatedPair()
    defer { net.finish() }
    net.startEchoServer()
    let task = net.client.launch { () throws -> [UInt8] in
      let stream = try CoTCPStream.connect(host: "server", port: 7)
      try stream.write([5])
      stream.shutdownWrite()
      #expect(throws: POSIXError(.EPIPE)) { try stream.write([6]) }
      var all: [UInt8] = []
      while case let bytes = try stream.read(upTo: 10), !bytes.isEmpty { all += bytes }
      return all
    }
    net.loop.advance(by: 1)
    #expect(try task.result?.get() == [5])
  }

  @Test func readIntoABufferWorksOnTheSimulatedTransport() throws {
    let net = SimulatedPair()
    defer { net.finish() }
    net.startEchoServer()
    let task = net.client.launch { () throws -> [UInt8] in
      let stream = try CoTCPStream.connect(host: "server", port: 7)
      try [UInt8]([7, 8, 9]).withUnsafeBytes { try stream.write($0) }
      var buffer = [UInt8](repeating: 0, count: 2)
      let count = try buffer.withUnsafeMutableBytes { try stream.read(into: $0) }
      return Array(buffer[0..<count])
    }
    net.loop.advance(by: 1)
    #expect(try task.result?.get() == [7, 8])
  }

  @Test func theSameSeedGivesTheSameTraceAndAnotherSeedAnother() throws {
    func trace(seed: UInt64) -> [String] {
      let net = SimulatedPair(seed: seed)
      defer { net.finish() }
      net.network.lossRate = 0.3
      net.network.latency = .uniform(0.001...0.01)
      net.startEchoServer()
      for index in 0..<3 {
        net.client.launch {
          let stream = try CoTCPStream.connect(host: "server", port: 7)
          defer { stream.close() }
          for round in 0..<5 {
            try stream.write([UInt8(index), UInt8(round)])
            var got = 0
            while got < 2 { got += try stream.read(upTo: 10).count }
          }
        }
      }
      net.loop.advance(by: 60)
      return net.network.trace
    }
    let first = trace(seed: 1)
    #expect(first.count >= 3 * 11)
    #expect(trace(seed: 1) == first)
    #expect(trace(seed: 2) != first)
  }

  @Test func aSegmentOnItsWayIsAPendingTimerOfTheLoop() throws {
    let net = SimulatedPair()
    defer { net.finish() }
    net.startEchoServer()
    let reply = net.client.launch { () throws -> [UInt8] in
      let stream = try CoTCPStream.connect(host: "server", port: 7)
      try stream.write([1])
      return try stream.read(upTo: 10)
    }
    net.loop.runUntilIdle()
    #expect(net.loop.pendingTimers == 1, "the connection attempt is on its way")
    net.loop.advance(by: 0.0025)
    #expect(net.loop.pendingTimers == 1, "the echo's data is on its way")
    net.loop.advance(by: 1)
    #expect(try reply.result?.get() == [1])
    #expect(net.loop.pendingTimers == 0, "nothing is on its way")
  }
}
