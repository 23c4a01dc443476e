import CUContext
import Foundation
import Synchronization

/// How a loop looks at its descriptors: now and then while it is busy, and by sleeping in its
/// poller when it has nothing to run.
extension CoroutineLoop {
  /// Asks the poller, without sleeping, for descriptors that became ready, in a loop that never
  /// runs out of jobs: after ``jobsBetweenPolls`` jobs, or ``busyPollInterval`` of running them,
  /// whichever comes first; a loop that runs out asks it each time it would sleep.
  ///
  /// A system call per turn would cost a loop of quick jobs, such as `co_delay(0)` round trips,
  /// several times their own price, hence the count; but a coroutine that computes in slices
  /// and yields runs one job per turn, and counted alone its slices delayed every wake-up by a
  /// hundred of them, hence the clock. N such coroutines make a turn N slices long, hence the
  /// looks within a turn (`lookWithinTurn`), due by the same count. Go's scheduler likewise
  /// polls the network when it has not for a while (its monitor, after 10 ms); NIO's loop polls
  /// on every tick.
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
  func pollWhileBusy(afterRunning ran: Int) {
    jobsSincePoll &+= ran
    if jobsSincePoll >= nextClockAt { lookWhileBusy(withinTurn: false) }
  }

  /// Jobs the busy loop may run before its next look (at least one).
  var jobsUntilLook: Int { max(nextClockAt &- jobsSincePoll, 1) }

  /// The busy loop's look in the middle of a turn, `ran` jobs after the last one counted, the
  /// turn's `ranInTurn`-th job: returns the count of the turn's jobs at which to look next
  /// (`.max`: none, no descriptor is watched any more).
  ///
  /// A turn runs the jobs queued at its start, so N coroutines that compute in slices and
  /// yield make it N slices long; looking only between turns, a descriptor's wake-up waited
  /// for the rest of the turn (a hundred slices with a hundred of them). The look reads the
  /// clock even with timers pending: their reading is the turn's start.
  @inline(never)
  func lookWithinTurn(afterRunning ran: Int, _ ranInTurn: Int) -> Int {
    jobsSincePoll &+= ran
    lookWhileBusy(withinTurn: true)
    return poller.waiterCount > 0 ? ranInTurn &+ jobsUntilLook : .max
  }

  /// `pollWhileBusy` at the count of its next look: asks the poller if it is time, reading the
  /// clock unless the timers did at the start of this turn, and sets the count of the next
  /// look.
  @inline(never)
  private func lookWhileBusy(withinTurn: Bool) {
    guard withinTurn || timers.isEmpty else {
      // The timers read the clock at every turn's start; only the count is left to watch
      // between turns, and the stride, for the looks within the next turn.
      if jobsSincePoll >= Self.jobsBetweenPolls { pollNow() }
      nextClockAt = min(jobsSincePoll &+ clockStride, Self.jobsBetweenPolls)
      return
    }
    let now = monotonicNanoseconds()
    if now &- lastClock < Self.busyPollInterval / 16 {
      clockStride = min(clockStride &* 2, Self.longestClockStride)
    } else {
      clockStride = 1
    }
    lastClock = now
    clockReading = now
    if jobsSincePoll >= Self.jobsBetweenPolls || now &- lastPoll >= Self.busyPollInterval {
      lastPoll = now
      pollNow()
    }
    nextClockAt = min(jobsSincePoll &+ clockStride, Self.jobsBetweenPolls)
  }

  /// The look by time of a turn whose timers read the clock (`now`): the loop may not be busy,
  /// or have descriptors to watch, and then it only notes the time.
  @inline(never)
  func pollOnTime(_ now: UInt64) {
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
    // The next look is counted from this one, wherever it was asked from (a turn's start looks
    // on the timers' reading): counted from an earlier look, it fell past a turn's last job.
    nextClockAt = clockStride
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
  func waitForWork() -> Bool {
    // The sleeps armed in the turn just run get their deadlines before the loop looks at them.
    if !unstampedSleeps.isEmpty { _ = stampSleeps() }
    while timers.firstIsDead { _ = timers.removeFirst() }
    // Spinning watches only other threads' work: with descriptors to watch, the loop sleeps in
    // the poller at once, which sees both.
    if poller.waiterCount == 0, spinForRemoteWork() { return true }
    sleeping.store(true, ordering: .sequentiallyConsistent)
    groupReference?._withUnsafeGuaranteedRef {
      _ = $0.sleepingLoops.add(1, ordering: .sequentiallyConsistent)
    }
    defer {
      groupReference?._withUnsafeGuaranteedRef {
        _ = $0.sleepingLoops.subtract(1, ordering: .relaxed)
      }
    }
    if !inbox.isEmpty || !(ready?.overflowIsEmpty ?? true) {
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
    clockReading = awake
    clockStride = 1
    nextClockAt = 1
    if remoteWorkMayWait, awake &- asleep <= Self.longestSpin {
      // Another thread's work came soon after the loop fell asleep: spinning would have
      // caught it without the two trips through the kernel, so spin next time.
      spinBudget = Self.longestSpin
    }
    return true
  }
}
