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
    retry(attempts, delay: delay, on: scheduler, deciding: nil, make)
  }

  /// Like ``retry(_:delay:on:_:)``, retrying only while `condition` says so (Hydra's `retry`
  /// with a condition).
  ///
  /// ```swift
  /// let page = CoFuture.retry(5, while: { _, error in error is URLError }) { fetchPage(url) }
  /// ```
  ///
  /// - Parameters:
  ///   - attempts: How many attempts at most, 1 or more; less stops with a message.
  ///   - delay: Seconds to wait between attempts; NaN stops with a message.
  ///   - scheduler: Where `condition` and `make` run, both being `@Sendable` then; `nil`: as
  ///     ``retry(_:delay:while:_:)``.
  ///   - condition: Called after each failed attempt that could be retried (not after the
  ///     last one, nor after a `CancellationError`), with how many attempts remain and the
  ///     error; returning false rejects the result with that error.
  ///   - make: Starts one attempt. An error it throws counts as a failed attempt.
  /// - Returns: The future of the first attempt that succeeds.
  public static func retry(
    _ attempts: Int, delay: Double = 0, on scheduler: (any CoroutineScheduler)?,
    while condition: @escaping @Sendable (_ remaining: Int, _ error: any Error) -> Bool,
    _ make: @escaping @Sendable () throws -> CoFuture<T>
  ) -> CoFuture<T> {
    retry(attempts, delay: delay, on: scheduler, deciding: .now(condition), make)
  }

  /// ``retry(_:delay:on:while:_:)`` without a scheduler: `condition` and `make` run as for
  /// ``retry(_:delay:_:)``.
  ///
  /// - Parameters:
  ///   - attempts: How many attempts at most, 1 or more; less stops with a message.
  ///   - delay: Seconds to wait between attempts; NaN stops with a message.
  ///   - condition: As for ``retry(_:delay:on:while:_:)``.
  ///   - make: Starts one attempt. An error it throws counts as a failed attempt.
  /// - Returns: The future of the first attempt that succeeds.
  public static func retry(
    _ attempts: Int, delay: Double = 0,
    while condition: @escaping (_ remaining: Int, _ error: any Error) -> Bool,
    _ make: @escaping () throws -> CoFuture<T>
  ) -> CoFuture<T> {
    retry(attempts, delay: delay, on: nil, deciding: .now(condition), make)
  }

  /// Like ``retry(_:delay:on:while:_:)``, with a condition that answers later, through a future
  /// (Hydra's `retryWhen`): asking a user, say, or refreshing a token first.
  ///
  /// ```swift
  /// let page = CoFuture.retry(3, asking: { _, _ in refreshToken() }) { fetchPage(url) }
  /// ```
  ///
  /// - Parameters:
  ///   - attempts: How many attempts at most, 1 or more; less stops with a message.
  ///   - delay: Seconds to wait between attempts, counted once `condition`'s future says yes;
  ///     NaN stops with a message.
  ///   - scheduler: Where `condition` and `make` run, both being `@Sendable` then; `nil`: as
  ///     ``retry(_:delay:asking:_:)``.
  ///   - condition: Called as for ``retry(_:delay:on:while:_:)``; its future's `false` rejects
  ///     the result with the attempt's error, its error rejects the result with that error.
  ///     Cancelling the result cancels the condition's future while it is pending.
  ///   - make: Starts one attempt. An error it throws counts as a failed attempt.
  /// - Returns: The future of the first attempt that succeeds.
  public static func retry(
    _ attempts: Int, delay: Double = 0, on scheduler: (any CoroutineScheduler)?,
    asking condition:
      @escaping @Sendable (_ remaining: Int, _ error: any Error)
      -> CoFuture<Bool>,
    _ make: @escaping @Sendable () throws -> CoFuture<T>
  ) -> CoFuture<T> {
    retry(attempts, delay: delay, on: scheduler, deciding: .later(condition), make)
  }

  /// ``retry(_:delay:on:asking:_:)`` without a scheduler: `condition` and `make` run as for
  /// ``retry(_:delay:_:)``.
  ///
  /// - Parameters:
  ///   - attempts: How many attempts at most, 1 or more; less stops with a message.
  ///   - delay: Seconds to wait between attempts, counted once `condition`'s future says yes;
  ///     NaN stops with a message.
  ///   - condition: As for ``retry(_:delay:on:asking:_:)``.
  ///   - make: Starts one attempt. An error it throws counts as a failed attempt.
  /// - Returns: The future of the first attempt that succeeds.
  public static func retry(
    _ attempts: Int, delay: Double = 0,
    asking condition: @escaping (_ remaining: Int, _ error: any Error) -> CoFuture<Bool>,
    _ make: @escaping () throws -> CoFuture<T>
  ) -> CoFuture<T> {
    retry(attempts, delay: delay, on: nil, deciding: .later(condition), make)
  }

  /// Like ``retry(_:delay:on:_:)``, waiting as `backoff` says before each new attempt: a wait
  /// that grows after each failure, say.
  ///
  /// ```swift
  /// let backoff = CoBackoff.exponential(initial: 0.1, maximum: 5, jitter: 0.5)
  /// let page = CoFuture.retry(6, backoff: backoff) { fetchPage(url) }
  /// ```
  ///
  /// - Parameters:
  ///   - attempts: How many attempts at most, 1 or more; less stops with a message.
  ///   - backoff: The wait before each new attempt, on the same clock as ``timeout(_:on:)``.
  ///   - scheduler: Where `make` runs, `make` being `@Sendable` then; `nil`: as
  ///     ``retry(_:backoff:_:)``.
  ///   - make: Starts one attempt. An error it throws counts as a failed attempt.
  /// - Returns: The future of the first attempt that succeeds.
  public static func retry(
    _ attempts: Int, backoff: CoBackoff, on scheduler: (any CoroutineScheduler)?,
    _ make: @escaping @Sendable () throws -> CoFuture<T>
  ) -> CoFuture<T> {
    retry(
      attempts, backoff: backoff, on: scheduler, deciding: nil, make,
      caller: "CoFuture.retry(_:backoff:)")
  }

  /// ``retry(_:backoff:on:_:)`` without a scheduler: `make` runs as for ``retry(_:delay:_:)``.
  ///
  /// - Parameters:
  ///   - attempts: How many attempts at most, 1 or more; less stops with a message.
  ///   - backoff: The wait before each new attempt.
  ///   - make: Starts one attempt. An error it throws counts as a failed attempt.
  /// - Returns: The future of the first attempt that succeeds.
  public static func retry(
    _ attempts: Int, backoff: CoBackoff, _ make: @escaping () throws -> CoFuture<T>
  ) -> CoFuture<T> {
    retry(
      attempts, backoff: backoff, on: nil, deciding: nil, make,
      caller: "CoFuture.retry(_:backoff:)")
  }

  /// ``retry(_:delay:on:while:_:)`` with a ``CoBackoff`` for the waits.
  ///
  /// - Parameters:
  ///   - attempts: How many attempts at most, 1 or more; less stops with a message.
  ///   - backoff: The wait before each new attempt.
  ///   - scheduler: Where `condition` and `make` run, both being `@Sendable` then; `nil`: as
  ///     ``retry(_:backoff:while:_:)``.
  ///   - condition: As for ``retry(_:delay:on:while:_:)``.
  ///   - make: Starts one attempt. An error it throws counts as a failed attempt.
  /// - Returns: The future of the first attempt that succeeds.
  public static func retry(
    _ attempts: Int, backoff: CoBackoff, on scheduler: (any CoroutineScheduler)?,
    while condition: @escaping @Sendable (_ remaining: Int, _ error: any Error) -> Bool,
    _ make: @escaping @Sendable () throws -> CoFuture<T>
  ) -> CoFuture<T> {
    retry(
      attempts, backoff: backoff, on: scheduler, deciding: .now(condition), make,
      caller: "CoFuture.retry(_:backoff:)")
  }

  /// ``retry(_:backoff:on:while:_:)`` without a scheduler: `condition` and `make` run as for
  /// ``retry(_:delay:_:)``.
  ///
  /// - Parameters:
  ///   - attempts: How many attempts at most, 1 or more; less stops with a message.
  ///   - backoff: The wait before each new attempt.
  ///   - condition: As for ``retry(_:delay:on:while:_:)``.
  ///   - make: Starts one attempt. An error it throws counts as a failed attempt.
  /// - Returns: The future of the first attempt that succeeds.
  public static func retry(
    _ attempts: Int, backoff: CoBackoff,
    while condition: @escaping (_ remaining: Int, _ error: any Error) -> Bool,
    _ make: @escaping () throws -> CoFuture<T>
  ) -> CoFuture<T> {
    retry(
      attempts, backoff: backoff, on: nil, deciding: .now(condition), make,
      caller: "CoFuture.retry(_:backoff:)")
  }

  /// ``retry(_:delay:on:asking:_:)`` with a ``CoBackoff`` for the waits.
  ///
  /// - Parameters:
  ///   - attempts: How many attempts at most, 1 or more; less stops with a message.
  ///   - backoff: The wait before each new attempt, counted once `condition` says yes.
  ///   - scheduler: Where `condition` and `make` run, both being `@Sendable` then; `nil`: as
  ///     ``retry(_:backoff:asking:_:)``.
  ///   - condition: As for ``retry(_:delay:on:asking:_:)``.
  ///   - make: Starts one attempt. An error it throws counts as a failed attempt.
  /// - Returns: The future of the first attempt that succeeds.
  public static func retry(
    _ attempts: Int, backoff: CoBackoff, on scheduler: (any CoroutineScheduler)?,
    asking condition:
      @escaping @Sendable (_ remaining: Int, _ error: any Error)
      -> CoFuture<Bool>,
    _ make: @escaping @Sendable () throws -> CoFuture<T>
  ) -> CoFuture<T> {
    retry(
      attempts, backoff: backoff, on: scheduler, deciding: .later(condition), make,
      caller: "CoFuture.retry(_:backoff:)")
  }

  /// ``retry(_:backoff:on:asking:_:)`` without a scheduler: `condition` and `make` run as for
  /// ``retry(_:delay:_:)``.
  ///
  /// - Parameters:
  ///   - attempts: How many attempts at most, 1 or more; less stops with a message.
  ///   - backoff: The wait before each new attempt, counted once `condition` says yes.
  ///   - condition: As for ``retry(_:delay:on:asking:_:)``.
  ///   - make: Starts one attempt. An error it throws counts as a failed attempt.
  /// - Returns: The future of the first attempt that succeeds.
  public static func retry(
    _ attempts: Int, backoff: CoBackoff,
    asking condition: @escaping (_ remaining: Int, _ error: any Error) -> CoFuture<Bool>,
    _ make: @escaping () throws -> CoFuture<T>
  ) -> CoFuture<T> {
    retry(
      attempts, backoff: backoff, on: nil, deciding: .later(condition), make,
      caller: "CoFuture.retry(_:backoff:)")
  }

  /// Whether to retry after a failed attempt: at once, or through a future.
  enum RetryCondition {
    case now((_ remaining: Int, _ error: any Error) -> Bool)
    case later((_ remaining: Int, _ error: any Error) -> CoFuture<Bool>)
  }

  /// The `retry`s with a constant delay.
  static func retry(
    _ attempts: Int, delay: Double, on scheduler: (any CoroutineScheduler)?,
    deciding condition: RetryCondition?, _ make: @escaping () throws -> CoFuture<T>
  ) -> CoFuture<T> {
    let caller = "CoFuture.retry(_:delay:)"
    coPrecondition(!delay.isNaN, "\(caller): the delay is NaN")
    return retry(
      attempts, backoff: .constant(delay), on: scheduler, deciding: condition, make,
      caller: caller)
  }

  /// What every `retry` does; `condition` nil retries whatever the error (but cancellation).
  static func retry(
    _ attempts: Int, backoff: CoBackoff, on scheduler: (any CoroutineScheduler)?,
    deciding condition: RetryCondition?, _ make: @escaping () throws -> CoFuture<T>,
    caller: String
  ) -> CoFuture<T> {
    coPrecondition(attempts >= 1, "\(caller): attempts is \(attempts), must be >= 1")
    let output = LinkedFuture<T>()
    let timers = backoff.mayWait ? timerScheduler(scheduler) : nil
    // Each attempt, and each question whether to make one, runs after the previous attempt
    // ended, so `make` and `condition` are never called concurrently.
    nonisolated(unsafe) let make = make
    nonisolated(unsafe) let condition = condition

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
      if number >= attempts || error is CancellationError { return giveUp(error) }
      guard let condition else { return next(after: number) }
      perform(on: scheduler) {
        guard !output.isSettled else { return }
        switch condition {
        case .now(let retries):
          if retries(attempts - number, error) { next(after: number) } else { giveUp(error) }
        case .later(let retries):
          let answer = retries(attempts - number, error)
          output.link(answer)
          answer.whenComplete { result in
            switch result {
            case .success(true): next(after: number)
            case .success(false): giveUp(error)
            case .failure(let conditionError): output.settle(.failure(conditionError))
            }
          }
        }
      }
    }

    @Sendable func giveUp(_ error: any Error) { output.settle(.failure(error)) }

    @Sendable func next(after number: Int) {
      let seconds = backoff.delay(afterFailure: number)
      if let timers, seconds > 0 {
        let timer = timers.schedule(after: seconds) {
          perform(on: scheduler) { attempt(number + 1) }
        }
        output.onCancel { timer.cancel() }
      } else {
        perform(on: scheduler) { attempt(number + 1) }
      }
    }

    perform(on: scheduler) { attempt(1) }
    return output
  }
}
