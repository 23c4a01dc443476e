import Dispatch
import Foundation
import Synchronization
import Testing

@testable import Coroutines

@Suite struct ChannelTests {
  @Test func pingPongOverRendezvousChannelsKeepsOrder() throws {
    let log = ModelsLog<String>()
    try CoroutineLoop.run {
      let ping = CoChannel<Int>()
      let pong = CoChannel<Int>()
      co_launch {
        for ball in ping {
          log.append("pong \(ball)")
          try pong.send(ball + 1)
        }
        pong.close()
      }
      var ball = 0
      for _ in 0..<3 {
        log.append("ping \(ball)")
        try ping.send(ball)
        ball = try pong.receive() + 1
      }
      ping.close()
      #expect(throws: CoroutineError.channelClosed) { try pong.receive() }
    }
    #expect(log.values == ["ping 0", "pong 0", "ping 2", "pong 2", "ping 4", "pong 4"])
  }

  @Test func aRendezvousSendWaitsForItsReceiver() throws {
    let log = ModelsLog<String>()
    try CoroutineLoop.run {
      let channel = CoChannel<String>()
      #expect(!channel.trySend("nobody listens"))
      let sender = co_launch {
        try channel.send("hello")
        log.append("send returned")
      }
      co_launch {
        log.append("receiver starts")
        log.append(try channel.receive())
      }
      try co_await(sender)
    }
    #expect(log.values == ["receiver starts", "hello", "send returned"])
  }

  @Test func aBufferedChannelHoldsUpToItsCapacity() throws {
    let channel = CoChannel<Int>(capacity: 2)
    #expect(channel.capacity == 2)
    #expect(channel.trySend(1))
    #expect(channel.trySend(2))
    #expect(!channel.trySend(3))
    #expect(channel.count == 2)
    #expect(channel.tryReceive() == 1)
    #expect(channel.tryReceive() == 2)
    #expect(channel.tryReceive() == nil)
  }

  @Test func anUnboundedChannelNeverFills() {
    let channel = CoChannel<Int>(capacity: .max)
    for n in 0..<10_000 { #expect(channel.trySend(n)) }
    #expect(channel.count == 10_000)
    var received: [Int] = []
    while let n = channel.tryReceive() { received.append(n) }
    #expect(received == Array(0..<10_000))
  }

  @Test func aFullChannelSuspendsTheSenderUntilThereIsRoom() throws {
    let log = ModelsLog<String>()
    try CoroutineLoop.run {
      let channel = CoChannel<Int>(capacity: 1)
      let sender = co_launch {
        for n in 1...3 {
          try channel.send(n)
          log.append("sent \(n)")
        }
        channel.close()
      }
      co_launch {
        for n in channel { log.append("received \(n)") }
      }
      try co_await(sender)
    }
    // The sender fills the one slot, then each receive makes room for exactly one more.
    #expect(
      log.values.filter { $0.hasPrefix("received") } == ["received 1", "received 2", "received 3"])
    #expect(log.values.first == "sent 1")
  }

  @Test func closingKeepsBufferedValuesForReceivers() throws {
    let received = try CoroutineLoop.run { () -> [Int] in
      let channel = CoChannel<Int>(capacity: 3)
      for n in 1...3 { try channel.send(n) }
      channel.close()
      #expect(channel.isClosed)
      var received: [Int] = []
      for n in channel { received.append(n) }
      #expect(throws: CoroutineError.channelClosed) { try channel.receive() }
      #expect(channel.tryReceive() == nil)
      return received
    }
    #expect(received == [1, 2, 3])
  }

  @Test func sendingAfterCloseThrows() throws {
    try CoroutineLoop.run {
      let channel = CoChannel<Int>(capacity: 1)
      channel.close()
      channel.close()  // closing again does nothing
      #expect(throws: CoroutineError.channelClosed) { try channel.send(1) }
      #expect(!channel.trySend(1))
      #expect(channel.count == 0)
    }
  }

