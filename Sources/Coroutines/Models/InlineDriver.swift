import CLinux
import CUContext
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
  private var target: any CoroutineScheduler = CoroutineLoop.main
  private var clock: (any CoroutineScheduler)?
  /// What `target` and `clock` were worked out for: the consumer's identity (its coroutine and
  /// how often it has changed scheduler, or the loop of a plain thread). Only the driving
  /// thread reads or writes these; `keyOwner` keeps the object alive so its address cannot be
  /// reused by another consumer while the key remembers it.
  @exclusivity(unchecked) private var key: (UnsafeMutableRawPointer?, UInt32) = (nil, 0)
  @exclusivity(unchecked) private var keyOwner: AnyObject?

  /// Keeps time for producers consumed by plain code. A queue of its own (not a global one)
  /// gets a thread even when every global worker is blocked, as consumers in plain code are.
  private static let plainClock = DispatchQueue(label: "coroutines.generator.clock")

  /// Set while a thread drives the producer (a consumer's `next()`, or `cancel()`) without the
  /// bias: the cheap check that an inline generator's calls never overlap, which is its
  /// contract. While it or the bias's session is set, jobs queue for the driving thread;
  /// while both are clear, they go to `target`.
  private let driving = Atomic<Bool>(false)
  /// The same claim for the thread that drove first (nearly always the only one), taken and
  /// released with plain stores: two locked instructions fewer per `next()`, about a quarter of
  /// it. Any other thread that drives, queues a job or cancels closes the bias first (one
  /// process-wide barrier, once); from then on every driver uses `driving`. See `cu_bias`.
  private let bias: UnsafeMutablePointer<cu_bias> = {
    let bias = UnsafeMutablePointer<cu_bias>.allocate(capacity: 1)
    bias.initialize(to: cu_bias(owner: 0, session: 0))
    return bias
  }()
  /// True while `jobs` may hold something: set under `lock` by `schedule`, read without it by
  /// `endDriving`, so that a `next()` whose producer only yields takes no lock at all.
  private let hasJobs = Atomic<Bool>(false)
  /// The address of the producer coroutine while it exists, for `yield`'s check that it runs
  /// in its own body (atomic: a misused `yield` may call from any thread).
  private let producerBits = Atomic<UInt>(0)

  var producerAddress: UnsafeMutableRawPointer? {
    get { UnsafeMutableRawPointer(bitPattern: producerBits.load(ordering: .relaxed)) }
    set { producerBits.store(UInt(bitPattern: newValue), ordering: .relaxed) }
  }

  deinit {
    bias.deallocate()
  }

  /// For tests: the bias's owner (the thread token), 0 while unclaimed, or `CU_BIAS_CLOSED`.
  var biasOwner: UInt { cu_bias_owner(bias) }

  /// For tests: true while a driving thread waits for the producer's jobs.
  var isWaitingForJobs: Bool { lock.withLock { blocked || waiter != nil } }

  // MARK: The generator's hot path (not generic, so not inlined)

  /// How the driving thread holds the generator: by the bias (`thread` owns it) or by the
  /// classic flag, `driving`.
  @usableFromInline
  enum Hold {
    case biased(thread: UInt)
    case classic
  }

  /// Claims the generator for the calling thread and starts queueing the producer's jobs; nil
  /// if someone already drives it.
  @usableFromInline
  func beginDriving() -> Hold? {
    beginDriving(cu_tls_view())
  }

  @inline(__always)
  private func beginDriving(_ view: cu_thread_view) -> Hold? {
    switch cu_bias_enter(bias, view.thread) {
    case CU_BIAS_ENTERED:
      refreshTarget(view)
      return .biased(thread: view.thread)
    case CU_BIAS_REENTERED:
      return nil
    default:
      return beginDrivingWithoutBias(view)
    }
  }

  /// `beginDriving()` for a thread that does not hold the bias: the first driver claims it;
  /// any other closes it and takes `driving`.
  private func beginDrivingWithoutBias(_ view: cu_thread_view) -> Hold? {
    // The first driver: from now on it takes the generator without a locked instruction.
    if cu_bias_claim(bias, view.thread) != 0 { return beginDriving(view) }
    cu_bias_close(bias, view.thread)
    // Sequentially consistent, with `hasJobs` in `schedule` and `endDriving`: of a job queued
    // and a driver leaving, at least one side sees the other, so no job is stranded.
    guard cu_bias_in_session(bias) == 0,
      driving.compareExchange(expected: false, desired: true, ordering: .sequentiallyConsistent)
        .exchanged
    else { return nil }
    refreshTarget(view)
    return .classic
  }

  /// Ends a successful `beginDriving()`. True if another thread
  /// closed the bias during a biased hold: it may have left a cancellation to this thread,
  /// having seen it inside.
  @usableFromInline
  func endDriving(_ hold: Hold) -> Bool {
    switch hold {
    case .biased(let thread):
      // Jobs queued by another thread closed the bias first; this thread's own show in
      // `hasJobs`, which it wrote itself.
      let closed = cu_bias_leave(bias, thread) != 0
      if closed || hasJobs.load(ordering: .relaxed) { forwardLeftoverJobs() }
      return closed
    case .classic:
      driving.store(false, ordering: .sequentiallyConsistent)
      if hasJobs.load(ordering: .sequentiallyConsistent) { forwardLeftoverJobs() }
      return false
    }
  }

  /// Runs the producer inline until it yields, suspends or finishes; the error if no stack
  /// could be mapped for it. The generator keeps the producer alive.
  @usableFromInline
  func runInline(_ producer: Unmanaged<Coroutine>) -> CoroutineError? {
    producer._withUnsafeGuaranteedRef { coroutine -> CoroutineError? in
      do throws(CoroutineError) {
        _ = try coroutine.runInline()
        return nil
      } catch {
        return error
      }
    }
  }

  /// For `yield`: checks that the caller is the producer running in its own body, not
  /// cancelled, and readies it to hand back; the fiber to switch out of, and the producer.
  /// Unretained: the producer is running, and its generator keeps it alive.
  @usableFromInline
  func fiberToYield() throws -> (OpaquePointer, Unmanaged<Coroutine>) {
    guard let producer = runningProducer(), !isCancelled(producer) else {
      try throwNotReadyToYield()
    }
    return (producer._withUnsafeGuaranteedRef { $0.fiberToHandBack() }, producer)
  }

  /// The calling coroutine if it is the producer running in its own body (not a coroutine it
  /// launched, nor away in `co_await(on:)`).
  private func runningProducer() -> Unmanaged<Coroutine>? {
    guard let current = Coroutine.currentUnretained,
      UInt(bitPattern: current.toOpaque()) == producerBits.load(ordering: .relaxed),
      current._withUnsafeGuaranteedRef({ !$0.isAway })
    else { return nil }
    return current
  }

  /// Why `fiberToYield()` refused. Out of line, so that the path that does not throw
  /// builds no error (it looked up `CancellationError`'s metadata on every `yield`).
  @inline(never)
  private func throwNotReadyToYield() throws -> Never {
    if runningProducer() == nil { throw CoroutineError.yieldOutsideGenerator }
    throw CancellationError()
  }

  /// True if the producer has been cancelled.
  @usableFromInline
  func isCancelled(_ producer: Unmanaged<Coroutine>) -> Bool {
    producer._withUnsafeGuaranteedRef { $0.isCancelled }
  }

  @usableFromInline
  func schedule(_ job: @escaping Job) {
    // Another thread than the bias's owner must see a biased driver inside: it closes the bias.
    cu_bias_close(bias, cu_tls_thread_token())
    lock.lock()
    jobs.append(job)
    hasJobs.store(true, ordering: .sequentiallyConsistent)
    guard isDriven else {
      // Nobody drives (or the driver is leaving): the job goes where the consumer would
      // launch it, with any others left behind.
      let (left, target) = takeJobs()
      lock.unlock()
      for job in left { target.schedule(job) }
      return
    }
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

  /// Works out where jobs go when nobody drives (`target`: where the consumer launches) and
  /// whose clock the producer's timers use (`clock`: the consuming coroutine's scheduler), when
  /// the consumer is not the one they were worked out for last time. Called by the new driver.
  @inline(__always)
  private func refreshTarget(_ view: cu_thread_view) {
    if key != consumerKey(view) { retarget(view) }
  }

  /// Who the consumer is, as `key` remembers it.
  @inline(__always)
  private func consumerKey(_ view: cu_thread_view) -> (UnsafeMutableRawPointer?, UInt32) {
    guard let address = view.coroutine else { return (view.loop, 0) }
    let consumer = Unmanaged<Coroutine>.fromOpaque(address)
    return (address, consumer._withUnsafeGuaranteedRef { $0.schedulerChanges })
  }

  /// `refreshTarget(_:)` for a consumer other than the last one.
  private func retarget(_ view: cu_thread_view) {
    if let address = view.coroutine {
      let coroutine = Unmanaged<Coroutine>.fromOpaque(address).takeUnretainedValue()
      key = consumerKey(view)
      keyOwner = coroutine
      let (home, scheduler) = (coroutine.home, coroutine.scheduler)
      lock.withLock {
        target = home
        clock = scheduler
      }
    } else {
      // A plain thread launches on the loop it runs (a CoroutineLoop or a test loop), else on
      // the main loop; `nil` stands for the main loop, which lives for ever.
      let loop = view.loop
      let plainTarget: any CoroutineScheduler & AnyObject
      if let loop = CoroutineLoop.current {
        plainTarget = loop
      } else if let testLoop = CoroutineTestLoop.current {
        plainTarget = testLoop
      } else {
        plainTarget = CoroutineLoop.main
      }
      key = (loop, 0)
      keyOwner = loop == nil ? nil : plainTarget
      lock.withLock {
        target = plainTarget
        clock = nil
      }
    }
  }

  /// The driver left with jobs queued (none of them the producer's: it only queues while it
  /// is parked, and a `next()` does not return while it is): they go to `target`. Unless a
  /// new driver has already come, whose `next()` will run or forward them.
  private func forwardLeftoverJobs() {
    lock.lock()
    guard !isDriven else {
      lock.unlock()
      return
    }
    let (left, target) = takeJobs()
    lock.unlock()
    for job in left { target.schedule(job) }
  }

  /// True while a thread drives, by either hold. For the bias's owner, or after the bias is
  /// closed.
  private var isDriven: Bool {
    driving.load(ordering: .sequentiallyConsistent) || cu_bias_in_session(bias) != 0
  }

  /// Empties `jobs`; called with `lock` held.
  private func takeJobs() -> ([Job], any CoroutineScheduler) {
    let left = jobs
    jobs = []
    hasJobs.store(false, ordering: .sequentiallyConsistent)
    return (left, target)
  }

  /// Suspends the consuming coroutine until a job is queued; false if it was cancelled (before
  /// or while waiting).
  @usableFromInline
  func waitForJobs(in consumer: Coroutine) -> Bool {
    do {
      let _: Void = try consumer.suspend(for: .generator) { resumer in
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
    let batch = lock.withLock { takeJobs().0 }
    for job in batch { job() }
  }
}
