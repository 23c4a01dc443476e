import Dispatch
import Foundation
import Synchronization
import Testing

@testable import Coroutines

extension IOTests {
  @Suite struct TCPCancellationTests {
    /// How `task` ended: "cancelled", "ebadf", "timed out", "value" or the error.
    static func outcome<T>(_ task: CoTask<T>) -> String {
      do {
        _ = try task.await()
        return "value"
      } catch is CancellationError {
        return "cancelled"
      } catch let error as POSIXError where error.code == .EBADF {
        return "ebadf"
      } catch CoroutineError.timedOut {
        return "timed out"
      } catch {
        return "\(error)"
      }
    }

    @Test func cancellingACoroutineBlockedInReadThrowsCancellation() throws {
      let outcome = try runOnLoopLeavingNoDescriptor { () -> String in
        let (stream, accepted) = try connectedStreams()
        defer { stream.close() }
        defer { accepted.close() }
        let reader = co_launch { _ = try stream.read(upTo: 10) }
        try co_delay(0.005)
        reader.cancel()
        return Self.outcome(reader)
      }
      #expect(outcome == "cancelled")
    }

    @Test func cancellingACoroutineBlockedInAcceptThrowsCancellation() throws {
      let outcome = try runOnLoopLeavingNoDescriptor { () -> String in
        let listener = try CoTCPListener()
        defer { listener.close() }
        let acceptor = co_launch { _ = try listener.accept() }
        try co_delay(0.005)
        acceptor.cancel()
        return Self.outcome(acceptor)
      }
      #expect(outcome == "cancelled")
    }

    @Test func closingAListenerWakesACoroutineBlockedInAccept() throws {
      let outcome = try runOnLoopLeavingNoDescriptor { () -> String in
        let listener = try CoTCPListener()
        let acceptor = co_launch { _ = try listener.accept() }
        try co_delay(0.005)
        listener.close()
        return Self.outcome(acceptor)
      }
      #expect(outcome == "ebadf")
    }

    @Test func acceptTimesOutAndTheListenerStaysUsable() throws {
      let (first, second) = try runOnLoopLeavingNoDescriptor { () -> (String, String) in
        let listener = try CoTCPListener()
        defer { listener.close() }
        let first = Self.outcome(co_launch { _ = try listener.accept(timeout: 0.01) })
        let client = co_launch {
          try CoTCPStream.connect(host: "127.0.0.1", port: listener.port).close()
        }
        let second = Self.outcome(co_launch { try listener.accept(timeout: 5).close() })
        try client.await()
        return (first, second)
      }
      #expect(first == "timed out")
      #expect(second == "value")
    }

    /// A listener whose backlog is full: the kernel drops further handshakes, so a connect to
    /// it waits (on loopback, without any other host).
    static func withFullBacklog(_ body: (CoTCPListener) throws -> Void) throws {
      let listener = try CoTCPListener(backlog: 0)
      defer { listener.close() }
      var queued: [CoTCPStream] = []
      defer { queued.forEach { $0.close() } }
      // Fill the accept queue (never accepted); stop at the first connect that has to wait.
      while queued.count < 64 {
        do {
          queued.append(
            try CoTCPStream.connect(host: "127.0.0.1", port: listener.port, timeout: 0.05))
        } catch CoroutineError.timedOut {
          break
        }
      }
      try body(listener)
    }

    @Test func aConnectThatCannotCompleteTimesOut() throws {
      let outcome = try runOnLoopLeavingNoDescriptor { () -> String in
        var outcome = ""
        try Self.withFullBacklog { listener in
          outcome = Self.outcome(
            co_launch {
              _ = try CoTCPStream.connect(host: "127.0.0.1", port: listener.port, timeout: 0.05)
            })
        }
        return outcome
      }
      #expect(outcome == "timed out")
    }

    @Test func cancellingACoroutineBlockedInConnectThrowsCancellation() throws {
      let outcome = try runOnLoopLeavingNoDescriptor { () -> String in
        var outcome = ""
        try Self.withFullBacklog { listener in
          let connector = co_launch {
            _ = try CoTCPStream.connect(host: "127.0.0.1", port: listener.port)
          }
          try co_delay(0.01)
          connector.cancel()
          outcome = Self.outcome(connector)
        }
        return outcome
      }
      #expect(outcome == "cancelled")
    }

    @Test func aCoroutineOnADispatchQueueServesAndConnects() throws {
      try expectNoDescriptorLeaked {
        let listener = try CoTCPListener()
        defer { listener.close() }
        let server = co_launch(on: DispatchQueue.global()) {
          let connection = try listener.accept(timeout: 10)
          defer { connection.close() }
          try echo(connection)
        }
        let client = co_launch(on: DispatchQueue(label: "client")) { () -> [UInt8] in
          let stream = try CoTCPStream.connect(host: "127.0.0.1", port: listener.port, timeout: 10)
          defer { stream.close() }
          var replies: [UInt8] = []
          for round in 0..<20 {
            try stream.write(patternBytes(500, seed: round))
            replies += try stream.read(exactly: 500, timeout: 10)
          }
          return replies
        }
        let replies = try #require(client.blockingResult(seconds: 30)).get()
        #expect(sameBytes(replies, (0..<20).flatMap { patternBytes(500, seed: $0) }))
        #expect(throws: Never.self) { try #require(server.blockingResult(seconds: 30)).get() }
      }
    }

    @Test func theLoopKeepsFiringTimersOnTimeWhileAThousandConnectionsWait() throws {
      let connections = 1000
      let (ticks, lateness) = try runOnLoopLeavingNoDescriptor { () -> (Int, Double) in
        let listener = try CoTCPListener()
        let server = startServer(listener) { connection in
          _ = try connection.read(upTo: 1)  // waits until the client closes
        }
        var clients: [CoTCPStream] = []
        for _ in 0..<connections {
          clients.append(
            try CoTCPStream.connect(host: "127.0.0.1", port: listener.port, timeout: 10))
        }
        // Every server coroutine now waits in `read`; a ticker on the same loop must keep time.
        var ticks = 0
        var lateness = 0.0
        let start = Date()
        for tick in 1...20 {
          try co_delay(0.005)
          ticks += 1
          lateness = max(lateness, Date().timeIntervalSince(start) - Double(tick) * 0.005)
        }
        clients.forEach { $0.close() }
        listener.close()
        try server.await()
        return (ticks, lateness)
      }
      #expect(ticks == 20)
      // Each tick is late by the loop's own work only: a blocked thread would be seconds late.
      #expect(lateness < 0.5)
    }
  }
}
