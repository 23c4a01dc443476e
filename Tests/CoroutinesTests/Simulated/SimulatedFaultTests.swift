import Foundation
import Testing

@testable import Coroutines

/// What real loopback cannot produce, on the simulated network: lost segments, partitions and
/// crashed peers, with the library's TCP types unchanged.
@Suite struct SimulatedFaultTests {
  @Test func lostSegmentsAreResentAndTheStreamStaysInOrder() throws {
    let net = SimulatedPair(seed: 3)
    defer { net.finish() }
    net.network.lossRate = 0.5
    net.network.retransmitTimeout = 0.2
    let received = net.server.launch { () throws -> [UInt8] in
      let listener = try CoTCPListener(port: 7)
      let connection = try listener.accept()
      var all: [UInt8] = []
      while case let bytes = try connection.read(upTo: 100), !bytes.isEmpty { all += bytes }
      return all
    }
    net.client.launch {
      let stream = try CoTCPStream.connect(host: "server", port: 7)
      defer { stream.close() }
      for value in 0..<50 { try stream.write([UInt8(value)]) }
    }
    net.loop.advance(by: 600)
    #expect(try received.result?.get() == (0..<50).map { UInt8($0) }, "\(net.loop)")
    let resent = net.network.trace.filter { $0.contains("(resent") }
    #expect(!resent.isEmpty, "with half of the segments lost, some were resent")
  }

  @Test func aLostSegmentArrivesOneRetransmitTimeoutLater() throws {
    // With a loss rate just below one, the first segments are all but certainly lost; the
    // trace says how often, and each loss costs one retransmit timeout.
    let net = SimulatedPair(seed: 9)
    defer { net.finish() }
    net.network.latency = .fixed(0.01)
    net.network.retransmitTimeout = 1
    net.network.lossRate = 0.5
    net.startEchoServer()
    let loop = net.loop
    let connectedAt = net.client.launch { () throws -> Double in
      _ = try CoTCPStream.connect(host: "server", port: 7)
      return loop.now
    }
    loop.advance(by: 100)
    let lines = net.network.trace.prefix(2)
    let losses = lines.map { line -> Int in
      guard let range = line.range(of: "(resent ") else { return 0 }
      return Int(line[range.upperBound...].dropLast()) ?? -1
    }
    let expected = 0.02 + Double(losses.reduce(0, +)) * 1
    #expect(abs(try #require(connectedAt.result).get() - expected) < 1e-9, "\(lines)")
  }

  @Test func aPartitionHoldsSegmentsUntilRepairedThenTheyArriveInOrder() throws {
    let net = SimulatedPair()
    defer { net.finish() }
    let loop = net.loop
    let received = net.server.launch { () throws -> [String] in
      let listener = try CoTCPListener(port: 7)
      let connection = try listener.accept()
      var seen: [String] = []
      var all: [UInt8] = []
      while all.count < 3 {
        all += try connection.read(upTo: 10)
        seen.append("\(all) at \(loop.now)")
      }
      return seen
    }
    net.client.launch {
      let stream = try CoTCPStream.connect(host: "server", port: 7)
      try co_delay(1)
      for value in 1...3 { try stream.write([UInt8(value)]) }
    }
    loop.advance(by: 0.5)
    net.network.partition(net.server, net.client)
    loop.advance(by: 10)
    #expect(!received.isSettled, "nothing crosses a partition")
    net.network.repair(net.server, net.client)
    loop.advance(by: 1)
    #expect(try received.result?.get() == ["[1, 2, 3] at 10.501"])
  }

  @Test func aOneWayPartitionHoldsOnlyItsDirection() throws {
    let net = SimulatedPair()
    defer { net.finish() }
    let loop = net.loop
    let server = net.server.launch { () throws -> [UInt8] in
      let listener = try CoTCPListener(port: 7)
      let connection = try listener.accept()
      try connection.write([1])  // reaches the client, whose way back is cut
      return try connection.read(upTo: 10)
    }
    let client = net.client.launch { () throws -> [UInt8] in
      let stream = try CoTCPStream.connect(host: "server", port: 7)
      try stream.write(try stream.read(upTo: 10) + [2])
      return [1]
    }
    loop.advance(by: 0.002)  // connected: the server's write is on its way
    net.network.partition(from: net.client, to: net.server)
    loop.advance(by: 5)
    #expect(try client.result?.get() == [1], "the server's way to the client is open")
    #expect(!server.isSettled, "the client's way to the server is cut")
    net.network.repairAll()
    loop.advance(by: 1)
    #expect(try server.result?.get() == [1, 2])
  }

