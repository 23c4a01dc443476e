import Dispatch
import Foundation
import Synchronization
import Testing

@testable import Coroutines

extension IOTests {
  @Suite struct DescriptorWaitTests {
    @Test func aPipeWrittenFromAnotherThreadWakesTheWaitingCoroutine() throws {
      let (events, byte) = try runOnLoopLeavingNoDescriptor { () -> (CoIOEvents, UInt8) in
        let pipe = try TestPipe()
        defer { pipe.close() }
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.01) {
          var byte: UInt8 = 42
          _ = write(pipe.writeEnd, &byte, 1)
        }
        let events = try co_wait(fd: pipe.readEnd, for: .readable, timeout: 10)
        var byte: UInt8 = 0
        #expect(read(pipe.readEnd, &byte, 1) == 1)
        return (events, byte)
      }
      #expect(events == .readable)
      #expect(byte == 42)
    }

    @Test func anAwaitBesideADescriptorWaitParksRatherThanSpins() throws {
      let clock = ContinuousClock()
      let started = clock.now
      let value = try runOnLoopLeavingNoDescriptor { () -> Int in
        let pipe = try TestPipe()
        defer { pipe.close() }
        // Far longer than the test may take: an await spinning blind to the poller would hold
        // it until the descriptor wait's timeout.
        CoroutineLoop.current!.setSpinBudgetForTesting(60_000_000_000)
        let answer = CoPromise<Int>()
        co_launch {
          _ = try co_wait(fd: pipe.readEnd, for: .readable, timeout: 50)
          answer.fulfill(8)
        }
        try co_delay(0)  // the waiter is registered
        let writeEnd = pipe.writeEnd
        PlainThreads.start {
          _ = PlainThreads.poll { answer.wasObserved }
          var byte: UInt8 = 1
          _ = write(writeEnd, &byte, 1)
        }
        return try co_await(answer)
      }
      #expect(value == 8)
      #expect(clock.now - started < .seconds(30))
    }

    @Test func aLoopThatNeverRunsOutOfJobsStillServesItsDescriptors() throws {
      let yieldsWhileWaiting = try runOnLoopLeavingNoDescriptor { () -> Int in
        let pipe = try TestPipe()
        defer { pipe.close() }
        let woken = Atomic<Bool>(false)
        let waiter = co_launch {
          _ = try co_wait(fd: pipe.readEnd, for: .readable, timeout: 10)
          woken.store(true, ordering: .relaxed)
        }
        try co_delay(0)  // the waiter is registered
        var byte: UInt8 = 1
        _ = write(pipe.writeEnd, &byte, 1)
        // Keep the loop busy: a job is always ready, so it never sleeps in the poller.
        var yields = 0
        while !woken.load(ordering: .relaxed) {
          try co_delay(0)
          yields += 1
        }
        try waiter.await()
        return yields
      }
      #expect(yieldsWhileWaiting <= CoroutineLoop.jobsBetweenPolls * 2)
    }

