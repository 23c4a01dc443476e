import CUContext
import Foundation
import Synchronization

/// What keeps a loop running: its live coroutines and pending work, counted cheaply on its own
/// thread and atomically from others, and how it decides that it may end.
extension CoroutineLoop {
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

  func wakeUpIfElsewhere() {
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
  var liveCoroutines: Int {
    localLive &+ remoteLive.load(ordering: .sequentiallyConsistent)
  }

  /// True when the loop has no job queued and no coroutine ready to run here.
  var hasNothingQueued: Bool {
    localJobs.isEmpty && (ready.map { $0.isEmpty } ?? true)
  }

  /// True when another thread may have left work (a relaxed look, for spinning).
  var remoteWorkMayWait: Bool {
    inbox.mayHoldWork || (ready?.overflowMayHoldWork ?? false)
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
  func endsForGood() -> Bool {
    guard ready != nil else { return true }
    hasEnded.store(true, ordering: .sequentiallyConsistent)
    // Looked at after `hasEnded` is set, as a visitor counts itself before looking at it.
    if liveCoroutines == 0, inbox.close() { return true }
    hasEnded.store(false, ordering: .sequentiallyConsistent)
    return false
  }

  /// True when the loop may end once it has nothing to run: a lone loop unless it keeps running
  /// (the shared poller), a group's once the group is shut down and its coroutines finished.
  var mayEnd: Bool {
    if let group { return group.mayEnd }
    return !keepsRunning
  }
}
