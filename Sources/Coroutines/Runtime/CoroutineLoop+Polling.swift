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
    if jobsSincePoll >= nextClockAt { lookWhileBusy() }
  }

  /// Jobs the busy loop may run before its next look (at least one).
  var jobsUntilLook: Int { max(nextClockAt &- jobsSincePoll, 1) }

  /// The busy loop's look in the middle of a turn, `ran` jobs after the last one counted, the
  /// turn's `ranInTurn`-th job: returns the count of the turn's jobs at which to look next
  /// (`.max`: none, no descriptor is watched any more), and how many jobs the look added to the
  /// turn.
  ///
  /// A turn runs the jobs queued at its start, so N coroutines that compute in slices and
  /// yield make it N slices long; looking only between turns, a descriptor's wake-up waited
  /// for the rest of the turn (a hundred slices with a hundred of them). The look reads the
  /// clock even with timers pending: their reading is the turn's start. The coroutines it wakes
  /// run next, behind those an earlier look of the turn woke (first woken, first run), and are
  /// added to the turn rather than taking the places of the jobs queued at its start, which
  /// would wait for a later turn, again and again while a busy server's sockets keep waking
  /// coroutines. So that the turn still ends (timers fire and other threads' jobs come in
  /// between turns), it grows by at most `turnGrowthLeft`; beyond, the woken wait at the back.
  @inline(never)
  func lookWithinTurn(afterRunning ran: Int, _ ranInTurn: Int) -> (lookAt: Int, added: Int) {
    jobsSincePoll &+= ran
    // Only while the turn's jobs are long (a sixteenth of the interval each, on average since
    // its previous look; its first look only notes the time): coroutines that compute in
    // slices. A turn of many quick jobs, such as a busy server's, is a queue of coroutines that
    // its sockets woke, served first woken, first served; the ones its looks would wake ran
    // ahead of them, and with a server's thousands of connections its tail latency doubled.
    // Quick jobs leave the look to the end of the turn, and the next one here comes after
    // twice as many (up to `longestClockStride`), so that they cost few clock readings.
    let now = monotonicNanoseconds()
    let longJobs =
      lookInTurnAt > 0 && now &- lookInTurnAt >= Self.busyPollInterval / 16 &* UInt64(ran)
    lookInTurnAt = now
    guard longJobs else {
      lookInTurnStride = min(lookInTurnStride &* 2, Self.longestClockStride)
      return (ranInTurn &+ lookInTurnStride, 0)
    }
    lookInTurnStride = 1
    let added = lookWhileBusy(withinTurnAt: ranInTurn, at: now)
    return (poller.waiterCount > 0 ? ranInTurn &+ jobsUntilLook : .max, added)
  }

  /// `pollWhileBusy` at the count of its next look: asks the poller if it is time, reading the
  /// clock unless the timers did at the start of this turn, and sets the count of the next
  /// look. `ranInTurn`: the count of the turn's jobs run, for a look within a turn (nil between
  /// turns), whose clock reading is `reading`; returns the jobs the look added to the turn.
  @inline(never)
  @discardableResult
  private func lookWhileBusy(withinTurnAt ranInTurn: Int? = nil, at reading: UInt64? = nil)
    -> Int
  {
    guard ranInTurn != nil || timers.isEmpty else {
      // The timers read the clock at every turn's start; only the count is left to watch
      // between turns, and the stride, for the looks within the next turn.
      if jobsSincePoll >= Self.jobsBetweenPolls { pollNow() }
      nextClockAt = min(jobsSincePoll &+ clockStride, Self.jobsBetweenPolls)
      return 0
    }
    let now = reading ?? monotonicNanoseconds()
    let elapsed = now &- lastClock
    if elapsed < Self.busyPollInterval / 16 {
      clockStride = min(clockStride &* 2, Self.longestClockStride)
    } else {
      clockStride = 1
    }
    lastClock = now
    clockReading = now
    var added = 0
    if jobsSincePoll >= Self.jobsBetweenPolls || now &- lastPoll >= Self.busyPollInterval {
      lastPoll = now
      added = pollNow(withinTurnAt: ranInTurn)
    }
    nextClockAt = min(jobsSincePoll &+ clockStride, Self.jobsBetweenPolls)
    return added
  }

  /// The look by time of a turn whose timers read the clock (`now`): the loop may not be busy,
  /// or have descriptors to watch, and then it only notes the time.
  @inline(never)
  func pollOnTime(_ now: UInt64) {
    lastPoll = now
    if poller.waiterCount > 0 { pollNow() }
  }

  /// Asks the poller for ready descriptors without sleeping (the caller notes the time, if it
  /// has it), and puts the coroutines it woke before the jobs already queued: between turns,
  /// at the front; within a turn (`ranInTurn`: its jobs run so far), behind those its earlier
  /// looks woke, if the turn may still grow by as many (see `lookWithinTurn`). Returns how many
  /// jobs it added to the turn.
  ///
  /// Queued behind them, a coroutine woken by its descriptor would wait for another slice of
  /// every coroutine that computes and yields (`co_delay(0)` queues it again at once): a
  /// socket's wake-up would take the rest of the current slice and a whole one more. A yield
  /// means "the others first", and the woken are among the others.
  @discardableResult
  private func pollNow(withinTurnAt ranInTurn: Int? = nil) -> Int {
    jobsSincePoll = 0
    // The next look is counted from this one, wherever it was asked from (a turn's start looks
    // on the timers' reading): counted from an earlier look, it fell past a turn's last job.
    nextClockAt = clockStride
    let queued = localJobs.count
    poller.poll(timeout: 0)
    let woken = localJobs.count &- queued
    guard woken > 0, queued > 0 else { return 0 }
    guard let ranInTurn else {
      localJobs.moveLastToFront(woken)
      return 0
    }
    guard woken <= turnGrowthLeft else { return 0 }
    turnGrowthLeft &-= woken
    let promotedAhead = max(promotedUntil &- ranInTurn, 0)
    localJobs.moveLast(woken, after: promotedAhead)
    promotedUntil = ranInTurn &+ promotedAhead &+ woken
    return woken
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