  @Test func aPartitionHoldsConnectionAttemptsAndTimeoutsStillApply() throws {
    let net = SimulatedPair()
    defer { net.finish() }
    net.startEchoServer()
    net.network.partition(net.client, net.server)
    let loop = net.loop
    let timedOut = net.client.launch { () throws -> Double in
      #expect(throws: CoroutineError.timedOut) {
        _ = try CoTCPStream.connect(host: "server", port: 7, timeout: 2)
      }
      return loop.now
    }
    let patient = net.client.launch { () throws -> Double in
      _ = try CoTCPStream.connect(host: "server", port: 7)
      return loop.now
    }
    loop.advance(by: 5)
    #expect(try timedOut.result?.get() == 2)
    #expect(!patient.isSettled)
    net.network.repair(net.client, net.server)
    loop.advance(by: 1)
    #expect(try patient.result?.get() == 5.002)
  }

  @Test func aCrashCancelsTheHostsCoroutinesAndResetsItsPeersOneLatencyLater() throws {
    let net = SimulatedPair()
    defer { net.finish() }
    net.network.latency = .fixed(0.01)
    let loop = net.loop
    var serverDeferRan = false
    let server = net.server.launch {
      defer { serverDeferRan = true }
      let listener = try CoTCPListener(port: 7)
      let connection = try listener.accept()
      _ = try connection.read(upTo: 10)  // waits for ever
    }
    let client = net.client.launch { () throws -> String in
      let stream = try CoTCPStream.connect(host: "server", port: 7)
      do {
        _ = try stream.read(upTo: 10)
        return "read"
      } catch let error as POSIXError {
        #expect(throws: POSIXError(.ECONNRESET)) { try stream.write([1]) }
        return "\(error.code == .ECONNRESET ? "reset" : "other") at \(loop.now)"
      }
    }
    loop.advance(by: 1)
    net.server.crash()
    #expect(!net.server.isUp)
    loop.advance(by: 1)
    #expect(serverDeferRan)
    #expect(
      server.result.map { if case .failure(is CancellationError) = $0 { true } else { false } }
        == true)
    #expect(try client.result?.get() == "reset at 1.01")
    #expect(loop.liveCoroutines == 0)
  }

  @Test func aCrashedHostRefusesConnectionsUntilRestartedAndRelaunched() throws {
    let net = SimulatedPair()
    defer { net.finish() }
    net.startEchoServer()
    net.loop.advance(by: 1)
    net.server.crash()
    let loop = net.loop
    let refused = net.client.launch { () throws -> Double in
      #expect(throws: POSIXError(.ECONNREFUSED)) {
        _ = try CoTCPStream.connect(host: "server", port: 7)
      }
      return loop.now
    }
    loop.advance(by: 1)
    #expect(try refused.result?.get() == 1.002)
    let downLaunch = net.server.launch { 1 }
    loop.runUntilIdle()
    #expect(downLaunch.result.map { (try? $0.get()) == nil } == true, "a down host runs nothing")
    net.server.restart()
    #expect(net.server.isUp)
    let idle = net.client.launch { () throws -> Void in
      _ = try CoTCPStream.connect(host: "server", port: 7)
    }
    loop.advance(by: 1)
    #expect(posixCode(idle) == .ECONNREFUSED, "restarted with nothing listening")
    net.startEchoServer()
    let reply = net.client.launch { () throws -> [UInt8] in
      let stream = try CoTCPStream.connect(host: "server", port: 7)
      try stream.write([4])
      return try stream.read(upTo: 10)
    }
    loop.advance(by: 1)
    #expect(try reply.result?.get() == [4])
  }

  @Test func aCrashCancelsTheChildrenOfTheHostsCoroutines() throws {
    let net = SimulatedPair()
    defer { net.finish() }
    net.startEchoServer()
    let client = net.client.launch { () throws -> Void in
      let stream = try CoTCPStream.connect(host: "server", port: 7)
      try stream.write([1])
      _ = try stream.read(upTo: 10)
      _ = try stream.read(upTo: 10)  // the echo child waits for more, for ever
    }
    net.loop.advance(by: 1)
    #expect(net.loop.liveCoroutines == 3)  // server, its echo child, the client
    net.server.crash()
    net.loop.advance(by: 1)
    #expect(net.loop.liveCoroutines == 0)
    #expect(posixCode(client) == .ECONNRESET)
  }
}

