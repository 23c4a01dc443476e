/// Waits for `future` for at most `seconds`: returns its value or throws its error if it
/// settles in time; otherwise cancels it (so the work behind it stops) and throws
/// ``CoroutineError/timedOut``.
///
/// ```swift
/// let quote = try co_await(fetchQuote(), timeout: 0.5)
/// ```
///
/// The timer runs on the coroutine's scheduler, so on a virtual-time test loop it waits for the
/// test to advance the clock. If the coroutine itself is cancelled, this throws
/// `CancellationError` and leaves `future` alone, like `co_await(_:)`.
///
/// - Throws: The future's error; ``CoroutineError/timedOut``; `CancellationError`;
///   ``CoroutineError/notInCoroutine`` outside a coroutine.
public func co_await<T>(_ future: CoFuture<T>, timeout seconds: Double) throws -> T {
  coPrecondition(!seconds.isNaN, "co_await(_:timeout:): the timeout is NaN")
  let coroutine = try Coroutine.requireCurrent()
  if coroutine.isCancelled { throw CancellationError() }
  if let settled = future.result { return try settled.get() }
  var timer: (any CoroutineTimer)?
  defer { timer?.cancel() }
  do {
    return try coroutine.suspend(for: .future) { (resumer: CoroutineResumer<T>) in
      timer = coroutine.scheduler.schedule(after: seconds) {
        resumer.resume(.failure(CoroutineError.timedOut))
      }
      future.whenComplete(resuming: resumer)
    }
  } catch CoroutineError.timedOut where !future.isSettled {
    future.cancel()
    throw CoroutineError.timedOut
  }
}

extension CoFuture {
  /// Waits for the outcome for at most `seconds` inside a coroutine; see
  /// `co_await(_:timeout:)`.
  public func await(timeout seconds: Double) throws -> T {
    coPrecondition(!seconds.isNaN, "CoFuture.await(timeout:): the timeout is NaN")
    return try co_await(self, timeout: seconds)
  }
}
