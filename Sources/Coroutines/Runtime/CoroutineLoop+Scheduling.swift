import CUContext
import Foundation
import Synchronization

/// How work reaches a loop: from its own thread straight onto its queue, from other threads
/// through its inbox, and refused, with a message, once its group no longer takes it.
extension CoroutineLoop {
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
  static func refusedFromOutside(_ call: String) -> String {
    "\(call): the loop's group was shut down; its loops take no work from outside"
  }

  /// What work sent to a loop of a group that has ended stops with, naming `call`.
  static func refusedAfterEnd(_ call: String) -> String {
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
  func enqueueFromElsewhere(_ job: consuming LoopJob) -> Bool {
    guard inbox.push(job) != .refused else { return false }
    wakeIfAsleep()
    return true
  }

  /// True when this loop's group was shut down and the calling thread runs none of the group's
  /// loops: the loop then takes no new work from it (the group's own coroutines may still send
  /// work while it drains). Compares the groups' addresses without following either: the caller
  /// may hold only this loop, whose group may be gone, and a new group at the same address
  /// finds the loop ended anyway, its inbox closed.
  var refusesOutsideWork: Bool {
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
}
