import Dispatch
import Foundation
import Synchronization
import Testing

@testable import Coroutines

/// The I/O suites run one test at a time, in a process of their own (`make test` filters them
/// apart): each checks that the process's open descriptors are back where they started.
@Suite(.serialized) struct IOTests {}

extension IOTests {
  @Suite struct TCPStreamTests {
    @Test func manyConnectionsEchoManyMessagesWithEveryByteIntact() throws {
      let connections = 50
      let messages = 40
      let mismatches = try runOnLoopLeavingNoDescriptor { () -> Int in
        let listener = try CoTCPListener()
        let server = startServer(listener, echo)
        let clients = (0..<connections).map { client in
          co_launch { () -> Int in
            let stream = try CoTCPStream.connect(host: "127.0.0.1", port: listener.port)
            defer { stream.close() }
            var mismatches = 0
            for message in 0..<messages {
              let sent = patternBytes(1 + (client * 131 + message * 977) % 3000, seed: message)
              try stream.write(sent)
              if try stream.read(exactly: sent.count) != sent { mismatches += 1 }
            }
            return mismatches
          }
        }
        let total = try clients.reduce(0) { $0 + (try $1.await()) }
        listener.close()
        try server.await()
        return total
      }
      #expect(mismatches == 0)
    }

    @Test func aLargeTransferThroughASlowReaderSuspendsTheWriter() throws {
      let size = 20 << 20
      let sent = patternBytes(size)
      let (received, writerWaited) = try runOnLoopLeavingNoDescriptor { () -> ([UInt8], Bool) in
        let listener = try CoTCPListener()
        defer { listener.close() }
        let waited = Atomic<Bool>(false)
        let writer = co_launch {
          let stream = try listener.accept()
          defer { stream.close() }
          let writing = Atomic<Bool>(true)
          // The loop runs one coroutine at a time: if this job runs while the write is still
          // under way, the writer was suspended.
          CoroutineLoop.current!.schedule {
            if writing.load(ordering: .relaxed) { waited.store(true, ordering: .relaxed) }
          }
          try stream.write(sent)
          writing.store(false, ordering: .relaxed)
          stream.shutdownWrite()
        }
        let stream = try CoTCPStream.connect(host: "127.0.0.1", port: listener.port)
        defer { stream.close() }
        var received = [UInt8](repeating: 0, count: size + 1)
        var count = 0
        while true {
          try co_delay(0.0005)  // a slow reader: the writer fills the socket's buffers meanwhile
          let read = try received.withUnsafeMutableBytes {
            try stream.read(into: UnsafeMutableRawBufferPointer(rebasing: $0[count...]))
          }
          if read == 0 { break }
          count += read
        }
        try writer.await()
        return (Array(received[..<count]), waited.load(ordering: .relaxed))
      }
      #expect(received.count == size)
      #expect(sameBytes(received, sent))
      #expect(writerWaited)
    }

    @Test func severalCoroutinesAcceptOnOneListenerEachConnectionOnce() throws {
      let accepted = try runOnLoopLeavingNoDescriptor { () -> [Int] in
        let listener = try CoTCPListener()
        defer { listener.close() }
        let acceptors = (0..<4).map { _ in
          co_launch { () -> Int in
            var count = 0
            while true {
              do {
                let connection = try listener.accept()
                connection.close()
                count += 1
              } catch let error as POSIXError where error.code == .EBADF {
                return count
              }
            }
          }
        }
        try co_delay(0.001)  // every acceptor waits
        for _ in 0..<40 {
          let stream = try CoTCPStream.connect(host: "127.0.0.1", port: listener.port)
          stream.close()
          try co_delay(0)
        }
        try co_delay(0.01)
        listener.close()
        return try acceptors.map { try $0.await() }
      }
      #expect(accepted.reduce(0, +) == 40)
    }

