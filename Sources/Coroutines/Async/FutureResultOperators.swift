/// Operators that see the whole outcome, or recover with another future.
///
/// They follow the rules of the operators in `FutureOperators.swift`: without a scheduler the
/// callback runs on the thread that settles the input, with one as a job there, and is
/// `@Sendable` then; cancelling the derived future cancels whichever future it is waiting for.
extension CoFuture {
  /// A future that turns this future's error into the future `handler` makes (Hydra's
  /// `recover` returning a promise); a value passes through, and so does `CancellationError`,
  /// as for ``recover(_:)``.
  ///
  /// ```swift
  /// let page = fetchPage(url).flatMapError { _ in fetchPage(mirror) }
  /// ```
  ///
  /// - Parameter handler: Makes the future to wait for instead; an error it throws rejects the
  ///   result.
  /// - Returns: The future of the value, or of the future `handler` made.
  public func flatMapError(_ handler: @escaping (any Error) throws -> CoFuture<T>) -> CoFuture<T> {
    flatMappedError(on: nil, handler)
  }

  /// ``flatMapError(_:)`` with `handler` run as a job on `scheduler`.
  ///
  /// - Parameters:
  ///   - scheduler: Where `handler` runs; `nil` as for ``flatMapError(_:)``.
  ///   - handler: Makes the future to wait for instead; an error it throws rejects the result.
  /// - Returns: The future of the value, or of the future `handler` made.
  public func flatMapError(
    on scheduler: (any CoroutineScheduler)?,
    _ handler: @escaping @Sendable (any Error) throws -> CoFuture<T>
  ) -> CoFuture<T> {
    flatMappedError(on: scheduler, handler)
  }

  func flatMappedError(
    on scheduler: (any CoroutineScheduler)?,
    _ handler: @escaping (any Error) throws -> CoFuture<T>
  ) -> CoFuture<T> {
    derive(on: scheduler) { result, output in
      switch result {
      case .failure(let error) where !(error is CancellationError):
        output.follow { try handler(error) }
      default:
        output.settle(result)
      }
    }
  }

  /// A future of `transform` applied to this future's whole outcome, value or error (a
  /// `CancellationError` included): one callback that handles both.
  ///
  /// ```swift
  /// let status = fetchName().mapResult { result in
  ///   switch result {
  ///   case .success(let name): "hello, \(name)"
  ///   case .failure: "nobody"
  ///   }
  /// }
  /// ```
  ///
  /// - Parameter transform: Makes the new value; an error it throws rejects the result.
  /// - Returns: The future of the transformed outcome.
  public func mapResult<U>(_ transform: @escaping (Result<T, any Error>) throws -> U)
    -> CoFuture<U>
  {
    mappedResult(on: nil, transform)
  }

  /// ``mapResult(_:)`` with `transform` run as a job on `scheduler`.
  ///
  /// - Parameters:
  ///   - scheduler: Where `transform` runs; `nil` as for ``mapResult(_:)``.
  ///   - transform: Makes the new value; an error it throws rejects the result.
  /// - Returns: The future of the transformed outcome.
  public func mapResult<U>(
    on scheduler: (any CoroutineScheduler)?,
    _ transform: @escaping @Sendable (Result<T, any Error>) throws -> U
  ) -> CoFuture<U> {
    mappedResult(on: scheduler, transform)
  }

  func mappedResult<U>(
    on scheduler: (any CoroutineScheduler)?,
    _ transform: @escaping (Result<T, any Error>) throws -> U
  ) -> CoFuture<U> {
    derive(on: scheduler) { result, output in
      output.settle(Result { try transform(result) })
    }
  }

  /// A future of the future that `next` makes from this future's whole outcome, value or
  /// error (a `CancellationError` included).
  ///
  /// - Parameter next: Makes the future to wait for; an error it throws rejects the result.
  /// - Returns: The future of the following future's outcome.
  public func flatMapResult<U>(
    _ next: @escaping (Result<T, any Error>) throws -> CoFuture<U>
  ) -> CoFuture<U> {
    flatMappedResult(on: nil, next)
  }

  /// ``flatMapResult(_:)`` with `next` run as a job on `scheduler`.
  ///
  /// - Parameters:
  ///   - scheduler: Where `next` runs; `nil` as for ``flatMapResult(_:)``.
  ///   - next: Makes the future to wait for; an error it throws rejects the result.
  /// - Returns: The future of the following future's outcome.
  public func flatMapResult<U>(
    on scheduler: (any CoroutineScheduler)?,
    _ next: @escaping @Sendable (Result<T, any Error>) throws -> CoFuture<U>
  ) -> CoFuture<U> {
    flatMappedResult(on: scheduler, next)
  }

  func flatMappedResult<U>(
    on scheduler: (any CoroutineScheduler)?,
    _ next: @escaping (Result<T, any Error>) throws -> CoFuture<U>
  ) -> CoFuture<U> {
    derive(on: scheduler) { result, output in
      output.follow { try next(result) }
    }
  }
}

extension LinkedFuture {
  /// Settles with the outcome of the future `make` returns (linked, so cancelling this future
  /// cancels it), or with the error `make` throws.
  func follow(_ make: () throws -> CoFuture<T>) {
    do {
      let following = try make()
      link(following)
      following.whenComplete { self.settle($0) }
    } catch {
      settle(.failure(error))
    }
  }
}
