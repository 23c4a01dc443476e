import CUContext
import Glibc
import Synchronization

/// A generator whose producer runs on the consumer's thread: `next()` switches to the
/// producer's stack with `runInline()`, and `yield` switches back with `handBack()`.
///
/// One thread drives the producer at a time (the driver's `driving` flag checks it): `phase`,
/// `running` and `recordedFailure` are touched only by that thread, and by the producer while
/// that thread runs it.
///
/// The driving path (`next()`, `yield`) is `@inlinable`, so a caller in another module runs it
/// specialised for its element type: unspecialised, every call looked up the metadata of
/// `Phase` and `Optional<T>` in the runtime's tables (about a third of a `next()`).
@usableFromInline
final class InlineGenerator<T>: GeneratorEngine, @unchecked Sendable {
  // @unchecked: `phase`/`running`/`recordedFailure` belong to the single driving thread (see
  // above); the coroutine reference for `cancel()` from other threads is behind a mutex; the
  // rest is atomic.
  @usableFromInline
  enum Phase {
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
  // The fields below are `@exclusivity(unchecked)`: only the driving thread (or the producer
  // while that thread runs it) touches them, one access at a time and never across a switch,
  // and the dynamic checks cost a look-up of the coroutine's access set per access.
  @exclusivity(unchecked) private var body: ((CoYield<T>) throws -> Void)?
  @usableFromInline let driver = InlineDriver()
  /// The producer, for `cancel()` from any thread.
  private let producer = Mutex<Coroutine?>(nil)
  /// The producer, for the driving thread: the same coroutine as `producer`, which keeps it
  /// alive, read without the mutex and without a retain on every `next()`.
  @usableFromInline @exclusivity(unchecked) var running: Unmanaged<Coroutine>?
  @usableFromInline @exclusivity(unchecked) var phase = Phase.notStarted
  @usableFromInline @exclusivity(unchecked) var recordedFailure: (any Error)?
  @usableFromInline let cancelRequested = Atomic<Bool>(false)
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

  @inlinable @inline(__always)
  func next() throws -> T? {
    guard let hold = driver.beginDriving() else { return waitForCancellingThread() }
    defer { if driver.endDriving(hold) { cancelLeftBehind() } }
    if cancelRequested.load(ordering: .acquiring) {
      unwindAfterCancel()
      return nil
    }
    switch phase {
    case .waitingInYield:
      runProducer()
    case .notStarted:
      start()
    case .finished:
      if let recordedFailure { throw recordedFailure }
      return nil
    case .running, .yielded:
      coStop("CoGenerator.next(): the producer was left \(phase) between calls")
    }
    return try waitForValue()
  }

  func cancel() {
    cancelRequested.store(true, ordering: .sequentiallyConsistent)
    guard let hold = driver.beginDriving() else {
      // Someone drives right now (another thread in `next()`, or the body cancelling its own
      // generator): end any await of the producer; the driver finishes the unwinding.
      producer.withLock { $0 }?.cancel()
      return
    }
    defer { _ = driver.endDriving(hold) }
    unwindAfterCancel()
  }

  /// Someone else drives the producer. It may be `cancel()` on another thread, unwinding it,
  /// which is no overlap: waits until that is done (the sequence has ended). Anything else is
  /// a second call overlapping this one, which stops the program.
  @usableFromInline
  func waitForCancellingThread() -> T? {
    while true {
      guard cancelRequested.load(ordering: .sequentiallyConsistent) else {
        coStop(
          "CoGenerator.next(): this inline generator is already being driven: by another "
            + "thread, or by its own body; an inline generator's calls must not overlap")
      }
      if let hold = driver.beginDriving() {
        defer { _ = driver.endDriving(hold) }
        unwindAfterCancel()
        return nil
      }
      // The canceller's unwinding only runs the body's `defer` blocks, so this wait is short.
      sched_yield()
    }
  }

  /// A `next()` that held the bias learnt on leaving that another thread closed it, perhaps a
  /// `cancel()` that saw this call inside and left the unwinding to it.
  @usableFromInline
  func cancelLeftBehind() {
    if cancelRequested.load(ordering: .sequentiallyConsistent) { cancel() }
  }

