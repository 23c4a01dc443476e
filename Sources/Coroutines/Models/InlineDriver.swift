import Dispatch
import Synchronization

/// The scheduler of an inline generator's producer: it runs the producer's jobs on the thread
/// of the consumer that is waiting for a value.
///
/// An inline producer normally runs only inside its consumer's `next()`, switched to directly
/// with `runInline()`. When the body suspends instead of yielding (it awaits a future, a delay,
/// a channel), whatever wakes it schedules its resumption here; the consumer, waiting inside
/// `next()`, takes the job and runs it on its own thread, so the producer never needs a loop
/// of its own.
///
/// - Timers go to the consuming coroutine's scheduler's clock (virtual time on a test loop),
///   or to a dispatch timer for plain code, and then come back here as jobs.
/// - Jobs that arrive while no consumer is driving (coroutines launched from the body without
///   `on:`, which belong here) go to where the consumer would launch them.
///
/// It also owns what an inline generator's hot path needs that does not depend on the element
/// type (the driving flag, the switch in and out), so that the generic, inlinable part stays
/// small.
@usableFromInline
final class InlineDriver: CoroutineScheduler, @unchecked Sendable {
  // @unchecked: the job fields are behind `lock`; `driving` and `producerBits` are atomic.
  @usableFromInline typealias Job = @Sendable () -> Void

  private let lock = ConditionLock()
  private var jobs: [Job] = []
  private var waiter: CoroutineResumer<Void>?
  private var blocked = false
  private var active = false
  private var target: any CoroutineScheduler = CoroutineLoop.main
  private var clock: (any CoroutineScheduler)?

  /// Keeps time for producers consumed by plain code. A queue of its own (not a global one)
  /// gets a thread even when every global worker is blocked, as consumers in plain code are.
  private static let plainClock = DispatchQueue(label: "coroutines.generator.clock")

  /// Set while a thread drives the producer (a consumer's `next()`, or `cancel()`): the cheap
  /// check that an inline generator's calls never overlap, which is its contract.
  private let driving = Atomic<Bool>(false)
  /// The address of the producer coroutine while it exists, for `yield`'s check that it runs
  /// in its own body (atomic: a misused `yield` may call from any thread).
  private let producerBits = Atomic<UInt>(0)

  var producerAddress: UnsafeMutableRawPointer? {
    get { UnsafeMutableRawPointer(bitPattern: producerBits.load(ordering: .relaxed)) }
    set { producerBits.store(UInt(bitPattern: newValue), ordering: .relaxed) }
  }

  // MARK: The generator's hot path (not generic, so not inlined)

  /// Claims the generator for the calling thread and starts queueing the producer's jobs;
  /// stops the program, naming `call`, if someone already drives it.
  @usableFromInline
  func beginDriving(in call: StaticString) {
    precondition(
      tryBeginDriving(),
      "\(call): this inline generator is already being driven: by another thread, or by its own "
        + "body; an inline generator's calls must not overlap")
  }

  /// Claims the generator for the calling thread unless someone drives it already.
  @usableFromInline
  func tryBeginDriving() -> Bool {
    guard !driving.exchange(true, ordering: .acquiringAndReleasing) else { return false }
    begin(target: defaultScheduler(), clock: Coroutine.current?.scheduler)
    return true
  }

  /// Ends `beginDriving(in:)` or a successful `tryBeginDriving()`.
  @usableFromInline
  func endDriving() {
    end()
    driving.store(false, ordering: .releasing)
  }

  /// Runs the producer inline until it yields, suspends or finishes; the error if no stack
  /// could be mapped for it.
  @usableFromInline
  func runInline(_ producer: Coroutine) -> CoroutineError? {
    do {
      _ = try producer.runInline()
      return nil
    } catch {
      return error
    }
  }

  /// The calling coroutine if it is the producer running in its own body (not a coroutine it
  /// launched, nor away in `co_await(on:)`); nil otherwise.
  @usableFromInline
  func currentProducer() -> Coroutine? {
    guard let current = Coroutine.current,
      UInt(bitPattern: Unmanaged.passUnretained(current).toOpaque())
        == producerBits.load(ordering: .relaxed),
      current.scheduler === self
    else { return nil }
    return current
  }

  /// Switches from the producer back to the driving `next()`.
  @usableFromInline
  func handBack(_ producer: Coroutine) {
    producer.handBack()
  }

  @usableFromInline
  func schedule(_ job: @escaping Job) {
    lock.lock()
    guard active else {
      let target = self.target
      lock.unlock()
      target.schedule(job)
      return
    }
    jobs.append(job)
    let waiter = self.waiter
    self.waiter = nil
    if blocked { lock.signal() }
    lock.unlock()
    waiter?.resume(.success(()))
  }

  @usableFromInline
  func schedule(after seconds: Double, _ job: @escaping Job) -> any CoroutineTimer {
    let clock: any CoroutineScheduler = lock.withLock { self.clock } ?? Self.plainClock
    return clock.schedule(after: seconds) { [self] in schedule(job) }
  }

  /// A consumer starts driving: jobs queue for it. `target` receives jobs when nobody drives;
  /// `clock` (the consuming coroutine's scheduler, if any) keeps time for the producer.
  func begin(target: any CoroutineScheduler, clock: (any CoroutineScheduler)?) {
    lock.withLock {
      active = true
      self.target = target
      self.clock = clock
    }
  }

  /// The consumer stops driving; jobs left (none of them the producer's) go to `target`.
  func end() {
    let (left, target) = lock.withLock { () -> ([Job], any CoroutineScheduler) in
      active = false
      let left = jobs
      jobs = []
      return (left, self.target)
    }
    for job in left { target.schedule(job) }
  }

  /// Suspends the consuming coroutine until a job is queued; false if it was cancelled (before
  /// or while waiting).
  @usableFromInline
  func waitForJobs(in consumer: Coroutine) -> Bool {
    do {
      let _: Void = try consumer.suspend { resumer in
        let ready = lock.withLock { () -> Bool in
          if jobs.isEmpty { waiter = resumer }
          return !jobs.isEmpty
        }
        if ready { resumer.resume(.success(())) }
      }
      return true
    } catch {
      let stale = lock.withLock { () -> CoroutineResumer<Void>? in
        defer { waiter = nil }
        return waiter
      }
      _ = stale  // its wait already ended with the cancellation; dropping it does nothing
      return false
    }
  }

  /// Blocks the calling thread until a job is queued.
  @usableFromInline
  func blockForJobs() {
    lock.withLock {
      while jobs.isEmpty {
        blocked = true
        lock.wait(until: nil)
        blocked = false
      }
    }
  }

  /// Runs every queued job, in order, on the calling thread.
  @usableFromInline
  func runJobs() {
    let batch = lock.withLock { () -> [Job] in
      defer { jobs = [] }
      return jobs
    }
    for job in batch { job() }
  }
}
