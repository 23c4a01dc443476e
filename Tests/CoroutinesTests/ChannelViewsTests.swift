import Dispatch
import Testing

@testable import Coroutines

@Suite struct ChannelViewsTests {
  @Test func aSenderAndAReceiverShareTheChannel() throws {
    let received = try CoroutineLoop.run { () -> [Int] in
      let channel = CoChannel<Int>(capacity: 2)
      let sender = channel.sender
      let receiver = channel.receiver
      co_launch {
        for value in 1...3 { try sender.send(value) }
        sender.close()
      }
      return Array(receiver)
    }
    #expect(received == [1, 2, 3])
  }

  @Test func aMappedReceiverTransformsEachValueAsItIsTaken() throws {
    let labels = try CoroutineLoop.run { () -> [String] in
      let channel = CoChannel<Int>()
      let labels = channel.receiver.map { $0 * 10 }.map { "#\($0)" }
      co_launch {
        for value in 1...3 { try channel.send(value) }
        channel.close()
      }
      var received: [String] = []
      for label in labels { received.append(label) }
      return received
    }
    #expect(labels == ["#10", "#20", "#30"])
  }

  @Test func aTransformThatThrowsFailsTheReceiveThatTookTheValue() throws {
    try CoroutineLoop.run { () throws -> Void in
      let channel = CoChannel<Int>(capacity: 2)
      let checked = channel.receiver.map { value -> Int in
        if value < 0 { throw Failure.disk }
        return value
      }
      try channel.send(-1)
      try channel.send(2)
      #expect(throws: Failure.disk) { try checked.receive() }
      #expect(try checked.receive() == 2)
      channel.trySend(-3)
      #expect(checked.tryReceive() == nil)
      #expect(channel.count == 0)
    }
  }

  @Test func aReceiverCancelsAndASenderClosesTheChannel() {
    let closing = CoChannel<Int>(capacity: 1)
    closing.sender.trySend(1)
    closing.sender.close()
    #expect(closing.sender.isClosed && closing.receiver.isClosed)
    #expect(!closing.receiver.isCancelled)
    #expect(closing.receiver.tryReceive() == 1)
    let cancelling = CoChannel<Int>(capacity: 1)
    cancelling.trySend(1)
    let mapped = cancelling.receiver.map { $0 + 1 }
    mapped.cancel()
    #expect(cancelling.isCancelled && mapped.isCancelled)
    #expect(mapped.tryReceive() == nil)
  }

  @Test func futuresThroughTheViews() {
    let loop = CoroutineTestLoop()
    let channel = CoChannel<Int>()
    let next = channel.receiver.map { "\($0)" }.receiveFuture(on: loop)
    let called = Journal<String>()
    channel.receiver.whenReceive(on: loop) { called.append("\((try? $0.get()) ?? -1)") }
    loop.runUntilIdle()
    let sent = channel.sender.sendFuture(4, on: loop)
    let sentToo = channel.sender.sendFuture(5, on: loop)
    loop.runUntilIdle()
    #expect(value(next.result) == "4")
    #expect(called.entries == ["5"])
    #expect(sent.isSettled && sentToo.isSettled)
  }

  @Test func aReceiverCallsBackWithoutASchedulerAtOnceWithAReadyValue() {
    let channel = CoChannel<Int>(capacity: 1)
    channel.trySend(3)
    var received: String?  // a plain callback may capture a local variable
    channel.receiver.map { "#\($0)" }.whenReceive { received = try? $0.get() }
    #expect(received == "#3")
  }

  @Test func aMappedReceiversCallbackWaitsInTheQueueWhenCalled() {
    let loop = CoroutineTestLoop()
    let channel = CoChannel<Int>()
    let called = Journal<String>()
    channel.receiver.map { "#\($0)" }.whenReceive(on: loop) {
      called.append((try? $0.get()) ?? "error")
    }
    #expect(channel.trySend(1))  // a rendezvous: the callback's receive already waits
    loop.runUntilIdle()
    #expect(called.entries == ["#1"])
  }

  @Test func aMappedReceiversCallbackGoesWithItsChannel() {
    let called = Journal<String>()
    weak var captured: Captured?
    do {
      let channel = CoChannel<Int>()
      let object = Captured()
      captured = object
      channel.receiver.map { "#\($0)" }.whenReceive { [object] _ in
        _ = object
        called.append("called")
      }
    }
    #expect(captured == nil)
    #expect(called.entries.isEmpty)
  }

  @Test func cancellingAMappedReceiveFutureWithdrawsTheWait() {
    let loop = CoroutineTestLoop()
    let channel = CoChannel<Int>()
    let next = channel.receiver.map { $0 }.receiveFuture(on: loop)
    loop.runUntilIdle()
    next.cancel()
    loop.runUntilIdle()
    #expect(isCancellation(next.result))
    #expect(!channel.trySend(1))
  }

  @Test func selectReceivesThroughAMappedReceiverAndSendsThroughASender() throws {
    let outcomes = try CoroutineLoop.run { () -> [String] in
      let numbers = CoChannel<Int>(capacity: 1)
      let out = CoChannel<Int>(capacity: 1)
      let doubled = numbers.receiver.map { $0 * 2 }
      try numbers.send(21)
      let first = try co_select { select in
        select.receive(from: doubled) { "received \($0)" }
      }
      let second = try co_select { select in
        select.send(1, to: out.sender) { "sent" }
      }
      numbers.close()
      let third = try co_select { select in
        select.receive(from: doubled, onClosed: { "closed" }) { "received \($0)" }
      }
      return [first, second, third]
    }
    #expect(outcomes == ["received 42", "sent", "closed"])
  }

  @Test func aSelectWaitsOnAMappedReceiver() throws {
    let outcome = try CoroutineLoop.run { () -> String in
      let numbers = CoChannel<Int>()
      co_launch {
        try co_delay(0.001)
        try numbers.send(5)
      }
      return try co_select { select in
        select.receive(from: numbers.receiver.map { $0 + 1 }) { "got \($0)" }
      }
    }
    #expect(outcome == "got 6")
  }

  @Test func viewsGoToCoroutinesOnOtherThreads() throws {
    let queue = DispatchQueue(label: "views.consumer")
    let total = try CoroutineLoop.run { () -> Int in
      let channel = CoChannel<Int>(capacity: 4)
      let receiver = channel.receiver.map { $0 * 2 }
      let sender = channel.sender
      let consumer = co_launch(on: queue) { receiver.reduce(0, +) }
      let producer: @Sendable () throws -> Void = {
        for value in 1...4 { try sender.send(value) }
        sender.close()
      }
      try producer()
      return try co_await(consumer)
    }
    #expect(total == 20)
  }

  // MARK: doc-comment samples

  @Test func theReceiverSample() {
    let numbers = CoChannel<Int>(capacity: 8)
    let labels = numbers.receiver.map { "#\($0)" }
    numbers.trySend(1)
    let first = labels.tryReceive()  // "#1"
    #expect(first == "#1")
  }
}

/// An object for a callback to capture, to see when the callback is released.
private final class Captured: Sendable {}
