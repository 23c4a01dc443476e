import Dispatch

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
final class InlineDriver: CoroutineScheduler, @unchecked Sendable {
  // @unchecked: every field is behind `lock`.
  typealias Job = @Sendable () -> Void

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
  func runJobs() {
    let batch = lock.withLock { () -> [Job] in
      defer { jobs = [] }
      return jobs
    }
    for job in batch { job() }
  }
}
