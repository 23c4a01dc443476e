import CUContext
import Foundation
import Synchronization

/// A single-threaded scheduler: jobs run one at a time, in the order they were scheduled, with
/// timers in deadline order, on whichever thread is inside ``run()``.
///
/// Command-line programs and tests start with ``run(stackSize:_:)``:
///
/// ```swift
/// let answer = try CoroutineLoop.run {
///   try co_delay(0.01)
///   return 42
/// }
/// ```
///
/// Jobs and wake-ups may come from any thread, and take no lock: the loop's own thread queues
/// them directly, other threads push them onto a lock-free inbox and write the eventfd only when
/// the loop sleeps. When no job is ready the loop sleeps in its poller (epoll): the nearest timer gives
/// the sleep its deadline, descriptors that coroutines wait on (``co_wait(fd:for:timeout:)``,
/// ``CoTCPStream``) end it when ready, and other threads' jobs end it through an eventfd.
public final class CoroutineLoop: CoroutineScheduler, CoroutineAccounting, @unchecked Sendable {
  // `localJobs`, `timers`, `sleepers`, `nextSequence` and `poller`'s waiters are touched only by
  // the thread inside `run()`; `inbox` and the other counters are atomics.

  /// The process's main loop. ``run(stackSize:_:)`` drives it when called on the main thread; jobs
  /// scheduled on it before that wait for it.
  public static let main = CoroutineLoop()

  /// The loop the calling thread is running, if any.
  public static var current: CoroutineLoop? {
    guard let pointer = cu_tls_current_loop() else { return nil }
    return Unmanaged<CoroutineLoop>.fromOpaque(pointer).takeUnretainedValue()
  }

  /// The loop the calling thread is running, unretained: the thread's loop outlives the
  /// caller's use (a retain and a release of a group's loop, which its other threads also
  /// touch, cost a launch more than the rest of the look-up).
  static var currentUnretained: Unmanaged<CoroutineLoop>? {
    cu_tls_current_loop().map { Unmanaged<CoroutineLoop>.fromOpaque($0) }
  }

