/// Channel operations for code outside coroutines: each returns a future, or calls back.
///
/// An operation that can complete at once does, and returns a settled future (or calls back at
/// once, on this thread). One that must wait takes its place in the channel's queue before the
/// call returns, exactly where a coroutine calling `send` or `receive` at that moment would: so
/// operations asked for one after another are served in that order, and a value sent right
/// after a receive was asked for goes to it. When the channel completes the operation, the
/// future settles, or the callback runs, on `scheduler`; without one, on the current
/// coroutine's scheduler, else on the loop this thread is running, else on a global Dispatch
/// queue (as for ``CoFuture/timeout(_:on:)``), so a virtual-time test loop drives it and plain
/// code needs no loop at all. Cancelling the future withdraws the operation: its value is not
/// sent, or no value is taken.
///
/// A waiting operation is not work of any loop: it does not keep `CoroutineLoop.run { }` from
/// returning (await its future in a coroutine to wait for it). Nor does it keep its
/// channel alive: when the last reference to a channel goes, a future still waiting on it is
/// rejected with ``CoroutineError/channelClosed`` (nothing will ever be sent or received on
/// it), and a callback still waiting is dropped uncalled.
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
  /// and drained (or released while the future waits), and with `CancellationError` if the
  /// channel is cancelled.
  ///
  /// - Parameter scheduler: Where the future settles, if the receive must wait.
  public func receiveFuture(on scheduler: (any CoroutineScheduler)? = nil) -> CoFuture<T> {
    if let value = tryReceive() {
      let ready = CoPromise<T>()
      ready.fulfill(value)
      return ready
    }
    let future = ChannelFuture<T>()
    let request = ChannelReceiveRequest(
      storage: storage, scheduler: timerScheduler(scheduler), delivery: .future(future))
    future.request = request
    receive(for: request)
    return future
  }

  /// A future that is fulfilled once `value` has been sent, for code outside coroutines.
  ///
  /// The future is rejected with ``CoroutineError/channelClosed`` if the channel is closed
  /// first (or released while the future waits), and with `CancellationError` if it is
  /// cancelled; either way the value was not sent.
  ///
  /// - Parameters:
  ///   - value: What to send.
  ///   - scheduler: Where the future settles, if the send must wait.
  public func sendFuture(
    _ value: T, on scheduler: (any CoroutineScheduler)? = nil
  ) -> CoFuture<Void> {
    if trySend(value) {
      let sent = CoPromise<Void>()
      sent.fulfill(())
      return sent
    }
    let future = ChannelFuture<Void>()
    let request = ChannelSendRequest(
      value: value, storage: storage, scheduler: timerScheduler(scheduler), future: future)
    future.request = request
    switch storage.send(orQueue: request) {
    case .sent: future.settle(.success(()))
    case .closed: future.settle(.failure(CoroutineError.channelClosed))
    case .cancelled: future.settle(.failure(CancellationError()))
    case .full: break  // queued: the channel settles it
    }
    return future
  }

  /// Receives the next value and calls `callback` with it, or with the error that
  /// ``receiveFuture(on:)`` would be rejected with; once.
  ///
  /// An outcome that is ready (a value, or the channel closed) is passed to `callback` at once,
  /// on this thread. Otherwise the receive takes its place in the channel's queue, and
  /// `callback` is called where the value arrives: on the current coroutine's scheduler or the
  /// loop this thread runs, or, in plain code with neither, on a global Dispatch queue (as a
  /// ``CoFuture/whenComplete(_:)`` callback runs on the thread that settles the future). If the
  /// channel is released while the callback waits, the callback is dropped uncalled.
  ///
  /// - Parameter callback: Called with the outcome.
  public func whenReceive(_ callback: @escaping (Result<T, any Error>) -> Void) {
    receive(calling: callback, on: nil)
  }

  /// ``whenReceive(_:)`` with `callback` called on `scheduler` if the receive must wait.
  ///
  /// - Parameters:
  ///   - scheduler: Where `callback` is called if the receive must wait; an outcome that is
  ///     ready is passed to `callback` at once, on this thread. `nil`: as ``whenReceive(_:)``.
  ///   - callback: Called with the outcome; `@Sendable`, as it may run on another thread.
  public func whenReceive(
    on scheduler: (any CoroutineScheduler)?,
    _ callback: @escaping @Sendable (Result<T, any Error>) -> Void
  ) {
    receive(calling: callback, on: scheduler)
  }

  /// Receives for `callback`: at once if an outcome is ready, else by a request in the queue.
  func receive(
    calling callback: @escaping (Result<T, any Error>) -> Void,
    on scheduler: (any CoroutineScheduler)?
  ) {
    if let value = tryReceive() {
      callback(.success(value))
      return
    }
    receive(
      for: ChannelReceiveRequest(
        storage: storage, scheduler: timerScheduler(scheduler), delivery: .callback(callback)))
  }

  /// Receives for `request`: delivers at once if an outcome is ready, else queues it.
  private func receive(for request: ChannelReceiveRequest<T>) {
    switch storage.receive(orQueue: request) {
    case .value(let value, _): request.delivery.deliverNow(.success(value))
    case .closed: request.delivery.deliverNow(.failure(CoroutineError.channelClosed))
    case .cancelled: request.delivery.deliverNow(.failure(CancellationError()))
    case .empty: break  // queued: the channel completes it
    }
  }
}
