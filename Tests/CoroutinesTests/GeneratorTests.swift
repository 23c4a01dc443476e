import Dispatch
import Foundation
import Synchronization
import Testing

@testable import Coroutines

@Suite struct GeneratorTests {
  // MARK: Inline generators

  /// A scheduled generator's body written on the main actor runs its closures on its queue.
  @MainActor @Test func aScheduledBodyWrittenOnTheMainActorRunsItsClosuresOnItsQueue() {
    let numbers = co_sequence(on: DispatchQueue.global()) { (yield: CoYield<Int>) in
      for n in [1, 2].map({ $0 * 10 }) { try yield(n) }
    }
    #expect(Array(numbers) == [10, 20])
  }

  @Test func theBodyRunsOnlyAsFarAsTheValuesAskedFor() {
    let steps = ModelsCounter()
    let numbers = co_sequence { (yield: CoYield<Int>) in
      for n in 0..<100 {
        steps.increment()
        try yield(n)
      }
    }
    #expect(steps.value == 0)
    #expect(Array(numbers.prefix(3)) == [0, 1, 2])
    #expect(steps.value == 3)
    #expect(numbers.next() == 3)
    #expect(steps.value == 4)
    numbers.cancel()
    #expect(numbers.isFinished)
  }

  @Test func aFinishedBodyEndsTheSequence() {
    let letters = co_sequence { (yield: CoYield<String>) in
      for letter in ["a", "b", "c"] { try yield(letter) }
    }
    #expect(Array(letters) == ["a", "b", "c"])
    #expect(letters.next() == nil)
    #expect(letters.isFinished)
    #expect(letters.error == nil)
  }

  @Test func breakingOutAndDroppingTheGeneratorUnwindsTheBody() {
    let size = modelsStackSize(301)
    let unwound = ModelsCounter()
    var seen: [Int] = []
    do {
      let numbers = co_sequence(stackSize: size) { (yield: CoYield<Int>) in
        defer { unwound.increment() }
        var n = 0
        while true {
          try yield(n)
          n += 1
        }
      }
      for n in numbers {
        seen.append(n)
        if n == 2 { break }
      }
      #expect(stacksInUse(size: size) == 1)
      #expect(unwound.value == 0)
    }
    #expect(seen == [0, 1, 2])
    #expect(unwound.value == 1)
    #expect(stacksInUse(size: size) == 0)
  }

  @Test func cancelUnwindsAnInlineBodyBeforeItReturns() {
    let size = modelsStackSize(302)
    let caught = ModelsLog<String>()
    let numbers = co_sequence(stackSize: size) { (yield: CoYield<Int>) in
      defer { caught.append("defer") }
      do {
        try yield(1)
        try yield(2)
      } catch {
        caught.append(error is CancellationError ? "cancelled" : "other")
        throw error
      }
    }
    #expect(numbers.next() == 1)
    numbers.cancel()
    #expect(caught.values == ["cancelled", "defer"])
    #expect(numbers.isFinished)
    #expect(numbers.error == nil)
    #expect(numbers.next() == nil)
    #expect(stacksInUse(size: size) == 0)
  }

  @Test func aGeneratorCancelledBeforeItStartsNeverRunsItsBody() {
    let ran = ModelsCounter()
    let numbers = co_sequence { (yield: CoYield<Int>) in
      ran.increment()
      try yield(1)
    }
    numbers.cancel()
    #expect(numbers.next() == nil)
    #expect(ran.value == 0)
    #expect(numbers.isFinished)
  }

  struct Broken: Error, Equatable {}

  @Test func anErrorFromTheBodyEndsTheSequenceAndStaysReadable() throws {
    let numbers = co_sequence { (yield: CoYield<Int>) in
      try yield(1)
      throw Broken()
    }
    #expect(try numbers.nextOrThrow() == 1)
    #expect(throws: Broken.self) { try numbers.nextOrThrow() }
    #expect(numbers.error is Broken)
    #expect(numbers.next() == nil)
    #expect(throws: Broken.self) { try numbers.nextOrThrow() }
  }