  /// Where the loop sleeps, and what it knows of the descriptors its coroutines wait on.
  let poller = Poller()
  /// True from just before the loop sleeps in `poller` until it wakes. Whoever leaves work for
  /// the loop clears it and wakes the poller; sequentially consistent with `inbox` and
  /// the counts the loop checks before sleeping, so that of the loop going to sleep and the
  /// work arriving, at least one side sees the other.
  private let sleeping = Atomic<Bool>(false)
  /// True for the shared poller's loop, which serves coroutines of other schedulers and never
  /// ends for lack of its own.
  private let keepsRunning: Bool
  /// Jobs run since the poller was last asked, while the loop had no time to sleep: a loop busy
  /// with jobs still looks at its descriptors every so often.
  @exclusivity(unchecked) private var jobsSincePoll = 0
  // `@exclusivity(unchecked)`: each of these is confined to the loop's thread, and no
  // access to one of them calls out to code that could touch it again, so the dynamic check
  // could never fire. It is not free: inside a coroutine each check consults the thread's access
  // set through a thread-local lookup, and it was a fifth of a loop round trip.
  /// Jobs from other threads.
  private let inbox = RemoteInbox()
  /// A group loop's coroutines of the group that other threads woke or launched, which idle
  /// loops of the group may take too (see `enqueueFromElsewhere(_:)`).
  let roamingInbox = RemoteInbox()
  @exclusivity(unchecked) private var localJobs = JobQueue()
  @exclusivity(unchecked) private var timers = TimerHeap()
  /// `co_delay` sleeps in `timers` that have neither rung nor ended early. Only the loop's own
  /// thread arms, wakes and ends them, so a plain counter does: an atomic's locked add right
  /// after switching into a cold coroutine waited for that switch's stores to drain.
  @exclusivity(unchecked) private var sleepers = 0
  /// The insertion order of the next entry of `timers`, for equal deadlines (loop thread only:
  /// a timer from another thread gets its number when it reaches the heap).
  @exclusivity(unchecked) private var nextSequence: UInt64 = 0
  /// Timers made by ``schedule(after:_:)`` that have neither fired nor been cancelled: made
  /// and cancelled on any thread, so atomic.
  private let pendingTimers = Atomic<Int>(0)
  /// The loop's live coroutines, as counted by other threads (see `liveCoroutines`).
  private let remoteLive = Atomic<Int>(0)
  /// The same, as counted on the loop's own thread while it runs (its coroutines are mostly
  /// created and finished there): a plain counter, as an atomic's two locked instructions per
  /// coroutine each waited for the stores before them. It may go below zero when a coroutine
  /// counted elsewhere finishes here. Another thread that runs the loop later sees it through
  /// `running`'s release and acquire.
  @exclusivity(unchecked) private var localLive = 0
  private let running = Atomic<Bool>(false)
  /// How long the loop may spin, watching for remote work, before it sleeps (nanoseconds;
  /// see `spinForRemoteWork`). Touched only by the thread inside `run()`.
  @exclusivity(unchecked) private var spinBudget: UInt64 = 0
  /// The coroutine this loop watches, retained (see `Coroutine.parkWatched`): the last it ran,
  /// parked while the loop had nothing else to run. Loop thread only.
  @exclusivity(unchecked) var watched: Unmanaged<Coroutine>?
  /// The stacks this loop's shared-stack coroutines take turns on.
  let sharedStacks = SharedStackSet()
  /// The group this loop belongs to, if any: set once, before the loop's thread starts.
  /// Unretained: the group's threads keep it alive while its loops run. Hot paths reach it
  /// through `_withUnsafeGuaranteedRef`: each strong load retained and released the group, whose
  /// count every thread of the group then fought over.
  ///
  /// Once the loop has ended the group may be gone, and nothing follows this reference any
  /// more: it is followed only on the group's own threads (which hold the group), for a
  /// coroutine of the group (which keeps every loop of the group running), or by a caller that
  /// holds the group. Anything else asks the loop's own `groupIsShutDown` and `hasEnded`, and
  /// `run()` refuses a group's loop (see `runOnThisThread()`).
  @exclusivity(unchecked) private(set) var groupReference: Unmanaged<CoroutineLoopGroup>?
  /// The group this loop belongs to, if any.
  var group: CoroutineLoopGroup? { groupReference?.takeUnretainedValue() }
  /// A group loop's stacks of finished coroutines, kept for the next ones it starts (see
  /// `stashStack(_:size:)`). Loop thread only.
  @exclusivity(unchecked) var stackStash: [(fiber: OpaquePointer, size: Int)] = []
  /// This loop's place in `group.loops`.
  @exclusivity(unchecked) private(set) var groupIndex = 0
  /// A group loop's ready coroutines of the group, which idle loops of the group may take.
  let ready: StealQueue?
  /// Set on each of its loops by the group's ``CoroutineLoopGroup/shutdown()``: from then on
  /// the loop takes no work from threads outside the group. Kept here, not only in the group,
  /// so that a caller holding just the loop never reaches a group that may be gone.
  let groupIsShutDown = Atomic<Bool>(false)
  /// True once a group loop has ended for good (or is about to, see `endsForGood()`): it takes
  /// no visitor (`admitVisitor()`), and its inbox is closed.
  private let hasEnded = Atomic<Bool>(false)
  // Last, so that the fields the quick paths touch keep their places (and cache lines).
  /// When the poller was last asked (monotonic nanoseconds): a loop busy with long jobs looks
  /// at its descriptors by time too.
  @exclusivity(unchecked) private var lastPoll: UInt64 = 0
  /// When a busy loop last read the clock, how many jobs it lets run between two readings, and
  /// at which count of `jobsSincePoll` it reads it next (see `pollWhileBusy`).
  @exclusivity(unchecked) private var lastClock: UInt64 = 0
  @exclusivity(unchecked) private var clockStride = 1
  @exclusivity(unchecked) private var nextClockAt = 1

  /// Creates a loop. Nothing runs until a thread calls ``run()``.
  public init() {
    keepsRunning = false
    ready = nil
  }

  /// Creates a loop whose ``run()`` returns only when the process ends, for the shared poller.
  init(keepsRunning: Bool) {
    self.keepsRunning = keepsRunning
    ready = nil
  }

  /// Creates a loop for a group (see `joinGroup(_:index:)`).
  init(inGroup: Void) {
    keepsRunning = false
    ready = StealQueue()
  }

  /// Makes this loop `group.loops[index]`, before its thread starts.
  func joinGroup(_ group: CoroutineLoopGroup, index: Int) {
    groupReference = Unmanaged.passUnretained(group)
    groupIndex = index
  }

  var isCurrent: Bool {
    cu_tls_current_loop() == Unmanaged.passUnretained(self).toOpaque()
  }

  /// True while some thread is inside ``run()``.
  public var isRunning: Bool { running.load(ordering: .acquiring) }

  // MARK: Scheduling

