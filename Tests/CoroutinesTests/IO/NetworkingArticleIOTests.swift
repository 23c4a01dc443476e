import Foundation
import Testing

@testable import Coroutines

// Copies of the code samples in Docs/Coroutines.docc/Articles/Networking.md. When a sample
// changes, change its copy: if the API moves under a sample, this file stops compiling or a
// test fails.

extension IOTests {
  @Suite struct NetworkingArticleTests {
    /// The overview's server, as the article shows it.
    @discardableResult
    static func serve(_ listener: CoTCPListener) -> CoTask<Void> {
      co_launch(detached: true) {
        let backoff = CoBackoff.exponential(initial: 0.005, maximum: 1)
        var failures = 0
        while true {
          let connection: CoTCPStream
          do {
            connection = try listener.accept()
            failures = 0
          } catch let error as POSIXError where error.code == .EMFILE || error.code == .ENFILE {
            failures += 1  // out of descriptors: wait for some to close, then try again
            try co_delay(backoff.delay(afterFailure: failures))
            continue
          } catch {
            return  // POSIXError(.EBADF): the listener was closed
          }
          co_launch(detached: true) {
            defer { connection.close() }
            while true {
              let bytes = try connection.read(upTo: 65536)
              if bytes.isEmpty { return }  // the client closed its side
              try connection.write(bytes)
            }
          }
        }
      }
    }

    @Test func overviewServerAndClient() throws {
      let reply = try runOnLoopLeavingNoDescriptor { () -> [UInt8] in
        let listener = try CoTCPListener(host: "127.0.0.1", port: 0)
        Self.serve(listener)
        defer { listener.close() }  // ends the accept loop

        let stream = try CoTCPStream.connect(host: "localhost", port: listener.port, timeout: 5)
        defer { stream.close() }
        try stream.write(Array("ping".utf8))
        let reply = try stream.read(upTo: 4096, timeout: 5)
        return reply
      }
      #expect(reply == Array("ping".utf8))
    }

    @Test func overviewServerOutOfDescriptorsWaitsAndServesTheNextConnections() throws {
      let (replies, serverRunning) = try runOnLoopLeavingNoDescriptor { () -> ([[UInt8]], Bool) in
        let listener = try CoTCPListener(host: "127.0.0.1", port: 0)
        // Its first four accepts fail as if the process were out of descriptors.
        listener.failingAcceptsForTesting.store(4, ordering: .relaxed)
        let server = Self.serve(listener)
        var replies: [[UInt8]] = []
        for client in 0..<3 {
          let stream = try CoTCPStream.connect(host: "127.0.0.1", port: listener.port, timeout: 5)
          defer { stream.close() }
          try stream.write([UInt8(client)])
          replies.append(try stream.read(upTo: 10, timeout: 5))
        }
        let serverRunning = server.result == nil
        listener.close()
        try server.await()
        return (replies, serverRunning)
      }
      #expect(replies == [[0], [1], [2]])
      #expect(serverRunning)
    }

    @Test func theReactorWaitsForAPipe() throws {
      let byte = try runOnLoopLeavingNoDescriptor { () -> UInt8 in
        let pipe = try TestPipe()
        defer { pipe.close() }
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.005) {
          var one: UInt8 = 1
          _ = write(pipe.writeEnd, &one, 1)
        }
        var byte: UInt8 = 0
        while read(pipe.readEnd, &byte, 1) < 0 && errno == EAGAIN {
          _ = try co_wait(fd: pipe.readEnd, for: .readable, timeout: 10)
        }
        return byte
      }
      #expect(byte == 1)
    }

    @Test func timeoutsClosingAnIdleClient() throws {
      let closedIdle = try runOnLoopLeavingNoDescriptor { () -> Bool in
        let listener = try CoTCPListener()
        defer { listener.close() }
        let client = try CoTCPStream.connect(host: "127.0.0.1", port: listener.port)
        defer { client.close() }
        let connection = try listener.accept()
        var handled = false
        func handle(_ request: [UInt8]) throws { handled = true }

        do {
          let request = try connection.read(upTo: 4096, timeout: 0.02)
          try handle(request)
        } catch CoroutineError.timedOut {
          connection.close()  // an idle client
        }
        return !handled && (try? connection.read(upTo: 1)) == nil
      }
      #expect(closedIdle)
    }

    @Test func errorsARefusedConnection() throws {
      let printed = try runOnLoopLeavingNoDescriptor { () -> String? in
        let unused = try CoTCPListener()
        let port = unused.port
        unused.close()
        var printed: String?
        func print(_ text: String) { printed = text }

        do {
          let stream = try CoTCPStream.connect(host: "127.0.0.1", port: port, timeout: 2)
          stream.close()
        } catch let error as POSIXError where error.code == .ECONNREFUSED {
          print("nobody listens on \(port)")
        }
        return printed
      }
      #expect(printed?.hasPrefix("nobody listens on ") == true)
    }
  }
}
