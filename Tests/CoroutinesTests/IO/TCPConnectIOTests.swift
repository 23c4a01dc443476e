import Foundation
import Testing

@testable import Coroutines

extension IOTests {
  @Suite struct TCPConnectTests {
    @Test func connectingToAPortNobodyListensOnIsRefused() throws {
      let code = try runOnLoopLeavingNoDescriptor { () -> POSIXErrorCode? in
        let listener = try CoTCPListener()
        let port = listener.port
        listener.close()
        do {
          _ = try CoTCPStream.connect(host: "127.0.0.1", port: port)
        } catch let error as POSIXError {
          return error.code
        }
        return nil
      }
      #expect(code == .ECONNREFUSED)
    }

    @Test func aPortInUseIsReported() throws {
      try expectNoDescriptorLeaked {
        let listener = try CoTCPListener()
        defer { listener.close() }
        #expect(throws: POSIXError(.EADDRINUSE)) {
          _ = try CoTCPListener(port: listener.port)
        }
      }
    }

    @Test func reusePortLetsTwoListenersShareAPort() throws {
      try expectNoDescriptorLeaked {
        let first = try CoTCPListener(reusePort: true)
        defer { first.close() }
        let second = try CoTCPListener(port: first.port, reusePort: true)
        defer { second.close() }
        #expect(second.port == first.port)
      }
    }

    @Test func ipv6LoopbackAndLocalhostWork() throws {
      let replies = try runOnLoopLeavingNoDescriptor { () -> [[UInt8]] in
        var replies: [[UInt8]] = []
        for (listenHost, connectHost) in [("::1", "::1"), ("127.0.0.1", "localhost")] {
          let listener: CoTCPListener
          do {
            listener = try CoTCPListener(host: listenHost)
          } catch let error as POSIXError where error.code == .EADDRNOTAVAIL {
            continue  // no IPv6 on this host
          }
          let server = startServer(listener, echo)
          let stream = try CoTCPStream.connect(host: connectHost, port: listener.port, timeout: 5)
          try stream.write([7, 8, 9])
          replies.append(try stream.read(exactly: 3))
          stream.close()
          listener.close()
          try server.await()
        }
        return replies
      }
      #expect(!replies.isEmpty)
      #expect(replies.allSatisfy { $0 == [7, 8, 9] })
    }

    @Test func aNameThatDoesNotResolveThrowsAResolutionError() throws {
      try runOnLoopLeavingNoDescriptor { () throws in
        #expect(throws: CoResolutionError.self) {
          _ = try CoTCPStream.connect(host: "no-such-host.invalid", port: 80, timeout: 10)
        }
      }
    }

    @Test func listenerPortIsTheBoundPort() throws {
      try expectNoDescriptorLeaked {
        let listener = try CoTCPListener(port: 0)
        defer { listener.close() }
        #expect(listener.port != 0)
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = try listener.descriptor.use { fd in
          withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
          }
        }
        #expect(UInt16(bigEndian: address.sin_port) == listener.port)
      }
    }

    @Test func connectOutsideACoroutineThrowsNotInCoroutine() {
      #expect(throws: CoroutineError.notInCoroutine) {
        _ = try CoTCPStream.connect(host: "127.0.0.1", port: 9)
      }
    }

    @Test func aListenerReleasedWithoutCloseClosesItsSocket() throws {
      try expectNoDescriptorLeaked {
        _ = try CoTCPListener()
      }
    }
  }
}
