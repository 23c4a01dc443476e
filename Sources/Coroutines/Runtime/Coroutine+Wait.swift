import CLinux
import CUContext

/// A coroutine's waits: arming one, parking until a waker claims it, waking, cancelling, and
/// the sleeps of `co_delay` in its loop's timers.
extension Coroutine {
  // MARK: Waiting (called on the coroutine's own stack)

  /// Arms a new wait and returns its generation; a waker holding it may wake the coroutine once.
  /// `reason` says what the coroutine waits for; it is recorded with the clock's reading, for
  /// snapshots (see ``CoroutineSnapshot/waitReason``).
  @usableFromInline
  func armWait(_ reason: CoroutineWaitReason) -> UInt64 {
    if let loop {
      // The loop's latest reading, not the clock's: reading the clock costs 20 to 150 ns
      // (more under a hypervisor), several times a park's own price. The loop reads it at
      // least every few hundred jobs and at every turn with timers or sockets (see
      // `clockReading`), so a wait's start is known to about a millisecond, as Go's
      // `waitsince` is known only to its last collection.
      registryEntry.notePark(reason, at: loop._withUnsafeGuaranteedRef { $0.clockReading })
    } else {
      noteParkOffLoop(reason)
    }
    let generation = (waitWord.load(ordering: .relaxed) >> 1) &+ 1
    // Sequentially consistent, like `cancel()`: of the arm here and the flag there, at least
    // one side sees the other (see `endWaitIfCancelled`).
    waitWord.store(generation << 1 | 1, ordering: .sequentiallyConsistent)
    return generation
  }

  /// `armWait`'s record for a coroutine that does not resume on a ``CoroutineLoop``: on a test
  /// loop, its virtual clock; elsewhere (a dispatch queue), the coarse monotonic clock.
  @inline(never)
  func noteParkOffLoop(_ reason: CoroutineWaitReason) {
    // A test loop's coroutine parks only while that loop is driven on this thread: comparing
    // addresses spares a dynamic cast of its scheduler (and a retain) per park.
    if away == nil, let driven = CoroutineTestLoop.currentPointer, driven == homeAddress {
      let now = Unmanaged<CoroutineTestLoop>.fromOpaque(driven)._withUnsafeGuaranteedRef {
        $0.clockNanoseconds
      }
      registryEntry.notePark(reason.onVirtualClock, at: now)
    } else {
      registryEntry.notePark(reason, at: coarseMonotonicNanoseconds())
    }
  }

  /// Ends the armed wait with cancellation if `cancel()` ran before it could see the wait.
  /// Without this, a cancel landing between the caller's cancellation check and `armWait()`
  /// would find nothing to wake, and the coroutine would sleep through it.
  @usableFromInline
  func endWaitIfCancelled(_ generation: UInt64) {
    if cancelled.load(ordering: .sequentiallyConsistent), claim(generation) { wake() }
  }

  /// Switches out until the armed wait is claimed and woken; returns at once if it already was.
  func park() {
    if let fiber = fiberToPark() { cu_fiber_suspend(fiber) }
  }

  /// `park()` up to its switch: the fiber to suspend, or nil if the wait was already woken.
  /// Inlinable callers suspend it themselves (see "Switching").
  @usableFromInline
  func fiberToPark() -> OpaquePointer? {
    // A wake-up from another thread that comes while the idle loop spins here costs no switch
    // (see CoroutineLoop+Spin.swift).
    if let loop, loop._withUnsafeGuaranteedRef({ $0.isCurrent && $0.spinBudget > 0 }) {
      loop._withUnsafeGuaranteedRef { $0.spinBeforeParking(self) }
    }
    // Only a waker's `running → wokenEarly` can have changed the state, and nothing changes it
    // back but this thread: a plain load decides, and most parks skip the locked instruction,
    // which right after a switch into a cold coroutine waited for that switch's stores. A wake
    // that lands after the load is caught by the compare-and-swap in `switchedBack`.
    if state.load(ordering: .acquiring) == .wokenEarly, compareAndSwap(.wokenEarly, .running) {
      return nil
    }
    exit = .park
    return fiber!
  }