  /// Queues `job` to run after the jobs already queued.
  ///
  /// On a loop of a ``CoroutineLoopGroup`` that was shut down, a job from a thread outside the
  /// group stops the program with a message, as does a job from anywhere once the loop has
  /// ended: it could never run.
  public func schedule(_ job: @escaping @Sendable () -> Void) {
    if offer(job) { return }
    let call = "CoroutineLoop.schedule(_:)"
    coStop(refusesOutsideWork ? Self.refusedFromOutside(call) : Self.refusedAfterEnd(call))
  }

  /// ``schedule(_:)`` without the stop: false, queueing nothing, where `schedule` would stop.
  /// For deliveries asked for before a group's shutdown (a channel's waiting future or
  /// callback), which the caller then settles or drops instead.
  func offer(_ job: @escaping @Sendable () -> Void) -> Bool {
    if isCurrent {
      localJobs.append(.closure(job))
      return true
    }
    return !refusesOutsideWork && enqueueFromElsewhere(.closure(job))
  }

  /// What work sent from outside to a loop of a shut-down group stops with, naming `call`.
  private static func refusedFromOutside(_ call: String) -> String {
    "\(call): the loop's group was shut down; its loops take no work from outside"
  }

  /// What work sent to a loop of a group that has ended stops with, naming `call`.
  private static func refusedAfterEnd(_ call: String) -> String {
    "\(call): this loop of a CoroutineLoopGroup has ended (the group was shut down); "
      + "the job could never run"
  }

  /// `schedule(_:)` for a job that its group already admitted and counts (see
  /// ``CoroutineLoopGroup/schedule(_:)``): the group does not end before it runs.
  func scheduleAdmitted(_ job: @escaping @Sendable () -> Void) {
    enqueue(.closure(job))
  }

  /// Queues a coroutine's resumption without allocating a closure.
  func enqueue(_ coroutine: Coroutine) {
    enqueue(.resume(Unmanaged.passUnretained(coroutine)))
  }

  /// Queues the start of `coroutine`, which its task keeps alive (see `launchAttached()`); on a
  /// loop of a group that refuses it (shut down, and the caller outside; or ended), fails its
  /// task with ``CoroutineError/schedulerShutDown`` instead.
  func enqueueStart(_ coroutine: Coroutine) {
    let job = LoopJob.start(Unmanaged.passUnretained(coroutine))
    if isCurrent { return localJobs.append(job) }
    if refusesOutsideWork || !enqueueFromElsewhere(job) {
      coroutine.refuseStart(.schedulerShutDown)
    }
  }

  /// Queues a coroutine's resumption from this loop's own thread.
  func enqueueLocal(_ coroutine: Coroutine) {
    localJobs.append(.resume(Unmanaged.passUnretained(coroutine)))
  }

  /// Queues a job that nothing may refuse: a resumption, or work the group counts. A loop that
  /// has ended can get neither (a coroutine it runs, or that visits it, keeps it running), so
  /// one refused is the runtime's own fault and stops rather than vanishes.
  private func enqueue(_ job: consuming LoopJob) {
    if isCurrent {
      localJobs.append(job)
      return
    }
    guard enqueueFromElsewhere(job) else {
      coStop(
        "CoroutineLoop: work for a coroutine reached a loop of a CoroutineLoopGroup that had ended")
    }
  }

  /// Pushes `job` from another thread and wakes the loop; false, dropping it, when the loop has
  /// ended for good (a group's loop, whose inbox is closed).
  private func enqueueFromElsewhere(_ job: consuming LoopJob) -> Bool {
    guard inbox.push(job) != .refused else { return false }
    wakeIfAsleep()
    return true
  }

  /// True when this loop's group was shut down and the calling thread runs none of the group's
  /// loops: the loop then takes no new work from it (the group's own coroutines may still send
  /// work while it drains). Compares the groups' addresses without following either: the caller
  /// may hold only this loop, whose group may be gone, and a new group at the same address
  /// finds the loop ended anyway, its inbox closed.
  private var refusesOutsideWork: Bool {
    guard groupIsShutDown.load(ordering: .sequentiallyConsistent), let mine = groupReference
    else { return false }
    guard let here = CoroutineLoop.currentUnretained else { return true }
    return here._withUnsafeGuaranteedRef { $0.groupReference?.toOpaque() != mine.toOpaque() }
  }

