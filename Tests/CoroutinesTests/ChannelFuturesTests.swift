import Dispatch
import Foundation
import Testing

@testable import Coroutines

@Suite struct ChannelFuturesTests {
  @Test func aBufferedValueIsReceivedAtOnce() {
    let channel = CoChannel<Int>(capacity: 2)
    channel.trySend(4)
    let next = channel.receiveFuture()
    #expect(value(next.result) == 4)
    #expect(channel.count == 0)
  }

  @Test func aReceiveFutureWaitsForASenderOnItsScheduler() {
    let loop = CoroutineTestLoop()
    let channel = CoChannel<Int>()
    let next = channel.receiveFuture(on: loop)
    loop.runUntilIdle()
    #expect(next.result == nil)
    #expect(channel.trySend(7))  // the future's receiver is waiting
    #expect(next.result == nil)
    loop.runUntilIdle()
    #expect(value(next.result) == 7)
  }

  @Test func plainCodeNeedsNoLoop() throws {
    let channel = CoChannel<Int>()
    let next = channel.receiveFuture()
    let sent = CoChannel<Int>(capacity: 1)
    let received = try CoroutineLoop.run { () -> Int in
      try channel.send(5)
      return try co_await(next)
    }
    #expect(received == 5)
    #expect(value(sent.sendFuture(1).result) != nil)
  }

  @Test func aReceiveFutureIsRejectedOnceTheChannelIsClosedAndDrained() {
    let loop = CoroutineTestLoop()
    let channel = CoChannel<Int>(capacity: 1)
    channel.trySend(1)
    channel.close()
    #expect(value(channel.receiveFuture(on: loop).result) == 1)
    let after = channel.receiveFuture(on: loop)
    loop.runUntilIdle()
    #expect(coroutineError(after.result) == .channelClosed)
  }

  @Test func cancellingTheChannelRejectsPendingFuturesWithCancellation() {
    let loop = CoroutineTestLoop()
    let channel = CoChannel<Int>()
    let receiving = channel.receiveFuture(on: loop)
    let sending = CoChannel<Int>()
    let send = sending.sendFuture(1, on: loop)
    loop.runUntilIdle()
    channel.cancel()
    sending.cancel()
    loop.runUntilIdle()
    #expect(isCancellation(receiving.result))
    #expect(isCancellation(send.result))
  }

  @Test func cancellingAReceiveFutureWithdrawsIt() {
    let loop = CoroutineTestLoop()
    let channel = CoChannel<Int>()
    let next = channel.receiveFuture(on: loop)
    loop.runUntilIdle()
    next.cancel()
    loop.runUntilIdle()
    #expect(isCancellation(next.result))
    #expect(!channel.trySend(1))  // nobody waits any more
    #expect(loop.liveCoroutines == 0)
  }

  @Test func aSendFutureCompletesAtOnceWhenThereIsRoom() {
    let channel = CoChannel<Int>(capacity: 1)
    let sent = channel.sendFuture(3)
    #expect(sent.isSettled)
    #expect(channel.tryReceive() == 3)
  }

  @Test func aSendFutureWaitsForAReceiver() {
    let loop = CoroutineTestLoop()
    let channel = CoChannel<Int>()
    let sent = channel.sendFuture(8, on: loop)
    loop.runUntilIdle()
    #expect(sent.result == nil)
    #expect(channel.tryReceive() == 8)
    loop.runUntilIdle()
    #expect(sent.isSettled)
    #expect(coroutineError(sent.result) == nil)
  }

  @Test func cancellingASendFutureLeavesTheValueUnsent() {
    let loop = CoroutineTestLoop()
    let channel = CoChannel<Int>()
    let sent = channel.sendFuture(8, on: loop)
    loop.runUntilIdle()
    sent.cancel()
    loop.runUntilIdle()
    #expect(isCancellation(sent.result))
    #expect(channel.tryReceive() == nil)
  }

  @Test func aSendFutureOnAClosedChannelIsRejected() {
    let loop = CoroutineTestLoop()
    let channel = CoChannel<Int>()
    channel.close()
    let sent = channel.sendFuture(1, on: loop)
    loop.runUntilIdle()
    #expect(coroutineError(sent.result) == .channelClosed)
  }

  @Test func whenReceiveWithoutASchedulerCallsBackAtOnceWithAReadyValue() {
    let channel = CoChannel<Int>(capacity: 1)
    channel.trySend(7)
    var received: Int?  // a plain callback may capture a local variable
    channel.whenReceive { received = try? $0.get() }
    #expect(received == 7)
  }

  @Test func whenReceiveWithoutASchedulerWaitsOnTheCurrentLoop() throws {
    let received = Journal<String>()
    try CoroutineLoop.run {
      let channel = CoChannel<String>()
      channel.whenReceive { result in received.append((try? result.get()) ?? "error") }
      #expect(received.entries.isEmpty)
      try channel.send("first")
    }
    #expect(received.entries == ["first"])
  }

  @Test func whenReceiveCallsBackOnceWithTheValue() {
    let loop = CoroutineTestLoop()
    let channel = CoChannel<String>()
    let received = Journal<String>()
    channel.whenReceive(on: loop) { result in received.append((try? result.get()) ?? "error") }
    loop.runUntilIdle()
    channel.trySend("first")
    loop.runUntilIdle()
    #expect(!channel.trySend("second"))
    channel.close()
    loop.runUntilIdle()
    #expect(received.entries == ["first"])
  }

  // MARK: taking their place when called

