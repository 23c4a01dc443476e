extension CoFuture {
  /// A future of the first attempt that succeeds, making a fresh future for each attempt: a
  /// future runs its work once, so retrying means calling `make` again.
  ///
  /// ```swift
  /// let page = CoFuture.retry(3, delay: 0.5) { fetchPage(url) }
  /// ```
  ///
  /// The first attempt starts at once. After a failure, the next starts `delay` seconds later
  /// (at once for zero), until `attempts` have been made; then the result is rejected with the
  /// last attempt's error. An attempt that ends in `CancellationError` is not retried: it was
  /// asked to stop. Cancelling the result cancels the attempt under way and any pending delay.
  ///
  /// - Parameters:
  ///   - attempts: How many attempts at most, 1 or more; less stops with a message.
  ///   - delay: Seconds to wait between attempts, on the same clock as ``timeout(_:on:)``; NaN
  ///     stops with a message.
  ///   - scheduler: Where `make` runs, `make` being `@Sendable` then; `nil`: as without one.
  ///   - make: Starts one attempt. An error it throws counts as a failed attempt.
  public static func retry(
    _ attempts: Int, delay: Double = 0, on scheduler: (any CoroutineScheduler)?,
    _ make: @escaping @Sendable () throws -> CoFuture<T>
  ) -> CoFuture<T> {
    retrying(attempts, delay: delay, on: scheduler, make)
  }

  /// ``retry(_:delay:on:_:)`` without a scheduler: the first attempt is made on the calling
  /// thread and later ones on the thread that rejected the previous attempt (or that ran the
  /// delay's timer).
  ///
  /// - Parameters:
  ///   - attempts: How many attempts at most, 1 or more; less stops with a message.
  ///   - delay: Seconds to wait between attempts; NaN stops with a message.
  ///   - make: Starts one attempt. An error it throws counts as a failed attempt.
  /// - Returns: The future of the first attempt that succeeds.
  public static func retry(
    _ attempts: Int, delay: Double = 0, _ make: @escaping () throws -> CoFuture<T>
  ) -> CoFuture<T> {
    retrying(attempts, delay: delay, on: nil, make)
  }

  static func retrying(
    _ attempts: Int, delay: Double, on scheduler: (any CoroutineScheduler)?,
    _ make: @escaping () throws -> CoFuture<T>
  ) -> CoFuture<T> {
    coPrecondition(attempts >= 1, "CoFuture.retry(_:delay:): attempts is \(attempts), must be >= 1")
    coPrecondition(!delay.isNaN, "CoFuture.retry(_:delay:): the delay is NaN")
    let output = LinkedFuture<T>()
    let timers = delay > 0 ? timerScheduler(scheduler) : nil
    // Each attempt runs after the previous one ended, so `make` is never called concurrently.
    nonisolated(unsafe) let make = make

    @Sendable func attempt(_ number: Int) {
      guard !output.isSettled else { return }
      let future: CoFuture<T>
      do { future = try make() } catch { return failed(number, error) }
      output.link(future)
      future.whenComplete { result in
        switch result {
        case .success: output.settle(result)
        case .failure(let error): failed(number, error)
        }
      }
    }

    @Sendable func failed(_ number: Int, _ error: any Error) {
      if number >= attempts || error is CancellationError {
        output.settle(.failure(error))
      } else if let timers {
        let timer = timers.schedule(after: delay) { perform(on: scheduler) { attempt(number + 1) } }
        output.onCancel { timer.cancel() }
      } else {
        perform(on: scheduler) { attempt(number + 1) }
      }
    }

    perform(on: scheduler) { attempt(1) }
    return output
  }
}