  /// Lets a coroutine of another scheduler come to this loop of a group (``co_await(on:_:)``):
  /// it counts among the loop's coroutines until `visitorLeft()`, so the loop does not end
  /// under it. Throws ``CoroutineError/schedulerShutDown`` when the loop has ended, or when its
  /// group was shut down and the caller is outside the group.
  func admitVisitor() throws(CoroutineError) {
    // Counted before the look at `hasEnded`, which an ending loop sets before it looks at its
    // count (`endsForGood()`): of the two, at least one sees the other.
    remoteLive.add(1, ordering: .sequentiallyConsistent)
    if hasEnded.load(ordering: .sequentiallyConsistent) || refusesOutsideWork {
      coroutineFinished()
      throw .schedulerShutDown
    }
  }

  /// A visitor admitted by `admitVisitor()` is leaving.
  func visitorLeft() { coroutineFinished() }

  /// Runs `job` on this loop once `seconds` have passed on the monotonic clock.
  ///
  /// On a loop of a ``CoroutineLoopGroup``, refused as ``schedule(_:)`` refuses a job.
  public func schedule(after seconds: Double, _ job: @escaping @Sendable () -> Void)
    -> any CoroutineTimer
  {
    let delay = nanoseconds(fromSeconds: seconds, in: "CoroutineLoop.schedule(after:)")
    coPrecondition(
      isCurrent || !refusesOutsideWork, Self.refusedFromOutside("CoroutineLoop.schedule(after:_:)"))
    pendingTimers.add(1, ordering: .relaxed)
    // The sequence that orders equal deadlines is the heap's own, given on arrival.
    let timer = LoopTimer(
      deadline: monotonicNanoseconds() &+ delay, sequence: 0, job: job,
      onCancel: { [weak self] in
        guard let self else { return }
        self.pendingTimers.subtract(1, ordering: .sequentiallyConsistent)
        self.wakeUpIfElsewhere()
      })
    if isCurrent {
      insert(timer)
    } else {
      // Numbered when it reaches the heap, on the loop's thread.
      guard enqueueFromElsewhere(.closure { [self] in insert(timer) }) else {
        coStop(Self.refusedAfterEnd("CoroutineLoop.schedule(after:_:)"))
      }
    }
    return timer
  }

  /// Puts `coroutine`, whose wait of `generation` is armed, to sleep on the timer heap for
  /// `delay` nanoseconds; the loop wakes it directly, so `co_delay` allocates nothing. Called
  /// on the loop's own thread.
  func addSleep(_ coroutine: Coroutine, generation: UInt64, nanoseconds delay: UInt64) {
    sleepers += 1
    nextSequence &+= 1
    let crowded = timers.insert(
      TimerEntry(
        sleeping: coroutine, generation: generation, deadline: monotonicNanoseconds() &+ delay,
        sequence: nextSequence))
    if crowded { dropDeadTimers() }
  }

  /// A sleep ended before its deadline (cancelled): it no longer keeps the loop alive. Called
  /// on the loop's own thread, where the sleeping coroutine resumes.
  func sleepEndedEarly() {
    sleepers -= 1
  }

  /// Puts a timer on the heap, numbered after every entry already there. Loop thread only.
  private func insert(_ timer: LoopTimer) {
    nextSequence &+= 1
    if timers.insert(TimerEntry(timer, sequence: nextSequence)) { dropDeadTimers() }
  }

  /// Drops the dead entries of the crowded timer heap (see `TimerHeap.compact(liveAtMost:)`):
  /// a timeout answered in time, or a sleep ended early, behind a live timer due before it
  /// would otherwise stay until that timer rings. Out of line: rarely called.
  @inline(never)
  private func dropDeadTimers() {
    // Live entries are at most the sleeps not yet ended and the timers neither fired nor
    // cancelled (some of which are still on their way from other threads).
    let dead = timers.compact(liveAtMost: sleepers &+ pendingTimers.load(ordering: .relaxed))
    // Released only now that the heap is whole again: the last release of a coroutine may run
    // code that arms a timer on this loop.
    _ = consume dead
  }

  /// How many `co_delay` sleeps are pending (for tests, on the loop's own thread).
  var pendingSleepsForTesting: Int {
    coPrecondition(isCurrent, "pendingSleepsForTesting: read it on the loop's own thread")
    return sleepers
  }

  /// How many ``schedule(after:_:)`` timers are pending (for tests).
  var pendingTimersForTesting: Int { pendingTimers.load(ordering: .acquiring) }

  /// How many entries the timer heap holds, dead ones included (for tests, on the loop's own
  /// thread).
  var timerCountForTesting: Int {
    coPrecondition(isCurrent, "timerCountForTesting: read it on the loop's own thread")
    return timers.count
  }

  // MARK: Accounting

