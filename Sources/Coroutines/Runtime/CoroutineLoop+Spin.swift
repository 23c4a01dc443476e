import CUContext
import Foundation
import Synchronization

/// How a loop spins, watching for other threads' work, before it sleeps or while a coroutine
/// awaits another thread's answer.
extension CoroutineLoop {
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

  /// Before sleeping, watches for other threads' work for up to `spinBudget`, offering the
  /// processor to other threads every `spinBetweenYields`. Falling asleep and being woken costs
  /// each side a trip through the kernel (about 5 µs per cross-thread round trip on this
  /// machine), so when a reply is about to come, as it is when a coroutine awaits another
  /// thread's answer, spinning is much faster. The budget adapts: it is spent only after a recent sleep ended early by
  /// another thread's work (see `waitForWork`), and halves after every spin that found
  /// nothing, so a loop whose coroutines wait for timers or long jobs soon does not spin at
  /// all. It never spins past the nearest timer's deadline.
  ///
  /// Returns true when work arrived (or a timer fell due) and the loop should run it.
  func spinForRemoteWork() -> Bool {
    spin { watchedNeedsAttention }
  }

  /// For a coroutine of this loop about to park until another thread answers it: spins on its
  /// stack while the loop has nothing else to run, as the loop would before sleeping, until
  /// `answered()` is true. Parking and being handed back costs the claim of the coroutine's
  /// wait, a switch out and a switch in; an answer seen here costs none of them. Returns at
  /// once, not spinning, when the loop has jobs queued, ready coroutines or descriptors to
  /// watch, or no budget (see `spinForRemoteWork`); and when other threads' work arrives or a
  /// timer falls due.
  func spinForAnswer(_ answered: () -> Bool) {
    guard spinBudget > 0, poller.waiterCount == 0, mayWatch else { return }
    _ = spin(until: answered)
  }

  /// Spins for up to `spinBudget` (see `spinForRemoteWork`). Returns true as soon as `found()`
  /// is true or other threads' work may wait, or at once when a timer is due already; false
  /// when the budget is spent or a timer fell due meanwhile, halving the budget.
  private func spin(until found: () -> Bool) -> Bool {
    guard spinBudget > 0, liveCoroutines > 0 || groupReference != nil else { return false }
    let start = monotonicNanoseconds()
    var end = start &+ spinBudget
    if let deadline = timers.firstDeadline {
      if deadline <= start { return true }
      end = min(end, deadline)
    }
    var nextYield = start &+ Self.spinBetweenYields
    while true {
      for _ in 0..<64 {
        if remoteWorkMayWait || found() { return true }
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
