/// Operators that derive one future from another.
///
/// Each takes an optional scheduler. Without one, its callback runs on the thread that settles
/// the input, right after it settles (at once if it already has; right after the callback
/// running, if the input was settled from inside one): nothing waits for a loop that may not be
/// running, and a chain of any length settles or is cancelled in bounded stack. With one, the
/// callback runs as a job on that scheduler, and is `@Sendable`, so Swift checks what it
/// captures (see <doc:CoroutinesSchedulersAndLoop>). Cancelling the
/// derived future cancels the input it waits for; an input that fails skips the callback and
/// passes its error on.
extension CoFuture {
  /// A future of `transform` applied to this future's value; an error thrown by `transform`
  /// rejects it.
  ///
  /// ```swift
  /// let length = fetchName().map { $0.count }
  /// ```
  public func map<U>(_ transform: @escaping (T) throws -> U) -> CoFuture<U> {
    mapped(on: nil, transform)
  }

  /// ``map(_:)`` with `transform` run as a job on `scheduler`.
  ///
  /// - Parameters:
  ///   - scheduler: Where `transform` runs; `nil` as for ``map(_:)``.
  ///   - transform: Makes the new value; what it throws rejects the result.
  /// - Returns: The future of the transformed value.
  public func map<U>(
    on scheduler: (any CoroutineScheduler)?, _ transform: @escaping @Sendable (T) throws -> U
  ) -> CoFuture<U> {
    mapped(on: scheduler, transform)
  }

  func mapped<U>(
    on scheduler: (any CoroutineScheduler)?, _ transform: @escaping (T) throws -> U
  ) -> CoFuture<U> {
    derive(on: scheduler) { result, output in
      output.settle(Result { try transform(result.get()) })
    }
  }

  /// A future of the future that `next` makes from this future's value (PromiseKit's `then`).
  /// Cancelling the result cancels whichever of the two it is waiting for.
  public func flatMap<U>(_ next: @escaping (T) throws -> CoFuture<U>) -> CoFuture<U> {
    flatMapped(on: nil, next)
  }

  /// ``flatMap(_:)`` with `next` run as a job on `scheduler`.
  ///
  /// - Parameters:
  ///   - scheduler: Where `next` runs; `nil` as for ``flatMap(_:)``.
  ///   - next: Makes the following future from the value.
  /// - Returns: The future of the following future's outcome.
  public func flatMap<U>(
    on scheduler: (any CoroutineScheduler)?,
    _ next: @escaping @Sendable (T) throws -> CoFuture<U>
  ) -> CoFuture<U> {
    flatMapped(on: scheduler, next)
  }

  func flatMapped<U>(
    on scheduler: (any CoroutineScheduler)?, _ next: @escaping (T) throws -> CoFuture<U>
  ) -> CoFuture<U> {
    derive(on: scheduler) { result, output in
      output.follow { try next(result.get()) }
    }
  }

  /// A future that turns this future's error into a value with `handler`; a value passes
  /// through, and so does `CancellationError`: cancellation is a request to stop, not a failure
  /// to paper over.
  public func recover(_ handler: @escaping (any Error) throws -> T) -> CoFuture<T> {
    recovered(on: nil, handler)
  }

  /// ``recover(_:)`` with `handler` run as a job on `scheduler`.
  ///
  /// - Parameters:
  ///   - scheduler: Where `handler` runs; `nil` as for ``recover(_:)``.
  ///   - handler: Turns the error into a value, or throws.
  /// - Returns: The future of the value or the recovered one.
  public func recover(
    on scheduler: (any CoroutineScheduler)?,
    _ handler: @escaping @Sendable (any Error) throws -> T
  ) -> CoFuture<T> {
    recovered(on: scheduler, handler)
  }

  func recovered(
    on scheduler: (any CoroutineScheduler)?, _ handler: @escaping (any Error) throws -> T
  ) -> CoFuture<T> {
    derive(on: scheduler) { result, output in
      switch result {
      case .failure(let error) where !(error is CancellationError):
        output.settle(Result { try handler(error) })
      default:
        output.settle(result)
      }
    }
  }

  /// A future with this future's outcome that first runs `body`, whatever the outcome
  /// (PromiseKit's `ensure`). `body` runs exactly once: when this future settles, or when the
  /// returned future is cancelled before that.
  public func always(_ body: @escaping () -> Void) -> CoFuture<T> {
    finally(on: nil, body)
  }

  /// ``always(_:)`` with `body` run as a job on `scheduler`.
  ///
  /// - Parameters:
  ///   - scheduler: Where `body` runs; `nil` as for ``always(_:)``.
  ///   - body: Runs once, whatever the outcome.
  /// - Returns: A future with this future's outcome.
  public func always(
    on scheduler: (any CoroutineScheduler)?, _ body: @escaping @Sendable () -> Void
  ) -> CoFuture<T> {
    finally(on: scheduler, body)
  }

  func finally(on scheduler: (any CoroutineScheduler)?, _ body: @escaping () -> Void)
    -> CoFuture<T>
  {
    let once = Once()
    let output = derive(on: scheduler) { result, output in
      if once.claim() { body() }
      output.settle(result)
    }
    output.onCancel { perform(on: scheduler) { if once.claim() { body() } } }
    return output
  }

  /// A future of this future's value if `predicate` accepts it; rejected with
  /// ``CoroutineError/validationFailed`` if it returns false, or with what it throws.
  public func validate(_ predicate: @escaping (T) throws -> Bool) -> CoFuture<T> {
    validated(on: nil, predicate)
  }

  /// ``validate(_:)`` with `predicate` run as a job on `scheduler`.
  ///
  /// - Parameters:
  ///   - scheduler: Where `predicate` runs; `nil` as for ``validate(_:)``.
  ///   - predicate: Accepts the value, or refuses it by returning false or throwing.
  /// - Returns: The future of the accepted value.
  public func validate(
    on scheduler: (any CoroutineScheduler)?, _ predicate: @escaping @Sendable (T) throws -> Bool
  ) -> CoFuture<T> {
    validated(on: scheduler, predicate)
  }

  func validated(
    on scheduler: (any CoroutineScheduler)?, _ predicate: @escaping (T) throws -> Bool
  ) -> CoFuture<T> {
    derive(on: scheduler) { result, output in
      output.settle(
        Result {
          let value = try result.get()
          guard try predicate(value) else { throw CoroutineError.validationFailed }
          return value
        })
    }
  }

  /// The common shape of the operators: an output linked to this future, and `body` run with
  /// the outcome on `scheduler` unless the output was cancelled first.
  func derive<U>(
    on scheduler: (any CoroutineScheduler)?,
    _ body: @escaping (Result<T, any Error>, LinkedFuture<U>) -> Void
  ) -> LinkedFuture<U> {
    let output = LinkedFuture<U>()
    output.link(self)
    whenComplete { result in
      perform(on: scheduler) {
        guard !output.isSettled else { return }
        body(result, output)
      }
    }
    return output
  }
}