  func coroutineCreated() {
    if isCurrent {
      localLive &+= 1
    } else {
      remoteLive.add(1, ordering: .relaxed)
    }
  }

  func coroutineFinished() {
    if isCurrent {
      localLive &-= 1
      return
    }
    remoteLive.subtract(1, ordering: .sequentiallyConsistent)
    wakeUpIfElsewhere()
  }

  private func wakeUpIfElsewhere() {
    guard !isCurrent else { return }
    wakeIfAsleep()
  }

  /// Wakes the loop if it sleeps in its poller; the first waker of a sleep writes the eventfd,
  /// later ones find the flag already cleared. True if this call woke it.
  @discardableResult
  func wakeIfAsleep() -> Bool {
    if sleeping.load(ordering: .sequentiallyConsistent),
      sleeping.exchange(false, ordering: .sequentiallyConsistent)
    {
      poller.wake()
      return true
    }
    return false
  }

  /// Coroutines of this loop created and not yet finished. Only on the loop's own thread.
  private var liveCoroutines: Int {
    localLive &+ remoteLive.load(ordering: .sequentiallyConsistent)
  }

  /// True when the loop has nothing queued and watches no coroutine: one that parks now, from
  /// this loop's own thread, is watched (see `Coroutine.parkWatched`).
  var mayWatch: Bool {
    watched == nil && localJobs.isEmpty && (ready.map { $0.isEmpty } ?? true)
  }

  /// True when another thread may have left work (a relaxed look, for spinning).
  private var remoteWorkMayWait: Bool {
    inbox.mayHoldWork || (ready != nil && roamingInbox.mayHoldWork)
  }

  /// For a loop about to end: a group's loop ends for good, closed to visitors and to other
  /// threads' jobs, unless one came meanwhile (then false, and it runs on); a lone loop may run
  /// again later, and stays open.
  ///
  /// As NIO's event loops do once closed (a task submitted then fails with
  /// `EventLoopError.shutdown`), work that comes after the end is refused and its sender told,
  /// rather than queued where no thread will ever look. The closed state is a mark in the
  /// inbox's own head word, so a push and the close meet in one compare-and-swap and the
  /// push, the hot path of every cross-thread wake-up, pays one comparison for it.
  private func endsForGood() -> Bool {
    guard ready != nil else { return true }
    hasEnded.store(true, ordering: .sequentiallyConsistent)
    // Looked at after `hasEnded` is set, as a visitor counts itself before looking at it.
    if liveCoroutines == 0, inbox.close() { return true }
    hasEnded.store(false, ordering: .sequentiallyConsistent)
    return false
  }

  /// True when the loop may end once it has nothing to run: a lone loop unless it keeps running
  /// (the shared poller), a group's once the group is shut down and its coroutines finished.
  private var mayEnd: Bool {
    if let group { return group.mayEnd }
    return !keepsRunning
  }

  // MARK: Running

  /// Runs the loop on the calling thread until it is idle: no job queued, no timer pending and
  /// no coroutine of this loop left unfinished. While its coroutines wait, the thread sleeps in
  /// the loop's poller rather than spins.
  ///
  /// A loop runs on one thread at a time; calling this while another thread runs the same loop
  /// stops the program with a message. A loop of a ``CoroutineLoopGroup`` is run by the group's
  /// own thread alone: calling this on one stops the program with a message.
  public func run() {
    coPrecondition(
      ready == nil,
      "CoroutineLoop.run(): this loop belongs to a CoroutineLoopGroup, whose own thread runs it")
    runOnThisThread()
  }

