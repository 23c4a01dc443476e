import CLinux
import CUContext
import Glibc
import Synchronization

/// A scheduler for tests: a virtual clock and a deterministic order of jobs.
///
/// Nothing on a test loop runs by itself. The test drives it from its own thread:
/// ``runUntilIdle()`` runs every job that is ready while the clock stands still, and
/// ``advance(by:)`` moves the clock forward, firing timers in deadline order. ``co_delay(_:)``,
/// timeouts and deadlines of coroutines on the loop wait for that virtual clock only, so a test
/// of a 30-second timeout takes microseconds and interleaves the same way on every run.
///
/// ```swift
/// let loop = CoroutineTestLoop()
/// let task = co_launch(on: loop) { () throws -> String in
///   try co_delay(30)
///   return "done"
/// }
/// loop.advance(by: 29)
/// #expect(!task.isSettled)
/// loop.advance(by: 1)
/// #expect(try task.result?.get() == "done")
/// ```
///
/// Coroutines launched on the loop, and every coroutine they launch without naming a scheduler,
/// belong to it; ``liveCoroutines`` counts those not yet finished.
///
/// Jobs may be scheduled from any thread; they run on the thread that drives the loop. Work
/// that leaves the loop (a hop to a `DispatchQueue`, a promise settled on another thread) comes
/// back as a job, so it runs at the next ``runUntilIdle()`` after it arrived.
///
/// Given a seed, the loop picks each next job pseudo-randomly from those ready, instead of
/// first in, first out. Timers still fire in deadline order; only jobs ready at the same virtual
/// moment are mixed. A `co_select` of a coroutine on the loop also draws its choice among ready
/// cases from the seed. The same seed gives the same order every time, so an interleaving that
/// breaks a test can be replayed: print ``description`` (it shows the seed) when a test fails,
/// and construct the loop with that seed again.
public final class CoroutineTestLoop: CoroutineScheduler, CoroutineAccounting,
  CustomStringConvertible
{
  /// The seed that orders ready jobs, or `nil` for first in, first out.
  public let seed: UInt64?

  private let state: Mutex<State>
  private let live = Atomic<Int>(0)
  /// `State.now`, copied out each time it moves: the clock is read far more often than it
  /// moves (a simulated network reads it per segment, a park per wait), and a load costs no
  /// lock.
  private let clock = Atomic<UInt64>(0)
  /// Where this loop's timers report their cancellation.
  private let cancellations = OwnerHandle<CoroutineTestLoop>()

  /// Creates a loop at virtual time zero. With a seed, ready jobs run in a pseudo-random order
  /// that the seed determines; without one, in the order they were scheduled.
  public init(seed: UInt64? = nil) {
    self.seed = seed
    state = Mutex(State(random: seed.map(SplitMix64.init(seed:))))
    cancellations.attach(self)
  }

  deinit {
    cancellations.detach()
  }

  /// The address of `current`, for comparing without a retain.
  static var currentPointer: UnsafeMutableRawPointer? { cu_tls_current_test_loop() }

  /// The loop being driven on the calling thread, inside ``runUntilIdle()`` or
  /// ``advance(by:)``; coroutines launched there without a scheduler default to it.
  static var current: CoroutineTestLoop? {
    guard let pointer = cu_tls_current_test_loop() else { return nil }
    return Unmanaged<CoroutineTestLoop>.fromOpaque(pointer).takeUnretainedValue()
  }

  // MARK: Observing

  /// Virtual seconds since the loop was created. Only ``advance(by:)`` moves it.
  public var now: Double { Double(clockNanoseconds) / 1e9 }

  /// ``now`` in whole nanoseconds, as parks record it.
  var clockNanoseconds: UInt64 { clock.load(ordering: .acquiring) }

  /// Coroutines that belong to this loop and have not finished.
  public var liveCoroutines: Int { live.load(ordering: .acquiring) }

  /// Timers scheduled on this loop that have neither fired nor been cancelled.
  public var pendingTimers: Int { state.withLock { $0.pendingTimers } }

  /// How many entries the timer heap holds, cancelled ones included (for tests).
  var timerCountForTesting: Int { state.withLock { $0.timers.count } }

  /// Jobs ready to run at the next ``runUntilIdle()``, counting timers whose deadline has come.
  public var readyJobs: Int { state.withLock { $0.ready.liveCount } }

  /// The loop, its seed and its clock, e.g. `CoroutineTestLoop(seed: 42, now: 1.5)`: put it in
  /// a failing expectation's comment and the seed to replay is in the test report.
  public var description: String {
    "CoroutineTestLoop(seed: \(seed.map { String($0) } ?? "nil"), now: \(now))"
  }

  // MARK: Scheduling (any thread)

  /// Queues `job` to run on the thread that drives the loop, after the jobs already ready (or,
  /// with a seed, in the order the seed picks).
  public func schedule(_ job: @escaping @Sendable () -> Void) {
    state.withLock { $0.ready.append(.job(job)) }
  }

  /// Queues the resumption of `coroutine`, woken, as ``schedule(_:)`` would queue a job that
  /// resumes it, without a closure to allocate per wake-up (as a `CoroutineLoop` queues its
  /// coroutines themselves).
  func enqueueResume(_ coroutine: Coroutine) {
    state.withLock { $0.ready.append(.resume(coroutine)) }
  }

  /// Queues `job` to run once the virtual clock has moved `seconds` past ``now``. When its
  /// deadline comes the timer joins the ready jobs; a delay of zero or less makes it ready at
  /// once, after the jobs already ready. Cancelling the timer before its job has run, even
  /// while it waits among the ready jobs, keeps the job from running.
  public func schedule(after seconds: Double, _ job: @escaping @Sendable () -> Void)
    -> any CoroutineTimer
  {
    let delay = virtualNanoseconds(seconds, in: "CoroutineTestLoop.schedule(after:)")
    return state.withLock { state -> LoopTimer in
      state.nextSequence += 1
      let timer = LoopTimer(
        deadline: state.now.addingClamped(delay), sequence: state.nextSequence, job: job,
        onCancel: { [cancellations] in
          cancellations.withOwner { $0.state.withLock { $0.pendingTimers -= 1 } }
        })
      let crowded = state.timers.insert(TimerEntry(timer, sequence: timer.sequence))
      state.pendingTimers += 1
      if crowded {
        // Released under the lock: what is dropped is cancelled timers, whose jobs went when
        // they were cancelled, so no code of the user's runs here.
        _ = state.timers.compact(liveAtMost: state.pendingTimers)
      }
      state.moveDueTimers(dueBy: state.now)  // a delay of zero is ready at once, in order
      return timer
    }
  }

  // MARK: Accounting

  func coroutineCreated() { live.add(1, ordering: .relaxed) }

  func coroutineFinished() { live.subtract(1, ordering: .releasing) }

  // MARK: Driving (one thread at a time, outside any coroutine)

  /// Runs jobs on the calling thread until none is ready, including the jobs they schedule and
  /// timers already due. The clock does not move: a timer due later stays pending.
  public func runUntilIdle() {
    drive("runUntilIdle()") { runReadyJobs() }
  }

  /// Moves the virtual clock `seconds` forward, running on the calling thread every job and
  /// timer due on the way, in deadline order: ``now`` moves to each timer's deadline as it
  /// fires, the jobs that follow from it run, and then the next timer fires. Timers with the
  /// same deadline fire together, in the order they were scheduled (or the seed's order).
  /// Finally ``now`` becomes the old value plus `seconds`.
  ///
  /// A negative or NaN `seconds` stops the program with a message naming it.
  public func advance(by seconds: Double) {
    coPrecondition(
      !seconds.isNaN && seconds >= 0,
      "CoroutineTestLoop.advance(by: \(seconds)): time only moves forward")
    let delta = virtualNanoseconds(seconds, in: "CoroutineTestLoop.advance(by:)")
    drive("advance(by:)") {
      let target = state.withLock { $0.now.addingClamped(delta) }
      runReadyJobs()
      while state.withLock({ state -> Bool in
        defer { clock.store(state.now, ordering: .releasing) }
        return state.fireNextTimers(upTo: target)
      }) {
        runReadyJobs()
      }
      state.withLock {
        $0.now = max($0.now, target)
        clock.store($0.now, ordering: .releasing)
      }
    }
  }

  private func runReadyJobs() {
    while let job = state.withLock({ $0.takeNextJob() }) {
      switch job {
      case .job(let job): job()
      case .resume(let coroutine): coroutine.resume()
      case .timer: break  // never returned: `takeNextJob` hands over a timer's job
      }
    }
  }

  /// Marks this thread as driving the loop while `body` runs, refusing the calls that would
  /// run the loop's jobs inside one of its own jobs or on two threads at once.
  private func drive(_ call: StaticString, _ body: () -> Void) {
    coPrecondition(
      Coroutine.current == nil,
      "CoroutineTestLoop.\(call) was called inside a coroutine; drive a test loop from plain "
        + "test code")
    let alreadyDriven = state.withLock { state -> Bool in
      defer { state.driving = true }
      return state.driving
    }
    coPrecondition(
      !alreadyDriven,
      "CoroutineTestLoop.\(call) was called while the loop was already running jobs (from one "
        + "of its own jobs, or from two threads at once)")
    let previous = cu_tls_current_test_loop()
    cu_tls_set_current_test_loop(Unmanaged.passUnretained(self).toOpaque())
    defer {
      cu_tls_set_current_test_loop(previous)
      state.withLock { $0.driving = false }
    }
    body()
  }
}