  @Test func closingWakesWaitingSendersAndReceivers() throws {
    let outcomes = ModelsLog<String>()
    try CoroutineLoop.run {
      let full = CoChannel<Int>(capacity: 1)
      try full.send(1)
      let empty = CoChannel<Int>()
      let sender = co_launch {
        do { try full.send(2) } catch { outcomes.append("sender: \(error)") }
      }
      let receiver = co_launch {
        do { _ = try empty.receive() } catch { outcomes.append("receiver: \(error)") }
      }
      co_launch {
        full.close()
        empty.close()
      }
      try co_await(sender)
      try co_await(receiver)
      // The waiting sender's value was never sent; the buffered one still drains.
      #expect(full.tryReceive() == 1)
      #expect(full.tryReceive() == nil)
    }
    #expect(
      Set(outcomes.values) == [
        "sender: \(CoroutineError.channelClosed)", "receiver: \(CoroutineError.channelClosed)",
      ])
  }

  @Test func aCancelledWaitingSenderLeavesNoValueBehind() throws {
    try CoroutineLoop.run {
      let channel = CoChannel<Int>(capacity: 1)
      try channel.send(1)
      let sender = co_launch { try channel.send(2) }
      co_launch { sender.cancel() }
      #expect(throws: CancellationError.self) { try co_await(sender) }
      #expect(channel.tryReceive() == 1)
      #expect(channel.tryReceive() == nil)
      #expect(channel.trySend(3))  // the cancelled sender no longer holds the slot
    }
  }

  @Test func aCancelledWaitingReceiverTakesNoValue() throws {
    try CoroutineLoop.run {
      let channel = CoChannel<Int>()
      let receiver = co_launch { try channel.receive() }
      co_launch { receiver.cancel() }
      #expect(throws: CancellationError.self) { try co_await(receiver) }
      #expect(!channel.trySend(1))  // nobody waits any more
      let next = co_launch { try channel.receive() }
      try channel.send(2)
      #expect(try co_await(next) == 2)
    }
  }

  @Test func aCancelledCoroutineCannotSendOrReceive() throws {
    try CoroutineLoop.run {
      let channel = CoChannel<Int>(capacity: 1)
      let task = co_launch { () throws -> Void in
        Coroutine.current?.cancel()
        #expect(throws: CancellationError.self) { try channel.send(1) }
        #expect(throws: CancellationError.self) { try channel.receive() }
      }
      try co_await(task)
      #expect(channel.count == 0)
    }
  }

  @Test func cancellingDropsTheBufferAndWakesWaitingReceiversWithCancellation() throws {
    let outcomes = try CoroutineLoop.run { () -> [String] in
      let buffered = CoChannel<Int>(capacity: 4)
      try buffered.send(1)
      try buffered.send(2)
      buffered.cancel()
      #expect(buffered.count == 0)
      #expect(buffered.tryReceive() == nil)
      #expect(!buffered.trySend(3))
      #expect(buffered.isCancelled && buffered.isClosed)
      let empty = CoChannel<Int>()
      let receivers = (0..<2).map { _ in
        co_launch { () -> String in
          do { return "\(try empty.receive())" } catch { return "\(type(of: error))" }
        }
      }
      try co_delay(0)
      empty.cancel()
      return try receivers.map { try co_await($0) }
    }
    #expect(outcomes == ["CancellationError", "CancellationError"])
  }

  @Test func cancellingWakesWaitingSendersAndLaterCallsThrowCancellation() throws {
    try CoroutineLoop.run { () throws -> Void in
      let channel = CoChannel<Int>()
      let sender = co_launch { try channel.send(1) }
      try co_delay(0)
      channel.cancel()
      #expect(throws: CancellationError.self) { try co_await(sender) }
      #expect(throws: CancellationError.self) { try channel.send(2) }
      #expect(throws: CancellationError.self) { try channel.receive() }
      var iterated = 0
      for _ in channel { iterated += 1 }
      #expect(iterated == 0)
    }
  }

  @Test func closeDrainsButCancelDropsWhatAClosedChannelStillBuffers() throws {
    let (drained, afterCancel) = try CoroutineLoop.run { () -> (Int?, Int?) in
      let closed = CoChannel<Int>(capacity: 2)
      try closed.send(1)
      closed.close()
      let drained = closed.tryReceive()
      let cancelled = CoChannel<Int>(capacity: 2)
      try cancelled.send(1)
      cancelled.close()
      cancelled.cancel()
      #expect(throws: CancellationError.self) { try cancelled.receive() }
      return (drained, cancelled.tryReceive())
    }
    #expect(drained == 1)
    #expect(afterCancel == nil)
  }

  @Test func cancellingReleasesTheDroppedValues() {
    weak var dropped: ModelsBox?
    let channel = CoChannel<ModelsBox>(capacity: 1)
    do {
      let box = ModelsBox()
      dropped = box
      channel.trySend(box)
    }
    #expect(dropped != nil)
    channel.cancel()
    #expect(dropped == nil)
    channel.cancel()
  }

  @Test func aSelectOnACancelledChannelThrowsCancellation() throws {
    try CoroutineLoop.run { () throws -> Void in
      let channel = CoChannel<Int>()
      let selecting = co_launch { () -> String in
        try co_select { select in
          select.receive(from: channel, onClosed: { "closed" }) { "\($0)" }
        }
      }
      try co_delay(0)
      channel.cancel()
      #expect(throws: CancellationError.self) { try co_await(selecting) }
      #expect(throws: CancellationError.self) {
        try co_select { select in select.send(1, to: channel) { "sent" } }
      }
    }
  }

  @Test func sendAndReceiveNeedACoroutine() {
    let channel = CoChannel<Int>(capacity: 1)
    #expect(throws: CoroutineError.notInCoroutine) { try channel.send(1) }
    #expect(throws: CoroutineError.notInCoroutine) { try channel.receive() }
    #expect(channel.trySend(1))
    #expect(channel.tryReceive() == 1)
  }

  /// Cancellation racing a hand-over: whenever the sender's `send` returned, the receiver got
  /// the value, and otherwise it did not; nothing is lost or received twice.
  @Test func cancellationRacingAHandOverNeverLosesOrDuplicates() throws {
    let receiverQueue = DispatchQueue(label: "channel.race.receiver")
    let senderQueue = DispatchQueue(label: "channel.race.sender")
    try CoroutineLoop.run {
      for round in 0..<500 {
        let channel = CoChannel<Int>()
        let receiver = co_launch(on: receiverQueue) { try channel.receive() }
        let sender = co_launch(on: senderQueue) { try channel.send(round) }
        receiver.cancel()
        let received = try? co_await(receiver)
        if received == nil {
          // The sender may still wait for a receiver: release it.
          channel.close()
        }
        let sent = (try? co_await(sender)) != nil
        #expect(sent == (received == round), "round \(round)")
      }
    }
  }

  /// 4 producers × 4 consumers on different queues and loops, 100 000 values from each
  /// producer: every value arrives exactly once.
  @Test func manyProducersAndConsumersAcrossThreadsLoseNothing() throws {
    let producers = 4
    let perProducer = 100_000
    let channel = CoChannel<Int>(capacity: 64)
    let totals = ModelsLog<(count: Int, sum: Int, xor: Int)>()
    @Sendable func consume() {
      var count = 0
      var sum = 0
      var xor = 0
      for value in channel {
        count += 1
        sum &+= value
        xor ^= value
      }
      totals.append((count, sum, xor))
    }
    // Two consumers each drive a loop of their own on a thread of their own...
    let loopsDone = (0..<2).map { _ in CoPromise<Void>() }
    for done in loopsDone {
      Thread {
        do {
          try CoroutineLoop.run { consume() }
          done.fulfill(())
        } catch {
          done.reject(error)
        }
      }.start()
    }
    try CoroutineLoop.run {
      // ...and two run on dispatch queues.
      let queueConsumers = (0..<2).map { index in
        co_launch(on: DispatchQueue(label: "channel.consumer.\(index)")) { consume() }
      }
      let senders = (0..<producers).map { producer in
        co_launch(on: DispatchQueue(label: "channel.producer.\(producer)")) {
          for index in 0..<perProducer { try channel.send(producer * perProducer + index) }
        }
      }
      for sender in senders { try co_await(sender) }
      channel.close()
      for consumer in queueConsumers { try co_await(consumer) }
      for done in loopsDone { try co_await(done) }
    }
    let all = totals.values
    let expected = 0..<(producers * perProducer)
    #expect(all.count == 4)
    #expect(all.map(\.count).reduce(0, +) == expected.count)
    #expect(all.map(\.sum).reduce(0, &+) == expected.reduce(0, &+))
    #expect(all.map(\.xor).reduce(0, ^) == expected.reduce(0, ^))
    #expect(all.allSatisfy { $0.count > 0 })
  }
}

