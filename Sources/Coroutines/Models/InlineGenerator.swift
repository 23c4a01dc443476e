import Synchronization

/// A generator whose producer runs on the consumer's thread: `next()` switches to the
/// producer's stack with `runInline()`, and `yield` switches back with `handBack()`.
///
/// One thread drives the producer at a time (`driving` checks it): `phase` and `failure` are
/// touched only by that thread, and by the producer while that thread runs it.
final class InlineGenerator<T>: GeneratorEngine, @unchecked Sendable {
  // @unchecked: `phase`/`failure` belong to the single driving thread (see above); the
  // coroutine reference is behind a mutex for `cancel()` from other threads; the rest is atomic.
  private enum Phase {
    /// No `next()` yet: no coroutine, no stack.
    case notStarted
    /// The producer is running, or suspended in an await, or away in `co_await(on:)`.
    case running
    /// The producer handed back `value` and waits inside `yield`.
    case yielded(T)
    /// The consumer took the value; the producer still waits inside `yield`.
    case waitingInYield
    /// The body returned or threw and the coroutine is off its stack.
    case finished
  }

  private let name: String?
  private let stackSize: Int
  private var body: ((CoYield<T>) throws -> Void)?
  private let driver = InlineDriver()
  private let producer = Mutex<Coroutine?>(nil)
  private var phase = Phase.notStarted
  private var recordedFailure: (any Error)?
  private let driving = Atomic<Bool>(false)
  private let cancelRequested = Atomic<Bool>(false)
  private let done = Atomic<Bool>(false)
  private let completion = CoPromise<Void>()

  init(name: String?, stackSize: Int, body: @escaping (CoYield<T>) throws -> Void) {
    self.name = name
    self.stackSize = stackSize
    self.body = body
  }

  var failure: (any Error)? {
    // Written before `done` is set (releasing), so reading after seeing `done` is safe.
    done.load(ordering: .acquiring) ? recordedFailure : nil
  }

  var isFinished: Bool { done.load(ordering: .acquiring) }

  var finished: CoFuture<Void> { completion }

  // MARK: Consumer side

  func next() throws -> T? {
    beginDriving(in: "CoGenerator.next()")
    defer { endDriving() }
    if cancelRequested.load(ordering: .acquiring) {
      unwindAfterCancel()
      return nil
    }
    switch phase {
    case .finished:
      if let recordedFailure { throw recordedFailure }
      return nil
    case .notStarted:
      start()
    case .waitingInYield:
      runProducer()
    case .running, .yielded:
      preconditionFailure("CoGenerator.next(): the producer was left \(phase) between calls")
    }
    return try waitForValue()
  }

  func cancel() {
    cancelRequested.store(true, ordering: .releasing)
    guard !driving.exchange(true, ordering: .acquiringAndReleasing) else {
      // Someone drives right now (another thread in `next()`, or the body cancelling its own
      // generator): end any await of the producer; the driver finishes the unwinding.
      producer.withLock { $0 }?.cancel()
      return
    }
    driver.begin(target: defaultScheduler(), clock: Coroutine.current?.scheduler)
    defer { endDriving() }
    unwindAfterCancel()
  }

  private func beginDriving(in call: StaticString) {
    precondition(
      !driving.exchange(true, ordering: .acquiringAndReleasing),
      "\(call): this inline generator is already being driven: by another thread, or by its own "
        + "body; an inline generator's calls must not overlap")
    driver.begin(target: defaultScheduler(), clock: Coroutine.current?.scheduler)
  }

  private func endDriving() {
    driver.end()
    driving.store(false, ordering: .releasing)
  }

  /// Drives the producer until it yields or finishes.
  private func waitForValue() throws -> T? {
    while true {
      switch phase {
      case .yielded(let value):
        phase = .waitingInYield
        if cancelRequested.load(ordering: .acquiring) {
          unwindAfterCancel()
          return nil
        }
        return value
      case .finished:
        if let recordedFailure { throw recordedFailure }
        return nil
      case .running:
        // The body suspended: wait for whatever wakes it, then run it here.
        if let consumer = Coroutine.current {
          guard driver.waitForJobs(in: consumer) else {
            unwindAfterCancel()
            throw CancellationError()
          }
        } else {
          driver.blockForJobs()
        }
        driver.runJobs()
      case .notStarted, .waitingInYield:
        preconditionFailure("CoGenerator.next(): the producer is \(phase) while being driven")
      }
    }
  }

  /// Cancels the producer and drives it until it has left its stack.
  private func unwindAfterCancel() {
    cancelRequested.store(true, ordering: .releasing)
    switch phase {
    case .notStarted:
      body = nil
      finish(with: nil)
      return
    case .finished:
      return
    case .running, .yielded, .waitingInYield:
      producer.withLock { $0 }?.cancel()
    }
    while true {
      switch phase {
      case .finished:
        return
      case .yielded, .waitingInYield:
        // Resumed cancelled, `yield` throws; a body that swallows that and yields again is
        // resumed again until it gives up.
        runProducer()
      case .running:
        // Once cancelled, the producer cannot wait on anything but a hop back from
        // `co_await(on:)`, so this returns as soon as that work is done.
        driver.blockForJobs()
        driver.runJobs()
      case .notStarted:
        preconditionFailure("CoGenerator.cancel(): the producer is \(phase) while unwinding")
      }
    }
  }

  private func start() {
    guard let body else { preconditionFailure("CoGenerator: started twice") }
    self.body = nil
    let coroutine = Coroutine(scheduler: driver, name: name, stackSize: stackSize) {
      [self] in
      let outcome = Result { try body(CoYield(engine: self)) }
      return { [self] in finish(with: outcome.failure) }
    }
    producer.withLock { $0 = coroutine }
    runProducer()
  }

  private func runProducer() {
    guard let coroutine = producer.withLock({ $0 }) else { return }
    phase = .running
    do {
      _ = try coroutine.runInline()
    } catch {
      // No stack could be mapped: the body never ran. Retire the coroutine through its
      // scheduler, which ends it without running it because it is cancelled.
      coroutine.cancel()
      coroutine.launch { _ in }
      driver.runJobs()
      finish(with: error)
    }
  }

  /// The body ended (or never ran): record why, and release the coroutine.
  private func finish(with error: (any Error)?) {
    guard !isFinishedPhase(phase) else { return }
    if let error, isWorthKeeping(error, cancelled: cancelRequested.load(ordering: .acquiring)) {
      recordedFailure = error
    }
    phase = .finished
    producer.withLock { $0 = nil }
    done.store(true, ordering: .releasing)
    completion.fulfill(())
  }

  private func isFinishedPhase(_ phase: Phase) -> Bool {
    if case .finished = phase { return true }
    return false
  }

  // MARK: Producer side

  func yield(_ value: T) throws {
    guard let current = Coroutine.current, current === producer.withLock({ $0 }),
      current.scheduler === driver
    else { throw CoroutineError.yieldOutsideGenerator }
    if current.isCancelled { throw CancellationError() }
    phase = .yielded(value)
    current.handBack()
    if current.isCancelled { throw CancellationError() }
  }
}

extension Result {
  fileprivate var failure: Failure? {
    if case .failure(let error) = self { return error }
    return nil
  }
}