  @Test func aForLoopStopsAtAnErrorWhichIsStillThere() {
    let numbers = co_sequence { (yield: CoYield<Int>) in
      try yield(1)
      try yield(2)
      throw Broken()
    }
    #expect(Array(numbers) == [1, 2])
    #expect(numbers.error is Broken)
  }

  @Test func yieldOutsideItsBodyThrows() throws {
    let escaped = ModelsLog<CoYield<Int>>()
    let numbers = co_sequence { (yield: CoYield<Int>) in
      escaped.append(yield)
      try yield(1)
    }
    #expect(numbers.next() == 1)
    #expect(throws: CoroutineError.yieldOutsideGenerator) { try escaped.values.first?(2) }
    try CoroutineLoop.run {
      _ = #expect(throws: CoroutineError.yieldOutsideGenerator) { try escaped.values.first?(3) }
    }
    #expect(numbers.next() == nil)
  }

  @Test func anInlineGeneratorWorksInsideACoroutine() throws {
    let size = modelsStackSize(303)
    let (values, consumer, producer) = try CoroutineLoop.run {
      () -> ([Int], ObjectIdentifier, ObjectIdentifier?) in
      let producerThread = Mutex<ObjectIdentifier?>(nil)
      let squares = co_sequence(stackSize: size) { (yield: CoYield<Int>) in
        producerThread.withLock { $0 = modelsThread() }
        for n in 1...4 { try yield(n * n) }
      }
      return (Array(squares), modelsThread(), producerThread.withLock { $0 })
    }
    #expect(values == [1, 4, 9, 16])
    #expect(producer == consumer)
    #expect(stacksInUse(size: size) == 0)
  }

  @Test func generatorsNest() {
    func numbers(upTo limit: Int) -> CoGenerator<Int> {
      co_sequence { yield in for n in 1...limit { try yield(n) } }
    }
    let pairs = co_sequence { (yield: CoYield<String>) in
      for a in numbers(upTo: 2) {
        for b in numbers(upTo: 2) { try yield("\(a)\(b)") }
      }
    }
    #expect(Array(pairs) == ["11", "12", "21", "22"])
  }

  @Test func recursionYieldsFromDeepInside() {
    final class Tree: Sendable {
      let value: Int
      let children: [Tree]
      init(_ value: Int, _ children: [Tree] = []) {
        self.value = value
        self.children = children
      }
    }
    let tree = Tree(1, [Tree(2, [Tree(3)]), Tree(4)])
    let walk = co_sequence { (yield: CoYield<Int>) in
      func visit(_ node: Tree) throws {
        try yield(node.value)
        for child in node.children { try visit(child) }
      }
      try visit(tree)
    }
    let order = Array(walk)  // [1, 2, 3, 4]
    #expect(order == [1, 2, 3, 4])
  }

  // MARK: Inline generators whose body awaits

  @Test func anInlineBodyMayAwaitWhileTheConsumingCoroutineSuspends() throws {
    let size = modelsStackSize(304)
    let log = ModelsLog<String>()
    try CoroutineLoop.run {
      let gate = CoPromise<Int>()
      // A sibling on the same loop settles the gate: it can run only because the consumer
      // suspends instead of blocking the loop's thread.
      co_launch {
        log.append("sibling")
        gate.fulfill(10)
      }
      let numbers = co_sequence(stackSize: size) { (yield: CoYield<Int>) in
        try yield(1)
        let more = try co_await(gate)
        try co_delay(0.001)
        try yield(more)
      }
      for n in numbers { log.append("got \(n)") }
    }
    #expect(log.values == ["got 1", "sibling", "got 10"])
    #expect(stacksInUse(size: size) == 0)
  }