  /// `run()` without its check: the loop's own body, which a group's thread runs for its loop.
  ///
  /// A group's loop is run by the thread the group made for it and by nothing else, as a loop
  /// of NIO's `MultiThreadedEventLoopGroup` is (its run is not public): run from elsewhere it
  /// would follow its group, unretained, after the group had gone. A strong reference instead
  /// would make a cycle (the group holds its loops) and cost every hot path's retain.
  func runOnThisThread() {
    coPrecondition(
      !running.exchange(true, ordering: .acquiringAndReleasing),
      "CoroutineLoop.run(): this loop is already running on another thread")
    let previous = cu_tls_current_loop()
    cu_tls_set_current_loop(Unmanaged.passUnretained(self).toOpaque())
    defer {
      cu_tls_set_current_loop(previous)
      running.store(false, ordering: .releasing)
    }
    while true {
      takeRemoteWork()
      if watched != nil { attendToWatched() }
      // Checked here, not inside: entering the function for nothing cost a frame's worth of
      // saves and restores on every turn (26 of the 391 instructions of a `co_delay(0)`).
      let moreDue = timers.isEmpty ? false : fireDueTimers()
      // The jobs queued at the start of this turn; jobs they queue wait for the next turn, so
      // timers and other threads' jobs are never starved. Written here rather than called:
      // a frame of its own would span the switches of the jobs it runs, and its return, once
      // per turn, would be mispredicted (see "Switching" in Coroutine+Switch.swift); marked
      // `@inline(__always)`, the function was still compiled out of line once the loop grew,
      // and a `co_delay(0)` round trip took a third longer.
      var remaining = localJobs.count
      var ran = 0
      while remaining > 0, let job = localJobs.popFirst() {
        localJobs.prefetchUpcoming(batchStart: ran & 3 == 0)
        job.run(on: Unmanaged.passUnretained(self).toOpaque())
        remaining -= 1
        ran &+= 1
      }
      if let ready { ran &+= runReadyCoroutines(ready) }
      if moreDue || !localJobs.isEmpty || ready?.isEmpty == false || watchedNeedsAttention {
        if poller.waiterCount > 0 { pollWhileBusy(afterRunning: ran) }
        continue
      }
      if ready != nil, findGroupWork() { continue }
      if !waitForWork() { break }
    }
    timers = TimerHeap()
    // `waitForWork` stopped any watch before it found the loop idle.
    coPrecondition(watched == nil, "CoroutineLoop.run(): the loop ended while watching a coroutine")
    if ready != nil { returnStashedStacks() }
  }

  private func takeRemoteWork() {
    // A relaxed look suffices: work missed here is found by `waitForWork`, which looks again
    // before sleeping; the exchange that empties the inbox orders its contents.
    if ready != nil, roamingInbox.mayHoldWork { takeRoamingInbox() }
    guard inbox.mayHoldWork else { return }
    inbox.takeAll(into: &localJobs)
  }

  /// Fires up to ``timerBatch`` due timers (dropping dead ones on the way); returns true when
  /// more are due, for the next turn.
  ///
  /// In batches, so that the jobs a batch queues run while what firing touched is still in the
  /// cache: firing reads and writes each sleeper's record, and resuming it reads the record
  /// again; with thousands due at once and all fired before any ran, every record was a cache
  /// miss twice. Timers still fire in deadline order, and every turn fires some, so queued jobs
  /// cannot starve them; but with more than a batch due, the later ones wait a turn or more,
  /// behind jobs queued meanwhile.
  private func fireDueTimers() -> Bool {
    let now = monotonicNanoseconds()
    // The busy loop's look by time, on this reading (see `pollWhileBusy`).
    if now &- lastPoll >= Self.busyPollInterval { pollOnTime(now) }
    var fired = 0
    while let first = timers.first {
      if first.pointee.deadline > now, !first.pointee.isDead { return false }
      if fired == Self.timerBatch { return true }
      // Firing writes to the object of each timer; with thousands due at once, each would be
      // a cache miss in turn. Asked for a few timers early, they arrive together.
      timers.prefetchQueued(at: Self.timerPrefetchDistance)
      let entry = timers.removeFirst()!
      switch entry.action {
      case .timer(let timer):
        if let job = timer.claimJob() {
          pendingTimers.subtract(1, ordering: .relaxed)
          localJobs.append(.closure(job))
          fired += 1
        }
      case .sleep(let coroutine, let generation):
        // A sleep ended early by cancellation fails the claim; its co_delay did the counting.
        if coroutine.claim(generation) {
          sleepers -= 1
          coroutine.wakeFromSleep()
          fired += 1
        }
      }
    }
    // The heap is empty: from now on the busy loop reads the clock itself.
    nextClockAt = min(nextClockAt, jobsSincePoll &+ 1)
    return false
  }

  /// How many timers one turn fires at most: enough that the turns' own cost (a clock reading,
  /// a look for other threads' work) stays small beside the jobs, few enough that the records
  /// firing touched are still cached when the batch's jobs run.
  static let timerBatch = 64

  /// How many timers ahead of the one firing `fireDueTimers` warms the caches for.
  static let timerPrefetchDistance = 8