    @Test func aWaitThatTimesOutLeavesNothingRegistered() throws {
      try runOnLoopLeavingNoDescriptor { () throws in
        let pipe = try TestPipe()
        defer { pipe.close() }
        let loop = CoroutineLoop.current!
        #expect(throws: CoroutineError.timedOut) {
          _ = try co_wait(fd: pipe.readEnd, for: .readable, timeout: 0.01)
        }
        #expect(loop.poller.waiterCount == 0)
        // Waiting again works, and the descriptor is not reported ready on its own.
        #expect(throws: CoroutineError.timedOut) {
          _ = try co_wait(fd: pipe.readEnd, for: .readable, timeout: 0.01)
        }
      }
    }

    @Test func aZeroTimeoutOnlyLooks() throws {
      try runOnLoopLeavingNoDescriptor { () throws in
        let pipe = try TestPipe()
        defer { pipe.close() }
        #expect(try co_wait(fd: pipe.writeEnd, for: .writable, timeout: 0) == .writable)
        #expect(throws: CoroutineError.timedOut) {
          _ = try co_wait(fd: pipe.readEnd, for: .readable, timeout: 0)
        }
      }
    }

    @Test func cancellingAWaitingCoroutineEndsItsWaitAndUnregisters() throws {
      let cancelled = try runOnLoopLeavingNoDescriptor { () -> Bool in
        let pipe = try TestPipe()
        defer { pipe.close() }
        let waiter = co_launch { _ = try co_wait(fd: pipe.readEnd, for: .readable) }
        try co_delay(0.005)
        waiter.cancel()
        let cancelled: Bool
        do {
          try waiter.await()
          cancelled = false
        } catch is CancellationError {
          cancelled = true
        }
        #expect(CoroutineLoop.current!.poller.waiterCount == 0)
        return cancelled
      }
      #expect(cancelled)
    }

    @Test func aReaderAndAWriterWaitOnOneDescriptorAtOnce() throws {
      let order = try runOnLoopLeavingNoDescriptor { () -> [String] in
        // A socket pair: each end is readable and writable.
        var ends: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &ends) == 0)
        defer { ends.forEach { Glibc.close($0) } }
        for end in ends { _ = fcntl(end, F_SETFL, O_NONBLOCK) }
        // Fill ends[0]'s send buffer so that it is not writable.
        var chunk = [UInt8](repeating: 1, count: 65536)
        while write(ends[0], &chunk, chunk.count) > 0 {}
        let log = Journal<String>()
        let watched = ends[0]
        let reader = co_launch {
          _ = try co_wait(fd: watched, for: .readable, timeout: 10)
          log.append("readable")
        }
        let writer = co_launch {
          _ = try co_wait(fd: watched, for: .writable, timeout: 10)
          log.append("writable")
        }
        try co_delay(0.005)
        var byte: UInt8 = 1
        _ = write(ends[1], &byte, 1)  // ends[0] becomes readable
        try reader.await()
        // Drain what ends[0] sent, so that it becomes writable again.
        while read(ends[1], &chunk, chunk.count) > 0 {}
        try writer.await()
        return log.entries
      }
      #expect(order == ["readable", "writable"])
    }

    @Test func everyCoroutineWaitingForOneDescriptorWakesWhenItIsReady() throws {
      let (woken, leftRegistered) = try runOnLoopLeavingNoDescriptor { () -> (Int, Int) in
        let pipe = try TestPipe()
        defer { pipe.close() }
        let waiters = (0..<3).map { _ in
          co_launch { _ = try co_wait(fd: pipe.readEnd, for: .readable, timeout: 10) }
        }
        // A fourth waits for a while only, and leaves before the byte comes.
        let leaving = co_launch {
          _ = try co_wait(fd: pipe.readEnd, for: .readable, timeout: 0.001)
        }
        #expect(throws: CoroutineError.timedOut) { try leaving.await() }
        var byte: UInt8 = 1
        _ = write(pipe.writeEnd, &byte, 1)
        var woken = 0
        for waiter in waiters {
          try waiter.await()
          woken += 1
        }
        return (woken, CoroutineLoop.current!.poller.waiterCount)
      }
      #expect(woken == 3)
      #expect(leftRegistered == 0)
    }

    @Test func aNegativeOrClosedDescriptorIsABadDescriptor() throws {
      try runOnLoopLeavingNoDescriptor { () throws in
        #expect(throws: POSIXError(.EBADF)) { _ = try co_wait(fd: -1, for: .readable) }
        let pipe = try TestPipe()
        pipe.close()
        #expect(throws: POSIXError(.EBADF)) { _ = try co_wait(fd: pipe.readEnd, for: .readable) }
      }
    }

    @Test func aNumberClosedAndReusedWhileAWaitWasPendingWakesTheNextWait() throws {
      // The program of a user who closes a pipe under a pending wait and opens another, which
      // gets the same number.
      let outcome = try runOnLoopLeavingNoDescriptor { () -> String in
        var first: [Int32] = [0, 0]
        _ = pipe(&first)
        let old = first[0]
        let a = co_launch { _ = try? co_wait(fd: old, for: .readable, timeout: 1) }
        try co_delay(0.05)
        close(first[0])
        close(first[1])
        let second = try TestPipe()
        defer { second.close() }
        // Whatever another test opened meanwhile, the new pipe's read end takes the old number.
        if second.readEnd != old {
          #expect(dup2(second.readEnd, old) == old)
        }
        defer { if second.readEnd != old { close(old) } }
        let b = co_launch { () throws -> String in
          _ = try co_wait(fd: old, for: .readable, timeout: 2)
          return "woke"
        }
        try co_delay(0.05)
        var byte: UInt8 = 1
        _ = write(second.writeEnd, &byte, 1)
        try a.await()
        return (try? b.await()) ?? "timed out"
      }
      #expect(outcome == "woke")
    }

    @Test func aWaitOnAReusedNumberIsNeverWokenByTheFileTheNumberNamedBefore() throws {
      let (oldWaiter, newWaiterFound, leftRegistered) = try runOnLoopLeavingNoDescriptor {
        () -> (String, [UInt8], Int) in
        let first = try TestPipe()
        defer { first.close() }
        // A second reference to the first pipe's read end keeps its file open (as a forked
        // child or a dup would), so its registration stays in the epoll set under the number.
        let keeper = dup(first.readEnd)
        defer { close(keeper) }
        let number = first.readEnd
        let oldWait = co_launch { () -> String in
          do {
            _ = try co_wait(fd: number, for: .readable, timeout: 5)
            return "woken"
          } catch let error as POSIXError {
            return "\(error.code)"
          }
        }
        try co_delay(0.01)
        // The number now names the second pipe's read end; the first pipe's file lives on.
        let second = try TestPipe()
        defer { second.close() }
        #expect(dup2(second.readEnd, number) == number)
        let newWait = co_launch { () -> [UInt8] in
          _ = try co_wait(fd: number, for: .readable, timeout: 5)
          var byte: UInt8 = 0
          return read(number, &byte, 1) == 1 ? [byte] : []
        }
        try co_delay(0.01)
        // The first pipe's file becomes readable: neither wait may take its event for its own.
        var byte: UInt8 = 1
        _ = write(first.writeEnd, &byte, 1)
        try co_delay(0.05)
        byte = 2
        _ = write(second.writeEnd, &byte, 1)
        let found = try newWait.await()
        let old = try oldWait.await()
        return (old, found, CoroutineLoop.current!.poller.waiterCount)
      }
      // The old wait's file was closed under it (its number names another file now).
      #expect(oldWaiter == "\(POSIXErrorCode.EBADF)")
      #expect(newWaiterFound == [2])
      #expect(leftRegistered == 0)
    }

    @Test func aRegularFileIsAlwaysReady() throws {
      try runOnLoopLeavingNoDescriptor { () throws in
        let fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC)
        defer { close(fd) }
        #expect(try co_wait(fd: fd, for: .readable, timeout: 1) == .readable)
      }
    }

    @Test func outsideACoroutineWaitingThrowsNotInCoroutine() {
      #expect(throws: CoroutineError.notInCoroutine) { _ = try co_wait(fd: 0, for: .readable) }
    }

    @Test func aCoroutineOnADispatchQueueWaitsInTheSharedPollerAndResumesOnItsQueue() throws {
      let pipe = try TestPipe()
      defer { pipe.close() }
      let queue = DispatchQueue(label: "io-test")
      let key = DispatchSpecificKey<Int>()
      queue.setSpecific(key: key, value: 7)
      let task = co_launch(on: queue) { () -> (CoIOEvents, Int?) in
        let events = try co_wait(fd: pipe.readEnd, for: .readable, timeout: 10)
        return (events, DispatchQueue.getSpecific(key: key))
      }
      DispatchQueue.global().asyncAfter(deadline: .now() + 0.01) {
        var byte: UInt8 = 1
        _ = write(pipe.writeEnd, &byte, 1)
      }
      let (events, specific) = try #require(task.blockingResult(seconds: 10)).get()
      #expect(events == .readable)
      #expect(specific == 7)
    }

    @Test func onATestLoopTheTimeoutWaitsForVirtualTime() throws {
      let pipe = try TestPipe()
      defer { pipe.close() }
      let loop = CoroutineTestLoop()
      let task = co_launch(on: loop) {
        _ = try co_wait(fd: pipe.readEnd, for: .readable, timeout: 30)
      }
      loop.runUntilIdle()
      // The coroutine moved to the shared poller's thread to wait: its timeout starts once it
      // is registered there.
      let shared = CoroutineLoop.sharedPoller.poller
      let end = Date().addingTimeInterval(10)
      while shared.waiterCount == 0, Date() < end { usleep(200) }
      loop.advance(by: 29)
      #expect(task.result == nil)
      loop.advance(by: 1)
      let result = try #require(loop.runUntilSettled(task, seconds: 10))
      #expect(throws: CoroutineError.timedOut) { try result.get() }
    }
  }
}
