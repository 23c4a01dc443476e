import Dispatch
import Testing

@testable import Coroutines

@Suite struct ChannelConflatedTests {
  @Test func aReceiverGetsOnlyTheLatestValue() throws {
    let received = try CoroutineLoop.run { () -> [Int] in
      let channel = CoChannel<Int>.conflated()
      for value in 1...5 { try channel.send(value) }
      #expect(channel.count == 1)
      channel.close()
      return Array(channel.makeIteratorValues())
    }
    #expect(received == [5])
  }

  @Test func sendNeverWaitsEvenWithNobodyReceiving() throws {
    try CoroutineLoop.run { () throws -> Void in
      let channel = CoChannel<Int>.conflated()
      let sender = co_launch { () -> Int in
        for value in 1...1000 { try channel.send(value) }
        return 1000
      }
      // The sender finished without this coroutine ever receiving.
      #expect(try co_await(sender) == 1000)
      #expect(channel.tryReceive() == 1000)
      #expect(channel.tryReceive() == nil)
    }
  }

  @Test func aWaitingReceiverTakesTheValueAtOnce() throws {
    let received = try CoroutineLoop.run { () -> [Int] in
      let channel = CoChannel<Int>.conflated()
      let ready = CoPromise<Void>()
      let receiver = co_launch { () -> [Int] in
        let first = try channel.receive()
        try co_await(ready)
        return [first, try channel.receive()]
      }
      try co_delay(0)
      try channel.send(1)  // handed to the waiting receiver
      try co_delay(0)
      try channel.send(2)
      try channel.send(3)  // replaces 2: the receiver is not back yet
      ready.fulfill(())
      return try co_await(receiver)
    }
    #expect(received == [1, 3])
  }

  @Test func trySendAlwaysSucceedsUntilClosed() {
    let channel = CoChannel<Int>.conflated()
    #expect(channel.isConflated)
    #expect(!CoChannel<Int>(capacity: 1).isConflated)
    #expect(channel.capacity == 1)
    #expect(channel.trySend(1))
    #expect(channel.trySend(2))
    channel.close()
    #expect(!channel.trySend(3))
    #expect(channel.tryReceive() == 2)
    #expect(channel.tryReceive() == nil)
  }

  @Test func sendingToAClosedConflatedChannelThrows() throws {
    try CoroutineLoop.run { () throws -> Void in
      let channel = CoChannel<Int>.conflated()
      channel.close()
      #expect(throws: CoroutineError.channelClosed) { try channel.send(1) }
    }
  }

  @Test func aSelectSendToAConflatedChannelIsAlwaysReady() throws {
    let chosen = try CoroutineLoop.run { () -> [String] in
      let channel = CoChannel<Int>.conflated()
      let never = CoChannel<Int>()
      var chosen: [String] = []
      for value in 1...3 {
        chosen.append(
          try co_select { select in
            select.send(value, to: channel) { "sent \(value)" }
            select.receive(from: never) { _ in "received" }
          })
      }
      #expect(channel.tryReceive() == 3)
      return chosen
    }
    #expect(chosen == ["sent 1", "sent 2", "sent 3"])
  }

  @Test func aProducerOnAnotherThreadNeverWaitsForASlowConsumer() throws {
    let queue = DispatchQueue(label: "conflated.producer")
    let last = try CoroutineLoop.run { () -> Int in
      let channel = CoChannel<Int>.conflated()
      let producer = co_launch(on: queue) {
        for value in 1...10_000 { try channel.send(value) }
        channel.close()
      }
      var last = 0
      for value in channel {
        #expect(value > last)
        last = value
      }
      try co_await(producer)
      return last
    }
    #expect(last == 10_000)
  }

  // MARK: doc-comment samples

  @Test func theConflatedSample() {
    let progress = CoChannel<Double>.conflated()
    progress.trySend(0.25)
    progress.trySend(0.5)
    let latest = progress.tryReceive()  // 0.5
    #expect(latest == 0.5)
  }
}

extension CoChannel {
  /// What is left in the channel, received inside a coroutine until it is closed and drained.
  fileprivate func makeIteratorValues() -> [T] {
    var values: [T] = []
    for value in self { values.append(value) }
    return values
  }
}
