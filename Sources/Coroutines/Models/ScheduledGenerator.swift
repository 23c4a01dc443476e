import Dispatch

/// A generator whose producer is a coroutine on a scheduler. `next()` queues a demand and
/// waits; the producer runs while there is demand and waits inside `yield` when there is none,
/// so it runs only as far as the values asked for.
final class ScheduledGenerator<T>: GeneratorEngine, @unchecked Sendable {
  // @unchecked: `state` is only touched under `lock`; the rest is immutable.
  private let scheduler: any CoroutineScheduler
  private let name: String?
  private let stackSize: Int?
  private let body: (CoYield<T>) throws -> Void
  private let lock = ShortLock()
  private var state = ScheduledGeneratorState<T>()
  private let completion = CoPromise<Void>()

  init(
    on scheduler: any CoroutineScheduler, name: String?, stackSize: Int?,
    body: @escaping (CoYield<T>) throws -> Void
  ) {
    self.scheduler = scheduler
    self.name = name
    self.stackSize = stackSize
    self.body = body
  }

  var failure: (any Error)? { lock.withLock { state.failure } }
  var isFinished: Bool { lock.withLock { state.isFinished } }
  var finished: CoFuture<Void> { completion }

  // MARK: Consumer side

  func next() throws -> T? {
    guard let coroutine = Coroutine.current else { return try nextBlocking() }
    coPrecondition(
      coroutine !== lock.withLock({ state.producerCoroutine }),
      "CoGenerator.next(): called from the generator's own body, which would wait for itself")
    if coroutine.isCancelled {
      cancel()
      throw CancellationError()
    }
    var consumer: GeneratorConsumer<T>?
    do {
      let _: Void = try coroutine.suspend(for: .generator) { resumer in
        let waiting = GeneratorConsumer<T>(resumer: resumer)
        consumer = waiting
        perform(lock.withLock { state.demand(waiting) }, for: waiting)
      }
    } catch {
      let arrived = consumer.flatMap { waiting in lock.withLock { state.withdraw(waiting) } }
      guard arrived != nil else {
        cancel()
        throw CancellationError()
      }
    }
    return try value(of: consumer?.outcome)
  }

  /// `next()` from plain code: blocks the thread until the producer yields.
  private func nextBlocking() throws -> T? {
    if let loop = scheduler as? CoroutineLoop, loop === CoroutineLoop.current {
      coStop(
        "CoGenerator.next(): called outside any coroutine on the thread that runs the "
          + "generator's loop; waiting here would stop the producer from ever running. Call it "
          + "from a coroutine, or give co_sequence(on:) another scheduler")
    }
    let waiting = GeneratorConsumer<T>(semaphore: DispatchSemaphore(value: 0))
    perform(lock.withLock { state.demand(waiting) }, for: waiting)
    // Every demand is answered by exactly one wake-up, even one answered at once.
    waiting.blockUntilWoken()
    return try value(of: waiting.outcome)
  }

  private func perform(
    _ action: ScheduledGeneratorState<T>.DemandAction, for consumer: GeneratorConsumer<T>
  ) {
    switch action {
    case .launch: launch()
    case .resume(let producer): producer.resume(.success(()))
    case .wait: break
    case .answered: consumer.wake()
    }
  }

  private func value(of outcome: GeneratorConsumer<T>.Outcome?) throws -> T? {
    switch outcome {
    case .value(let value): return value
    case .end, nil:
      if let failure { throw failure }
      return nil
    }
  }

  private func launch() {
    // Detached: the producer lives as long as the generator, not as long as its first consumer.
    let task = co_launch(on: scheduler, name: name, stackSize: stackSize, detached: true) {
      [self] in
      let cancelled = lock.withLock { () -> Bool in
        state.producerCoroutine = Coroutine.current
        return state.isCancelled
      }
      if cancelled { throw CancellationError() }
      try body(CoYield(engine: self))
    }
    task.whenComplete { [self] result in
      var error: (any Error)?
      if case .failure(let failure) = result { error = failure }
      let woken = lock.withLock { state.producerFinished(with: error) }
      for consumer in woken { consumer.wake() }
      completion.fulfill(())
    }
  }

  func cancel() {
    let (action, woken) = lock.withLock { state.cancel() }
    for consumer in woken { consumer.wake() }
    switch action {
    case .nothing: break
    case .stop(let coroutine, let parked): withExtendedLifetime(parked) { coroutine?.cancel() }
    case .neverStarted: completion.fulfill(())
    }
  }

  // MARK: Producer side

  func yield(_ value: T) throws {
    guard let current = Coroutine.current, current === lock.withLock({ state.producerCoroutine })
    else { throw CoroutineError.yieldOutsideGenerator }
    switch lock.withLock({ state.yield(value) }) {
    case .cancelled:
      throw CancellationError()
    case .deliver(let consumer, let thenWait):
      consumer.wake()
      if !thenWait { return }
    case .kept:
      break
    }
    let _: Void = try current.suspend(for: .generator) { resumer in
      if !lock.withLock({ state.park(resumer) }) { resumer.resume(.success(())) }
    }
    if lock.withLock({ state.isCancelled }) { throw CancellationError() }
  }
}
