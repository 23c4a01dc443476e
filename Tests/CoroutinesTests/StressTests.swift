import Dispatch
import Foundation
import Synchronization
import Testing

@testable import Coroutines

/// Many messages through channels and actors, with producers and consumers on several
/// dispatch queues and loops, and cancellation injected at random points: nothing is lost,
/// nothing is duplicated, and every coroutine and stack is gone at the end.
///
/// The message count is 1 000 000 in all (three quarters through a channel, a quarter through
/// an actor); `COROUTINES_STRESS_MESSAGES` lowers it, as `make sanitize` does for its
/// repeated runs under ThreadSanitizer.
@Suite struct StressTests {
  static let messages =
    ProcessInfo.processInfo.environment["COROUTINES_STRESS_MESSAGES"].flatMap { Int($0) }
    ?? 1_000_000

  /// A stack size no other test uses, so the pool's count for it is this suite's alone.
  static let channelStackSize = CoroutineStack.minimumSize + 7 * 4096
  static let actorStackSize = CoroutineStack.minimumSize + 9 * 4096

  @Test func channelMessagesAreNeitherLostNorDuplicatedUnderCancellation() throws {
    let total = Self.messages * 3 / 4
    let producers = 8
    let consumers = 6
    let perProducer = total / producers
    let channel = CoChannel<Int>(capacity: 64)
    let sent = Mutex<[Int]>([])
    let received = Mutex<[Int]>([])
    let queues = (0..<3).map { DispatchQueue(label: "StressTests.channel \($0)") }
    let loops = (0..<2).map { _ in LoopThread() }
    let schedulers: [any CoroutineScheduler] = queues + loops.map(\.loop)
    let producerTasks = Mutex<[CoTask<Void>]>([])
    var seed = SplitMix64(seed: 0x5EED)

    // Consumers: some are cancelled by producers at random points (see below).
    let consumerTasks = (0..<consumers).map { index in
      co_launch(
        on: schedulers[index % schedulers.count], name: "consumer \(index)",
        stackSize: Self.channelStackSize
      ) {
        var mine: [Int] = []
        defer { received.withLock { $0 += mine } }
        for value in channel { mine.append(value) }
      }
    }
    // Producers: each sends its own range; a send that throws was not sent. Some cancel a
    // consumer, and some are cancelled, at points chosen by the seeded generator.
    let cancelConsumerAt = (0..<producers).map { _ in seed.index(below: perProducer * 2) }
    let cancelProducerAt = (0..<producers).map { _ in seed.index(below: perProducer * 3) }
    for index in 0..<producers {
      let task = co_launch(
        on: schedulers[(index + 1) % schedulers.count], name: "producer \(index)",
        stackSize: Self.channelStackSize
      ) {
        var mine: [Int] = []
        defer { sent.withLock { $0 += mine } }
        for step in 0..<perProducer {
          let value = index * perProducer + step
          if step == cancelConsumerAt[index], index % 2 == 0 {
            consumerTasks[index % (consumers - 1)].cancel()  // never the last consumer
          }
          if step == cancelProducerAt[index] {
            producerTasks.withLock { $0[(index + 3) % producers] }.cancel()
          }
          try channel.send(value)
          mine.append(value)
        }
      }
      producerTasks.withLock { $0.append(task) }
    }
    for task in producerTasks.withLock({ $0 }) { task.wait() }
    channel.close()
    for task in consumerTasks { task.wait() }
    // Whatever cancelled consumers left in the buffer is still there: drain it.
    var leftovers: [Int] = []
    while let value = channel.tryReceive() { leftovers.append(value) }
    loops.forEach { $0.stop() }

    let sentValues = sent.withLock { $0 }.sorted()
    let receivedValues = (received.withLock { $0 } + leftovers).sorted()
    #expect(sentValues.count > total / 10)  // cancellation hit some, not all
    #expect(receivedValues == sentValues)  // nothing lost, nothing duplicated, nothing invented
    #expect(Set(sentValues).count == sentValues.count)
    #expect(StackPool.shared.inUseCount(size: Self.channelStackSize) == 0)
  }

