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