  /// Asks the poller, without sleeping, for descriptors that became ready, in a loop that never
  /// runs out of jobs: after ``jobsBetweenPolls`` jobs, or ``busyPollInterval`` of running them,
  /// whichever comes first; a loop that runs out asks it each time it would sleep.
  ///
  /// A system call per turn would cost a loop of quick jobs, such as `co_delay(0)` round trips,
  /// several times their own price, hence the count; but a coroutine that computes in slices
  /// and yields runs one job per turn, and counted alone its slices delayed every wake-up by a
  /// hundred of them, hence the clock. Go's scheduler likewise polls the network when it has
  /// not for a while (its monitor, after 10 ms); NIO's loop polls on every tick.
  ///
  /// With timers pending, every turn reads the clock anyway to fire them, and looks on that
  /// reading at its start, which is the end of the previous turn but for a look at other
  /// threads' work. Without, reading the clock costs about two quick turns: the loop reads it
  /// after every turn only while jobs are long, and every `clockStride` jobs while they are
  /// quick, a stride that doubles up to ``longestClockStride`` while the jobs between two
  /// readings take less than a sixteenth of the interval, and falls back to one as soon as they
  /// do not. Once jobs turn long the loop notices within that many, and then looks after every
  /// turn. A quick turn pays one counter compared with the next reading's count, as it did
  /// when only the count mattered.
  private func pollWhileBusy(afterRunning ran: Int) {
    jobsSincePoll &+= ran
    if jobsSincePoll >= nextClockAt { lookWhileBusy() }
  }

  /// `pollWhileBusy` at the count of its next look: asks the poller if it is time, reading the
  /// clock unless the timers do, and sets the count of the next look.
  @inline(never)
  private func lookWhileBusy() {
    guard timers.isEmpty else {
      // The timers read the clock at every turn's start; only the count is left to watch.
      if jobsSincePoll >= Self.jobsBetweenPolls { pollNow() }
      nextClockAt = Self.jobsBetweenPolls
      return
    }
    let now = monotonicNanoseconds()
    if now &- lastClock < Self.busyPollInterval / 16 {
      clockStride = min(clockStride &* 2, Self.longestClockStride)
    } else {
      clockStride = 1
    }
    lastClock = now
    if jobsSincePoll >= Self.jobsBetweenPolls || now &- lastPoll >= Self.busyPollInterval {
      lastPoll = now
      pollNow()
    }
    nextClockAt = min(jobsSincePoll &+ clockStride, Self.jobsBetweenPolls)
  }

  /// The look by time of a turn whose timers read the clock (`now`): the loop may not be busy,
  /// or have descriptors to watch, and then it only notes the time.
  @inline(never)
  private func pollOnTime(_ now: UInt64) {
    lastPoll = now
    if poller.waiterCount > 0 { pollNow() }
  }

  /// Asks the poller for ready descriptors without sleeping (the caller notes the time, if it
  /// has it), and puts the coroutines it woke before the jobs already queued.
  ///
  /// Queued behind them, a coroutine woken by its descriptor would wait for another slice of
  /// every coroutine that computes and yields (`co_delay(0)` queues it again at once): a
  /// socket's wake-up would take the rest of the current slice and a whole one more. A yield
  /// means "the others first", and the woken are among the others.
  private func pollNow() {
    jobsSincePoll = 0
    let queued = localJobs.count
    poller.poll(timeout: 0)
    let woken = localJobs.count &- queued
    if woken > 0, queued > 0 { localJobs.moveLastToFront(woken) }
  }

  /// How many jobs a busy loop runs between two looks at its descriptors.
  static let jobsBetweenPolls = 128

  /// The longest a busy loop runs jobs between two looks at its descriptors (nanoseconds): a
  /// descriptor's wake-up waits for about one computing coroutine's slice, not for a hundred.
  static let busyPollInterval: UInt64 = 1_000_000

  /// The most jobs between two readings of the clock, while jobs are quick: a reading (about
  /// 45 ns amid a loop's switches here) every 32 quick jobs adds about a nanosecond to each,
  /// less than the system call every ``jobsBetweenPolls`` jobs already does.
  static let longestClockStride = 32

