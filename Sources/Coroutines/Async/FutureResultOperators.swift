/// Operators that see the whole outcome, or recover with another future.
///
/// They follow the rules of the operators in `FutureOperators.swift`: without a scheduler the
/// callback runs on the thread that settles the input, with one as a job there; cancelling the
/// derived future cancels whichever future it is waiting for.
extension CoFuture {
  /// A future that turns this future's error into the future `handler` makes (Hydra's
  /// `recover` returning a promise); a value passes through, and so does `CancellationError`,
  /// as for ``recover(on:_:)``.
  ///
  /// ```swift
  /// let page = fetchPage(url).flatMapError { _ in fetchPage(mirror) }
  /// ```
  ///
  /// - Parameters:
  ///   - scheduler: Where `handler` runs; see the operators' rules above.
  ///   - handler: Makes the future to wait for instead; an error it throws rejects the result.
  public func flatMapError(
    on scheduler: (any CoroutineScheduler)? = nil,
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
  /// - Parameters:
  ///   - scheduler: Where `transform` runs; see the operators' rules above.
  ///   - transform: Makes the new value; an error it throws rejects the result.
  public func mapResult<U>(
    on scheduler: (any CoroutineScheduler)? = nil,
    _ transform: @escaping (Result<T, any Error>) throws -> U
  ) -> CoFuture<U> {
    derive(on: scheduler) { result, output in
      output.settle(Result { try transform(result) })
    }
  }

  /// A future of the future that `next` makes from this future's whole outcome, value or
  /// error (a `CancellationError` included).
  ///
  /// - Parameters:
  ///   - scheduler: Where `next` runs; see the operators' rules above.
  ///   - next: Makes the future to wait for; an error it throws rejects the result.
  public func flatMapResult<U>(
    on scheduler: (any CoroutineScheduler)? = nil,
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
