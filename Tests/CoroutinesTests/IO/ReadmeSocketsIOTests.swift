import Foundation
import Testing

@testable import Coroutines

// A copy of the README's "Sockets and file descriptors" sample: if it stops compiling or
// changes behaviour, this fails. The copy listens on a free port instead of 8080, and one added
// line starts a client that checks the echo and then closes the listener, which ends the
// sample's accept loop with EBADF.

extension IOTests {
  @Suite struct ReadmeSocketsTests {
    @Test func theReadmeEchoServerRunsAsWritten() {
      let echoed = EchoCheck()
      expectNoDescriptorLeaked {
        #expect(throws: POSIXError(.EBADF)) {
          try CoroutineLoop.run {
            let listener = try CoTCPListener(host: "127.0.0.1", port: 0)
            co_launch(detached: true) { try echoed.check(listener) }  // added by the test
            while true {
              let connection = try listener.accept()
              co_launch(detached: true) {
                defer { connection.close() }
                while true {
                  let bytes = try connection.read(upTo: 4096, timeout: 60)
                  if bytes.isEmpty { return }  // the client closed its side
                  try connection.write(bytes)
                }
              }
            }
          }
        }
      }
      #expect(echoed.matched)
    }
  }
}

/// The client of the README test: echoes a few messages, then closes the listener.
private final class EchoCheck: @unchecked Sendable {  // written and read on the loop's thread
  var matched = false

  func check(_ listener: CoTCPListener) throws {
    defer { listener.close() }
    let stream = try CoTCPStream.connect(host: "127.0.0.1", port: listener.port, timeout: 5)
    defer { stream.close() }
    var replies: [[UInt8]] = []
    for message in ["one", "two", "three"] {
      try stream.write(Array(message.utf8))
      replies.append(try stream.read(exactly: message.utf8.count, timeout: 5))
    }
    matched = replies == ["one", "two", "three"].map { Array($0.utf8) }
  }
}
