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
        let (stream, peer) = try connectedStreams()
        defer { stream.close() }
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

    @Test func aWaitThatMovedToAnotherLoopKeepsThatLoopRunningUntilItEnds() throws {
      // Two loops of `CoroutineLoop.run` on two threads share a stream: the first parks a
      // reader on it, so the second's writer waits in the first's poller; then the first's own
      // coroutines all finish while the writer still waits there.
      let listenerReady = DispatchSemaphore(value: 0)
      let readerParked = DispatchSemaphore(value: 0)
      let bodyDone = DispatchSemaphore(value: 0)
      let firstEnded = DispatchSemaphore(value: 0)
      let stream = Mutex<CoTCPStream?>(nil)
      let peer = Mutex<CoTCPStream?>(nil)
      let first = Thread {
        _ = try? CoroutineLoop.run {
          let listener = try CoTCPListener()
          defer { listener.close() }
          let accepting = co_launch { () -> CoTCPStream in try listener.accept() }
          let connected = try CoTCPStream.connect(host: "127.0.0.1", port: listener.port)
          stream.withLock { $0 = connected }
          peer.withLock { $0 = try? accepting.await() }
          listenerReady.signal()
          let reader = co_launch { try connected.read(upTo: 10, timeout: 10) }
          try co_delay(0.02)
          readerParked.signal()
          try co_delay(0.05)  // the other loop's writer waits here by now
          try peer.withLock { $0 }!.write([9])
          _ = try reader.await()
          bodyDone.signal()
        }
        firstEnded.signal()
      }
      first.start()
      listenerReady.wait()
      let connected = try #require(stream.withLock { $0 })
      let accepted = try #require(peer.withLock { $0 })
      defer {
        connected.close()
        accepted.close()
      }
      let writer = co_launch(on: DispatchQueue(label: "writer")) { () -> Int in
        _ = readerParked.wait(timeout: .now() + 10)
        // More than the socket buffers hold: the writer waits for the peer to read.
        try connected.write([UInt8](repeating: 7, count: 16 << 20), timeout: 20)
        return 16 << 20
      }
      // The first loop's own coroutines are all done before the peer starts reading.
      #expect(bodyDone.wait(timeout: .now() + 10) == .success)
      var drained = 0
      var chunk = [UInt8](repeating: 0, count: 1 << 16)
      let end = Date().addingTimeInterval(20)
      while drained < 16 << 20, Date() < end {
        var entry = pollfd(fd: accepted.descriptor.fd, events: Int16(POLLIN), revents: 0)
        _ = poll(&entry, 1, 100)
        let count = recv(accepted.descriptor.fd, &chunk, chunk.count, 0)
        if count > 0 { drained += count }
      }
      let written = try #require(writer.blockingResult(seconds: 20)).get()
      #expect(written == 16 << 20)
      #expect(drained == 16 << 20)
      // The first loop ran until the writer's wait had left it, and then ended.
      #expect(firstEnded.wait(timeout: .now() + 10) == .success)
    }

    @Test func twoLoopsWaitingOnOneStreamAtOnceBothWake() throws {
      let group = CoroutineLoopGroup(threads: 2)
      defer { group.shutdown() }
      let (sets, reply, wrote) = try runOnLoopLeavingNoDescriptor { () -> (Int, [UInt8], Bool) in
        let (stream, peer) = try connectedStreams()
        defer { stream.close() }
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
