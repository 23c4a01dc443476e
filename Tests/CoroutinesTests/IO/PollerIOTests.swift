import Dispatch
import Foundation
import Synchronization
import Testing

@testable import Coroutines

extension IOTests {
  /// A loop's poller: what it does when the process is out of descriptors, and where owned
  /// descriptors are registered.
  @Suite struct PollerTests {
    @Test func aLoopWithoutItsPollerRunsAndItsFirstWaitThrowsOutOfDescriptors() throws {
      // The loop's epoll set cannot be made (as with the process out of descriptors), nor on
      // the first wait's second try; the second wait's try succeeds.
      let (first, second, awaited) = try Poller.failingCreation(times: 2) {
        try runOnLoopLeavingNoDescriptor { () -> (String, CoIOEvents?, Int) in
          let pipe = try TestPipe()
          defer { pipe.close() }
          // Timers and other threads' answers work on a loop that sleeps without its poller.
          try co_delay(0.01)
          let answer = CoPromise<Int>()
          DispatchQueue.global().asyncAfter(deadline: .now() + 0.01) { answer.fulfill(7) }
          let awaited = try co_await(answer)
          var first = "no error"
          do {
            _ = try co_wait(fd: pipe.readEnd, for: .readable, timeout: 1)
          } catch let error as POSIXError {
            first = "\(error.code)"
          }
          var byte: UInt8 = 1
          _ = write(pipe.writeEnd, &byte, 1)
          let second = try co_wait(fd: pipe.readEnd, for: .readable, timeout: 5)
          return (first, second, awaited)
        }
      }
      #expect(first == "\(POSIXErrorCode.EMFILE)")
      #expect(second == .readable)
      #expect(awaited == 7)
    }

    @Test func aGroupMadeWithoutPollersRunsAndItsWaitsThrowOutOfDescriptors() throws {
      let group = Poller.failingCreation(times: 2) { CoroutineLoopGroup(threads: 2) }
      defer { group.shutdown() }
      let task = co_launch(on: group.loops[1]) { () -> (String, CoIOEvents) in
        let pipe = try TestPipe()
        defer { pipe.close() }
        var first = "no error"
        do {
          _ = try co_wait(fd: pipe.writeEnd, for: .writable, timeout: 1)
        } catch let error as POSIXError {
          first = "\(error.code)"
        }
        return (first, try co_wait(fd: pipe.writeEnd, for: .writable, timeout: 5))
      }
      let (first, second) = try #require(task.blockingResult(seconds: 10)).get()
      #expect(first == "\(POSIXErrorCode.EMFILE)")
      #expect(second == .writable)
    }

    @Test func aStreamWaitedOnFromTwoLoopsOfAGroupIsInOneEpollSetAtMost() throws {
      let group = CoroutineLoopGroup(threads: 2)
      defer { group.shutdown() }
      let (sets, received) = try runOnLoopLeavingNoDescriptor { () -> (Int, [UInt8]) in
        let listener = try CoTCPListener()
        defer { listener.close() }
        let server = co_launch { () -> CoTCPStream in try listener.accept() }
        let stream = try CoTCPStream.connect(host: "127.0.0.1", port: listener.port)
        defer { stream.close() }
        let peer = try server.await()
        defer { peer.close() }
        var received: [UInt8] = []
        // A read on each loop in turn, each waiting in its loop's poller first.
        for index in [0, 1, 0, 1] {
          let reader = co_launch(on: group.loops[index]) { () -> [UInt8] in
            try stream.read(upTo: 10, timeout: 5)
          }
          try co_delay(0.02)  // parked in the loop's poller by now
          try peer.write([UInt8(index)])
          received += try co_await(reader)
        }
        let fd = stream.descriptor.fd
        let sets = group.loops.filter { $0.poller.watchesInKernel(fd) }.count
        return (sets, received)
      }
      #expect(received == [0, 1, 0, 1])
      #expect(sets <= 1)
    }

    @Test func twoLoopsWaitingOnOneStreamAtOnceBothWake() throws {
      let group = CoroutineLoopGroup(threads: 2)
      defer { group.shutdown() }
      let (sets, reply, wrote) = try runOnLoopLeavingNoDescriptor { () -> (Int, [UInt8], Bool) in
        let listener = try CoTCPListener()
        defer { listener.close() }
        let server = co_launch { () -> CoTCPStream in try listener.accept() }
        let stream = try CoTCPStream.connect(host: "127.0.0.1", port: listener.port)
        defer { stream.close() }
        let peer = try server.await()
        defer { peer.close() }
        // A reader parked on one loop, then a writer whose socket buffer is full on the other.
        let reader = co_launch(on: group.loops[0]) { () -> [UInt8] in
          try stream.read(upTo: 10, timeout: 10)
        }
        try co_delay(0.02)
        let writer = co_launch(on: group.loops[1]) { () -> Bool in
          let chunk = [UInt8](repeating: 7, count: 16 << 20)
          try stream.write(chunk, timeout: 10)
          return true
        }
        try co_delay(0.02)
        try peer.write([9])
        let reply = try co_await(reader)
        _ = try peer.read(exactly: 16 << 20, timeout: 10)
        let wrote = try co_await(writer)
        let fd = stream.descriptor.fd
        let sets = group.loops.filter { $0.poller.watchesInKernel(fd) }.count
        return (sets, reply, wrote)
      }
      #expect(reply == [9])
      #expect(wrote)
      #expect(sets <= 1)
    }
  }
}