  /// Drives the producer until it yields or finishes.
  @inlinable @inline(__always)
  func waitForValue() throws -> T? {
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
        try waitForSuspendedProducer()
      case .notStarted, .waitingInYield:
        coStop("CoGenerator.next(): the producer is \(phase) while being driven")
      }
    }
  }

  /// The body suspended instead of yielding: waits for whatever wakes it, then runs it here.
  @usableFromInline
  func waitForSuspendedProducer() throws {
    if let consumer = Coroutine.current {
      guard driver.waitForJobs(in: consumer) else {
        unwindAfterCancel()
        throw CancellationError()
      }
    } else {
      driver.blockForJobs()
    }
    driver.runJobs()
  }

  /// Cancels the producer and drives it until it has left its stack.
  @usableFromInline
  func unwindAfterCancel() {
    cancelRequested.store(true, ordering: .releasing)
    switch phase {
    case .notStarted:
      body = nil
      finish(with: nil)
      return
    case .finished:
      return
    case .running, .yielded, .waitingInYield:
      running?.takeUnretainedValue().cancel()
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
        coStop("CoGenerator.cancel(): the producer is \(phase) while unwinding")
      }
    }
  }

  @usableFromInline
  func start() {
    guard let body else { coStop("CoGenerator: started twice") }
    self.body = nil
    let coroutine = Coroutine(scheduler: driver, name: name, stackSize: stackSize) {
      [self] in
      let outcome = Result { try body(CoYield(engine: self)) }
      return { [self] in finish(with: outcome.failure) }
    }
    producer.withLock { $0 = coroutine }
    running = Unmanaged.passUnretained(coroutine)
    driver.producerAddress = Unmanaged.passUnretained(coroutine).toOpaque()
    runProducer()
  }

  /// Runs the producer until it yields, suspends or finishes. Once it has started, the switch
  /// is made from here, inlined into the caller of `next()`, so that no frame spans it (see
  /// "Switching" in Coroutine+Switch.swift).
  @inlinable @inline(__always)
  func runProducer() {
    guard let coroutine = running else { return }
    phase = .running
    guard let fiber = coroutine._withUnsafeGuaranteedRef({ $0.fiberForInlineRun() }) else {
      if let error = driver.runInline(coroutine) { producerFailedToStart(coroutine, error) }
      return
    }
    cu_fiber_resume(fiber, coroutine.toOpaque())
    coroutine._withUnsafeGuaranteedRef { $0.switchedBackFromInlineRun() }
  }

  /// No stack could be mapped: the body never ran. Retires the coroutine through its
  /// scheduler, which ends it without running it because it is cancelled.
  @usableFromInline
  func producerFailedToStart(_ producer: Unmanaged<Coroutine>, _ error: CoroutineError) {
    let coroutine = producer.takeUnretainedValue()
    coroutine.cancel()
    coroutine.launch { _ in }
    driver.runJobs()
    finish(with: error)
  }

  /// The body ended (or never ran): record why, and release the coroutine.
  private func finish(with error: (any Error)?) {
    guard !isFinishedPhase(phase) else { return }
    if let error, isWorthKeeping(error, cancelled: cancelRequested.load(ordering: .acquiring)) {
      recordedFailure = error
    }
    phase = .finished
    driver.producerAddress = nil
    running = nil
    producer.withLock { $0 = nil }
    done.store(true, ordering: .releasing)
    completion.fulfill(())
  }

  private func isFinishedPhase(_ phase: Phase) -> Bool {
    if case .finished = phase { return true }
    return false
  }

  // MARK: Producer side

  /// Hands `value` to the driving `next()` and waits there, switching from the body's own
  /// frame (see `runProducer()`).
  @inlinable @inline(__always)
  func yield(_ value: T) throws {
    let (fiber, producer) = try driver.fiberToYield()
    phase = .yielded(value)
    cu_fiber_suspend(fiber)
    if driver.isCancelled(producer) { throw CancellationError() }
  }
}

extension Result {
  fileprivate var failure: Failure? {
    if case .failure(let error) = self { return error }
    return nil
  }
}
