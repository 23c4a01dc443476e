/// A future that its owner settles by hand.
///
/// ```swift
/// let promise = CoPromise<Int>()
/// DispatchQueue.global().async { promise.fulfill(42) }
/// let value = try co_await(promise)
/// ```
public final class CoPromise<T>: CoFuture<T>, @unchecked Sendable {
  /// Creates a pending promise.
  @inlinable public override init() {}

  /// Creates a promise and runs `body` at once with its `fulfill` and `reject`; an error thrown
  /// by `body` rejects the promise.
  public convenience init(
    _ body:
      @escaping (
        _ fulfill: @escaping (T) -> Void, _ reject: @escaping (any Error) -> Void
      ) throws -> Void
  ) {
    self.init()
    do {
      try body({ self.fulfill($0) }, { self.reject($0) })
    } catch {
      reject(error)
    }
  }

  /// Fulfills the promise with `value`; ignored once it has settled.
  @inlinable
  public func fulfill(_ value: T) {
    settle(.success(value))
  }

  /// Rejects the promise with `error`; ignored once it has settled.
  @inlinable
  public func reject(_ error: any Error) {
    settle(.failure(error))
  }

  /// Settles the promise with `result`; ignored once it has settled.
  @inlinable
  public func resolve(_ result: Result<T, any Error>) {
    settle(result)
  }
}
