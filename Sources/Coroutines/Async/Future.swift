import Synchronization

/// A value that arrives later: pending until settled, then settled exactly once.
///
/// Futures follow the Promise/A+ rules: later settles are ignored; observers added after
/// settling still fire; each observer fires exactly once. Any thread may settle, observe or
/// await. Create one with ``CoPromise`` or ``co_launch(on:name:stackSize:_:)``.
public class CoFuture<T>: @unchecked Sendable {  // `outcome` and `observers` are behind `mutex`
  // The state is `@usableFromInline` and the hot paths `@inlinable`, so that a caller in another
  // module runs them specialised for its `T`: unspecialised, every settle, observe and read
  // looked up the metadata of `Result<T, any Error>?` and `Observers` in the runtime's tables.
  // `@exclusivity(unchecked)`: the three fields are only touched inside `futureLock`, and no access
  // calls out to code that could reach them again (observers run after the lock is dropped).
  @usableFromInline let futureLock = Mutex<Void>(())
  @usableFromInline @exclusivity(unchecked) var futureOutcome: Result<T, any Error>?
  @usableFromInline @exclusivity(unchecked) var futureObservers = Observers()
  /// Whether anyone has looked at the outcome (see ``CoUnhandledErrors``).
  @usableFromInline @exclusivity(unchecked) var futureObserved = false
  /// Whether the outcome is a failure: lets a task's deinitialiser, which runs unspecialised,
  /// skip reading the generic outcome (a metadata look-up) when there is no error to report.
  @usableFromInline @exclusivity(unchecked) var futureFailed = false

  @inlinable init() {}

  /// The outcome once settled; `nil` while pending. Reading it counts as observing the future.
  @inlinable
  public var result: Result<T, any Error>? {
    futureLock.withLock { _ in
      futureObserved = true
      return futureOutcome
    }
  }

  /// True once the future has settled. Asking does not count as observing the outcome.
  public var isSettled: Bool { peek != nil }

  /// Calls `callback` once with the outcome: on the thread that settles the future, right after
  /// it settles, or at once on this thread if it already has. Counts as observing the future.
  @inlinable
  public func whenComplete(_ callback: @escaping (Result<T, any Error>) -> Void) {
    observe(callback, marking: true)
  }

  /// Like ``whenComplete(_:)``, for the runtime's own bookkeeping (scopes, parents), which must
  /// not make an error count as handled.
  @inlinable
  func whenSettled(_ callback: @escaping (Result<T, any Error>) -> Void) {
    observe(callback, marking: false)
  }

  /// The outcome, without counting as an observation.
  @inlinable
  var peek: Result<T, any Error>? { futureLock.withLock { _ in futureOutcome } }

  /// True once someone awaited, observed or read the outcome.
  @inlinable
  var wasObserved: Bool { futureLock.withLock { _ in futureObserved } }

  /// True once the future has failed and nobody has observed it; reads nothing generic.
  @usableFromInline
  final var hasUnobservedFailure: Bool {
    futureLock.withLock { _ in futureFailed && !futureObserved }
  }

  @inlinable
  func observe(_ callback: @escaping (Result<T, any Error>) -> Void, marking: Bool) {
    let settled = futureLock.withLock { _ -> Result<T, any Error>? in
      if marking { futureObserved = true }
      if let futureOutcome { return futureOutcome }
      futureObservers.append(callback)
      return nil
    }
    if let settled { callback(settled) }
  }

  /// Rejects a pending future with `CancellationError`; does nothing once settled.
  public func cancel() {
    settle(.failure(CancellationError()))
  }

  /// Waits for the outcome inside a coroutine; see `co_await(_:)`.
  @inlinable
  public func await() throws -> T {
    try co_await(self)
  }

  /// Settles the future if it is pending; returns false when it had already settled.
  @discardableResult
  @inlinable
  func settle(_ result: Result<T, any Error>) -> Bool {
    let toNotify = futureLock.withLock { _ -> Observers? in
      guard futureOutcome == nil else { return nil }
      futureOutcome = result
      if case .failure = result { futureFailed = true }
      return futureObservers.takeAll()
    }
    guard let toNotify else { return false }
    toNotify.forEach { $0(result) }
    return true
  }

  /// Observers stored without an array for the common case of one.
  @usableFromInline
  struct Observers {
    @usableFromInline typealias Callback = (Result<T, any Error>) -> Void
    @usableFromInline var first: Callback?
    @usableFromInline var rest: [Callback] = []

    @inlinable init() {}

    @inlinable
    mutating func append(_ callback: @escaping Callback) {
      if first == nil { first = callback } else { rest.append(callback) }
    }

    @inlinable
    mutating func takeAll() -> Observers {
      let taken = self
      self = Observers()
      return taken
    }

    @inlinable
    func forEach(_ body: (Callback) -> Void) {
      if let first { body(first) }
      rest.forEach(body)
    }
  }
}

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
