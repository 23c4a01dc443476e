/// Operators that involve time.
///
/// Their timers run on the scheduler given as `on:`; without one, on the scheduler of the
/// coroutine that calls the operator, else on the loop the calling thread is running, else on
/// a global Dispatch queue. So inside a coroutine on a virtual-time test loop, timeouts and
/// delays wait for the test to advance the clock, never for the wall clock. A timer pending on a
/// loop keeps ``CoroutineLoop/run(stackSize:_:)`` running, so every timer here is cancelled as soon as it
/// is no longer needed.
extension CoFuture {
  /// A future with this future's outcome, or rejected with ``CoroutineError/timedOut`` if
  /// `seconds` pass first; then this future is cancelled, so the work behind it stops.
  ///
  /// ```swift
  /// let profile = try co_await(fetchProfile().timeout(2))
  /// ```
  ///
  /// - Parameters:
  ///   - seconds: How long to wait, on the timer scheduler's clock; NaN stops with a message.
  ///   - scheduler: Where the timer runs and the result is delivered.
  public func timeout(
    _ seconds: Double, on scheduler: (any CoroutineScheduler)? = nil
  ) -> CoFuture<T> {
    coPrecondition(!seconds.isNaN, "CoFuture.timeout(_:on:): the timeout is NaN")
    let output = LinkedFuture<T>(cancelsInputsWhenSettled: true)
    output.link(self)
    let timer = timerScheduler(scheduler).schedule(after: seconds) {
      output.settle(.failure(CoroutineError.timedOut))
    }
    output.onCancel { timer.cancel() }
    whenComplete { result in perform(on: scheduler) { output.settle(result) } }
    return output
  }

  /// A future with this future's outcome, value or error, delivered `seconds` after it
  /// settles.
  ///
  /// - Parameters:
  ///   - seconds: How long to hold the outcome back, on the timer scheduler's clock; NaN stops
  ///     with a message.
  ///   - scheduler: Where the timer runs and the result is delivered.
  public func delay(
    _ seconds: Double, on scheduler: (any CoroutineScheduler)? = nil
  ) -> CoFuture<T> {
    coPrecondition(!seconds.isNaN, "CoFuture.delay(_:on:): the delay is NaN")
    let timers = timerScheduler(scheduler)
    let output = LinkedFuture<T>()
    output.link(self)
    whenComplete { result in
      guard !output.isSettled else { return }
      // The outcome is handed to the one timer job and never touched here again.
      nonisolated(unsafe) let outcome = result
      let timer = timers.schedule(after: seconds) { output.settle(outcome) }
      output.onCancel { timer.cancel() }
    }
    return output
  }
}
