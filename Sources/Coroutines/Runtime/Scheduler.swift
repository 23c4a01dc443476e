import Dispatch
import Synchronization

/// Decides where a coroutine runs: it only runs jobs; the coroutine decides when to suspend.
///
/// A coroutine always resumes on its own scheduler, whichever thread settled what it awaited.
/// `DispatchQueue` and ``CoroutineLoop`` conform; any type with a serial or concurrent executor
/// can.
public protocol CoroutineScheduler: AnyObject, Sendable {
  /// Runs `job` soon, on a thread of this scheduler.
  func schedule(_ job: @escaping @Sendable () -> Void)

  /// Runs `job` on this scheduler once `seconds` have passed on its clock, unless the returned
  /// timer is cancelled first. The default waits on a Dispatch timer and then calls
  /// ``schedule(_:)``.
  func schedule(after seconds: Double, _ job: @escaping @Sendable () -> Void) -> any CoroutineTimer
}

/// A job waiting for its time on a scheduler's clock.
public protocol CoroutineTimer: Sendable {
  /// Stops the job from running if it has not run yet. Calling it again does nothing.
  func cancel()
}

extension CoroutineScheduler {
  /// Waits on a Dispatch timer, then runs `job` through ``schedule(_:)``.
  public func schedule(after seconds: Double, _ job: @escaping @Sendable () -> Void)
    -> any CoroutineTimer
  {
    let timer = FlagTimer()
    let delay = nanoseconds(fromSeconds: seconds, in: "schedule(after:)")
    DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(Int(clamping: delay))) {
      [self] in
      if timer.claimForFiring() { schedule(job) }
    }
    return timer
  }
}

/// Runs `job` on `scheduler` unless it is a loop or a group that was shut down (and the caller
/// is outside it): then false, queueing nothing. For work the library delivers on a scheduler
/// the user chose earlier, which may have been shut down since; any other scheduler takes it.
func offer(_ job: @escaping @Sendable () -> Void, to scheduler: any CoroutineScheduler) -> Bool {
  if let loop = scheduler as? CoroutineLoop { return loop.offer(job) }
  if let group = scheduler as? CoroutineLoopGroup { return group.offer(job) }
  scheduler.schedule(job)
  return true
}

/// A timer that is only a flag: whichever comes first, firing or cancelling, wins.
final class FlagTimer: CoroutineTimer {
  private let done = Atomic<Bool>(false)

  func cancel() { _ = claimForFiring() }

  /// True for the first caller only: the job may run.
  func claimForFiring() -> Bool { !done.exchange(true, ordering: .acquiringAndReleasing) }
}

extension DispatchQueue: CoroutineScheduler {
  /// Submits `job` asynchronously.
  public func schedule(_ job: @escaping @Sendable () -> Void) {
    async(execute: job)
  }

  /// Submits `job` asynchronously once `seconds` have passed.
  public func schedule(after seconds: Double, _ job: @escaping @Sendable () -> Void)
    -> any CoroutineTimer
  {
    let timer = FlagTimer()
    let delay = nanoseconds(fromSeconds: seconds, in: "DispatchQueue.schedule(after:)")
    asyncAfter(deadline: .now() + .nanoseconds(Int(clamping: delay))) {
      if timer.claimForFiring() { job() }
    }
    return timer
  }
}
