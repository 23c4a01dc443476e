import CLinux
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
  let sleeping = Atomic<Bool>(false)
  /// True for the shared poller's loop, which serves coroutines of other schedulers and never
  /// ends for lack of its own.
  let keepsRunning: Bool
  /// Jobs run since the poller was last asked, while the loop had no time to sleep: a loop busy
  /// with jobs still looks at its descriptors every so often.
  @exclusivity(unchecked) var jobsSincePoll = 0
  // `@exclusivity(unchecked)`: each of these is confined to the loop's thread, and no
  // access to one of them calls out to code that could touch it again, so the dynamic check
  // could never fire. It is not free: inside a coroutine each check consults the thread's access
  // set through a thread-local lookup, and it was a fifth of a loop round trip.
  /// Jobs from other threads.
  let inbox = RemoteInbox()
  @exclusivity(unchecked) var localJobs = JobQueue()
  @exclusivity(unchecked) var timers = TimerHeap()
  /// `co_delay` sleeps in `timers` that have neither rung nor ended early. Only the loop's own
  /// thread arms, wakes and ends them, so a plain counter does: an atomic's locked add right
  /// after switching into a cold coroutine waited for that switch's stores to drain.
  @exclusivity(unchecked) var sleepers = 0
  /// `co_delay` sleeps armed since the loop last read the clock for its timers, waiting for
  /// their deadlines (see `stampSleeps`). Loop thread only.
  @exclusivity(unchecked) var unstampedSleeps: [UnstampedSleep] = []
  /// The insertion order of the next entry of `timers`, for equal deadlines (loop thread only:
  /// a timer from another thread gets its number when it reaches the heap).
  @exclusivity(unchecked) var nextSequence: UInt64 = 0
  /// Timers made by ``schedule(after:_:)`` that have neither fired nor been cancelled: made
  /// and cancelled on any thread, so atomic.
  let pendingTimers = Atomic<Int>(0)
  /// The loop's live coroutines, as counted by other threads (see `liveCoroutines`).
  let remoteLive = Atomic<Int>(0)
  /// The same, as counted on the loop's own thread while it runs (its coroutines are mostly
  /// created and finished there): a plain counter, as an atomic's two locked instructions per
  /// coroutine each waited for the stores before them. It may go below zero when a coroutine
  /// counted elsewhere finishes here. Another thread that runs the loop later sees it through
  /// `running`'s release and acquire.
  @exclusivity(unchecked) var localLive = 0
  let running = Atomic<Bool>(false)
  /// How long the loop may spin, watching for remote work, before it sleeps (nanoseconds;
  /// see `spinForRemoteWork`). Touched only by the thread inside `run()`.
  @exclusivity(unchecked) var spinBudget: UInt64 = 0
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
  let hasEnded = Atomic<Bool>(false)
  // Last, so that the fields the quick paths touch keep their places (and cache lines).
  /// When the poller was last asked (monotonic nanoseconds): a loop busy with long jobs looks
  /// at its descriptors by time too.
  @exclusivity(unchecked) var lastPoll: UInt64 = 0
  /// When a busy loop last read the clock, how many jobs it lets run between two readings, and
  /// at which count of `jobsSincePoll` it reads it next (see `pollWhileBusy`).
  @exclusivity(unchecked) var lastClock: UInt64 = 0
  @exclusivity(unchecked) var clockStride = 1
  @exclusivity(unchecked) var nextClockAt = 1
  /// When the current turn last looked within itself (0: not yet), for telling long jobs from
  /// quick ones (see `lookWhileBusy`).
  @exclusivity(unchecked) var lookInTurnAt: UInt64 = 0
  @exclusivity(unchecked) var lookInTurnStride = 1
  /// For the looks within a turn (`lookWithinTurn`): the count of the turn's jobs at which the
  /// jobs its looks moved to the front have all run, and how many more jobs such looks may
  /// still add to the turn.
  @exclusivity(unchecked) var promotedUntil = 0
  @exclusivity(unchecked) var turnGrowthLeft = 0
  /// The loop's latest reading of the monotonic clock, which a parking coroutine records as
  /// the start of its wait (see `Coroutine.armWait`): taken at every turn with timers, at each
  /// look at the descriptors, on waking from the poller, and every `jobsBetweenClockReadings`
  /// jobs of a loop that reads it for nothing else.
  @exclusivity(unchecked) var clockReading: UInt64 = 0
  /// Jobs run since `clockReading` was taken, while nothing else reads the clock.
  @exclusivity(unchecked) var jobsSinceClockReading = 0

  /// Where this loop's timers report their cancellation.
  let cancellations = OwnerHandle<CoroutineLoop>()

  /// Creates a loop. Nothing runs until a thread calls ``run()``.
  public init() {
    keepsRunning = false
    ready = nil
    cancellations.attach(self)
  }

  /// Creates a loop whose ``run()`` returns only when the process ends, for the shared poller.
  init(keepsRunning: Bool) {
    self.keepsRunning = keepsRunning
    ready = nil
    cancellations.attach(self)
  }

  /// Creates a loop for a group (see `joinGroup(_:index:)`).
  init(inGroup: Void) {
    keepsRunning = false
    ready = StealQueue()
    cancellations.attach(self)
  }

  deinit {
    cancellations.detach()
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
}