  @Test func actorMessagesAreAnsweredExactlyOnceOrRejectedUnderCancellation() throws {
    let total = Self.messages / 4
    let senders = 8
    let perSender = total / senders
    let processed = Mutex<[Int]>([])
    let queue = DispatchQueue(label: "StressTests.actor")
    let actor = co_actor(on: queue, name: "counter", stackSize: Self.actorStackSize) {
      (mailbox: CoMailbox<Int, Int>) in
      var seen: [Int] = []
      defer { processed.withLock { $0 += seen } }
      for message in mailbox {
        seen.append(message.value)
        message.reply(message.value)
      }
    }
    let queues = (0..<3).map { DispatchQueue(label: "StressTests.senders \($0)") }
    let loops = (0..<2).map { _ in LoopThread() }
    let schedulers: [any CoroutineScheduler] = queues + loops.map(\.loop)
    var seed = SplitMix64(seed: 0xAC70)
    let stopAt = seed.index(below: total)  // the actor stops part-way through
    let counter = Atomic<Int>(0)
    let futures = Mutex<[(Int, CoFuture<Int>)]>([])
    let cancelAt = (0..<senders).map { _ in seed.index(below: perSender * 2) }
    let senderTasks = (0..<senders).map { index in
      co_launch(
        on: schedulers[index % schedulers.count], name: "sender \(index)",
        stackSize: Self.actorStackSize
      ) {
        var mine: [(Int, CoFuture<Int>)] = []
        defer { futures.withLock { $0 += mine } }
        for step in 0..<perSender {
          let value = index * perSender + step
          if counter.add(1, ordering: .relaxed).newValue == stopAt { actor.stop() }
          if step == cancelAt[index] { try Coroutine.requireCurrent().cancel() }
          let reply = actor.send(value)
          mine.append((value, reply))
          if step % 64 == 0 { _ = try? co_await(reply) }  // sometimes wait; may be cancelled
          if !co_isActive() { return }
        }
      }
    }
    for task in senderTasks { task.wait() }
    actor.stop()
    actor.task.wait()
    loops.forEach { $0.stop() }

    let processedValues = processed.withLock { $0 }
    #expect(Set(processedValues).count == processedValues.count)  // none twice
    let processedSet = Set(processedValues)
    var answered = 0
    for (value, future) in futures.withLock({ $0 }) {
      switch future.result {
      case .success(let reply):
        #expect(reply == value && processedSet.contains(value))
        answered += 1
      case .failure(let error):
        #expect(error as? CoroutineError == .actorStopped && !processedSet.contains(value))
      case nil:
        Issue.record("message \(value) was never answered nor rejected")
      }
    }
    #expect(answered == processedValues.count)  // every processed message was answered
    #expect(StackPool.shared.inUseCount(size: Self.actorStackSize) == 0)
  }
}

/// A loop running on its own thread until stopped, so coroutines on it can be driven from a
/// test that waits with `wait()`.
private final class LoopThread: Sendable {
  let loop = CoroutineLoop()
  private let keepAlive = CoPromise<Void>()
  private let done = DispatchSemaphore(value: 0)

  init() {
    let thread = Thread { [loop, keepAlive, done] in
      co_launch(on: loop, name: "LoopThread keep-alive") { try? co_await(keepAlive) }
      loop.run()
      done.signal()
    }
    thread.start()
  }

  /// Lets the loop finish once its coroutines have, and waits for it.
  func stop() {
    keepAlive.fulfill(())
    done.wait()
  }
}

extension CoFuture {
  /// Blocks the calling thread (never a coroutine) until the future settles.
  fileprivate func wait() {
    let settled = DispatchSemaphore(value: 0)
    whenComplete { _ in settled.signal() }
    settled.wait()
  }
}