extension CoroutineTestLoop {
  typealias Job = @Sendable () -> Void

  /// A number in `0..<count` from the seed's sequence, or nil for a loop without a seed: how
  /// other choices made on the loop (which ready case a `co_select` takes) replay with it.
  func seededIndex(below count: Int) -> Int? {
    state.withLock { state in state.random?.index(below: count) }
  }

  /// Everything behind the loop's lock: the ready jobs, the timers and the clock.
  fileprivate struct State: ~Copyable {
    var ready = ReadyJobs()
    var timers = TimerHeap()
    var pendingTimers = 0
    /// Virtual nanoseconds: whole numbers, so deadlines and sums of advances compare exactly.
    var now: UInt64 = 0
    var nextSequence: UInt64 = 0
    var random: SplitMix64?
    var driving = false

    init(random: SplitMix64?) {
      self.random = random
    }

    /// The next job to run. A timer is claimed only now, as it runs, so a timer cancelled while
    /// it waited among the ready jobs is skipped.
    mutating func takeNextJob() -> ReadyJob? {
      moveDueTimers(dueBy: now)
      while ready.count > 0 {
        let next = ready.remove(at: random?.index(below: ready.count) ?? 0)
        guard case .timer(let timer) = next else { return next }
        if let job = timer.claimJob() {
          pendingTimers -= 1
          return .job(job)
        }
      }
      return nil
    }

    /// Moves the clock to the earliest pending deadline not after `target` and makes every timer
    /// due by then ready; false when no timer is due by `target`.
    mutating func fireNextTimers(upTo target: UInt64) -> Bool {
      dropCancelledTimers()
      guard let first = timers.firstDeadline, first <= target else { return false }
      now = max(now, first)
      moveDueTimers(dueBy: now)
      return true
    }

    /// Moves the timers due by `deadline` from the heap to the ready jobs, in deadline order.
    mutating func moveDueTimers(dueBy deadline: UInt64) {
      while let first = timers.first, first.pointee.deadline <= deadline || first.pointee.isDead {
        guard let timer = timers.removeFirst()?.timer else { continue }
        if !timer.isCancelled { ready.append(.timer(timer)) }
      }
    }

    private mutating func dropCancelledTimers() {
      while timers.firstIsDead { _ = timers.removeFirst() }
    }
  }

