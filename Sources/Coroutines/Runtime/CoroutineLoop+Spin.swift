import CLinux
import CUContext
import Foundation
import Synchronization

/// How a loop waits for another thread without a trip through the kernel: it spins, for a few
/// microseconds, before it sleeps and before a coroutine that would leave it idle parks.
///
/// Falling asleep and being woken costs each side a trip through the kernel (about 5 µs per
/// cross-thread round trip on this machine), so when a reply is about to come, as it is when a
/// coroutine awaits another thread's answer, spinning is much faster. The spin is one loop
/// (`spin(until:)`) with one budget, looked at in two places:
///
/// - A coroutine about to park while its loop has nothing else to run spins on its own stack
///   until its wait is woken (`spinBeforeParking`): a wake-up from another thread then costs the
///   claim of its wait and nothing else, no switch out and back in, no queue. Every kind of wait
///   goes through it (futures, callbacks, channels, locks), since they all park the same way.
/// - A loop about to sleep spins until other threads' work arrives (`spinForRemoteWork`).
extension CoroutineLoop {
  /// The longest the loop spins before sleeping: about the time another thread takes to be
  /// woken and answer (a few microseconds here), with room to spare.
  static let longestSpin: UInt64 = 25_000

  /// How long the loop spins between two offers of its processor to other threads. Work that
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

  /// Before sleeping, spins until other threads' work arrives (see `spin(until:)`). Returns
  /// true when work arrived (or a timer fell due) and the loop should run it.
  func spinForRemoteWork() -> Bool {
    spin { false }
  }

  /// For `coroutine`, which runs on this loop's thread and is about to park: spins on its stack
  /// until its wait is woken (see `spin(until:)`), when the loop has nothing else to run and a
  /// spin budget (the caller looks at that, inline, so that a park without one pays no call). Not
  /// while the loop has jobs, ready coroutines or descriptors to watch: they would wait for the
  /// spin, and the poller is looked at only by a loop that sleeps.
  func spinBeforeParking(_ coroutine: Coroutine) {
    guard poller.waiterCount == 0, hasNothingQueued else { return }
    // Sleeps armed this turn get their deadlines from a reading taken after them: date them
    // first, so that the spin stops at the nearest.
    if !unstampedSleeps.isEmpty { _ = stampSleeps() }
    _ = spin { coroutine.state.load(ordering: .relaxed) == .wokenEarly }
  }

  /// Spins for up to `spinBudget`, offering the processor to other threads every
  /// `spinBetweenYields`, until `found()` is true or other threads' work may wait; returns
  /// true then, or at once when a timer is due already. The budget adapts: it is spent only
  /// after a recent sleep ended early by another thread's work (see `waitForWork`), and halves
  /// after every spin that found nothing, so a loop whose coroutines wait for timers or long
  /// jobs soon does not spin at all. It never spins past the nearest timer's deadline.
  ///
  /// A loop of a group spins only with one of the group's spin slots (see
  /// `CoroutineLoopGroup.takeSpinSlot`), as Go lets at most half its threads spin; without one
  /// it returns false at once.
  private func spin(until found: () -> Bool) -> Bool {
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
        if remoteWorkMayWait || found() { return true }
        cu_spin_pause()
      }
      let now = monotonicNanoseconds()
      if now >= end { break }
      // Every coroutine finished (one may have finished on another thread): stop spinning.
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
