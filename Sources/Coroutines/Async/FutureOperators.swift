/// Operators that derive one future from another.
///
/// Each takes an optional scheduler. Without one, its callback runs on the thread that settles
/// the input, right after it settles (at once if it already has; right after the callback
/// running, if the input was settled from inside one): nothing waits for a loop that may not be
/// running, and a chain of any length settles or is cancelled in bounded stack. With one, the callback runs as a job on that scheduler. Cancelling the
/// derived future cancels the input it waits for; an input that fails skips the callback and
/// passes its error on.
extension CoFuture {
  /// A future of `transform` applied to this future's value; an error thrown by `transform`
  /// rejects it.
  ///
  /// ```swift
  /// let length = fetchName().map { $0.count }
  /// ```
  public func map<U>(
    on scheduler: (any CoroutineScheduler)? = nil, _ transform: @escaping (T) throws -> U
  ) -> CoFuture<U> {
    derive(on: scheduler) { result, output in
      output.settle(Result { try transform(result.get()) })
    }
  }

  /// A future of the future that `next` makes from this future's value (PromiseKit's `then`).
  /// Cancelling the result cancels whichever of the two it is waiting for.
  public func flatMap<U>(
    on scheduler: (any CoroutineScheduler)? = nil, _ next: @escaping (T) throws -> CoFuture<U>
  ) -> CoFuture<U> {
    derive(on: scheduler) { result, output in
      output.follow { try next(result.get()) }
    }
  }

  /// A future that turns this future's error into a value with `handler`; a value passes
  /// through, and so does `CancellationError`: cancellation is a request to stop, not a failure
  /// to paper over.
  public func recover(
    on scheduler: (any CoroutineScheduler)? = nil, _ handler: @escaping (any Error) throws -> T
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
  public func always(
    on scheduler: (any CoroutineScheduler)? = nil, _ body: @escaping () -> Void
  ) -> CoFuture<T> {
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
  public func validate(
    on scheduler: (any CoroutineScheduler)? = nil, _ predicate: @escaping (T) throws -> Bool
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
