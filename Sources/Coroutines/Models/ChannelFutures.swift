/// Channel operations for code outside coroutines: each returns a future, or calls back.
///
/// An operation that can complete at once does, and returns a settled future. One that must
/// wait runs in a small detached coroutine on `scheduler`; without one, on the current
/// coroutine's scheduler, else on the loop this thread is running, else on a global Dispatch
/// queue (as for ``CoFuture/timeout(_:on:)``), so a virtual-time test loop drives it and plain
/// code needs no loop at all. The future settles on that scheduler. Cancelling the future
/// withdraws the operation: its value is not sent, or no value is taken. A pending operation
/// keeps a ``CoroutineLoop`` it runs on running: cancel it when it is no longer needed.
extension CoChannel {
  /// A future of the next value, for code outside coroutines.
  ///
  /// ```swift
  /// channel.receiveFuture().whenComplete { result in
  ///   show(try? result.get())
  /// }
  /// ```
  ///
  /// The future is rejected with ``CoroutineError/channelClosed`` once the channel is closed
  /// and drained, and with `CancellationError` if the channel is cancelled.
  ///
  /// - Parameter scheduler: Where the wait runs and the future settles, if it must wait.
  public func receiveFuture(on scheduler: (any CoroutineScheduler)? = nil) -> CoFuture<T> {
    if let value = tryReceive() {
      let ready = CoPromise<T>()
      ready.fulfill(value)
      return ready
    }
    let storage = storage
    return co_launch(on: timerScheduler(scheduler), detached: true) { try storage.receive() }
  }

  /// A future that is fulfilled once `value` has been sent, for code outside coroutines.
  ///
  /// The future is rejected with ``CoroutineError/channelClosed`` if the channel is closed
  /// first, and with `CancellationError` if it is cancelled; either way the value was not
  /// sent.
  ///
  /// - Parameters:
  ///   - value: What to send.
  ///   - scheduler: Where the wait runs and the future settles, if it must wait.
  public func sendFuture(
    _ value: T, on scheduler: (any CoroutineScheduler)? = nil
  ) -> CoFuture<Void> {
    if trySend(value) {
      let sent = CoPromise<Void>()
      sent.fulfill(())
      return sent
    }
    let storage = storage
    // The value is handed to the one coroutine that sends it.
    nonisolated(unsafe) let value = value
    return co_launch(on: timerScheduler(scheduler), detached: true) { try storage.send(value) }
  }

  /// Receives the next value and calls `callback` with it, or with the error that
  /// ``receiveFuture(on:)`` would be rejected with; once.
  ///
  /// A value that is ready is passed to `callback` at once, on this thread. Otherwise the wait
  /// runs as for ``receiveFuture(on:)`` without a scheduler, and `callback` is called where the
  /// value arrives: on the current coroutine's scheduler or the loop this thread runs, or, in
  /// plain code with neither, on a global Dispatch queue (as a ``CoFuture/whenComplete(_:)``
  /// callback runs on the thread that settles the future).
  ///
  /// - Parameter callback: Called with the outcome.
  public func whenReceive(_ callback: @escaping (Result<T, any Error>) -> Void) {
    receiveFuture(on: nil).whenComplete(callback)
  }

  /// ``whenReceive(_:)`` with the wait run on `scheduler`, and `callback` called there.
  ///
  /// - Parameters:
  ///   - scheduler: Where the wait runs and `callback` is called, if it must wait; an
  ///     immediate value is passed to `callback` at once, on this thread. `nil`: as
  ///     ``whenReceive(_:)``.
  ///   - callback: Called with the outcome; `@Sendable`, as it may run on another thread.
  public func whenReceive(
    on scheduler: (any CoroutineScheduler)?,
    _ callback: @escaping @Sendable (Result<T, any Error>) -> Void
  ) {
    receiveFuture(on: scheduler).whenComplete(callback)
  }
}