  /// Sleeps in the poller until there is work (a timer due, a descriptor ready, another
  /// thread's job); returns false when the loop is idle and should end.
  private func waitForWork() -> Bool {
    while timers.firstIsDead { _ = timers.removeFirst() }
    // Spinning watches only other threads' work: with descriptors to watch, the loop sleeps in
    // the poller at once, which sees both.
    if poller.waiterCount == 0, spinForRemoteWork() { return true }
    // Asleep, the loop would not see a hand-over: wakers must queue the coroutine instead.
    if !stopWatching() { return true }
    sleeping.store(true, ordering: .sequentiallyConsistent)
    groupReference?._withUnsafeGuaranteedRef {
      _ = $0.sleepingLoops.add(1, ordering: .sequentiallyConsistent)
    }
    defer {
      groupReference?._withUnsafeGuaranteedRef {
        _ = $0.sleepingLoops.subtract(1, ordering: .relaxed)
      }
    }
    if !inbox.isEmpty || (ready != nil && !roamingInbox.isEmpty) {
      sleeping.store(false, ordering: .relaxed)
      return true
    }
    // Counted among the sleepers first, so that a loop queueing ready coroutines after this
    // look wakes this one.
    if ready != nil, findGroupWork() {
      sleeping.store(false, ordering: .relaxed)
      return true
    }
    if liveCoroutines == 0, sleepers == 0,
      pendingTimers.load(ordering: .sequentiallyConsistent) == 0, mayEnd, endsForGood()
    {
      sleeping.store(false, ordering: .relaxed)
      group?.loopEnded()
      return false
    }
    let asleep = monotonicNanoseconds()
    poller.poll(timeout: timers.firstDeadline.map { $0 > asleep ? $0 &- asleep : 0 })
    sleeping.store(false, ordering: .relaxed)
    jobsSincePoll = 0
    let awake = monotonicNanoseconds()
    lastPoll = awake
    lastClock = awake
    clockStride = 1
    nextClockAt = 1
    if remoteWorkMayWait, awake &- asleep <= Self.longestSpin {
      // Another thread's work came soon after the loop fell asleep: spinning would have
      // caught it without the two trips through the kernel, so spin next time.
      spinBudget = Self.longestSpin
    }
    return true
  }

  /// The longest the loop spins before sleeping: about the time another thread takes to be
  /// woken and answer (a few microseconds here), with room to spare.
  static let longestSpin: UInt64 = 25_000

  /// How long the loop watches between two offers of its processor to other threads. Work that
  /// arrives while the loop is inside `sched_yield` waits for the system call to return (half a
  /// microsecond or more on a virtual machine); offered every few looks, the processor was given
  /// away so often that most wake-ups came during one.
  static let spinBetweenYields: UInt64 = 4_000

  /// Sets the spin budget, on the loop's own thread: tests use a huge one to show that the
  /// spin never outlasts a timer's deadline or an idle loop.
  func setSpinBudgetForTesting(_ nanoseconds: UInt64) {
    coPrecondition(isCurrent, "setSpinBudgetForTesting: call it on the loop's own thread")
    spinBudget = nanoseconds
  }

  /// Before sleeping, watches for other threads' work and for the hand-over of the watched
  /// coroutine (see CoroutineLoop+Watch.swift) for up to `spinBudget`, offering the processor
  /// to other threads every `spinBetweenYields`. Falling asleep and being woken costs each side
  /// a trip through the kernel (about 5 µs per cross-thread round trip on this machine), so
  /// when a reply is about to come, as it is when a coroutine awaits another thread's answer,
  /// spinning is much faster. This is the runtime's only spin. The budget adapts: it is spent only after a
  /// recent sleep ended early by another thread's work (see `waitForWork`), and halves after
  /// every spin that found nothing, so a loop whose coroutines wait for timers or long jobs
  /// soon does not spin at all. It never spins past the nearest timer's deadline.
  ///
  /// A loop of a group spins only with one of the group's spin slots (see
  /// `CoroutineLoopGroup.takeSpinSlot`); without one it sleeps at once.
  ///
  /// Returns true when work arrived (or a timer fell due) and the loop should run it.
  private func spinForRemoteWork() -> Bool {
    guard spinBudget > 0, liveCoroutines > 0 || groupReference != nil else { return false }
    let start = monotonicNanoseconds()
    var end = start &+ spinBudget
    if let deadline = timers.firstDeadline {
      if deadline <= start { return true }
      end = min(end, deadline)
    }
    if let group = groupReference, !group._withUnsafeGuaranteedRef({ $0.takeSpinSlot() }) {
      return false
    }
    defer { groupReference?._withUnsafeGuaranteedRef { $0.giveBackSpinSlot() } }
    var nextYield = start &+ Self.spinBetweenYields
    while true {
      for _ in 0..<64 {
        if remoteWorkMayWait || watchedNeedsAttention { return true }
      }
      let now = monotonicNanoseconds()
      if now >= end { break }
      // Every coroutine finished (one may have finished on another thread): stop watching.
      if liveCoroutines == 0, groupReference == nil { break }
      if now >= nextYield {
        sched_yield()
        nextYield = now &+ Self.spinBetweenYields
      }
    }
    spinBudget = spinBudget / 2 >= 1_000 ? spinBudget / 2 : 0
    return false
  }
}
