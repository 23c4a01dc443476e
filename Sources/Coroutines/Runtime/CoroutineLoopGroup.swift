import CLinux
import CUContext
import Foundation
import Synchronization

/// A scheduler for every core: one ``CoroutineLoop`` per thread, each with its own poller, and
/// coroutines that move between them.
///
/// ```swift
/// let group = CoroutineLoopGroup(threads: 2)
/// let total = try CoroutineLoop.run { () -> Int in
///   let halves = [0, 1].map { half in
///     co_launch(on: group) { (0..<1_000_000).reduce(half, &+) }  // both cores at once
///   }
///   return try halves.reduce(0) { try $0 &+ co_await($1) }
/// }
/// group.shutdown()  // lets the group's coroutines finish, then joins its threads
/// ```
///
/// A coroutine launched on the group starts on one of its loops: the calling thread's, when
/// that thread runs one of them (so a coroutine's children start beside it), else the next in
/// turn. Its scheduler is the group, and it may resume on another loop than the one it
/// suspended on: a coroutine woken by a coroutine of another loop resumes on the waker's loop,
/// and a loop with nothing to run takes half of the ready coroutines of a busy one. Two kinds
/// stay where they are: a coroutine on a shared stack (its stack belongs to its loop), and one
/// waiting in its loop's poller or timers (``co_wait(fd:for:timeout:)``, ``co_delay(_:)``),
/// which resumes on that loop.
///
/// Code that may run on a group's coroutines must not rely on the thread: no thread-locals
/// (use ``CoLocal``), no `Mutex` or `NSLock` held across a suspension (use ``CoMutex``).
/// ``CoroutineLoop/current`` tells a coroutine which loop runs it now.
///
/// The group's threads keep it alive until ``shutdown()``: a group whose last reference is
/// dropped without it is never freed, and its loops keep running (asleep when idle, using no
/// processor) until the process exits. After ``shutdown()`` returns, the threads have let go of
/// the group; its loops, if the program still holds them, refuse all work, and never reach the
/// group once it is gone.
public final class CoroutineLoopGroup: CoroutineScheduler, CoroutineAccounting,
  @unchecked Sendable
{
  // `loops` never changes; the rest is atomics.

  /// The group's loops, one per thread, each running from the group's creation to its shutdown.
  /// Launching on one of them (`co_launch(on: group.loops[0])`) keeps the coroutine on it.
  ///
  /// Only the group's own thread runs a loop: ``CoroutineLoop/run()`` on one stops the program
  /// with a message. After ``shutdown()`` a loop takes work as the group does (see there), and
  /// once it has ended it refuses work from everyone.
  public let loops: [CoroutineLoop]
  private let nextLoop = Atomic<Int>(0)
  /// Coroutines launched on the group and not yet finished, counted by each loop's thread on
  /// its own tally (`tallies[loop.groupIndex]`) and by other threads on the last one.
  private let tallies: UnsafeMutablePointer<LiveTally>
  /// Loops asleep in their pollers: a loop with more ready coroutines than it can run at once
  /// wakes one of them to take some.
  let sleepingLoops = Atomic<Int>(0)
  /// Loops spinning for other threads' work before they sleep (see `takeSpinSlot()`).
  let spinningLoops = Atomic<Int>(0)
  /// The most loops that spun at once so far: for tests.
  let mostSpinningLoops = Atomic<Int>(0)
  /// How many loops may spin at once: half the loops, and at least one.
  let spinSlots: Int
  private let isShutDown = Atomic<Bool>(false)
  /// Left by each thread as its loop ends.
  private let finished = DispatchGroup()

  /// Starts `threads` threads, each running one loop until ``shutdown()``.
  ///
  /// - Parameter threads: How many loops (and threads); one per core by default. Zero or less
  ///   stops the program with a message naming the value.
  public init(threads: Int = ProcessInfo.processInfo.activeProcessorCount) {
    coPrecondition(
      threads > 0, "CoroutineLoopGroup(threads:): \(threads) threads; a group needs at least one")
    self.loops = (0..<threads).map { _ in CoroutineLoop(inGroup: ()) }
    self.spinSlots = max(1, threads / 2)
    tallies = LiveTally.allocate(threads + 1)
    for (index, loop) in loops.enumerated() { loop.joinGroup(self, index: index) }
    for (index, loop) in loops.enumerated() {
      finished.enter()
      // The thread holds the group while its loop runs, and lets go of it before it leaves
      // `finished` (held on its own for that): once `shutdown()` returns, the group is held by
      // its callers alone, and freed when they let go.
      let held = Unmanaged.passRetained(self)
      let finished = finished
      let thread = Thread {
        loop.runOnThisThread()
        held.release()
        finished.leave()
      }
      thread.name = "coroutines.group.\(index)"
      thread.start()
    }
  }

  deinit { tallies.deallocate() }

  /// The loop that the next placed work goes to, in turn: for spreading listeners or other
  /// long-lived coroutines one per loop.
  public func next() -> CoroutineLoop {
    loops[nextLoop.add(1, ordering: .relaxed).oldValue % loops.count]
  }

  /// The loop a new coroutine of the group starts on: the calling thread's, if it runs one of
  /// the group's loops, else the next in turn.
  func placementLoop() -> Unmanaged<CoroutineLoop> {
    if let loop = currentLoop { return loop }
    return Unmanaged.passUnretained(next())  // `loops` holds it
  }

  /// The group's address, to compare with a loop's `groupReference` without retaining either.
  private var identity: UnsafeMutableRawPointer { Unmanaged.passUnretained(self).toOpaque() }

  /// The calling thread's loop, if it is one of the group's.
  var currentLoop: Unmanaged<CoroutineLoop>? {
    guard let loop = CoroutineLoop.currentUnretained,
      loop._withUnsafeGuaranteedRef({ $0.groupReference?.toOpaque() == identity })
    else { return nil }
    return loop
  }

  /// True when the calling thread runs one of the group's loops.
  var isCurrent: Bool { currentLoop != nil }

  // MARK: Scheduling

  /// Runs `job` on the calling thread's loop if it is one of the group's, else on the next in
  /// turn.
  ///
  /// After ``shutdown()`` only the group's own threads may schedule jobs; a job from elsewhere
  /// stops the program with a message, as it could never run.
  public func schedule(_ job: @escaping @Sendable () -> Void) {
    guard offer(job) else {
      coStop(Self.refusedFromOutside("CoroutineLoopGroup.schedule(_:)"))
    }
  }

  /// ``schedule(_:)`` without the stop: false, queueing nothing, where `schedule` would stop
  /// (see `CoroutineLoop.offer(_:)`).
  func offer(_ job: @escaping @Sendable () -> Void) -> Bool {
    if let loop = currentLoop { return loop._withUnsafeGuaranteedRef { $0.offer(job) } }
    // From outside, the job counts as a coroutine of the group until it has run, so that a
    // shutdown racing with it waits for it rather than ending the loop it was queued on;
    // counted before the look at the shutdown, which a loop about to end makes after it.
    coroutineCreated()
    guard !isShutDown.load(ordering: .sequentiallyConsistent) else {
      coroutineFinished()
      return false
    }
    next().scheduleAdmitted { [self] in
      job()
      coroutineFinished()
    }
    return true
  }

  /// Runs `job` on the calling thread's loop (or the next in turn) once `seconds` have passed.
  ///
  /// After ``shutdown()``, as for ``schedule(_:)``, a timer from outside the group stops the
  /// program with a message.
  public func schedule(after seconds: Double, _ job: @escaping @Sendable () -> Void)
    -> any CoroutineTimer
  {
    checkOpen(from: "CoroutineLoopGroup.schedule(after:_:)")
    return placementLoop()._withUnsafeGuaranteedRef { $0.schedule(after: seconds, job) }
  }

  private func checkOpen(from call: StaticString) {
    coPrecondition(
      !isShutDown.load(ordering: .acquiring) || isCurrent, Self.refusedFromOutside(call))
  }

  /// What work sent from outside to a shut-down group stops with, naming `call`.
  private static func refusedFromOutside(_ call: StaticString) -> String {
    "\(call): the group was shut down; its loops take no work from outside"
  }

  /// Queues the first run of `coroutine`, launched on the group: on its loop, or not at all if
  /// the group was shut down and the launch comes from outside (then its task fails).
  func enqueueStart(_ coroutine: Coroutine, on loop: CoroutineLoop, stealable: Bool) {
    if isShutDown.load(ordering: .sequentiallyConsistent), !isCurrent {
      coroutine.refuseStart(.schedulerShutDown)
      return
    }
    guard stealable else { return loop.enqueueStart(coroutine) }
    let job = StealableJob(start: Unmanaged.passUnretained(coroutine))
    if loop.isCurrent {
      loop.enqueueStealable(job)
    } else {
      loop.enqueueFromElsewhere(job)
    }
  }

  /// Lets a coroutine of another scheduler come to the group (``co_await(on:_:)``): it counts
  /// among the group's coroutines until `visitorLeft()`, so that a shutdown waits for it, as
  /// for the group's own. Throws ``CoroutineError/schedulerShutDown`` when the group was shut
  /// down and the caller is outside it.
  func admitVisitor() throws(CoroutineError) {
    // Counted before the look at `isShutDown`, as a launch is (see `enqueueStart`).
    coroutineCreated()
    if isShutDown.load(ordering: .sequentiallyConsistent), !isCurrent {
      coroutineFinished()
      throw .schedulerShutDown
    }
  }

  /// A visitor admitted by `admitVisitor()` is leaving.
  func visitorLeft() { coroutineFinished() }

  // MARK: Waking idle loops

  /// Wakes a sleeping loop of the group, if there is one, to take work from `busy`.
  func wakeIdleLoop(besides busy: CoroutineLoop) {
    guard sleepingLoops.load(ordering: .sequentiallyConsistent) > 0 else { return }
    for loop in loops where loop !== busy {
      if loop.wakeIfAsleep() { return }
    }
  }

  // MARK: Spinning

  /// Takes one of the group's spin slots for a loop about to spin, if one is free; a loop that
  /// gets none sleeps at once. Go's scheduler lets at most half its busy processors spin
  /// looking for work: more spinners catch work no sooner, and take cores from the threads
  /// that do it. A group of one, like a lone loop, may spin.
  func takeSpinSlot() -> Bool {
    var spinning = spinningLoops.load(ordering: .relaxed)
    while spinning < spinSlots {
      let (taken, found) = spinningLoops.compareExchange(
        expected: spinning, desired: spinning + 1, ordering: .relaxed)
      if taken {
        _ = mostSpinningLoops.max(spinning + 1, ordering: .relaxed)
        return true
      }
      spinning = found
    }
    return false
  }

  /// Gives back a slot taken with `takeSpinSlot()`, once the loop stops spinning.
  func giveBackSpinSlot() {
    _ = spinningLoops.subtract(1, ordering: .relaxed)
  }

  // MARK: Accounting

  func coroutineCreated() { count(finished: false) }

  func coroutineFinished() { count(finished: true) }

  private func count(finished: Bool) {
    if let loop = currentLoop {
      let index = loop._withUnsafeGuaranteedRef { $0.groupIndex }
      tallies[index].countHere(finished: finished)
      return
    }
    // Sequentially consistent, with the look at `isShutDown` in `enqueueStart` that follows a
    // creation: a launch that finds the group open is counted before any loop can see it idle.
    tallies[loops.count].countShared(finished: finished)
    if finished, isShutDown.load(ordering: .sequentiallyConsistent), liveCount == 0 { wakeAll() }
  }

  /// Coroutines launched on the group and not yet finished (exact once the group is quiet).
  var liveCount: Int { LiveTally.sum(tallies, count: loops.count + 1) }

  /// True once ``shutdown()`` was called and every coroutine of the group has finished: each
  /// loop then ends as soon as it has nothing of its own left to run.
  var mayEnd: Bool {
    // Sequentially consistent, like the loop's `sleeping` flag: of a loop falling asleep and
    // `shutdown()`, at least one side sees the other.
    isShutDown.load(ordering: .sequentiallyConsistent) && liveCount == 0
  }

  /// A loop found the group may end and ends: the others may have looked at the tallies before
  /// the last coroutine finished on it, and gone to sleep.
  func loopEnded() {
    atomicMemoryFence(ordering: .sequentiallyConsistent)
    wakeAll()
  }

  private func wakeAll() {
    for loop in loops { _ = loop.wakeIfAsleep() }
  }

  // MARK: Shutting down

  /// Lets the group's coroutines finish, then ends its loops and their threads.
  ///
  /// From then on, work sent from outside the group (from a thread that runs none of its loops)
  /// to the group or to one of its loops fails at once rather than being lost:
  /// `co_launch(on:)` fails the task with ``CoroutineError/schedulerShutDown``,
  /// ``co_await(on:_:)`` throws it without leaving, and ``schedule(_:)`` or
  /// ``schedule(after:_:)`` stops the program with a message naming the call. The group's own
  /// coroutines may still launch children, hop between its loops and schedule work, so that
  /// what runs can finish.
  ///
  /// It waits for every coroutine of the group and of its loops, parked ones included (woken as
  /// usual), and for coroutines from elsewhere that came with ``co_await(on:_:)`` until they
  /// leave. A server first stops accepting and ends or cancels its long-lived coroutines (its
  /// listeners, its connections): else this waits for them. Each loop ends for good once the
  /// group's coroutines have finished and it has nothing of its own left; work sent to a loop
  /// that has ended fails the same way, from anywhere.
  ///
  /// Called from outside the group, it returns once every loop has ended and the threads have
  /// let go of the group. Called from one of the group's own threads (inside one of its
  /// coroutines), it cannot wait for its own thread: it returns at once, and the loops end as
  /// they would have. Calling it again does nothing more (but waits, from outside, like the
  /// first call).
  public func shutdown() {
    for loop in loops { loop.groupIsShutDown.store(true, ordering: .sequentiallyConsistent) }
    isShutDown.store(true, ordering: .sequentiallyConsistent)
    wakeAll()
    if !isCurrent { finished.wait() }
  }
}