@Suite struct ChannelMisuseTests {
  @Test func aNegativeCapacityStopsWithAMessageNamingIt() async throws {
    let result = try await #require(
      processExitsWith: .failure, observing: [\.standardErrorContent]
    ) {
      _ = CoChannel<Int>(capacity: -1)
    }
    let message = String(decoding: result.standardErrorContent, as: UTF8.self)
    #expect(message.contains("CoChannel(capacity:): capacity -1 is negative"))
  }

  @Test func iteratingOutsideACoroutineStopsWithAMessage() async throws {
    let result = try await #require(
      processExitsWith: .failure, observing: [\.standardErrorContent]
    ) {
      for _ in CoChannel<Int>() {}
    }
    let message = String(decoding: result.standardErrorContent, as: UTF8.self)
    #expect(message.contains("must run inside a coroutine"))
  }
}

/// The channel samples of Docs/Coroutines.docc/Articles/Channels.md, verbatim between the
/// markers.
@Suite struct ChannelDocSamples {
  @Test func futuresFromPlainCodeInCallOrder() throws {
    // sample
    let channel = CoChannel<Int>(capacity: 1)
    let first = channel.receiveFuture()  // waits: the channel is empty
    channel.trySend(1)  // taken by `first`
    let second = channel.receiveFuture()  // waits: `first` took the 1
    channel.trySend(2)  // taken by `second`
    // first settles with 1, second with 2
    // end
    let values = try CoroutineLoop.run { [try co_await(first), try co_await(second)] }
    #expect(values == [1, 2])
  }

