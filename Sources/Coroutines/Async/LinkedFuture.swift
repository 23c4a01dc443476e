import Dispatch
import Synchronization

/// The future that an operator or combinator returns: it remembers what it waits for, so that
/// cancelling it cancels that work too.
///
/// Cancellation flows upstream, as from a Swift task to its child tasks: `cancel()` settles this
/// future with `CancellationError` and then cancels every linked input. Combinators that stop
/// needing their inputs once they settle (`race`, `any`, `all` after a failure, `timeout`) are
/// made with `cancelsInputsWhenSettled`, so the losers are cancelled too.
final class LinkedFuture<T>: CoFuture<T>, @unchecked Sendable {  // link state is behind `mutex`
  private let mutex = Mutex<Void>(())
  private var hooks: [() -> Void] = []
  /// Settled: no hook will be kept any more.
  private var closed = false
  /// Closed by `cancel()`, or by a settle that cancels the inputs: late hooks run at once.
  private var cancelling = false
  private let cancelsInputsWhenSettled: Bool

  init(cancelsInputsWhenSettled: Bool = false) {
    self.cancelsInputsWhenSettled = cancelsInputsWhenSettled
    super.init()
  }

  /// Links `input`: cancelling this future cancels it (now, if this one was already cancelled)
  /// unless it has settled by then.
  func link<U>(_ input: CoFuture<U>) {
    onCancel { if !input.isSettled { input.cancel() } }
  }

  /// Runs `hook` when this future is cancelled (at once if it already was); forgotten once
  /// this future settles otherwise.
  func onCancel(_ hook: @escaping () -> Void) {
    let runNow = mutex.withLock { _ -> Bool in
      if closed { return cancelling }
      hooks.append(hook)
      return false
    }
    if runNow { hook() }
  }

  /// Settles with `CancellationError` if pending, then cancels the linked inputs.
  override func cancel() {
    guard settleOutcome(.failure(CancellationError())) else { return }
    close(cancelling: true)
  }

  /// After any other settle: forgets the hooks, or runs them for a combinator that cancels
  /// its inputs once it settles.
  override func didSettle() {
    close(cancelling: cancelsInputsWhenSettled)
  }

  private func close(cancelling: Bool) {
    let toRun = mutex.withLock { _ -> [() -> Void] in
      closed = true
      self.cancelling = cancelling
      defer { hooks = [] }
      return cancelling ? hooks : []
    }
    guard !toRun.isEmpty else { return }
    // A hook cancels an input, which closes and runs that input's hooks: from inside a hook
    // or a callback, this close leaves its hooks on the trampoline instead.
    if let trampoline = Trampoline.running {
      trampoline.leave(LeftHooks(toRun))
    } else {
      Trampoline.run { toRun.forEach { $0() } }
    }
  }
}

/// Cancellation hooks waiting on a trampoline (see ``Trampoline``).
private final class LeftHooks: TrampolineTarget {
  let hooks: [() -> Void]
  init(_ hooks: [() -> Void]) { self.hooks = hooks }
  func runLeftWork() { hooks.forEach { $0() } }
}

/// Runs `job` on `scheduler`, or at once on this thread when there is none.
func perform(on scheduler: (any CoroutineScheduler)?, _ job: @escaping () -> Void) {
  guard let scheduler else { return job() }
  // The job is handed to exactly one scheduler job and never touched here again.
  nonisolated(unsafe) let handedOver = job
  scheduler.schedule { handedOver() }
}

/// Where timers of futures run when the caller names no scheduler: the current coroutine's
/// scheduler, else the loop this thread is running (a test loop included), else a global
/// Dispatch queue (which always runs, so a timeout set up outside any loop still fires).
func timerScheduler(_ given: (any CoroutineScheduler)?) -> any CoroutineScheduler {
  if let given { return given }
  if let coroutine = Coroutine.current { return coroutine.scheduler }
  if let loop = CoroutineLoop.current { return loop }
  if let testLoop = CoroutineTestLoop.current { return testLoop }
  return DispatchQueue.global()
}