  @Test func receiveFuturesTakeTheValuesInTheOrderTheyWereAskedFor() {
    let loop = CoroutineTestLoop()
    let channel = CoChannel<Int>(capacity: 1)
    let first = channel.receiveFuture(on: loop)  // waits: the channel is empty
    #expect(channel.trySend(1))
    let second = channel.receiveFuture(on: loop)
    #expect(channel.trySend(2))
    loop.runUntilIdle()
    #expect(value(first.result) == 1)
    #expect(value(second.result) == 2)
  }

  @Test func receiveFuturesFromPlainCodeTakeTheValuesInCallOrder() throws {
    for _ in 0..<200 {
      let channel = CoChannel<Int>(capacity: 1)
      let first = channel.receiveFuture()
      try #require(channel.trySend(1))
      let second = channel.receiveFuture()
      try #require(channel.trySend(2))
      try #require(outcome(of: first) == 1)
      try #require(outcome(of: second) == 2)
    }
  }

  @Test func whenReceiveOnARendezvousChannelTakesAValueSentRightAfter() throws {
    for _ in 0..<500 {
      let channel = CoChannel<Int>()
      let received = Journal<Int>()
      let done = DispatchSemaphore(value: 0)
      channel.whenReceive(on: nil) { result in
        received.append((try? result.get()) ?? -1)
        done.signal()
      }
      try #require(channel.trySend(5))  // the callback's receive is already waiting
      try #require(done.wait(timeout: .now() + 10) == .success)
      try #require(received.entries == [5])
    }
  }

  @Test func whenReceiveOnATestLoopIsWaitingBeforeTheLoopRuns() {
    let loop = CoroutineTestLoop()
    let channel = CoChannel<Int>()
    let received = Journal<Int>()
    channel.whenReceive(on: loop) { received.append((try? $0.get()) ?? -1) }
    #expect(channel.trySend(6))
    #expect(received.entries.isEmpty)  // called back on the loop
    loop.runUntilIdle()
    #expect(received.entries == [6])
  }

  @Test func sendFuturesFromOneThreadArriveInCallOrder() throws {
    for _ in 0..<200 {
      let channel = CoChannel<Int>()
      let sent = (1...3).map { channel.sendFuture($0) }
      try #require(
        [channel.tryReceive(), channel.tryReceive(), channel.tryReceive()] == [1, 2, 3])
      for future in sent { try #require(succeeded(future)) }
    }
  }

  @Test func closingTheChannelRejectsEveryWaitingFuture() {
    let loop = CoroutineTestLoop()
    let empty = CoChannel<Int>()
    let first = empty.receiveFuture(on: loop)
    let second = empty.receiveFuture(on: loop)
    let full = CoChannel<Int>()
    let sent = full.sendFuture(1, on: loop)
    empty.close()
    full.close()
    loop.runUntilIdle()
    #expect(coroutineError(first.result) == .channelClosed)
    #expect(coroutineError(second.result) == .channelClosed)
    #expect(coroutineError(sent.result) == .channelClosed)
    #expect(full.tryReceive() == nil)  // the value was not sent
  }

  // MARK: a channel that goes away

  @Test func aLoopWithACallbackWaitingOnAReleasedChannelReturns() {
    let finished = DispatchSemaphore(value: 0)
    let callbacks = Journal<String>()
    Thread {
      try? CoroutineLoop.run {
        let channel = CoChannel<Int>()
        channel.whenReceive { callbacks.append("called with \($0)") }
      }
      finished.signal()
    }.start()
    // Generous: the loop returns at once; on failure this fails rather than hangs the suite.
    #expect(finished.wait(timeout: .now() + 30) == .success)
    #expect(callbacks.entries.isEmpty)
  }

  @Test func aCallbackWaitingOnAReleasedChannelIsDroppedUncalled() {
    let called = Journal<Bool>()
    weak var captured: Captured?
    do {
      let channel = CoChannel<Int>()
      let object = Captured()
      captured = object
      channel.whenReceive(on: DispatchQueue.global()) { [object] _ in
        _ = object
        called.append(true)
      }
    }
    #expect(captured == nil)  // the callback, and what it captured, were released
    #expect(called.entries.isEmpty)
  }

  @Test func futuresWaitingOnAReleasedChannelAreRejectedAsClosed() {
    let loop = CoroutineTestLoop()
    var next: CoFuture<Int>?
    var sent: CoFuture<Void>?
    do {
      let receiving = CoChannel<Int>()
      let sending = CoChannel<Int>()
      next = receiving.receiveFuture(on: loop)
      sent = sending.sendFuture(3, on: loop)
    }
    loop.runUntilIdle()
    #expect(coroutineError(next?.result) == .channelClosed)
    #expect(coroutineError(sent?.result) == .channelClosed)
  }

  // MARK: doc-comment samples

  @Test func theReceiveFutureSample() {
    let channel = CoChannel<Int>(capacity: 1)
    channel.trySend(11)
    let shown = Journal<Int?>()
    let show = { (value: Int?) in shown.append(value) }
    channel.receiveFuture().whenComplete { result in
      show(try? result.get())
    }
    #expect(shown.entries == [11])
  }
}

/// The value `future` settles with, waited for on this thread (nil if rejected, or not settled
/// within a generous deadline).
private func outcome<T>(of future: CoFuture<T>) -> T? {
  let settled = DispatchSemaphore(value: 0)
  future.whenComplete { _ in settled.signal() }
  guard settled.wait(timeout: .now() + 10) == .success else { return nil }
  return value(future.result)
}

/// True once `future` is fulfilled, waited for on this thread.
private func succeeded(_ future: CoFuture<Void>) -> Bool {
  let settled = DispatchSemaphore(value: 0)
  future.whenComplete { _ in settled.signal() }
  guard settled.wait(timeout: .now() + 10) == .success else { return false }
  return (try? future.result?.get()) != nil
}

/// An object for a callback to capture, to see when the callback is released.
private final class Captured: Sendable {}
