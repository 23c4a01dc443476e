import CLinux
import CUContext
import Foundation
import Synchronization

/// A loop's turns: take other threads' work, fire due timers, run the jobs queued at the turn's
/// start, and sleep when nothing is left.
extension CoroutineLoop {
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
    clockReading = monotonicNanoseconds()
    // Whether the poller watched descriptors when last asked (after the last turn, or after
    // sleeping in it): a register rather than a load through the poller at every turn's start.
    var watching = false
    while true {
      takeRemoteWork()
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
      if !watching {
        while remaining > 0, let job = localJobs.popFirst() {
          localJobs.prefetchUpcoming(batchStart: ran & 3 == 0)
          job.run(on: Unmanaged.passUnretained(self).toOpaque())
          remaining -= 1
          ran &+= 1
        }
      } else {
        // With descriptors to watch, the busy loop's looks are due by a count of jobs inside
        // the turn as well as after it: N coroutines that compute in slices and yield make a
        // turn N slices long (see `lookWithinTurn`). A loop of its own, so that a loop without
        // descriptors keeps one counter across its jobs' switches (a `co_delay(0)` round trip
        // took a tenth longer with the look's count and compare in it).
        var lookAt = 1
        var looked = 0  // the jobs of this turn counted by a look already
        promotedUntil = 0
        turnGrowthLeft = max(remaining, Self.jobsBetweenPolls)
        lookInTurnAt = 0
        lookInTurnStride = 1
        while remaining > 0, let job = localJobs.popFirst() {
          localJobs.prefetchUpcoming(batchStart: ran & 3 == 0)
          job.run(on: Unmanaged.passUnretained(self).toOpaque())
          remaining -= 1
          ran &+= 1
          if ran == lookAt {
            let look = lookWithinTurn(afterRunning: ran &- looked, ran)
            lookAt = look.lookAt
            remaining &+= look.added
            looked = ran
          }
        }
        ran &-= looked  // from here on, the jobs no look has counted
      }
      if let ready { ran &+= runReadyCoroutines(ready) }
      if moreDue || !localJobs.isEmpty || ready?.isEmpty == false {
        watching = poller.waiterCount > 0
        if watching {
          pollWhileBusy(afterRunning: ran)
        } else {
          // With timers pending the turn read the clock already; counting regardless costs
          // less than asking.
          jobsSinceClockReading &+= ran
          if jobsSinceClockReading >= Self.jobsBetweenClockReadings { readClock() }
        }
        continue
      }
      if ready != nil, findGroupWork() { continue }
      if !waitForWork() { break }
      watching = poller.waiterCount > 0
    }
    timers = TimerHeap()
    // `waitForWork` dated every sleep before it found the loop idle; none is left to release.
    coPrecondition(unstampedSleeps.isEmpty, "CoroutineLoop.run(): the loop ended with sleeps")
    if ready != nil { returnStashedStacks() }
  }

  private func takeRemoteWork() {
    // A relaxed look suffices: work missed here is found by `waitForWork`, which looks again
    // before sleeping; the exchange that empties the inbox, and the overflow's lock, order
    // their contents. Not bound with `if let`: that retained and released the ready queue at
    // every turn, on the line that thieves read its head and tail from.
    if ready?.overflowMayHoldWork == true { takeOverflowBatch() }
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
    // The sleeps armed since the last reading are dated by this one (see `addSleep`).
    let now = unstampedSleeps.isEmpty ? monotonicNanoseconds() : stampSleeps()
    clockReading = now
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

  /// Takes `clockReading` in a busy loop that has no other reason to read the clock.
  @inline(never)
  private func readClock() {
    clockReading = monotonicNanoseconds()
    jobsSinceClockReading = 0
  }

  /// How many jobs a busy loop with neither timers nor descriptors runs between two readings of
  /// the clock for `clockReading`: a reading costs about as much as a hundred quick jobs' worth
  /// of bookkeeping on a virtual machine, so it is spread thin; a park then dates its wait to
  /// within this many jobs.
  static let jobsBetweenClockReadings = 256

  /// How many timers one turn fires at most: enough that the turns' own cost (a clock reading,
  /// a look for other threads' work) stays small beside the jobs, few enough that the records
  /// firing touched are still cached when the batch's jobs run.
  static let timerBatch = 64

  /// How many timers ahead of the one firing `fireDueTimers` warms the caches for.
  static let timerPrefetchDistance = 8
}