  @Test func overview() throws {
    // sample
    var received: [Int] = []
    try CoroutineLoop.run {
      let channel = CoChannel<Int>(capacity: 2)
      co_launch {
        for value in 1...3 { try channel.send(value) }
        channel.close()
      }
      for value in channel { received.append(value) }
    }
    // received == [1, 2, 3]
    // end
    #expect(received == [1, 2, 3])
  }

  @Test func closing() throws {
    try CoroutineLoop.run {
      // sample
      let results = CoChannel<String>(capacity: .max)
      try results.send("first")
      try results.send("second")
      results.close()
      let drained = Array(results)  // ["first", "second"]
      // results.send("third") now throws CoroutineError.channelClosed
      // end
      #expect(drained == ["first", "second"])
      #expect(throws: CoroutineError.channelClosed) { try results.send("third") }
    }
  }

  @Test func manyThreads() throws {
    // sample
    let jobs = CoChannel<Int>(capacity: 16)
    let lock = CoMutex()
    nonisolated(unsafe) var total = 0  // every access holds lock
    try CoroutineLoop.run {
      let workers = (0..<4).map { index in
        co_launch(on: DispatchQueue(label: "worker \(index)")) {
          for job in jobs { try lock.withLock { total += job } }
        }
      }
      for job in 1...100 { try jobs.send(job) }
      jobs.close()
      for worker in workers { try co_await(worker) }
    }
    // total == 5050
    // end
    #expect(total == 5050)
  }
}

/// A reference whose release a test can watch.
final class ModelsBox: Sendable {}