  @Test func anInlineBodyDelaysOnItsConsumersClock() {
    let loop = CoroutineTestLoop()
    let ticks = co_sequence { (yield: CoYield<Int>) in
      for tick in 1...2 {
        try co_delay(60)
        try yield(tick)
      }
    }
    let received = ModelsLog<Int>()
    let consumer = co_launch(on: loop) {
      for tick in ticks { received.append(tick) }
    }
    loop.runUntilIdle()
    #expect(received.values == [])
    loop.advance(by: 59.9)
    #expect(received.values == [])
    loop.advance(by: 0.1)
    #expect(received.values == [1])
    loop.advance(by: 60)
    #expect(received.values == [1, 2])
    #expect(consumer.isSettled)
    #expect(ticks.isFinished)
    #expect(loop.liveCoroutines == 0 && loop.pendingTimers == 0)
  }

  @Test func anInlineBodyMayAwaitUnderPlainCodeWhichThenBlocks() {
    let numbers = co_sequence { (yield: CoYield<Int>) in
      try yield(1)
      let late = CoPromise<Int>()
      DispatchQueue(label: "generator.late").async { late.fulfill(2) }
      try yield(try co_await(late))
      try co_delay(0.001)
      try yield(3)
    }
    #expect(Array(numbers) == [1, 2, 3])
  }

  @Test func anInlineBodyMayHopToAnotherSchedulerButNotYieldThere() throws {
    let queue = DispatchQueue(label: "generator.hop")
    let marker = DispatchSpecificKey<Int>()
    queue.setSpecific(key: marker, value: 29)
    let numbers = co_sequence { (yield: CoYield<Int>) in
      let computed = try co_await(on: queue) { DispatchQueue.getSpecific(key: marker) ?? 0 }
      try yield(computed)
      try co_await(on: queue) { try yield(-1) }
    }
    #expect(numbers.next() == 29)
    #expect(throws: CoroutineError.yieldOutsideGenerator) { try numbers.nextOrThrow() }
    #expect(numbers.isFinished)
  }

  @Test func aCancelledConsumerCancelsTheInlineGeneratorItWaitsFor() throws {
    let size = modelsStackSize(305)
    let log = ModelsLog<String>()
    let numbers = co_sequence(stackSize: size) { (yield: CoYield<Int>) in
      defer { log.append("producer unwound") }
      try yield(1)
      try co_await(CoPromise<Void>())  // never settles
      try yield(2)
    }
    try CoroutineLoop.run {
      let consumer = co_launch { () throws -> Void in
        #expect(try numbers.nextOrThrow() == 1)
        #expect(throws: CancellationError.self) { try numbers.nextOrThrow() }
        log.append("consumer saw the cancellation")
      }
      co_launch { consumer.cancel() }
      try co_await(consumer)
    }
    #expect(log.values == ["producer unwound", "consumer saw the cancellation"])
    #expect(numbers.isFinished)
    #expect(numbers.next() == nil)
    #expect(stacksInUse(size: size) == 0)
  }

  @Test func cancellingFromTheBodyItselfEndsTheSequence() {
    let holder = Mutex<CoGenerator<Int>?>(nil)
    let numbers = co_sequence { (yield: CoYield<Int>) in
      try yield(1)
      holder.withLock { $0 }?.cancel()
      try yield(2)
    }
    holder.withLock { $0 = numbers }
    #expect(Array(numbers) == [1])
    #expect(numbers.isFinished)
    #expect(numbers.error == nil)
    holder.withLock { $0 = nil }
  }

  // MARK: Generators on a scheduler

  @Test func aProducerOnAnotherSchedulerHandsValuesToACoroutine() throws {
    let size = modelsStackSize(306)
    let queue = DispatchQueue(label: "generator.producer")
    let marker = DispatchSpecificKey<Int>()
    queue.setSpecific(key: marker, value: 306)
    let steps = ModelsCounter()
    let (values, onQueue) = try CoroutineLoop.run { () -> ([Int], Bool) in
      let onQueue = Atomic<Bool>(true)
      let numbers = co_sequence(on: queue, stackSize: size) { (yield: CoYield<Int>) in
        for n in 0..<100 {
          if DispatchQueue.getSpecific(key: marker) != 306 {
            onQueue.store(false, ordering: .relaxed)
          }
          steps.increment()
          try yield(n)
        }
      }
      let firstThree = Array(numbers.prefix(3))
      #expect(steps.value == 3)
      numbers.cancel()
      try co_await(numbers.engine.finished)
      #expect(numbers.isFinished)
      return (firstThree, onQueue.load(ordering: .relaxed))
    }
    #expect(values == [0, 1, 2])
    #expect(onQueue)
    #expect(stacksInUse(size: size) == 0)
  }