extension SimulatedFaultTests {
  @Test func aStreamReleasedWithoutCloseClosesItsSide() throws {
    let net = SimulatedPair()
    defer { net.finish() }
    let server = net.server.launch { () throws -> [UInt8] in
      let listener = try CoTCPListener(port: 7)
      let connection = try listener.accept()
      return try connection.read(upTo: 10)
    }
    net.client.launch { _ = try CoTCPStream.connect(host: "server", port: 7) }
    net.loop.advance(by: 1)
    #expect(try server.result?.get() == [], "the peer read the end of the stream")
  }

  @Test func aHostDropsItsFinishedTasksOutsideTheNetworksLock() throws {
    // Each finished task holds a stream as its value: dropping the last reference to it closes
    // the stream, which takes the network's lock.
    let net = SimulatedPair()
    defer { net.finish() }
    let accepted = net.server.launch { () throws -> Int in
      let listener = try CoTCPListener(port: 7)
      var count = 0
      while true {
        let connection = try listener.accept()
        co_launch { _ = try connection.read(upTo: 10) }
        count += 1
        if count == 100 { return count }
      }
    }
    for _ in 0..<100 {
      net.client.launch { () throws -> CoTCPStream in
        try CoTCPStream.connect(host: "server", port: 7)
      }
    }
    net.loop.advance(by: 1)
    // The list of tasks is pruned as it grows: these launches drop the finished tasks, and the
    // streams with them.
    for _ in 0..<40 { net.client.launch {} }
    net.loop.advance(by: 1)
    #expect(try accepted.result?.get() == 100)
    #expect(net.loop.liveCoroutines == 0, "every server child read the end of its stream")
  }
}

extension SimulatedFaultTests {
  @Test func aConnectionAttemptGivenUpDuringAPartitionNeverReachesTheListener() throws {
    let net = SimulatedPair()
    defer { net.finish() }
    let accepted = net.server.launch { () throws -> Int in
      let listener = try CoTCPListener(port: 7)
      _ = try listener.accept(timeout: 20)
      return 1
    }
    net.network.partition(net.client, net.server)
    let attempt = net.client.launch {
      _ = try CoTCPStream.connect(host: "server", port: 7, timeout: 1)
    }
    net.loop.advance(by: 5)
    #expect(throws: CoroutineError.timedOut) { try attempt.result?.get() }
    net.network.repairAll()
    net.loop.advance(by: 30)
    #expect(throws: CoroutineError.timedOut) { try accepted.result?.get() }
  }
}

extension SimulatedFaultTests {
  @Test func aCrashCancelsADetachedCoroutineWhereItWaitsOnTheNetwork() throws {
    let net = SimulatedPair()
    defer { net.finish() }
    let deferRan = CoPromise<Void>()
    net.server.launch {
      let listener = try CoTCPListener(port: 7)
      let connection = try listener.accept()
      co_launch(detached: true) {
        defer { deferRan.fulfill(()) }
        _ = try connection.read(upTo: 10)
      }
    }
    net.client.launch { _ = try CoTCPStream.connect(host: "server", port: 7) }
    net.loop.advance(by: 0.0015)  // accepted; the client has not yet heard back
    net.server.crash()
    net.loop.advance(by: 1)
    #expect(deferRan.isSettled)
    #expect(net.loop.liveCoroutines == 0)
  }

  @Test func aCrashCancelsADetachedCoroutineWhereverItWaits() throws {
    let net = SimulatedPair()
    defer { net.finish() }
    let deferRan = CoPromise<Void>()
    let sleeper = CoPromise<CoTask<Void>>()
    net.server.launch {
      sleeper.fulfill(
        co_launch(detached: true) {
          defer { deferRan.fulfill(()) }
          try co_delay(3600)  // far from the network
        })
    }
    net.loop.advance(by: 1)
    #expect(!deferRan.isSettled)
    net.server.crash()
    net.loop.advance(by: 1)
    #expect(deferRan.isSettled)
    #expect(throws: CancellationError.self) { try sleeper.result?.get().result?.get() }
    #expect(net.loop.liveCoroutines == 0)
  }

  @Test func aCrashLeavesTheOtherHostsCoroutinesAlone() throws {
    let net = SimulatedPair()
    defer { net.finish() }
    let napping = net.client.launch { try co_delay(10) }
    net.server.launch { try co_delay(10) }
    net.loop.advance(by: 1)
    net.server.crash()
    net.loop.advance(by: 10)
    #expect(try napping.result?.get() != nil)
  }
}