    @Test func anAcceptOutOfDescriptorsThrowsAndTheListenerStaysUsable() throws {
      let (errors, reply) = try runOnLoopLeavingNoDescriptor { () -> ([String], [UInt8]) in
        let listener = try CoTCPListener()
        defer { listener.close() }
        listener.failingAcceptsForTesting.store(2, ordering: .relaxed)
        let client = try CoTCPStream.connect(host: "127.0.0.1", port: listener.port)
        defer { client.close() }
        var errors: [String] = []
        for _ in 0..<2 {
          do {
            _ = try listener.accept(timeout: 5)
          } catch let error as POSIXError {
            errors.append("\(error.code)")
          }
        }
        let connection = try listener.accept(timeout: 5)
        defer { connection.close() }
        try client.write([5])
        try connection.write(try connection.read(upTo: 10, timeout: 5))
        return (errors, try client.read(upTo: 10, timeout: 5))
      }
      #expect(errors == ["\(POSIXErrorCode.EMFILE)", "\(POSIXErrorCode.EMFILE)"])
      #expect(reply == [5])
    }

    @Test func aStreamReleasedWithoutCloseClosesItsSocket() throws {
      try runOnLoopLeavingNoDescriptor { () throws in
        let listener = try CoTCPListener()
        defer { listener.close() }
        let server = co_launch { () -> [UInt8] in
          let connection = try listener.accept()
          defer { connection.close() }
          return try connection.readToEnd()
        }
        do {
          let stream = try CoTCPStream.connect(host: "127.0.0.1", port: listener.port)
          try stream.write([1, 2, 3])
        }  // released here: the server reads the end of the stream
        #expect(try server.await() == [1, 2, 3])
      }
    }

    @Test func shutdownWriteLetsThePeerReadTheEndOfStreamAndKeepsReadingOpen() throws {
      let reply = try runOnLoopLeavingNoDescriptor { () -> [UInt8] in
        let listener = try CoTCPListener()
        defer { listener.close() }
        let server = co_launch {
          let connection = try listener.accept()
          defer { connection.close() }
          let request = try connection.readToEnd()  // ends only once the client shut down
          try connection.write(Array("got \(request.count)".utf8))
        }
        let stream = try CoTCPStream.connect(host: "127.0.0.1", port: listener.port)
        defer { stream.close() }
        try stream.write(patternBytes(1000))
        stream.shutdownWrite()
        let reply = try stream.readToEnd()
        try server.await()
        return reply
      }
      #expect(String(decoding: reply, as: UTF8.self) == "got 1000")
    }

    @Test func aReadThatTimesOutLeavesTheStreamUsable() throws {
      let (timedOut, afterwards) = try runOnLoopLeavingNoDescriptor { () -> (Bool, [UInt8]) in
        let listener = try CoTCPListener()
        defer { listener.close() }
        let server = co_launch {
          let connection = try listener.accept()
          defer { connection.close() }
          _ = try connection.read(upTo: 1)  // the client's go-ahead, sent after its timeout
          try connection.write([42])
        }
        let stream = try CoTCPStream.connect(host: "127.0.0.1", port: listener.port)
        defer { stream.close() }
        var timedOut = false
        do {
          _ = try stream.read(upTo: 10, timeout: 0.02)
        } catch CoroutineError.timedOut {
          timedOut = true
        }
        try stream.write([1])
        let afterwards = try stream.read(upTo: 10, timeout: 5)
        try server.await()
        return (timedOut, afterwards)
      }
      #expect(timedOut)
      #expect(afterwards == [42])
    }

    @Test func aReadUpToAHugeCountReturnsTheBytesThatArrived() throws {
      let (everything, huge) = try runOnLoopLeavingNoDescriptor { () -> ([UInt8], [UInt8]) in
        let (stream, accepted) = try connectedStreams()
        defer { stream.close() }
        defer { accepted.close() }
        try accepted.write(Array("hello".utf8))
        let everything = try stream.read(upTo: .max, timeout: 5)
        try accepted.write(patternBytes(100_000))
        let huge = try stream.read(exactly: 100_000, timeout: 5, chunk: 1 << 40)
        return (everything, huge)
      }
      #expect(everything == Array("hello".utf8))
      #expect(sameBytes(huge, patternBytes(100_000)))
    }