  /// True while the wait of `generation` is armed and unclaimed.
  func isWaiting(_ generation: UInt64) -> Bool {
    waitWord.load(ordering: .acquiring) == generation << 1 | 1
  }

  /// Sleeps `delay` nanoseconds in its loop's timer heap (see `sleep(on:nanoseconds:)`) when it
  /// resumes on a loop and runs on that loop's thread now; false, without waiting, otherwise.
  /// Reads the loop unretained: the loop outlives the coroutines it runs.
  func sleepOnCurrentLoop(nanoseconds delay: UInt64) throws(CancellationError) -> Bool {
    guard let loop, loop._withUnsafeGuaranteedRef({ $0.isCurrent }) else { return false }
    // Not `takeUnretainedValue()`: the strong reference it makes cost a retain and a release
    // of the loop on every timed `co_delay`.
    let cancelled = loop._withUnsafeGuaranteedRef { loop -> Bool in
      do throws(CancellationError) {
        try sleep(on: loop, nanoseconds: delay)
        return false
      } catch {
        return true
      }
    }
    if cancelled { throw CancellationError() }
    return true
  }

  /// Sleeps `delay` nanoseconds in `loop`'s timer heap without allocating: the loop wakes the
  /// coroutine itself. Must run on this coroutine's stack, on the loop's thread.
  func sleep(on loop: CoroutineLoop, nanoseconds delay: UInt64) throws(CancellationError) {
    if isCancelled { throw CancellationError() }
    sleepRang = false
    pinned {
      let generation = armWait(.delay)
      loop.addSleep(self, generation: generation, nanoseconds: delay)
      endWaitIfCancelled(generation)
      park()
    }
    if !sleepRang {
      loop.sleepEndedEarly()
      throw CancellationError()
    }
  }

  /// Ends a `co_delay` sleep at its deadline, after the loop claimed its wait.
  func wakeFromSleep() {
    sleepRang = true
    wake()
  }

  // MARK: Waking (any thread)

  /// Claims the wait of `generation`; only one claim per wait succeeds.
  @usableFromInline
  func claim(_ generation: UInt64) -> Bool {
    // A plain load first: most late claims (a resumer released after its wait ended) fail,
    // and a failing compare-and-swap still costs a locked instruction.
    guard waitWord.load(ordering: .relaxed) == generation << 1 | 1 else { return false }
    return waitWord.compareExchange(
      expected: generation << 1 | 1, desired: generation << 1, ordering: .acquiringAndReleasing
    ).exchanged
  }

  /// Wakes the coroutine after a successful `claim`.
  @usableFromInline
  func wake() {
    // A plain load first: the claim just took the state's cache line (see `waitWord`), and a
    // swap that failed for the wrong guess still cost a locked instruction.
    var now = state.load(ordering: .relaxed)
    while true {
      let next: CoroutineState
      switch now {
      case .suspended: next = .scheduled
      case .running: next = .wokenEarly
      default: coStop("a \(now) coroutine cannot be woken")
      }
      let (exchanged, found) = state.compareExchange(
        expected: now, desired: next, ordering: .acquiringAndReleasing)
      if exchanged {
        if next == .scheduled { enqueueResume() }
        return
      }
      // It parked meanwhile: try again.
      now = found
    }
  }

  /// Marks the coroutine cancelled and ends its pending wait, which then throws
  /// `CancellationError`.
  func cancel() {
    guard !cancelled.exchange(true, ordering: .sequentiallyConsistent) else { return }
    let word = waitWord.load(ordering: .sequentiallyConsistent)
    if word & 1 == 1, claim(word >> 1) { wake() }
  }
}
