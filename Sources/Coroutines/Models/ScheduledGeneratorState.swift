import Dispatch

/// A `next()` call of a scheduled generator waiting for its value. `outcome` is written under
/// the generator's lock before the consumer is woken.
final class GeneratorConsumer<T>: @unchecked Sendable {
  // @unchecked: `outcome` is written under the generator's lock, read after the wake-up.
  enum Outcome {
    case value(T)
    case end
  }

  var outcome: Outcome?
  private let resumer: CoroutineResumer<Void>?
  private let semaphore: DispatchSemaphore?

  /// A consumer that is a suspended coroutine.
  init(resumer: CoroutineResumer<Void>) {
    self.resumer = resumer
    self.semaphore = nil
  }

  /// A consumer that is a blocked thread.
  init(semaphore: DispatchSemaphore) {
    self.resumer = nil
    self.semaphore = semaphore
  }

  func wake() {
    resumer?.resume(.success(()))
    semaphore?.signal()
  }

  /// Blocks a thread consumer until ``wake()``.
  func blockUntilWoken() {
    semaphore?.wait()
  }
}

/// The rules of a generator whose producer runs on a scheduler: consumers queue demands, the
/// producer runs while there is demand and waits in `yield` when there is none.
struct ScheduledGeneratorState<T>: ~Copyable {
  enum Producer {
    /// Not launched: no `next()` yet.
    case idle
    /// Launched and producing (or about to start).
    case running
    /// Waiting inside `yield` for the next demand.
    case parked(CoroutineResumer<Void>)
    /// Finished and off its stack, or cancelled before it was launched.
    case done
  }

  private(set) var producer = Producer.idle
  private var consumers = Ring<GeneratorConsumer<T>>()
  /// A value yielded when no consumer was waiting (only possible in a race with `cancel()`).
  private var pending: T?
  private(set) var isCancelled = false
  private(set) var failure: (any Error)?
  /// The producer's coroutine, known once its body starts; `yield` checks it is called there.
  var producerCoroutine: Coroutine?

  var isFinished: Bool {
    if case .done = producer { return true }
    return false
  }

  enum DemandAction {
    /// Launch the producer.
    case launch
    /// Wake the producer waiting in `yield`.
    case resume(CoroutineResumer<Void>)
    /// The producer is already working for earlier demand: just wait.
    case wait
    /// The consumer's outcome is already set: wake it at once.
    case answered
  }

  mutating func demand(_ consumer: GeneratorConsumer<T>) -> DemandAction {
    if let value = pending {
      pending = nil
      consumer.outcome = .value(value)
      return .answered
    }
    if isCancelled || isFinished {
      consumer.outcome = .end
      return .answered
    }
    consumers.append(consumer)
    switch producer {
    case .idle:
      producer = .running
      return .launch
    case .parked(let resumer):
      producer = .running
      return .resume(resumer)
    case .running, .done:
      return .wait
    }
  }

  enum YieldAction {
    /// Wake this consumer; then wait for demand if `thenWait`, else produce on.
    case deliver(GeneratorConsumer<T>, thenWait: Bool)
    /// The value was kept for the next demand; wait for it.
    case kept
    /// The generator was cancelled: `yield` throws.
    case cancelled
  }

  mutating func yield(_ value: T) -> YieldAction {
    if isCancelled { return .cancelled }
    guard let consumer = consumers.popFirst() else {
      pending = value
      return .kept
    }
    consumer.outcome = .value(value)
    return .deliver(consumer, thenWait: consumers.isEmpty)
  }

  /// The producer wants to wait in `yield`; returns false when it must not (demand is already
  /// queued, or the generator was cancelled).
  mutating func park(_ resumer: CoroutineResumer<Void>) -> Bool {
    guard !isCancelled, consumers.isEmpty else { return false }
    producer = .parked(resumer)
    return true
  }

  /// The producer finished; returns the consumers to wake, told that the sequence ended.
  mutating func producerFinished(with error: (any Error)?) -> [GeneratorConsumer<T>] {
    producer = .done
    producerCoroutine = nil
    if let error, isWorthKeeping(error, cancelled: isCancelled) { failure = error }
    return endAll()
  }

  enum CancelAction {
    case nothing
    /// Cancel the producer's coroutine (nil if its body has not started yet: it then sees
    /// the cancellation first thing), then let go of the resumer it waited on for demand, if
    /// any: cancelled first, its wait ends as cancelled, not as abandoned (which would be
    /// reported as a bug, see `Coroutine.endWaitUnanswered`).
    case stop(Coroutine?, parked: CoroutineResumer<Void>?)
    /// It was never launched: the generator is finished now.
    case neverStarted
  }

  mutating func cancel() -> (CancelAction, [GeneratorConsumer<T>]) {
    guard !isCancelled else { return (.nothing, []) }
    isCancelled = true
    pending = nil
    let woken = endAll()
    switch producer {
    case .idle:
      producer = .done
      return (.neverStarted, woken)
    case .parked(let resumer):
      producer = .running
      return (.stop(producerCoroutine, parked: resumer), woken)
    case .running:
      return (.stop(producerCoroutine, parked: nil), woken)
    case .done:
      return (.nothing, woken)
    }
  }

  /// A consumer stopped waiting (its coroutine was cancelled): its outcome if one arrived
  /// first, else nil, and it no longer waits.
  mutating func withdraw(_ consumer: GeneratorConsumer<T>) -> GeneratorConsumer<T>.Outcome? {
    if let outcome = consumer.outcome { return outcome }
    consumers.removeFirst(where: { $0 === consumer })
    return nil
  }

  private mutating func endAll() -> [GeneratorConsumer<T>] {
    let ended = consumers.removeAll()
    for consumer in ended { consumer.outcome = .end }
    return ended
  }
}