  /// The message-queue walkthrough: a producer on a background queue, a consumer on the loop
  /// taking the first items; dropping the generator stops the producer.
  @Test func theProducerStopsAsSoonAsTheConsumerStops() throws {
    let size = modelsStackSize(307)
    let log = ModelsLog<String>()
    let finished = try CoroutineLoop.run { () -> CoFuture<Void> in
      let messages = co_sequence(on: DispatchQueue(label: "generator.messages"), stackSize: size) {
        (yield: CoYield<String>) in
        defer { log.append("producer stopped") }
        var id = 0
        while true {
          id += 1
          try yield("message \(id)")
        }
      }
      for message in messages.prefix(3) { log.append(message) }
      return messages.engine.finished
    }
    // The loop only ran the consumer; the producer unwinds on the queue once dropped.
    try CoroutineLoop.run { try co_await(finished) }
    #expect(log.values == ["message 1", "message 2", "message 3", "producer stopped"])
    #expect(stacksInUse(size: size) == 0)
  }

  @Test func aScheduledGeneratorServesPlainCodeByBlocking() throws {
    let numbers = co_sequence(on: DispatchQueue(label: "generator.plain")) {
      (yield: CoYield<Int>) in
      for n in 1...3 { try yield(n) }
    }
    #expect(Array(numbers) == [1, 2, 3])
    #expect(numbers.next() == nil)
    try CoroutineLoop.run { try co_await(numbers.engine.finished) }
  }

  @Test func aScheduledBodyErrorReachesTheConsumer() throws {
    let queue = DispatchQueue(label: "generator.failing")
    try CoroutineLoop.run {
      let numbers = co_sequence(on: queue) { (yield: CoYield<Int>) in
        try yield(1)
        throw Broken()
      }
      #expect(try numbers.nextOrThrow() == 1)
      #expect(throws: Broken.self) { try numbers.nextOrThrow() }
      #expect(numbers.error is Broken)
      try co_await(numbers.engine.finished)
    }
  }

  @Test func aProducerOnTheConsumersLoopTakesTurns() throws {
    let log = ModelsLog<String>()
    try CoroutineLoop.run {
      let numbers = co_sequence(on: CoroutineLoop.current!) { (yield: CoYield<Int>) in
        for n in 1...2 {
          log.append("yield \(n)")
          try yield(n)
        }
      }
      for n in numbers { log.append("got \(n)") }
    }
    #expect(log.values == ["yield 1", "got 1", "yield 2", "got 2"])
  }

  @Test func severalConsumersShareAScheduledGenerator() throws {
    let queue = DispatchQueue(label: "generator.shared")
    let received = ModelsLog<Int>()
    try CoroutineLoop.run {
      let numbers = co_sequence(on: queue) { (yield: CoYield<Int>) in
        for n in 0..<300 { try yield(n) }
      }
      let consumers = (0..<3).map { _ in
        co_launch(on: DispatchQueue(label: "generator.consumers", attributes: .concurrent)) {
          for n in numbers { received.append(n) }
        }
      }
      for consumer in consumers { try co_await(consumer) }
      try co_await(numbers.engine.finished)
    }
    #expect(received.values.sorted() == Array(0..<300))
  }

  @Test func droppingAnUnstartedScheduledGeneratorNeverLaunchesIt() throws {
    let ran = ModelsCounter()
    var finished: CoFuture<Void>?
    do {
      let numbers = co_sequence(on: DispatchQueue(label: "generator.unstarted")) {
        (yield: CoYield<Int>) in
        ran.increment()
        try yield(1)
      }
      finished = numbers.engine.finished
    }
    #expect(finished?.isSettled == true)
    #expect(ran.value == 0)
  }
}