    @Test func closeWakesACoroutineBlockedInRead() throws {
      let error = try runOnLoopLeavingNoDescriptor { () -> POSIXError? in
        let listener = try CoTCPListener()
        defer { listener.close() }
        let server = co_launch { () -> CoTCPStream in try listener.accept() }
        let stream = try CoTCPStream.connect(host: "127.0.0.1", port: listener.port)
        let accepted = try server.await()
        defer { accepted.close() }
        let reader = co_launch { () -> POSIXError? in
          do {
            _ = try stream.read(upTo: 10)
            return nil
          } catch let error as POSIXError {
            return error
          }
        }
        try co_delay(0.01)  // the reader is parked by now
        stream.close()
        return try reader.await()
      }
      #expect(error?.code == .EBADF)
    }

    @Test func everyCallOnAClosedStreamThrowsBadDescriptor() throws {
      let codes = try runOnLoopLeavingNoDescriptor { () -> [POSIXErrorCode?] in
        let listener = try CoTCPListener()
        defer { listener.close() }
        let server = co_launch { () -> CoTCPStream in try listener.accept() }
        let stream = try CoTCPStream.connect(host: "127.0.0.1", port: listener.port)
        try server.await().close()
        stream.close()
        stream.close()  // twice is fine
        stream.shutdownWrite()  // does nothing
        func code(_ call: () throws -> Void) -> POSIXErrorCode? {
          do { try call() } catch let error as POSIXError { return error.code } catch {}
          return nil
        }
        var buffer = [UInt8](repeating: 0, count: 4)
        return [
          code { _ = try stream.read(upTo: 4) },
          code { _ = try buffer.withUnsafeMutableBytes { try stream.read(into: $0) } },
          code { try stream.write([1, 2]) },
        ]
      }
      #expect(codes == [.EBADF, .EBADF, .EBADF])
    }

    @Test func writingToAPeerThatClosedThrowsBrokenPipeOrResetNeverASignal() throws {
      let code = try runOnLoopLeavingNoDescriptor { () -> POSIXErrorCode? in
        let listener = try CoTCPListener()
        defer { listener.close() }
        let server = co_launch { () -> CoTCPStream in try listener.accept() }
        let stream = try CoTCPStream.connect(host: "127.0.0.1", port: listener.port)
        defer { stream.close() }
        try server.await().close()
        do {
          // The first writes may still be taken; the peer's reset soon ends them.
          for _ in 0..<1000 {
            try stream.write(patternBytes(4096))
            try co_delay(0.001)
          }
        } catch let error as POSIXError {
          return error.code
        }
        return nil
      }
      #expect(code == .EPIPE || code == .ECONNRESET)
    }

    @Test func aResetPeerIsReportedAsConnectionReset() throws {
      let code = try runOnLoopLeavingNoDescriptor { () -> POSIXErrorCode? in
        let listener = try CoTCPListener()
        defer { listener.close() }
        let server = co_launch { () -> CoTCPStream in try listener.accept() }
        let stream = try CoTCPStream.connect(host: "127.0.0.1", port: listener.port)
        defer { stream.close() }
        let accepted = try server.await()
        // Unsent data at close makes the kernel reset the connection instead of closing it.
        var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
        _ = try accepted.descriptor.use {
          setsockopt($0, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
        }
        accepted.close()
        do {
          _ = try stream.read(upTo: 10, timeout: 5)
        } catch let error as POSIXError {
          return error.code
        }
        return nil
      }
      #expect(code == .ECONNRESET)
    }
  }
}