  /// A job, or a timer whose deadline has come and that runs unless cancelled first.
  fileprivate enum ReadyJob {
    case job(Job)
    /// A woken coroutine to resume (see ``CoroutineTestLoop/enqueueResume(_:)``).
    case resume(Coroutine)
    case timer(LoopTimer)

    var isCancelled: Bool {
      if case .timer(let timer) = self { return timer.isCancelled }
      return false
    }
  }

  /// Ready jobs in first-in, first-out order; taking the first is O(1), and taking any other (a
  /// seeded pick) is a swap with the first.
  fileprivate struct ReadyJobs: ~Copyable {
    private var jobs = Ring<ReadyJob>()

    var count: Int { jobs.count }

    /// The jobs that will run: all but the timers cancelled while they waited.
    var liveCount: Int { jobs.count { !$0.isCancelled } }

    mutating func append(_ job: ReadyJob) {
      jobs.append(job)
    }

    /// Removes and returns the job `offset` places from the front; the front job takes its
    /// place. The slot is cleared so a job that ran releases what it captured at once.
    mutating func remove(at offset: Int) -> ReadyJob {
      jobs.swapRemove(at: offset)
    }
  }
}

/// The thread-local slot behind ``CoroutineTestLoop/current``. A pthread key rather than a
/// Swift global: it must be per thread, and every read is a real call, so no cached address
/// survives a coroutine moving between threads.
/// Seconds of virtual time as whole nanoseconds, rounded to the nearest so that, say, three
/// advances of 0.1 s reach a deadline set 0.3 s ahead. Negative delays count as zero.
private func virtualNanoseconds(_ seconds: Double, in call: StaticString) -> UInt64 {
  coPrecondition(!seconds.isNaN, "\(call): the delay is NaN")
  if seconds <= 0 { return 0 }
  let value = (seconds * 1e9).rounded()
  return value >= Double(UInt64.max / 2) ? UInt64.max / 2 : UInt64(value)
}

extension UInt64 {
  /// The sum, or `UInt64.max / 2` (about 146 years of nanoseconds) if it would pass that.
  fileprivate func addingClamped(_ other: UInt64) -> UInt64 {
    let (sum, overflow) = addingReportingOverflow(other)
    return overflow || sum > UInt64.max / 2 ? UInt64.max / 2 : sum
  }
}
